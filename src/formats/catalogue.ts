// The catalogue of formats the service knows by name. Each engine module adds its own formats
// (src/engines/<tool>/formats.ts); engines/assembly.ts gathers them from the list of engines. A
// format is advertised in /api/formats only when an engine that passed its probe reads or writes
// it (see engines/registry.ts).

import type { Category } from './categories.ts';

export { CATEGORIES, type Category } from './categories.ts';

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
  /**
   * With signatureOf: content bearing that format's signature is taken as this one when the
   * upload's name says so (Windows Media audio in an ASF container named .wma; a KF8 book named
   * .azw3). Otherwise it is taken as the signature's own format.
   */
  readonly nameDecides?: boolean;
  /**
   * A signature the file-type library does not know, tested on the file's first 8 KiB (`head`) and
   * on that text decoded as UTF-8 without a byte-order mark and leading white space (`text`).
   */
  readonly signature?: (head: Buffer, text: string) => boolean;
  /**
   * For formats stored in OLE compound files (Word, Excel and PowerPoint 97-2003 and kin): stream
   * names whose presence marks this format.
   */
  readonly compoundStreams?: readonly string[];
  /**
   * An Office Open XML format: Office saves a password-protected one as an OLE compound file that
   * holds an EncryptedPackage stream. Such a file is taken as this format when its name says so,
   * so that the job can tell the user it is encrypted rather than unsupported.
   */
  readonly encryptedInCompoundFile?: boolean;
}

export class FormatCatalogue {
  private readonly byId = new Map<string, FormatDefinition>();
  private readonly byExtension = new Map<string, FormatDefinition>();
  /** The formats with a signature of their own, and those told by OLE streams: the sniffer's lists, made once. */
  readonly signed: readonly FormatDefinition[];
  readonly inCompoundFiles: readonly FormatDefinition[];

  /** Throws when two formats share an id or an extension: a name must mean one format. */
  constructor(formats: readonly FormatDefinition[]) {
    for (const format of formats) {
      if (this.byId.has(format.id)) throw new Error(`two formats have the id "${format.id}"`);
      this.byId.set(format.id, format);
      for (const ext of format.extensions) {
        const other = this.byExtension.get(ext);
        if (other) throw new Error(`the extension "${ext}" is claimed by both ${other.id} and ${format.id}`);
        this.byExtension.set(ext, format);
      }
    }
    this.signed = formats.filter((format) => format.signature);
    this.inCompoundFiles = formats.filter((format) => format.compoundStreams);
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
