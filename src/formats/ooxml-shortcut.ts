// A shortcut for identifying Office Open XML files (docx, xlsx, pptx and their kin) held in memory.
//
// file-type reads a ZIP archive entry by entry from the front, as a stream would, and decides an
// OOXML file by its [Content_Types].xml. LibreOffice writes that entry last, and writes every entry
// with a data descriptor (sizes after the data), so file-type has to search each entry's data byte
// by byte for the descriptor before it can step to the next: 8-10 ms of the event loop for an
// 80 KB docx or pptx that LibreOffice saved, against 0.6 ms for the same document saved by
// python-docx (BENCHMARKS.md, change 30). Every upload LibreOffice wrote, and every OOXML result
// our own LibreOffice writes (outputs are checked by their content), paid that, growing with size.
//
// A file held whole has its central directory at hand, which says where [Content_Types].xml is.
// Copied alone into a one-entry archive, with its sizes in its header, it lets file-type decide
// with its own rules (the main part's content type: docx, docm, dotx, pptx, ...) after one entry.
// Anything unexpected (ZIP64, no such entry, a method other than stored or deflated, offsets out of
// bounds, an answer of plain "zip") returns undefined, and file-type reads the whole file as before.
import { fileTypeFromBuffer, type FileTypeResult } from 'file-type';

const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const END_RECORD_BYTES = 22;
const MAX_COMMENT_BYTES = 0xffff;
const CONTENT_TYPES = '[Content_Types].xml';
/** file-type reads a [Content_Types].xml of at most 1 MiB; a larger one goes the long way. */
const MAX_ENTRY_BYTES = 1024 * 1024;

/** Where the central directory starts and how many entries it has, from the end record. */
function centralDirectory(zip: Buffer): { offset: number; entries: number } | undefined {
  const lowest = Math.max(0, zip.length - END_RECORD_BYTES - MAX_COMMENT_BYTES);
  for (let at = zip.length - END_RECORD_BYTES; at >= lowest; at--) {
    if (zip.readUInt32LE(at) !== END_OF_CENTRAL_DIRECTORY) continue;
    const entries = zip.readUInt16LE(at + 10);
    const offset = zip.readUInt32LE(at + 16);
    // 0xffff / 0xffffffff mean ZIP64, which an archive this small never needs.
    if (entries === 0xffff || offset === 0xffffffff || offset >= at) return undefined;
    return { offset, entries };
  }
  return undefined;
}

/**
 * Names that make file-type decide otherwise when it meets them first (OpenDocument's mimetype,
 * Java and extension archives, Android packages, Apple iWork): an archive holding any of them goes
 * the long way, so that the shortcut never answers differently from file-type.
 */
function decidedOtherwise(name: string): boolean {
  return name === 'mimetype' || name.startsWith('META-INF/') || name.startsWith('Index/') || /classes\d*\.dex/.test(name);
}

/** The bytes of a one-entry archive holding only the archive's [Content_Types].xml, or undefined. */
function contentTypesAlone(zip: Buffer): Buffer | undefined {
  const directory = centralDirectory(zip);
  if (!directory) return undefined;
  let entry: number | undefined;
  let at = directory.offset;
  for (let i = 0; i < directory.entries; i++) {
    if (at + 46 > zip.length || zip.readUInt32LE(at) !== CENTRAL_HEADER) return undefined;
    const nameBytes = zip.readUInt16LE(at + 28);
    const next = at + 46 + nameBytes + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    if (next > zip.length) return undefined;
    const name = zip.toString('latin1', at + 46, at + 46 + nameBytes);
    if (decidedOtherwise(name)) return undefined;
    if (name === CONTENT_TYPES) entry = at;
    at = next;
  }
  if (entry === undefined) return undefined;
  const method = zip.readUInt16LE(entry + 10);
  const compressed = zip.readUInt32LE(entry + 20);
  const uncompressed = zip.readUInt32LE(entry + 24);
  const local = zip.readUInt32LE(entry + 42);
  if ((method !== 0 && method !== 8) || uncompressed > MAX_ENTRY_BYTES) return undefined;
  if (local + 30 > zip.length || zip.readUInt32LE(local) !== LOCAL_HEADER) return undefined;
  const dataStart = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
  if (dataStart + compressed > zip.length) return undefined;
  const name = Buffer.from(CONTENT_TYPES, 'latin1');
  const header = Buffer.alloc(30);
  header.writeUInt32LE(LOCAL_HEADER, 0);
  header.writeUInt16LE(20, 4); // version needed to extract: 2.0 (deflate)
  header.writeUInt16LE(0, 6); // flags: no data descriptor, the sizes are in this header
  header.writeUInt16LE(method, 8);
  header.writeUInt32LE(zip.readUInt32LE(entry + 16), 14); // CRC-32
  header.writeUInt32LE(compressed, 18);
  header.writeUInt32LE(uncompressed, 22);
  header.writeUInt16LE(name.length, 26);
  return Buffer.concat([header, name, zip.subarray(dataStart, dataStart + compressed)]);
}

/** What file-type makes of the archive's [Content_Types].xml alone, when it names an OOXML kind. */
export async function ooxmlKind(zip: Buffer): Promise<FileTypeResult | undefined> {
  if (zip.length < 4 || zip.readUInt32LE(0) !== LOCAL_HEADER) return undefined;
  try {
    const alone = contentTypesAlone(zip);
    if (!alone) return undefined;
    const found = await fileTypeFromBuffer(alone);
    return found && found.ext !== 'zip' ? found : undefined;
  } catch {
    return undefined; // a damaged entry: file-type's own walk decides, and reports, as before
  }
}
