// A DjVu document's structure, read from its IFF chunk headers in-process, before any DjVu tool
// runs (formats/input-caps.ts for every route; the djvulibre engine again before its tools): the
// pages it holds, the size every INFO chunk declares, and whether it names files to be read from
// beside it. Nothing is decoded: a chunk's header is 8 bytes (id, big-endian size), composite
// chunks (FORM, LIST, PROP, CAT) add a 4-byte type, and the DIRM directory of a bundled document
// starts with the components' offsets, uncompressed (DjVuLibre's DjVmDir.cpp).
//
// What is refused (docs/security.md#djvu), because DjVuLibre would open other files by name:
// - an indirect document (FORM:DJVM whose DIRM lacks the "bundled" bit): an index whose pages and
//   shared parts are separate files named in its directory;
// - the obsolete bundled layout (a DIR0 directory), whose pages come from an NDIR list of names;
// - a single page (FORM:DJVU) holding an INCL chunk (a shared part included by name) or an NDIR
//   chunk (the obsolete "indexed" documents, pages named in a list).
// A bundled document's INCL chunks name components of the same bundle: DjVuLibre serves those
// from the bundle's own bytes and refuses any other name, so they stay (shared dictionaries of
// JB2 pages use them).
import { ConvertdError } from '../errors.ts';
import { withReadAt, type ReadAt } from './read-at.ts';

/** Pages a DjVu document may hold, whatever the route (as a PDF's, MAX_PDF_PAGES in engines/support/pdf-info.ts). */
export const MAX_DJVU_PAGES = 2000;
/**
 * Chunk headers read at most while walking one document: a 2,000-page book has some 20,000. A
 * directory can point many entries into one another's chunks; past this the walk stops and the
 * document is refused rather than walked for ever.
 */
const MAX_CHUNKS_READ = 500_000;
/** Nesting of composite chunks followed (a page is one FORM inside the document's). */
const MAX_DEPTH = 8;

/** The size and resolution an INFO chunk declares, as DjVuLibre reads them (DjVuInfo.cpp). */
export interface DjvuPageSize {
  readonly width: number;
  readonly height: number;
  /** Dots per inch; DjVuLibre takes 300 for a value missing or outside 25-6000. */
  readonly dpi: number;
}

export interface DjvuStructure {
  /** `page`: one FORM:DJVU; `bundled`: a FORM:DJVM holding its components. */
  readonly kind: 'page' | 'bundled';
  /**
   * Pages: 1 for a single page; for a bundled document, the directory's entries that point at a
   * FORM:DJVU (every page of an ordinary document; the directory's own page flags are compressed,
   * and the engine counts them again with DjVuLibre).
   */
  readonly pages: number;
  /** Every INFO chunk of the document (a page may take its size from a shared component it includes). */
  readonly sizes: readonly DjvuPageSize[];
  /** Why DjVuLibre would read files beside the document, when it would. */
  readonly namesFiles?: string;
}

const DIRM_BUNDLED = 0x80;
const COMPOSITE = new Set(['FORM', 'LIST', 'PROP', 'CAT ']);

/** Reads in 64 KiB blocks, keeping the last one: chunk headers of one component mostly lie close together. */
function blockReader(read: ReadAt): ReadAt {
  const BLOCK = 64 * 1024;
  let start = -1;
  let block: Buffer = Buffer.alloc(0);
  return async (position, length) => {
    if (length > BLOCK) return read(position, length);
    if (start < 0 || position < start || position + length > start + block.length) {
      start = position;
      block = await read(position, BLOCK);
    }
    return block.subarray(position - start, position - start + length);
  };
}

interface Component {
  readonly type: string;
  readonly sizes: DjvuPageSize[];
  readonly names: string[];
}

class Walk {
  chunks = 0;
  private readonly read: ReadAt;
  private readonly size: number;

  constructor(read: ReadAt, size: number) {
    this.read = read;
    this.size = size;
  }

  /** The component (a FORM) at `offset`: its type, its INFO sizes, and the chunks that name other files (INCL, NDIR). */
  async component(offset: number): Promise<Component | undefined> {
    const header = await this.read(offset, 12);
    if (header.length < 12 || header.toString('latin1', 0, 4) !== 'FORM') return undefined;
    const found: Component = { type: header.toString('latin1', 8, 12), sizes: [], names: [] };
    await this.walkChunks(offset + 12, Math.min(this.size, offset + 8 + header.readUInt32BE(4)), found, 1);
    return found;
  }

  private async walkChunks(from: number, end: number, found: Component, depth: number): Promise<void> {
    for (let at = from; at + 8 <= end;) {
      if (++this.chunks > MAX_CHUNKS_READ) {
        throw new ConvertdError('input_too_complex', 'The DjVu document\'s structure is too tangled to check: send a simpler one.');
      }
      const header = await this.read(at, 8);
      if (header.length < 8) return;
      const id = header.toString('latin1', 0, 4);
      const length = header.readUInt32BE(4);
      const dataEnd = Math.min(end, at + 8 + length);
      if (id === 'INFO') {
        const info = await this.read(at + 8, Math.max(0, Math.min(10, dataEnd - at - 8)));
        if (info.length >= 4) found.sizes.push(pageSize(info));
      } else if (id === 'INCL' || id === 'NDIR') {
        found.names.push(id);
      } else if (COMPOSITE.has(id) && depth < MAX_DEPTH) {
        await this.walkChunks(at + 12, dataEnd, found, depth + 1);
      }
      at += 8 + length + (length % 2);
    }
  }
}

/** An INFO chunk's fields (DjVuInfo::decode): width and height big-endian, the resolution little-endian. */
function pageSize(info: Buffer): DjvuPageSize {
  let dpi = info.length >= 8 && info[7] !== 0xff ? info.readUInt16LE(6) : 300;
  if (dpi < 25 || dpi > 6000) dpi = 300;
  return { width: info.readUInt16BE(0), height: info.readUInt16BE(2), dpi };
}

/** The structure of the DjVu document `read` reads, or undefined when it is not one this reader follows (the tools then say what is wrong). */
export async function readDjvuStructure(read: ReadAt, size: number): Promise<DjvuStructure | undefined> {
  const cached = blockReader(read);
  const head = await cached(0, 32);
  if (head.length < 16 || head.toString('latin1', 0, 4) !== 'AT&T') return undefined;
  const kind = head.toString('latin1', 12, 16);
  const walk = new Walk(cached, size);
  if (kind === 'DJVU') {
    const page = await walk.component(4);
    if (!page) return undefined;
    const namesFiles = page.names.length > 0
      ? `its page includes other files by name (${[...new Set(page.names)].join(', ')} chunk), which this service never opens`
      : undefined;
    return { kind: 'page', pages: 1, sizes: page.sizes, ...(namesFiles ? { namesFiles } : {}) };
  }
  if (kind !== 'DJVM' || head.length < 27) return undefined;
  const first = head.toString('latin1', 16, 20);
  if (first === 'DIR0') {
    return { kind: 'bundled', pages: 0, sizes: [], namesFiles: 'it is in the obsolete multi-file layout (DIR0), whose pages are named in a list, which this service never follows' };
  }
  if (first !== 'DIRM') return undefined;
  const flags = head[24]!;
  const files = head.readUInt16BE(25);
  if (!(flags & DIRM_BUNDLED)) {
    return { kind: 'bundled', pages: 0, sizes: [], namesFiles: 'it is an indirect document: its directory names page files to be read from beside it, which this service never opens' };
  }
  // Version 0 directories keep each component's size (3 bytes) beside its offset.
  const entry = (flags & 0x7f) === 0 ? 7 : 4;
  const offsets = await cached(27, files * entry);
  const components = new Map<number, Component | undefined>();
  let pages = 0;
  for (let i = 0; i + 4 <= offsets.length && i < files * entry; i += entry) {
    const offset = offsets.readUInt32BE(i);
    if (!components.has(offset)) components.set(offset, offset > 0 && offset < size ? await walk.component(offset) : undefined);
    if (components.get(offset)?.type === 'DJVU') pages++;
  }
  const sizes = [...components.values()].flatMap((component) => component?.sizes ?? []);
  return { kind: 'bundled', pages, sizes };
}

/** Reads the structure of the DjVu file at `file`. */
export function readDjvuFile(file: string): Promise<DjvuStructure | undefined> {
  return withReadAt(file, readDjvuStructure);
}

/**
 * Refuses a document that names other files (unsafe_input), holds more than MAX_DJVU_PAGES pages
 * or a page past the pixel cap (input_too_complex).
 */
export function checkDjvuStructure(structure: DjvuStructure, limits: { maxImagePixels: number }): void {
  if (structure.namesFiles) {
    throw new ConvertdError('unsafe_input', `The DjVu document is refused: ${structure.namesFiles}. Send a bundled DjVu, one file holding all its pages (djvmcvt -b makes one).`);
  }
  if (structure.pages > MAX_DJVU_PAGES) {
    throw new ConvertdError('input_too_complex', `The DjVu document has ${structure.pages} pages; this service converts documents of up to ${MAX_DJVU_PAGES} pages.`);
  }
  const largest = largestPage(structure.sizes);
  if (largest && largest.width * largest.height > limits.maxImagePixels) {
    throw new ConvertdError('input_too_complex', `The DjVu page declares ${largest.width} × ${largest.height} pixels, more than this service processes (${limits.maxImagePixels}): send a smaller document.`);
  }
}

/** The page of most pixels. */
export function largestPage(sizes: readonly DjvuPageSize[]): DjvuPageSize | undefined {
  return sizes.reduce<DjvuPageSize | undefined>((largest, size) => !largest || size.width * size.height > largest.width * largest.height ? size : largest, undefined);
}
