// A ZIP archive's central directory, read from its end record: the members' names, methods and
// declared sizes, without inflating anything. Used to identify packages (ooxml-shortcut.ts) and
// to hold an upload's member count and unpacked size to the caps before any engine opens it
// (input-caps.ts).
import { readSync } from 'node:fs';

/** Positional reads of a file or a buffer; a read past the end returns fewer bytes. */
export interface ByteSource {
  readonly size: number;
  read(position: number, length: number): Buffer;
}

export const bufferSource = (buffer: Buffer): ByteSource => ({
  size: buffer.length,
  read: (position, length) => buffer.subarray(position, position + length),
});

/**
 * Positional reads of an open file, synchronous: only the end record and the directory are read,
 * a few kilobytes for an ordinary package, not the whole file.
 */
export function fileSource(fd: number, size: number): ByteSource {
  return {
    size,
    read(position, length) {
      const buffer = Buffer.allocUnsafe(Math.max(0, Math.min(length, size - position)));
      return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, position));
    },
  };
}

export const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
export const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const END_RECORD_BYTES = 22;
const MAX_COMMENT_BYTES = 0xffff;
/** A directory larger than this (tens of thousands of entries) is no office document's. */
const MAX_DIRECTORY_BYTES = 4 * 1024 * 1024;
/** The end record's count when the real one is in a ZIP64 record (65,535 members or more). */
const ZIP64_COUNT = 0xffff;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_LOCATOR_BYTES = 20;
const ZIP64_END_OF_CENTRAL_DIRECTORY = 0x06064b50;
const ZIP64_RECORD_BYTES = 56;
/** A central directory entry's extra field holding its 64-bit sizes and offset. */
const ZIP64_EXTRA = 0x0001;

/** What the end record says: how many members, and where their directory lies. */
interface EndRecord {
  readonly entries: number;
  readonly size: number;
  readonly offset: number;
  /** Where the end record begins: the directory must lie before it. */
  readonly at: number;
}

function endRecord(zip: ByteSource): EndRecord | undefined {
  const tailStart = Math.max(0, zip.size - END_RECORD_BYTES - MAX_COMMENT_BYTES);
  const tail = zip.read(tailStart, zip.size - tailStart);
  for (let at = tail.length - END_RECORD_BYTES; at >= 0; at--) {
    if (tail.readUInt32LE(at) !== END_OF_CENTRAL_DIRECTORY) continue;
    const record = { entries: tail.readUInt16LE(at + 10), size: tail.readUInt32LE(at + 12), offset: tail.readUInt32LE(at + 16), at: tailStart + at };
    const zip64 = record.entries === ZIP64_COUNT || record.size === 0xffffffff || record.offset === 0xffffffff;
    return (zip64 && zip64EndRecord(zip, record.at)) || record;
  }
  return undefined;
}

/**
 * The ZIP64 end record, through the locator just before the end record: XPS printers (and other
 * writers) mark the end record as ZIP64 whatever the archive's size, the real count, size and
 * offset of the directory being there. Undefined when there is none or it does not hold together
 * (the end record's markers then stand: a count of 65,535, a directory not followed).
 */
function zip64EndRecord(zip: ByteSource, endAt: number): EndRecord | undefined {
  const locator = zip.read(endAt - ZIP64_LOCATOR_BYTES, ZIP64_LOCATOR_BYTES);
  if (endAt < ZIP64_LOCATOR_BYTES || locator.length < ZIP64_LOCATOR_BYTES || locator.readUInt32LE(0) !== ZIP64_LOCATOR) return undefined;
  const recordAt = Number(locator.readBigUInt64LE(8));
  if (recordAt + ZIP64_RECORD_BYTES > endAt - ZIP64_LOCATOR_BYTES) return undefined;
  const record = zip.read(recordAt, ZIP64_RECORD_BYTES);
  if (record.length < ZIP64_RECORD_BYTES || record.readUInt32LE(0) !== ZIP64_END_OF_CENTRAL_DIRECTORY) return undefined;
  const [entries, size, offset] = [record.readBigUInt64LE(32), record.readBigUInt64LE(40), record.readBigUInt64LE(48)].map(Number) as [number, number, number];
  return { entries, size, offset, at: recordAt };
}

/** The central directory's bytes and entry count, found through the end record. */
function centralDirectory(zip: ByteSource, end: EndRecord | undefined, maxBytes: number): { bytes: Buffer; entries: number } | undefined {
  if (!end) return undefined;
  const { entries, size, offset } = end;
  // 0xffff / 0xffffffff left here mean a ZIP64 end record that could not be followed.
  if (entries === ZIP64_COUNT || offset === 0xffffffff || size > maxBytes || offset + size > end.at) return undefined;
  return { bytes: zip.read(offset, size), entries };
}

/** One entry of the central directory: its name and where and how its data is stored. */
export interface ZipMember {
  readonly name: string;
  readonly method: number;
  readonly crc: number;
  readonly compressed: number;
  /** The size it declares unpacked (0xffffffff: in a ZIP64 field, 4 GiB or more). */
  readonly uncompressed: number;
  readonly local: number;
}

/** The archive's members, in the central directory's order, or undefined when it cannot be walked. */
export function zipMembers(zip: ByteSource, maxDirectoryBytes = MAX_DIRECTORY_BYTES): ZipMember[] | undefined {
  return startsAsZip(zip) ? walkDirectory(zip, endRecord(zip), maxDirectoryBytes) : undefined;
}

function startsAsZip(zip: ByteSource): boolean {
  const start = zip.read(0, 4);
  return start.length === 4 && start.readUInt32LE(0) === LOCAL_HEADER;
}

function walkDirectory(zip: ByteSource, end: EndRecord | undefined, maxDirectoryBytes: number): ZipMember[] | undefined {
  const directory = centralDirectory(zip, end, maxDirectoryBytes);
  if (!directory) return undefined;
  const { bytes } = directory;
  const members: ZipMember[] = [];
  let at = 0;
  for (let i = 0; i < directory.entries; i++) {
    if (at + 46 > bytes.length || bytes.readUInt32LE(at) !== CENTRAL_HEADER) return undefined;
    const nameBytes = bytes.readUInt16LE(at + 28);
    const next = at + 46 + nameBytes + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
    if (next > bytes.length) return undefined;
    const member = {
      name: bytes.toString('latin1', at + 46, at + 46 + nameBytes),
      method: bytes.readUInt16LE(at + 10),
      crc: bytes.readUInt32LE(at + 16),
      compressed: bytes.readUInt32LE(at + 20),
      uncompressed: bytes.readUInt32LE(at + 24),
      local: bytes.readUInt32LE(at + 42),
    };
    members.push(withZip64Fields(member, bytes.subarray(at + 46 + nameBytes, at + 46 + nameBytes + bytes.readUInt16LE(at + 30))));
    at = next;
  }
  return members;
}

/**
 * A member's sizes and offset from its ZIP64 extra field, for those its entry marks as there
 * (0xffffffff), in the order the format gives them; a value past what a number holds exactly, or
 * a field too short, leaves the marker (4 GiB or more; a local header not found).
 */
function withZip64Fields(member: ZipMember, extra: Buffer): ZipMember {
  const marked = (['uncompressed', 'compressed', 'local'] as const).filter((field) => member[field] === 0xffffffff);
  if (marked.length === 0) return member;
  for (let at = 0; at + 4 <= extra.length; at += 4 + extra.readUInt16LE(at + 2)) {
    if (extra.readUInt16LE(at) !== ZIP64_EXTRA) continue;
    const data = extra.subarray(at + 4, at + 4 + extra.readUInt16LE(at + 2));
    const found: Partial<Record<(typeof marked)[number], number>> = {};
    marked.forEach((field, i) => {
      if (data.length < (i + 1) * 8) return;
      const value = data.readBigUInt64LE(i * 8);
      if (value <= BigInt(Number.MAX_SAFE_INTEGER)) found[field] = Number(value);
    });
    return { ...member, ...found };
  }
  return member;
}

/**
 * How many members a ZIP archive has and how many bytes they declare unpacked, from its central
 * directory; undefined when it is no ZIP archive or its directory cannot be walked. An archive of
 * 65,535 members or more whose ZIP64 end record cannot be followed answers with that count alone.
 */
export function zipTotals(zip: ByteSource, maxDirectoryBytes: number): { members: number; declaredBytes: number } | undefined {
  if (!startsAsZip(zip)) return undefined;
  const end = endRecord(zip);
  if (end?.entries === ZIP64_COUNT) return { members: ZIP64_COUNT, declaredBytes: 0 };
  const members = walkDirectory(zip, end, maxDirectoryBytes);
  if (!members) return undefined;
  // A ZIP64 size (all ones here) counts as what it at least is: 4 GiB.
  return { members: members.length, declaredBytes: members.reduce((sum, member) => sum + member.uncompressed, 0) };
}
