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
}

const FORMATS: readonly FormatDefinition[] = [
  { id: 'png', name: 'PNG image', category: 'image', mediaType: 'image/png', extensions: ['png'], detect: 'magic' },
  { id: 'jpg', name: 'JPEG image', category: 'image', mediaType: 'image/jpeg', extensions: ['jpg', 'jpeg', 'jpe', 'jfif'], detect: 'magic' },
  { id: 'webp', name: 'WebP image', category: 'image', mediaType: 'image/webp', extensions: ['webp'], detect: 'magic' },
  { id: 'avif', name: 'AVIF image', category: 'image', mediaType: 'image/avif', extensions: ['avif'], detect: 'magic' },
  { id: 'gif', name: 'GIF image', category: 'image', mediaType: 'image/gif', extensions: ['gif'], detect: 'magic' },
  { id: 'tiff', name: 'TIFF image', category: 'image', mediaType: 'image/tiff', extensions: ['tiff', 'tif'], detect: 'magic' },
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
