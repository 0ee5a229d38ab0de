// The formats the pandoc engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'html', name: 'HTML page', category: 'markup', mediaType: 'text/html; charset=utf-8', extensions: ['html', 'htm', 'xhtml'], detect: 'extension' },
  { id: 'md', name: 'Markdown (CommonMark with pandoc extensions)', category: 'markup', mediaType: 'text/markdown; charset=utf-8', extensions: ['md', 'markdown', 'mdown', 'mkd'], detect: 'extension' },
  { id: 'gfm', name: 'GitHub-flavoured Markdown', category: 'markup', mediaType: 'text/markdown; charset=utf-8', extensions: ['gfm'], detect: 'extension' },
  { id: 'rst', name: 'reStructuredText', category: 'markup', mediaType: 'text/x-rst; charset=utf-8', extensions: ['rst', 'rest'], detect: 'extension' },
  { id: 'org', name: 'Org mode', category: 'markup', mediaType: 'text/org; charset=utf-8', extensions: ['org'], detect: 'extension' },
  { id: 'textile', name: 'Textile', category: 'markup', mediaType: 'text/x-textile; charset=utf-8', extensions: ['textile'], detect: 'extension' },
  { id: 'mediawiki', name: 'MediaWiki markup', category: 'markup', mediaType: 'text/x-mediawiki; charset=utf-8', extensions: ['mediawiki', 'wiki'], detect: 'extension' },
  { id: 'jira', name: 'Jira wiki markup', category: 'markup', mediaType: 'text/x-jira; charset=utf-8', extensions: ['jira'], detect: 'extension' },
  { id: 'latex', name: 'LaTeX', category: 'markup', mediaType: 'application/x-latex; charset=utf-8', extensions: ['tex', 'latex', 'ltx'], detect: 'extension' },
  { id: 'asciidoc', name: 'AsciiDoc', category: 'markup', mediaType: 'text/x-asciidoc; charset=utf-8', extensions: ['adoc', 'asciidoc', 'asc'], detect: 'extension' },
  { id: 'ipynb', name: 'Jupyter notebook', category: 'markup', mediaType: 'application/x-ipynb+json', extensions: ['ipynb'], detect: 'extension' },
  { id: 'docbook', name: 'DocBook XML', category: 'markup', mediaType: 'application/docbook+xml', extensions: ['dbk', 'docbook'], detect: 'extension' },
  { id: 'opml', name: 'OPML outline', category: 'markup', mediaType: 'text/x-opml+xml', extensions: ['opml'], detect: 'extension' },
];
