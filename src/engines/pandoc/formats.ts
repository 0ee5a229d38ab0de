// The formats the pandoc engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/**
 * A man page: troff requests and comments only (pandoc's own begins with `.\"` comments and font
 * set-up), then the `.TH` title line. mdoc pages (`.Dd`) are not man(7) and pandoc cannot read them;
 * ms documents have no `.TH`.
 */
const MAN_PAGE = /^(?:[.'][^\n]*\n|[ \t]*\r?\n)*?\.TH[ \t]/;

/** JATS (and the NLM DTDs before it): its DOCTYPE, or a root <article> with JATS's dtd-version attribute. */
const JATS_DOCTYPE = /<!DOCTYPE\s+article\s+PUBLIC\s+"-\/\/NLM\/\/DTD\s/;
const JATS_ROOT = /^(?:<\?xml[^>]*\?>\s*)?(?:<!--[\s\S]*?-->\s*)*<article\b[^>]*\bdtd-version=/;
function isJats(text: string): boolean {
  const start = text.slice(0, 4096);
  return JATS_DOCTYPE.test(start) || (JATS_ROOT.test(start) && !start.includes('docbook.org/ns/docbook'));
}

/**
 * A BibTeX or BibLaTeX database: after `%` comment lines, an entry `@type{key,` (or `@type(key,`),
 * or one of the commands that may open a database (@string, @preamble, @comment). CSS at-rules
 * (`@media screen {`, `@page { margin: 1in }`) have no `key,` after their brace.
 */
const BIB_ENTRY = /^(?:%[^\n]*\n\s*)*@(?:[a-zA-Z]+\s*[{(]\s*[^\s,{}()="#%]+\s*,|(?:string|preamble|comment)\s*[{(])/i;

/**
 * CSL JSON, the bibliography format of citeproc (Zotero and Mendeley export it, named .json): an
 * array of items with an `id` and fields of CSL's own (issued, container-title, citation-key, or
 * authors and editors as family and given names). Data JSON may well hold an "id", a "type" and a
 * "title", so those alone do not make a bibliography; an entry with nothing but a title is not
 * recognised (nor, written, accepted by the output check).
 */
const CSL_FIELD = /"(?:issued|container-title|citation-key)"\s*:|"(?:author|editor)"\s*:\s*\[\s*\{\s*"(?:family|given|literal)"/;
function isCslJson(text: string): boolean {
  return text.startsWith('[') && /"id"\s*:/.test(text) && CSL_FIELD.test(text);
}

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

  // Markdown dialects other tools expect, written by pandoc: CommonMark (the bare specification),
  // the original Markdown.pl syntax, PHP Markdown Extra and MultiMarkdown. Their files are all
  // named .md except MultiMarkdown's .mmd (read too); an uploaded .md stays `md` (pandoc's
  // Markdown reads the others' syntax), so the rest are targets under their own names.
  { id: 'commonmark', name: 'CommonMark (no extensions)', category: 'markup', mediaType: 'text/markdown; charset=utf-8', extensions: ['commonmark'], detect: 'extension', fileExtension: 'md' },
  { id: 'mdstrict', name: 'Markdown (original Markdown.pl syntax, strict)', category: 'markup', mediaType: 'text/markdown; charset=utf-8', extensions: ['mdstrict'], detect: 'extension', fileExtension: 'md' },
  { id: 'mdextra', name: 'PHP Markdown Extra', category: 'markup', mediaType: 'text/markdown; charset=utf-8', extensions: ['mdextra'], detect: 'extension', fileExtension: 'md' },
  { id: 'mmd', name: 'MultiMarkdown', category: 'markup', mediaType: 'text/markdown; charset=utf-8', extensions: ['mmd'], detect: 'extension' },

  // Wiki and lightweight markup dialects without a signature of their own: told by the name.
  { id: 'creole', name: 'Creole wiki markup', category: 'markup', mediaType: 'text/x-creole; charset=utf-8', extensions: ['creole'], detect: 'extension' },
  { id: 'dokuwiki', name: 'DokuWiki markup', category: 'markup', mediaType: 'text/x-dokuwiki; charset=utf-8', extensions: ['dokuwiki'], detect: 'extension' },
  { id: 'tikiwiki', name: 'TikiWiki markup', category: 'markup', mediaType: 'text/x-tikiwiki; charset=utf-8', extensions: ['tikiwiki'], detect: 'extension' },
  { id: 'twiki', name: 'TWiki markup', category: 'markup', mediaType: 'text/x-twiki; charset=utf-8', extensions: ['twiki'], detect: 'extension' },
  // Vimwiki's own extension, .wiki, is MediaWiki's here.
  { id: 'vimwiki', name: 'Vimwiki markup', category: 'markup', mediaType: 'text/x-vimwiki; charset=utf-8', extensions: ['vimwiki'], detect: 'extension' },
  // Zim and XWiki keep pages as .txt and in a database: written only, under their own names.
  { id: 'zimwiki', name: 'Zim wiki markup', category: 'markup', mediaType: 'text/x-zim-wiki; charset=utf-8', extensions: ['zimwiki'], detect: 'extension' },
  { id: 'xwiki', name: 'XWiki 2.1 markup', category: 'markup', mediaType: 'text/x-xwiki; charset=utf-8', extensions: ['xwiki'], detect: 'extension' },
  { id: 'muse', name: 'Emacs Muse / Amusewiki markup', category: 'markup', mediaType: 'text/x-muse; charset=utf-8', extensions: ['muse'], detect: 'extension' },
  { id: 't2t', name: 'txt2tags', category: 'markup', mediaType: 'text/x-txt2tags; charset=utf-8', extensions: ['t2t'], detect: 'extension' },
  { id: 'haddock', name: 'Haddock documentation markup', category: 'markup', mediaType: 'text/x-haddock; charset=utf-8', extensions: ['haddock'], detect: 'extension' },
  { id: 'markua', name: 'Markua (Leanpub)', category: 'markup', mediaType: 'text/markdown; charset=utf-8', extensions: ['markua'], detect: 'extension' },

  // Typesetting sources: written only (no TeX or InDesign here to check them by rendering).
  { id: 'context', name: 'ConTeXt source', category: 'markup', mediaType: 'text/x-tex; charset=utf-8', extensions: ['context', 'mkiv'], detect: 'extension', fileExtension: 'tex' },
  { id: 'texinfo', name: 'GNU Texinfo', category: 'markup', mediaType: 'text/x-texinfo; charset=utf-8', extensions: ['texinfo', 'texi', 'txi'], detect: 'extension' },
  { id: 'ms', name: 'groff ms document', category: 'markup', mediaType: 'text/troff; charset=utf-8', extensions: ['ms'], detect: 'extension' },
  { id: 'man', name: 'Unix manual page (man, troff)', category: 'markup', mediaType: 'text/troff; charset=utf-8', extensions: ['man', '1', '2', '3', '4', '5', '6', '7', '8', '9'], detect: 'magic', signature: (_head, text) => MAN_PAGE.test(text) },
  { id: 'icml', name: 'InDesign ICML (InCopy)', category: 'markup', mediaType: 'application/xml', extensions: ['icml'], detect: 'extension' },
  // XML vocabularies written as .xml: an upload named .xml stays the data format's, except JATS,
  // which its DOCTYPE or root tells apart (and which pandoc reads).
  { id: 'tei', name: 'TEI Simple XML', category: 'markup', mediaType: 'application/tei+xml', extensions: ['tei'], detect: 'extension', fileExtension: 'xml' },
  { id: 'jats', name: 'JATS journal article XML', category: 'markup', mediaType: 'application/jats+xml', extensions: ['jats'], detect: 'magic', signature: (_head, text) => isJats(text), fileExtension: 'xml' },

  // Slides. reveal.js and Slidy pages link their framework online (the viewer's browser loads it,
  // the service fetches nothing); DZSlides carries its own in the page.
  { id: 'beamer', name: 'LaTeX Beamer slides (source)', category: 'presentation', mediaType: 'application/x-latex; charset=utf-8', extensions: ['beamer'], detect: 'extension', fileExtension: 'tex' },
  { id: 'revealjs', name: 'reveal.js slides (HTML)', category: 'presentation', mediaType: 'text/html; charset=utf-8', extensions: ['revealjs'], detect: 'extension', fileExtension: 'html' },
  { id: 'slidy', name: 'Slidy slides (HTML)', category: 'presentation', mediaType: 'text/html; charset=utf-8', extensions: ['slidy'], detect: 'extension', fileExtension: 'html' },
  { id: 'dzslides', name: 'DZSlides slides (HTML, self-contained)', category: 'presentation', mediaType: 'text/html; charset=utf-8', extensions: ['dzslides'], detect: 'extension', fileExtension: 'html' },

  // Bibliographies. BibTeX and BibLaTeX share the .bib syntax (they differ in field names: year or
  // date, journal or journaltitle): any .bib upload is `bibtex`, read as either; `biblatex` is the
  // target that writes BibLaTeX's fields (its content carries the same signature).
  { id: 'bibtex', name: 'BibTeX bibliography (.bib)', category: 'markup', mediaType: 'application/x-bibtex; charset=utf-8', extensions: ['bibtex', 'bib'], detect: 'magic', signature: (_head, text) => BIB_ENTRY.test(text), fileExtension: 'bib' },
  { id: 'biblatex', name: 'BibLaTeX bibliography (.bib)', category: 'markup', mediaType: 'application/x-bibtex; charset=utf-8', extensions: ['biblatex'], detect: 'magic', signatureOf: 'bibtex', fileExtension: 'bib' },
  { id: 'csljson', name: 'CSL JSON bibliography', category: 'markup', mediaType: 'application/vnd.citationstyles.csl+json', extensions: ['csljson'], detect: 'magic', signature: (_head, text) => isCslJson(text), fileExtension: 'json' },
];
