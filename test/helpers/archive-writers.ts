// Archives no installed tool writes, written by hand from their specifications: RAR 4 and RAR 5
// (members stored, as `rar -m0` does), Microsoft Cabinet (one uncompressed folder), LHA (level-2 headers,
// method -lh0-, stored) and Unix ar. Short writers, so the tests can also put in them what no
// honest tool would: names with `..` or absolute paths, symbolic links, device nodes. Each is read
// back by a tool other than libarchive (unar's lsar for RAR and cab, lhasa for LHA, binutils' ar
// and 7-Zip) before a test trusts it. Last, an RPM package around a cpio payload, as rpmbuild
// (not installed here) writes one.
import { crc32, gzipSync } from 'node:zlib';

/** One member: a file (content), a directory, a symbolic link (target) or another Unix type (mode). */
export interface HandMember {
  name: string;
  content?: Buffer | string;
  directory?: boolean;
  symlink?: string;
  /** A full Unix mode with its type bits (0o20644: a character device), for formats that store one. */
  mode?: number;
  /** RAR: the member is marked encrypted (its bytes are not). */
  encrypted?: boolean;
  /** RAR 5: a hard link to this member name. */
  hardlink?: string;
}

const bytesOf = (member: HandMember) => Buffer.from(member.symlink ?? member.content ?? '');
const unixMode = (member: HandMember) => member.mode ?? (member.directory ? 0o40755 : member.symlink !== undefined ? 0o120777 : 0o100644);

/** 2024-05-01 10:30:00 as an MS-DOS date and time. */
const DOS_DATE = ((2024 - 1980) << 9) | (5 << 5) | 1;
const DOS_TIME = (10 << 11) | (30 << 5);

/** RAR 4 (the format of RAR 2.9 to 4.x): marker, archive header, a stored header and data per member, end. */
export function rar4(members: HandMember[]): Buffer {
  const block = (type: number, flags: number, body: Buffer) => {
    const head = Buffer.alloc(7);
    head[2] = type;
    head.writeUInt16LE(flags, 3);
    head.writeUInt16LE(7 + body.length, 5);
    const header = Buffer.concat([head, body]);
    header.writeUInt16LE(crc32(header.subarray(2)) & 0xffff, 0);
    return header;
  };
  const parts = [Buffer.from('Rar!\x1a\x07\x00', 'latin1'), block(0x73, 0, Buffer.alloc(6))];
  for (const member of members) {
    const data = member.directory ? Buffer.alloc(0) : bytesOf(member);
    // RAR separates directories with a backslash whatever the host.
    const name = Buffer.from(member.name.replaceAll('/', '\\'), 'utf8');
    const body = Buffer.alloc(25);
    body.writeUInt32LE(data.length, 0); // packed size
    body.writeUInt32LE(data.length, 4); // unpacked size
    body[8] = 3; // host OS: Unix, so the attributes are a Unix mode
    body.writeUInt32LE(crc32(data), 9);
    body.writeUInt32LE((DOS_DATE << 16) | DOS_TIME, 13);
    body[17] = 20; // version needed to unpack: 2.0
    body[18] = 0x30; // method: stored
    body.writeUInt16LE(name.length, 19);
    body.writeUInt32LE(unixMode(member), 21);
    // 0x8000: a data area follows; 0xE0: a directory; 0x200: a Unicode name (UTF-8 when it holds no NUL); 0x04: encrypted.
    const flags = 0x8000 | 0x200 | (member.directory ? 0xe0 : 0) | (member.encrypted ? 0x04 : 0);
    parts.push(block(0x74, flags, Buffer.concat([body, name])), data);
  }
  parts.push(block(0x7b, 0x4000, Buffer.alloc(0)));
  return Buffer.concat(parts);
}

/** RAR 5's variable-length integer: 7 bits a byte, low first, the top bit saying more follow. */
function vint(value: number): Buffer {
  const bytes: number[] = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    bytes.push(byte);
  } while (value > 0);
  return Buffer.from(bytes);
}

/** A RAR 5 block: CRC-32 of what follows it, the size of the rest, then the rest (type first). */
function rar5Block(rest: Buffer): Buffer {
  const sized = Buffer.concat([vint(rest.length), rest]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32LE(crc32(sized), 0);
  return Buffer.concat([crc, sized]);
}

/**
 * RAR 5: signature, main header, a file header per member (stored; a symbolic link or hard link is
 * a redirection record in the header's extra area, an encrypted member an encryption record), end.
 */
export function rar5(members: HandMember[]): Buffer {
  const parts = [Buffer.from('Rar!\x1a\x07\x01\x00', 'latin1'), rar5Block(Buffer.concat([vint(1), vint(0), vint(0)]))];
  for (const member of members) {
    const data = member.directory || member.symlink !== undefined || member.hardlink !== undefined ? Buffer.alloc(0) : bytesOf(member);
    const records: Buffer[] = [];
    const record = (type: number, body: Buffer) => Buffer.concat([vint(vint(type).length + body.length), vint(type), body]);
    if (member.encrypted) records.push(record(0x01, Buffer.concat([vint(0), vint(0), Buffer.from([15]), Buffer.alloc(16, 1), Buffer.alloc(16, 2)])));
    const target = member.symlink ?? member.hardlink;
    if (target !== undefined) {
      const name = Buffer.from(target, 'utf8');
      records.push(record(0x05, Buffer.concat([vint(member.symlink !== undefined ? 1 : 4), vint(0), vint(name.length), name])));
    }
    const extra = Buffer.concat(records);
    const name = Buffer.from(member.name, 'utf8');
    const fileFlags = (member.directory ? 0x01 : 0) | 0x02 | 0x04; // directory; mtime and CRC-32 present
    const fixed = Buffer.alloc(8);
    fixed.writeUInt32LE(Date.UTC(2024, 4, 1, 10, 30) / 1000, 0);
    fixed.writeUInt32LE(crc32(data), 4);
    const headerFlags = (extra.length > 0 ? 0x01 : 0) | 0x02; // extra area; data area
    const header = Buffer.concat([
      vint(2), vint(headerFlags), ...(extra.length > 0 ? [vint(extra.length)] : []), vint(data.length),
      vint(fileFlags), vint(data.length), vint(unixMode(member)), fixed,
      vint(0), // compression: version 0, stored
      vint(1), // host OS: Unix
      vint(name.length), name, extra,
    ]);
    parts.push(rar5Block(header), data);
  }
  parts.push(rar5Block(Buffer.concat([vint(5), vint(0), vint(0)])));
  return Buffer.concat(parts);
}

/** A cabinet of one uncompressed folder; names in UTF-8 with `\` between directories. No directory or link entries exist in the format. */
export function cab(members: HandMember[]): Buffer {
  const files = members.filter((m) => !m.directory);
  const names = files.map((m) => Buffer.from(`${m.name.replaceAll('/', '\\')}\0`, 'utf8'));
  const headerSize = 36 + 8;
  const filesSize = names.reduce((sum, name) => sum + 16 + name.length, 0);
  const all = Buffer.concat(files.map(bytesOf));
  const blocks: Buffer[] = [];
  for (let at = 0; at < all.length || blocks.length === 0; at += 32768) {
    const data = all.subarray(at, at + 32768);
    const head = Buffer.alloc(8); // checksum 0: none
    head.writeUInt16LE(data.length, 4);
    head.writeUInt16LE(data.length, 6);
    blocks.push(Buffer.concat([head, data]));
    if (all.length === 0) break;
  }
  const dataStart = headerSize + filesSize;
  const total = dataStart + blocks.reduce((sum, b) => sum + b.length, 0);
  const header = Buffer.alloc(headerSize);
  header.write('MSCF', 0, 'latin1');
  header.writeUInt32LE(total, 8);
  header.writeUInt32LE(headerSize, 16); // the first file entry
  header[24] = 3; // version 1.3
  header[25] = 1;
  header.writeUInt16LE(1, 26); // one folder
  header.writeUInt16LE(files.length, 28);
  header.writeUInt32LE(dataStart, 36); // the folder's first data block
  header.writeUInt16LE(blocks.length, 40);
  let offset = 0;
  const entries = files.map((member, i) => {
    const entry = Buffer.alloc(16);
    const size = bytesOf(member).length;
    entry.writeUInt32LE(size, 0);
    entry.writeUInt32LE(offset, 4);
    entry.writeUInt16LE(DOS_DATE, 10);
    entry.writeUInt16LE(DOS_TIME, 12);
    entry.writeUInt16LE(0x20 | 0x80, 14); // archive; the name is UTF-8
    offset += size;
    return Buffer.concat([entry, names[i]!]);
  });
  return Buffer.concat([header, ...entries, ...blocks]);
}

/** CRC-16/ARC, LHA's checksum of a member's data. */
function crc16(data: Buffer): number {
  let crc = 0;
  for (const byte of data) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

/** LHA with level-2 headers, stored (-lh0-, -lhd- for directories), made on Unix; a link is "name|target". */
export function lzh(members: HandMember[]): Buffer {
  const parts: Buffer[] = [];
  for (const member of members) {
    const data = member.directory || member.symlink !== undefined ? Buffer.alloc(0) : bytesOf(member);
    const slash = member.name.lastIndexOf('/');
    const dir = member.directory ? `${member.name.replace(/\/$/, '')}/` : slash >= 0 ? member.name.slice(0, slash + 1) : '';
    const base = member.directory ? '' : `${member.name.slice(slash + 1)}${member.symlink !== undefined ? `|${member.symlink}` : ''}`;
    const mode = Buffer.alloc(2);
    mode.writeUInt16LE(unixMode(member) & 0xffff, 0);
    // The directory name: UTF-8 parts, each followed by 0xFF.
    // An absolute directory starts with the separator.
    const dirBytes = Buffer.concat(dir.split('/').slice(0, -1).flatMap((part) => [Buffer.from(part, 'utf8'), Buffer.from([0xff])]));
    const chained = chainLevel2([
      // The header's own CRC-16, patched in below (libarchive checks it).
      { type: 0x00, body: Buffer.alloc(2) },
      ...(base ? [{ type: 0x01, body: Buffer.from(base, 'utf8') }] : []),
      ...(dir ? [{ type: 0x02, body: dirBytes }] : []),
      { type: 0x50, body: mode },
    ]);
    const fixed = Buffer.alloc(26);
    fixed.write(member.directory ? '-lhd-' : '-lh0-', 2, 'latin1');
    fixed.writeUInt32LE(data.length, 7);
    fixed.writeUInt32LE(data.length, 11);
    fixed.writeUInt32LE(Date.UTC(2024, 4, 1, 10, 30) / 1000, 15);
    fixed[19] = 0x20;
    fixed[20] = 2; // header level
    fixed.writeUInt16LE(crc16(data), 21);
    fixed[23] = 'U'.charCodeAt(0);
    fixed.writeUInt16LE(chained.first, 24);
    const header = Buffer.concat([fixed, chained.bytes]);
    header.writeUInt16LE(header.length, 0);
    header.writeUInt16LE(crc16(header), 26 + 1);
    parts.push(header, data);
  }
  parts.push(Buffer.alloc(1));
  return Buffer.concat(parts);
}

/** Level-2 extended headers: each is type, body, then the size of the next one (0 at the end). */
function chainLevel2(extensions: Array<{ type: number; body: Buffer }>): { first: number; bytes: Buffer } {
  const sizes = extensions.map((e) => 1 + e.body.length + 2);
  const bytes = Buffer.concat(extensions.map((e, i) => {
    const next = Buffer.alloc(2);
    next.writeUInt16LE(sizes[i + 1] ?? 0, 0);
    return Buffer.concat([Buffer.from([e.type]), e.body, next]);
  }));
  return { first: sizes[0] ?? 0, bytes };
}

/** A Unix ar archive (BSD long names, "#1/<length>", so any name fits); a Debian package when debian-binary comes first. */
export function ar(members: HandMember[]): Buffer {
  const parts = [Buffer.from('!<arch>\n', 'latin1')];
  for (const member of members) {
    const name = Buffer.from(member.name, 'utf8');
    const data = Buffer.concat([name, bytesOf(member)]);
    const field = (text: string, width: number) => text.padEnd(width, ' ').slice(0, width);
    const header = `${field(`#1/${name.length}`, 16)}${field('1714559400', 12)}${field('0', 6)}${field('0', 6)}${field(unixMode(member).toString(8), 8)}${field(String(data.length), 10)}\`\n`;
    parts.push(Buffer.from(header, 'latin1'), data, data.length % 2 ? Buffer.from('\n') : Buffer.alloc(0));
  }
  return Buffer.concat(parts);
}

/**
 * An RPM package (format version 3, what rpm 4 writes): the 96-byte lead, the signature header
 * (padded to 8 bytes), the main header naming the payload's format and compressor, then the
 * gzip-compressed cpio archive given (SVR4 "newc", as rpmbuild writes). The headers hold only the
 * tags a reader needs to find and unpack the payload: no digests, so `rpm -K` would find none.
 */
export function rpm(cpio: Buffer, name = 'convertd-sample'): Buffer {
  const lead = Buffer.alloc(96);
  lead.writeUInt32BE(0xedabeedb, 0);
  lead[4] = 3; // major version
  lead.writeUInt16BE(0, 6); // type: binary package
  lead.writeUInt16BE(1, 8); // architecture number
  lead.write(`${name}-1.0-1`, 10, 65, 'latin1');
  lead.writeUInt16BE(1, 76); // operating system number: Linux
  lead.writeUInt16BE(5, 78); // signature type: a header structure
  /** A header structure of string tags (type 6, one value each), in tag order. */
  const header = (tags: Array<[number, string]>) => {
    const entries = Buffer.alloc(16 * tags.length);
    const store: Buffer[] = [];
    let offset = 0;
    tags.forEach(([tag, value], i) => {
      entries.writeUInt32BE(tag, 16 * i);
      entries.writeUInt32BE(6, 16 * i + 4);
      entries.writeUInt32BE(offset, 16 * i + 8);
      entries.writeUInt32BE(1, 16 * i + 12);
      const data = Buffer.from(`${value}\0`, 'latin1');
      store.push(data);
      offset += data.length;
    });
    const intro = Buffer.alloc(16);
    intro.writeUInt32BE(0x8eade801, 0);
    intro.writeUInt32BE(tags.length, 8);
    intro.writeUInt32BE(offset, 12);
    return Buffer.concat([intro, entries, ...store]);
  };
  const signature = header([]);
  const padding = Buffer.alloc((8 - (signature.length % 8)) % 8);
  // NAME, VERSION, RELEASE, PAYLOADFORMAT, PAYLOADCOMPRESSOR.
  const main = header([[1000, name], [1001, '1.0'], [1002, '1'], [1124, 'cpio'], [1125, 'gzip']]);
  return Buffer.concat([lead, signature, padding, main, gzipSync(cpio)]);
}
