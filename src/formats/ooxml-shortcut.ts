// ZIP packages identified from their central directory: Office Open XML files (docx, xlsx, pptx and
// their kin), as a shortcut, Apple iWork documents (Keynote, Pages, Numbers), which file-type
// cannot tell apart in most of their layouts (see iworkKind below), and XPS and OpenXPS documents,
// which file-type calls plain "zip" (see xpsKind below).
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
import zlib from 'node:zlib';
import { fileTypeFromBuffer, type FileTypeResult } from 'file-type';
import { geodataPackageKind } from './geodata-packages.ts';
import { bufferSource, LOCAL_HEADER, zipMembers, type ByteSource, type ZipMember } from './zip-directory.ts';

const CONTENT_TYPES = '[Content_Types].xml';
/** file-type reads a [Content_Types].xml of at most 1 MiB; a larger one goes the long way. */
const MAX_ENTRY_BYTES = 1024 * 1024;

/**
 * Names that make file-type decide otherwise when it meets them first (OpenDocument's mimetype,
 * Java and extension archives, Android packages, Apple iWork): an archive holding any of them goes
 * the long way, so that the shortcut never answers differently from file-type.
 */
function decidedOtherwise(name: string): boolean {
  return name === 'mimetype' || name.startsWith('META-INF/') || name.startsWith('Index/') || /classes\d*\.dex/.test(name);
}

/** A member's stored (possibly compressed) bytes, found through its local header; undefined when out of bounds. */
function storedData(zip: ByteSource, member: ZipMember, length = member.compressed): Buffer | undefined {
  const localHeader = zip.read(member.local, 30);
  if (localHeader.length < 30 || localHeader.readUInt32LE(0) !== LOCAL_HEADER) return undefined;
  const data = zip.read(member.local + 30 + localHeader.readUInt16LE(26) + localHeader.readUInt16LE(28), Math.min(length, member.compressed));
  return data.length < Math.min(length, member.compressed) ? undefined : data;
}

/** The bytes of a one-entry archive holding only the archive's [Content_Types].xml, or undefined. */
function contentTypesAlone(zip: ByteSource, members: readonly ZipMember[]): Buffer | undefined {
  if (members.some((member) => decidedOtherwise(member.name))) return undefined;
  const entry = members.find((member) => member.name === CONTENT_TYPES);
  if (entry === undefined) return undefined;
  const { method, compressed, uncompressed } = entry;
  if ((method !== 0 && method !== 8) || uncompressed > MAX_ENTRY_BYTES || compressed > MAX_ENTRY_BYTES) return undefined;
  const data = storedData(zip, entry);
  if (!data) return undefined;
  const name = Buffer.from(CONTENT_TYPES, 'latin1');
  const header = Buffer.alloc(30);
  header.writeUInt32LE(LOCAL_HEADER, 0);
  header.writeUInt16LE(20, 4); // version needed to extract: 2.0 (deflate)
  header.writeUInt16LE(0, 6); // flags: no data descriptor, the sizes are in this header
  header.writeUInt16LE(method, 8);
  header.writeUInt32LE(entry.crc, 14); // CRC-32
  header.writeUInt32LE(compressed, 18);
  header.writeUInt32LE(uncompressed, 22);
  header.writeUInt16LE(name.length, 26);
  return Buffer.concat([header, name, data]);
}

/** What file-type makes of the archive's [Content_Types].xml alone, when it names an OOXML kind. */
async function ooxmlKind(zip: ByteSource, members: readonly ZipMember[]): Promise<FileTypeResult | undefined> {
  try {
    const alone = contentTypesAlone(zip, members);
    if (!alone) return undefined;
    const found = await fileTypeFromBuffer(alone);
    return found && found.ext !== 'zip' ? found : undefined;
  } catch {
    return undefined; // a damaged entry: file-type's own walk decides, and reports, as before
  }
}

// Apple iWork (Keynote, Pages, Numbers), as LibreOffice's reader (libetonyek) finds them. A package
// is a ZIP in one of three layouts: the iWork '09 XML (index.apxl for Keynote, index.xml for Pages
// and Numbers, either possibly gzipped), the current binary format with its Index/*.iwa members at
// the top, or a zipped document bundle ("Name.key/" holding Index.zip, an archive of the Index/
// members, beside Metadata/ and previews). A bundle's members all sit under one top folder, which
// is looked through, as libetonyek does. file-type knows only the binary layout at the top, and
// tells its kinds apart by member names alone (a Pages document with a table has Index/Tables/
// members as Numbers has): the document object's own type decides here.

const KEYNOTE: FileTypeResult = { ext: 'key', mime: 'application/vnd.apple.keynote' };
const PAGES: FileTypeResult = { ext: 'pages', mime: 'application/vnd.apple.pages' };
const NUMBERS: FileTypeResult = { ext: 'numbers', mime: 'application/vnd.apple.numbers' };
/** An Index.zip larger than this inflated (its members are the document's objects, not its media) is left to file-type. */
const MAX_INDEX_ARCHIVE_BYTES = 32 * 1024 * 1024;
/** How much of a member's start is read to find its root element or first object. */
const PROBE_BYTES = 4096;
/** The namespaces of the '09 XML root elements (sl:document, ls:document). */
const XML_KINDS: ReadonlyMap<string, FileTypeResult> = new Map([
  ['http://developer.apple.com/namespaces/sl', PAGES],
  ['http://developer.apple.com/namespaces/ls', NUMBERS],
]);

/** The members that make a package an iWork document, one of which libetonyek opens first. */
const MAIN_MEMBERS = new Set(['index.apxl', 'index.apxl.gz', 'index.xml', 'index.xml.gz', 'Index.zip', 'Index/Document.iwa']);

/**
 * The members as libetonyek looks for the main one: at the top, or else inside the single top
 * folder all of them share (a zipped bundle). The binary format's own Index/ folder is no bundle.
 */
function withinBundle(members: readonly ZipMember[]): ZipMember[] {
  if (members.some((member) => MAIN_MEMBERS.has(member.name))) return [...members];
  const first = members[0]?.name ?? '';
  const top = first.slice(0, first.indexOf('/'));
  if (!top || !members.every((member) => member.name === top || member.name.startsWith(`${top}/`))) return [...members];
  return members.map((member) => ({ ...member, name: member.name.slice(top.length + 1) })).filter((member) => member.name !== '');
}

/** The first bytes of a member, uncompressed (stored or deflated; gunzipped too when `gzipped`), or undefined. */
function memberStart(zip: ByteSource, member: ZipMember, gzipped = false): Buffer | undefined {
  const data = storedData(zip, member, PROBE_BYTES);
  if (!data || (member.method !== 0 && member.method !== 8)) return undefined;
  // A deflate stream cut short: what its first bytes give, flushed without an end (at most ~1000x them).
  const partial = { finishFlush: zlib.constants.Z_SYNC_FLUSH, maxOutputLength: 1032 * PROBE_BYTES };
  const inflated = member.method === 8 ? zlib.inflateRawSync(data, partial) : data;
  return gzipped ? zlib.gunzipSync(inflated.subarray(0, PROBE_BYTES), partial) : inflated;
}

/** The whole of a member, inflated up to `limit` bytes, or undefined. */
function memberWhole(zip: ByteSource, member: ZipMember, limit: number): Buffer | undefined {
  if (member.uncompressed > limit || (member.method !== 0 && member.method !== 8)) return undefined;
  const data = storedData(zip, member);
  if (!data) return undefined;
  // The size in the directory may lie: inflating stops at the limit all the same (a RangeError).
  return member.method === 8 ? zlib.inflateRawSync(data, { maxOutputLength: limit }) : data;
}

/** Pages or Numbers '09, by the namespace of index.xml's root element. */
function xmlKind(xml: Buffer): FileTypeResult | undefined {
  const text = xml.toString('utf8');
  const root = /<(?:([\w.-]+):)?document\b([^>]*)/.exec(text.replace(/<\?[\s\S]*?\?>|<!--[\s\S]*?-->/g, ''));
  if (!root) return undefined;
  const declaration = new RegExp(`xmlns${root[1] ? `:${root[1]}` : ''}\\s*=\\s*["']([^"']*)["']`).exec(root[2] ?? '');
  return declaration ? XML_KINDS.get(declaration[1]!) : undefined;
}

/** An unsigned protobuf varint at `at`: its value and the position after it. */
function varint(bytes: Buffer, at: number): [number, number] {
  let value = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (at >= bytes.length) throw new RangeError('truncated varint');
    const byte = bytes[at++]!;
    value += (byte & 0x7f) * 2 ** shift;
    if (!(byte & 0x80)) return [value, at];
  }
  throw new RangeError('varint too long');
}

/** The fields of a protobuf message, as field number → varint value or length-delimited bytes (the last of each). */
function protobufFields(message: Buffer): Map<number, number | Buffer> {
  const fields = new Map<number, number | Buffer>();
  for (let at = 0; at < message.length;) {
    const [key, next] = varint(message, at);
    const wire = key & 7;
    if (wire === 0) {
      const [value, after] = varint(message, next);
      fields.set(key >>> 3, value);
      at = after;
    } else if (wire === 2) {
      const [length, after] = varint(message, next);
      if (after + length > message.length) throw new RangeError('truncated field');
      fields.set(key >>> 3, message.subarray(after, after + length));
      at = after + length;
    } else if (wire === 1 || wire === 5) {
      at = next + (wire === 1 ? 8 : 4);
    } else {
      throw new RangeError('unknown wire type');
    }
  }
  return fields;
}

/**
 * The start of the first chunk of an IWA file: chunks of a 0 byte, a 3-byte length and a raw
 * Snappy block (no framing checksums). Decoded only until `want` bytes are out.
 */
function iwaStart(iwa: Buffer, want: number): Buffer {
  if (iwa.length < 4 || iwa[0] !== 0) throw new RangeError('not an IWA chunk');
  const block = iwa.subarray(4, 4 + iwa.readUIntLE(1, 3));
  const out: number[] = [];
  let at = varint(block, 0)[1]; // the block's uncompressed length
  while (at < block.length && out.length < want) {
    const tag = block[at++]!;
    if ((tag & 3) === 0) {
      let length = tag >> 2;
      if (length >= 60) {
        const bytes = length - 59;
        length = block.readUIntLE(at, bytes);
        at += bytes;
      }
      out.push(...block.subarray(at, at + length + 1));
      at += length + 1;
      continue;
    }
    let length: number;
    let offset: number;
    if ((tag & 3) === 1) {
      length = ((tag >> 2) & 7) + 4;
      offset = ((tag >> 5) << 8) | block[at++]!;
    } else if ((tag & 3) === 2) {
      length = (tag >> 2) + 1;
      offset = block.readUInt16LE(at);
      at += 2;
    } else {
      length = (tag >> 2) + 1;
      offset = block.readUInt32LE(at);
      at += 4;
    }
    if (offset === 0 || offset > out.length) throw new RangeError('copy before the start');
    for (let i = 0; i < length; i++) out.push(out[out.length - offset]!);
  }
  return Buffer.from(out);
}

/**
 * The type of Index/Document.iwa's first object, the document itself (identifier 1): as libetonyek
 * reads it, 10000 is a Pages document and 1 a Keynote or Numbers one. Its ArchiveInfo header
 * (a varint length, then the message) gives the identifier (field 1) and, in its first
 * MessageInfo (field 2), the type (field 1).
 */
function iwaDocumentType(iwa: Buffer): number | undefined {
  const object = iwaStart(iwa, 512);
  const [length, at] = varint(object, 0);
  if (at + length > object.length) return undefined;
  const header = protobufFields(object.subarray(at, at + length));
  const info = header.get(2);
  if (header.get(1) !== 1 || !Buffer.isBuffer(info)) return undefined;
  const type = protobufFields(info).get(1);
  return typeof type === 'number' ? type : undefined;
}

/** Which iWork application wrote the archive, or undefined when it is no iWork document this can tell. */
function iworkKind(zip: ByteSource, members: readonly ZipMember[]): FileTypeResult | undefined {
  const inBundle = withinBundle(members);
  const named = (name: string) => inBundle.find((member) => member.name === name);
  if (named('index.apxl') || named('index.apxl.gz')) return KEYNOTE;
  const xml = named('index.xml') ?? named('index.xml.gz');
  if (xml) {
    const start = memberStart(zip, xml, xml.name.endsWith('.gz'));
    return start && xmlKind(start);
  }
  let index: ByteSource = zip;
  let indexMembers = inBundle;
  const nested = named('Index.zip');
  if (nested) {
    const archive = memberWhole(zip, nested, MAX_INDEX_ARCHIVE_BYTES);
    if (!archive) return undefined;
    index = bufferSource(archive);
    indexMembers = zipMembers(index) ?? [];
  }
  const documentObject = indexMembers.find((member) => member.name === 'Index/Document.iwa');
  const start = documentObject && memberStart(index, documentObject);
  const type = start && iwaDocumentType(start);
  if (type === 10000) return PAGES;
  // Every Keynote theme has master slides; a Numbers document has none.
  if (type === 1) return indexMembers.some((member) => member.name.startsWith('Index/MasterSlide')) ? KEYNOTE : NUMBERS;
  return undefined;
}

// XPS (Microsoft's XML Paper Specification) and OpenXPS (Ecma-388) are Open Packaging Conventions
// packages like OOXML, but their [Content_Types].xml names no main part file-type knows. What makes
// a package a fixed-layout document is the package relationship (_rels/.rels) whose type is
// ".../fixedrepresentation", pointing at the FixedDocumentSequence: Microsoft's namespace for XPS,
// Ecma's for OpenXPS (the content types of the parts are the same in both, so they cannot decide).
// A relationship is read, not a member name guessed: the sequence part may be named anything
// (FixedDocSeq.fdseq, FixedDocumentSequence.fdseq), and a package need not list its parts in order.

const XPS: FileTypeResult = { ext: 'xps', mime: 'application/vnd.ms-xpsdocument' } as FileTypeResult;
const OXPS: FileTypeResult = { ext: 'oxps', mime: 'application/oxps' } as FileTypeResult;
/** A package relationships part larger than this is no XPS document's (theirs list two or three). */
const MAX_RELATIONSHIPS_BYTES = 256 * 1024;
const FIXED_REPRESENTATION = /\bType\s*=\s*["']http:\/\/schemas\.(microsoft\.com\/xps\/2005\/06|openxps\.org\/oxps\/v1\.0)\/fixedrepresentation["']/;

/** XPS or OpenXPS by the fixed-representation relationship of the package, or undefined. */
function xpsKind(zip: ByteSource, members: readonly ZipMember[]): FileTypeResult | undefined {
  // Part names are case-insensitive in a package (ECMA-376 part 2, 9.1.1.1).
  const relationships = members.find((member) => member.name.toLowerCase() === '_rels/.rels');
  const xml = relationships && memberWhole(zip, relationships, MAX_RELATIONSHIPS_BYTES);
  const type = xml && FIXED_REPRESENTATION.exec(xml.toString('utf8'));
  if (!type) return undefined;
  return type[1] === 'openxps.org/oxps/v1.0' ? OXPS : XPS;
}

/**
 * What the archive's central directory shows it to be: an iWork document, an XPS or OpenXPS
 * document by its package relationship, a zipped shapefile by its members, or an OOXML kind by its
 * [Content_Types].xml alone (ooxmlKind); undefined leaves the decision to file-type's walk.
 */
/**
 * A 3MF model: an OPC package ([Content_Types].xml) whose model part is 3D/<name>.model, as the
 * 3MF core specification places it. file-type finds it only by a content type written exactly
 * `ContentType="..."`; assimp's writer puts spaces around the "=", so its 3MF was a plain zip.
 */
function threeMfKind(members: readonly ZipMember[]): FileTypeResult | undefined {
  const names = members.map((member) => member.name);
  if (!names.includes(CONTENT_TYPES) || names.some((name) => /^(?:word|xl|ppt|visio)\//.test(name))) return undefined;
  return names.some((name) => /^3D\/[^/]+\.model$/i.test(name)) ? { ext: '3mf', mime: 'model/3mf' } : undefined;
}

export async function packageKind(zip: ByteSource): Promise<FileTypeResult | undefined> {
  let members: ZipMember[] | undefined;
  try {
    members = zipMembers(zip);
    if (!members) return undefined;
    const iwork = iworkKind(zip, members);
    if (iwork) return iwork;
    const xps = xpsKind(zip, members);
    if (xps) return xps;
    // A zipped shapefile (geodata-packages.ts), which file-type calls plain zip.
    const geodata = geodataPackageKind(members);
    if (geodata) return geodata;
    const model = threeMfKind(members);
    if (model) return model;
  } catch {
    // A damaged member (a deflate or Snappy error, a lying size): file-type's walk decides, as below.
  }
  return members && ooxmlKind(zip, members);
}
