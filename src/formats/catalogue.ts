// Every format the service knows by name. A format is advertised in /api/formats only when an
// engine that passed its probe reads or writes it (see engines/registry.ts), so adding a format
// here costs nothing until an engine declares an edge for it.

export const CATEGORIES = [
  'document', 'spreadsheet', 'presentation', 'image', 'vector', 'audio', 'video',
  'ebook', 'markup', 'data', 'archive', 'font',
] as const;
export type Category = (typeof CATEGORIES)[number];

export interface FormatDefinition {
  /** The id clients send as `target` and see in /api/formats; also the result's file extension. */
  readonly id: string;
  readonly name: string;
  readonly category: Category;
  readonly mediaType: string;
  /** File name extensions, the first being the canonical one (equal to id). */
  readonly extensions: readonly string[];
  /**
   * How an upload is recognised: 'magic' formats by their content signature (the extension alone
   * is not trusted); 'extension' formats (plain text ones without a signature) by the name's
   * extension when the content matched no signature.
   */
  readonly detect: 'magic' | 'extension';
  /** The result's file extension when it is not the id (a PDF/A is a .pdf). */
  readonly fileExtension?: string;
  /**
   * The format whose signature this one's content carries, when it has none of its own: a PDF/A
   * is a PDF, a KF8 book has Mobipocket's header, ASF holds Windows Media audio and video alike.
   */
  readonly signatureOf?: string;
}

const FORMATS: readonly FormatDefinition[] = [
  { id: 'png', name: 'PNG image', category: 'image', mediaType: 'image/png', extensions: ['png'], detect: 'magic' },
  { id: 'jpg', name: 'JPEG image', category: 'image', mediaType: 'image/jpeg', extensions: ['jpg', 'jpeg', 'jpe', 'jfif'], detect: 'magic' },
  { id: 'webp', name: 'WebP image', category: 'image', mediaType: 'image/webp', extensions: ['webp'], detect: 'magic' },
  { id: 'avif', name: 'AVIF image', category: 'image', mediaType: 'image/avif', extensions: ['avif'], detect: 'magic' },
  { id: 'gif', name: 'GIF image', category: 'image', mediaType: 'image/gif', extensions: ['gif'], detect: 'magic' },
  { id: 'tiff', name: 'TIFF image', category: 'image', mediaType: 'image/tiff', extensions: ['tiff', 'tif'], detect: 'magic' },
  { id: 'heic', name: 'HEIC/HEIF image', category: 'image', mediaType: 'image/heic', extensions: ['heic', 'heif', 'hif'], detect: 'magic' },
  { id: 'jxl', name: 'JPEG XL image', category: 'image', mediaType: 'image/jxl', extensions: ['jxl'], detect: 'magic' },
  { id: 'bmp', name: 'Windows bitmap', category: 'image', mediaType: 'image/bmp', extensions: ['bmp', 'dib'], detect: 'magic' },
  { id: 'ico', name: 'Windows icon', category: 'image', mediaType: 'image/vnd.microsoft.icon', extensions: ['ico'], detect: 'magic' },
  { id: 'tga', name: 'Truevision TGA image', category: 'image', mediaType: 'image/x-tga', extensions: ['tga', 'icb', 'vda', 'vst'], detect: 'extension' },
  { id: 'psd', name: 'Photoshop document (flattened)', category: 'image', mediaType: 'image/vnd.adobe.photoshop', extensions: ['psd'], detect: 'magic' },
  { id: 'pcx', name: 'PCX image', category: 'image', mediaType: 'image/x-pcx', extensions: ['pcx'], detect: 'magic' },
  { id: 'ppm', name: 'Netpbm colour image', category: 'image', mediaType: 'image/x-portable-pixmap', extensions: ['ppm', 'pnm'], detect: 'magic' },
  { id: 'pgm', name: 'Netpbm greyscale image', category: 'image', mediaType: 'image/x-portable-graymap', extensions: ['pgm'], detect: 'magic' },
  { id: 'pbm', name: 'Netpbm bitmap', category: 'image', mediaType: 'image/x-portable-bitmap', extensions: ['pbm'], detect: 'magic' },
  { id: 'xpm', name: 'X pixmap', category: 'image', mediaType: 'image/x-xpixmap', extensions: ['xpm'], detect: 'magic' },
  { id: 'dds', name: 'DirectDraw surface', category: 'image', mediaType: 'image/vnd-ms.dds', extensions: ['dds'], detect: 'magic' },
  { id: 'svg', name: 'SVG vector image', category: 'vector', mediaType: 'image/svg+xml', extensions: ['svg'], detect: 'magic' },
  { id: 'eps', name: 'Encapsulated PostScript', category: 'vector', mediaType: 'application/postscript', extensions: ['eps'], detect: 'magic' },
  { id: 'ps', name: 'PostScript document', category: 'vector', mediaType: 'application/postscript', extensions: ['ps'], detect: 'magic' },
  { id: 'pdf', name: 'PDF document', category: 'document', mediaType: 'application/pdf', extensions: ['pdf'], detect: 'magic' },
  { id: 'pdfa', name: 'PDF/A-2b archival document', category: 'document', mediaType: 'application/pdf', extensions: ['pdfa'], detect: 'magic', fileExtension: 'pdf', signatureOf: 'pdf' },
  { id: 'jp2', name: 'JPEG 2000 image', category: 'image', mediaType: 'image/jp2', extensions: ['jp2', 'j2k', 'jpf'], detect: 'magic' },

  { id: 'mp3', name: 'MP3 audio', category: 'audio', mediaType: 'audio/mpeg', extensions: ['mp3'], detect: 'magic' },
  { id: 'wav', name: 'WAV audio', category: 'audio', mediaType: 'audio/wav', extensions: ['wav'], detect: 'magic' },
  { id: 'flac', name: 'FLAC audio', category: 'audio', mediaType: 'audio/flac', extensions: ['flac'], detect: 'magic' },
  { id: 'ogg', name: 'Ogg Vorbis audio', category: 'audio', mediaType: 'audio/ogg', extensions: ['ogg', 'oga'], detect: 'magic' },
  { id: 'opus', name: 'Opus audio', category: 'audio', mediaType: 'audio/opus', extensions: ['opus'], detect: 'magic' },
  { id: 'm4a', name: 'MPEG-4 audio (AAC)', category: 'audio', mediaType: 'audio/mp4', extensions: ['m4a', 'aac'], detect: 'magic' },
  { id: 'aiff', name: 'AIFF audio', category: 'audio', mediaType: 'audio/aiff', extensions: ['aiff', 'aif', 'aifc'], detect: 'magic' },
  { id: 'wma', name: 'Windows Media audio', category: 'audio', mediaType: 'audio/x-ms-wma', extensions: ['wma'], detect: 'magic', signatureOf: 'wmv' },
  { id: 'ac3', name: 'Dolby Digital (AC-3) audio', category: 'audio', mediaType: 'audio/ac3', extensions: ['ac3'], detect: 'magic' },
  { id: 'amr', name: 'AMR audio', category: 'audio', mediaType: 'audio/amr', extensions: ['amr'], detect: 'magic' },

  { id: 'csv', name: 'Comma-separated values', category: 'data', mediaType: 'text/csv', extensions: ['csv'], detect: 'extension' },
  { id: 'tsv', name: 'Tab-separated values', category: 'data', mediaType: 'text/tab-separated-values', extensions: ['tsv', 'tab'], detect: 'extension' },
  { id: 'json', name: 'JSON', category: 'data', mediaType: 'application/json', extensions: ['json'], detect: 'extension' },
  { id: 'ndjson', name: 'Newline-delimited JSON', category: 'data', mediaType: 'application/x-ndjson', extensions: ['ndjson', 'jsonl'], detect: 'extension' },
  { id: 'yaml', name: 'YAML', category: 'data', mediaType: 'application/yaml', extensions: ['yaml', 'yml'], detect: 'extension' },
  { id: 'toml', name: 'TOML', category: 'data', mediaType: 'application/toml', extensions: ['toml'], detect: 'extension' },
  { id: 'xml', name: 'XML', category: 'data', mediaType: 'application/xml', extensions: ['xml'], detect: 'extension' },
  { id: 'xlsx', name: 'Excel workbook', category: 'spreadsheet', mediaType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', extensions: ['xlsx'], detect: 'magic' },

  { id: 'ods', name: 'OpenDocument spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.oasis.opendocument.spreadsheet', extensions: ['ods'], detect: 'magic' },

  { id: 'docx', name: 'Word document', category: 'document', mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', extensions: ['docx'], detect: 'magic' },
  { id: 'doc', name: 'Word 97-2003 document', category: 'document', mediaType: 'application/msword', extensions: ['doc'], detect: 'magic' },
  { id: 'odt', name: 'OpenDocument text', category: 'document', mediaType: 'application/vnd.oasis.opendocument.text', extensions: ['odt'], detect: 'magic' },
  { id: 'fodt', name: 'Flat OpenDocument text', category: 'document', mediaType: 'application/vnd.oasis.opendocument.text-flat-xml', extensions: ['fodt'], detect: 'extension' },
  { id: 'rtf', name: 'Rich Text Format', category: 'document', mediaType: 'application/rtf', extensions: ['rtf'], detect: 'magic' },
  { id: 'wpd', name: 'WordPerfect document', category: 'document', mediaType: 'application/vnd.wordperfect', extensions: ['wpd', 'wp'], detect: 'magic' },
  { id: 'txt', name: 'Plain text', category: 'document', mediaType: 'text/plain; charset=utf-8', extensions: ['txt', 'text'], detect: 'extension' },
  { id: 'html', name: 'HTML page', category: 'markup', mediaType: 'text/html; charset=utf-8', extensions: ['html', 'htm', 'xhtml'], detect: 'extension' },
  { id: 'xls', name: 'Excel 97-2003 workbook', category: 'spreadsheet', mediaType: 'application/vnd.ms-excel', extensions: ['xls'], detect: 'magic' },
  { id: 'fods', name: 'Flat OpenDocument spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.oasis.opendocument.spreadsheet-flat-xml', extensions: ['fods'], detect: 'extension' },
  { id: 'pptx', name: 'PowerPoint presentation', category: 'presentation', mediaType: 'application/vnd.openxmlformats-officedocument.presentationml.presentation', extensions: ['pptx'], detect: 'magic' },
  { id: 'ppt', name: 'PowerPoint 97-2003 presentation', category: 'presentation', mediaType: 'application/vnd.ms-powerpoint', extensions: ['ppt', 'pps'], detect: 'magic' },
  { id: 'odp', name: 'OpenDocument presentation', category: 'presentation', mediaType: 'application/vnd.oasis.opendocument.presentation', extensions: ['odp'], detect: 'magic' },
  { id: 'fodp', name: 'Flat OpenDocument presentation', category: 'presentation', mediaType: 'application/vnd.oasis.opendocument.presentation-flat-xml', extensions: ['fodp'], detect: 'extension' },
  { id: 'odg', name: 'OpenDocument drawing', category: 'vector', mediaType: 'application/vnd.oasis.opendocument.graphics', extensions: ['odg'], detect: 'magic' },

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

  { id: 'epub', name: 'EPUB ebook', category: 'ebook', mediaType: 'application/epub+zip', extensions: ['epub'], detect: 'magic' },
  { id: 'mobi', name: 'Mobipocket ebook', category: 'ebook', mediaType: 'application/x-mobipocket-ebook', extensions: ['mobi', 'prc'], detect: 'magic' },
  { id: 'azw3', name: 'Kindle ebook (KF8)', category: 'ebook', mediaType: 'application/vnd.amazon.mobi8-ebook', extensions: ['azw3', 'azw'], detect: 'magic', signatureOf: 'mobi' },
  { id: 'fb2', name: 'FictionBook', category: 'ebook', mediaType: 'application/x-fictionbook+xml', extensions: ['fb2'], detect: 'extension' },

  { id: 'zip', name: 'ZIP archive', category: 'archive', mediaType: 'application/zip', extensions: ['zip'], detect: 'magic' },
  { id: '7z', name: '7-Zip archive', category: 'archive', mediaType: 'application/x-7z-compressed', extensions: ['7z'], detect: 'magic' },
  { id: 'tar', name: 'tar archive', category: 'archive', mediaType: 'application/x-tar', extensions: ['tar'], detect: 'magic' },
  { id: 'tar.gz', name: 'gzip-compressed tar archive', category: 'archive', mediaType: 'application/gzip', extensions: ['tar.gz', 'tgz', 'gz'], detect: 'magic' },
  { id: 'tar.bz2', name: 'bzip2-compressed tar archive', category: 'archive', mediaType: 'application/x-bzip2', extensions: ['tar.bz2', 'tbz2', 'tbz', 'bz2'], detect: 'magic' },
  { id: 'tar.xz', name: 'xz-compressed tar archive', category: 'archive', mediaType: 'application/x-xz', extensions: ['tar.xz', 'txz', 'xz'], detect: 'magic' },

  { id: 'ttf', name: 'TrueType font', category: 'font', mediaType: 'font/ttf', extensions: ['ttf'], detect: 'magic' },
  { id: 'otf', name: 'OpenType font (CFF)', category: 'font', mediaType: 'font/otf', extensions: ['otf'], detect: 'magic' },
  { id: 'woff', name: 'Web Open Font Format', category: 'font', mediaType: 'font/woff', extensions: ['woff'], detect: 'magic' },
  { id: 'woff2', name: 'Web Open Font Format 2', category: 'font', mediaType: 'font/woff2', extensions: ['woff2'], detect: 'magic' },

  { id: 'mp4', name: 'MPEG-4 video', category: 'video', mediaType: 'video/mp4', extensions: ['mp4'], detect: 'magic' },
  { id: 'webm', name: 'WebM video', category: 'video', mediaType: 'video/webm', extensions: ['webm'], detect: 'magic' },
  { id: 'mkv', name: 'Matroska video', category: 'video', mediaType: 'video/x-matroska', extensions: ['mkv'], detect: 'magic' },
  { id: 'mov', name: 'QuickTime video', category: 'video', mediaType: 'video/quicktime', extensions: ['mov', 'qt'], detect: 'magic' },
  { id: 'avi', name: 'AVI video', category: 'video', mediaType: 'video/x-msvideo', extensions: ['avi'], detect: 'magic' },
  { id: 'mpeg', name: 'MPEG-1/2 video', category: 'video', mediaType: 'video/mpeg', extensions: ['mpeg', 'mpg'], detect: 'magic' },
  { id: 'flv', name: 'Flash video', category: 'video', mediaType: 'video/x-flv', extensions: ['flv'], detect: 'magic' },
  { id: '3gp', name: '3GPP video', category: 'video', mediaType: 'video/3gpp', extensions: ['3gp', '3g2'], detect: 'magic' },
  { id: 'wmv', name: 'Windows Media video', category: 'video', mediaType: 'video/x-ms-wmv', extensions: ['wmv', 'asf'], detect: 'magic' },
  { id: 'ogv', name: 'Ogg Theora video', category: 'video', mediaType: 'video/ogg', extensions: ['ogv'], detect: 'magic' },
  { id: 'm4v', name: 'MPEG-4 video (iTunes)', category: 'video', mediaType: 'video/x-m4v', extensions: ['m4v'], detect: 'magic' },
];

export class FormatCatalogue {
  private readonly byId = new Map<string, FormatDefinition>();
  private readonly byExtension = new Map<string, FormatDefinition>();

  constructor(formats: readonly FormatDefinition[] = FORMATS) {
    for (const format of formats) {
      this.byId.set(format.id, format);
      for (const ext of format.extensions) this.byExtension.set(ext, format);
    }
  }

  get(id: string): FormatDefinition | undefined {
    return this.byId.get(id);
  }

  /**
   * Resolves what a client wrote as a target ("PNG", ".jpeg", "tif") to a format id:
   * case-insensitive, a leading dot tolerated, any known extension accepted.
   */
  resolve(name: string): FormatDefinition | undefined {
    const key = name.trim().toLowerCase().replace(/^\./, '');
    return this.byId.get(key) ?? this.byExtension.get(key);
  }

  all(): readonly FormatDefinition[] {
    return [...this.byId.values()];
  }
}

export const formatCatalogue = new FormatCatalogue();
