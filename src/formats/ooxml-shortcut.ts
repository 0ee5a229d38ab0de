// A shortcut for identifying Office Open XML files (docx, xlsx, pptx and their kin).
//
// file-type reads a ZIP archive entry by entry from the front, as a stream would, and decides an
// OOXML file by its [Content_Types].xml. LibreOffice writes that entry last, and writes every entry
// with a data descriptor (sizes after the data), so file-type has to search each entry's data byte
// by byte for the descriptor before it can step to the next: 8-10 ms of the event loop for an
// 80 KB docx or pptx that LibreOffice saved, 145 ms for a 6.7 MB one, against under 1 ms for the
// same documents saved by pandoc (BENCHMARKS.md, change 30). Every upload LibreOffice wrote, and
// every OOXML result our own LibreOffice writes (outputs are checked by their content), paid that.
//
// The archive's central directory, at its end, says where [Content_Types].xml is. Copied alone
// into a one-entry archive, with its sizes in its header, it lets file-type decide with its own
// rules (the main part's content type: docx, docm, dotx, pptx, ...) after one entry. Anything
// unexpected (ZIP64, no such entry, a name that makes file-type decide otherwise, a method other
// than stored or deflated, offsets out of bounds, an answer of plain "zip") gives undefined, and
// file-type reads the whole file as before.
import { fileTypeFromBuffer, type FileTypeResult } from 'file-type';

/** Positional reads of a file or a buffer; a read past the end returns fewer bytes. */
export interface ByteSource {
  readonly size: number;
  read(position: number, length: number): Buffer;
}

export const bufferSource = (buffer: Buffer): ByteSource => ({
  size: buffer.length,
  read: (position, length) => buffer.subarray(position, position + length),
});

const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const END_RECORD_BYTES = 22;
const MAX_COMMENT_BYTES = 0xffff;
const CONTENT_TYPES = '[Content_Types].xml';
/** file-type reads a [Content_Types].xml of at most 1 MiB; a larger one goes the long way. */
const MAX_ENTRY_BYTES = 1024 * 1024;
/** A directory larger than this (tens of thousands of entries) is no office document's. */
const MAX_DIRECTORY_BYTES = 4 * 1024 * 1024;

/** The central directory's bytes and entry count, found through the end record. */
function centralDirectory(zip: ByteSource): { bytes: Buffer; entries: number } | undefined {
  const tailStart = Math.max(0, zip.size - END_RECORD_BYTES - MAX_COMMENT_BYTES);
  const tail = zip.read(tailStart, zip.size - tailStart);
  for (let at = tail.length - END_RECORD_BYTES; at >= 0; at--) {
    if (tail.readUInt32LE(at) !== END_OF_CENTRAL_DIRECTORY) continue;
    const entries = tail.readUInt16LE(at + 10);
    const size = tail.readUInt32LE(at + 12);
    const offset = tail.readUInt32LE(at + 16);
    // 0xffff / 0xffffffff mean ZIP64: left to file-type.
    if (entries === 0xffff || offset === 0xffffffff || size > MAX_DIRECTORY_BYTES || offset + size > tailStart + at) return undefined;
    return { bytes: zip.read(offset, size), entries };
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
function contentTypesAlone(zip: ByteSource): Buffer | undefined {
  const directory = centralDirectory(zip);
  if (!directory) return undefined;
  const { bytes } = directory;
  let entry: number | undefined;
  let at = 0;
  for (let i = 0; i < directory.entries; i++) {
    if (at + 46 > bytes.length || bytes.readUInt32LE(at) !== CENTRAL_HEADER) return undefined;
    const nameBytes = bytes.readUInt16LE(at + 28);
    const next = at + 46 + nameBytes + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
    if (next > bytes.length) return undefined;
    const name = bytes.toString('latin1', at + 46, at + 46 + nameBytes);
    if (decidedOtherwise(name)) return undefined;
    if (name === CONTENT_TYPES) entry = at;
    at = next;
  }
  if (entry === undefined) return undefined;
  const method = bytes.readUInt16LE(entry + 10);
  const compressed = bytes.readUInt32LE(entry + 20);
  const uncompressed = bytes.readUInt32LE(entry + 24);
  const local = bytes.readUInt32LE(entry + 42);
  if ((method !== 0 && method !== 8) || uncompressed > MAX_ENTRY_BYTES || compressed > MAX_ENTRY_BYTES) return undefined;
  const localHeader = zip.read(local, 30);
  if (localHeader.length < 30 || localHeader.readUInt32LE(0) !== LOCAL_HEADER) return undefined;
  const data = zip.read(local + 30 + localHeader.readUInt16LE(26) + localHeader.readUInt16LE(28), compressed);
  if (data.length < compressed) return undefined;
  const name = Buffer.from(CONTENT_TYPES, 'latin1');
  const header = Buffer.alloc(30);
  header.writeUInt32LE(LOCAL_HEADER, 0);
  header.writeUInt16LE(20, 4); // version needed to extract: 2.0 (deflate)
  header.writeUInt16LE(0, 6); // flags: no data descriptor, the sizes are in this header
  header.writeUInt16LE(method, 8);
  header.writeUInt32LE(bytes.readUInt32LE(entry + 16), 14); // CRC-32
  header.writeUInt32LE(compressed, 18);
  header.writeUInt32LE(uncompressed, 22);
  header.writeUInt16LE(name.length, 26);
  return Buffer.concat([header, name, data]);
}

/** What file-type makes of the archive's [Content_Types].xml alone, when it names an OOXML kind. */
export async function ooxmlKind(zip: ByteSource): Promise<FileTypeResult | undefined> {
  try {
    const start = zip.read(0, 4);
    if (start.length < 4 || start.readUInt32LE(0) !== LOCAL_HEADER) return undefined;
    const alone = contentTypesAlone(zip);
    if (!alone) return undefined;
    const found = await fileTypeFromBuffer(alone);
    return found && found.ext !== 'zip' ? found : undefined;
  } catch {
    return undefined; // a damaged entry: file-type's own walk decides, and reports, as before
  }
}
