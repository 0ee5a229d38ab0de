// Archives: every format libarchive reads (zip, 7z, tar and its compressed kinds, cpio, ISO 9660,
// RAR 4 and 5, cab, LHA, xar, ar, Debian and RPM packages) and three only 7-Zip reads (SquashFS,
// WIM, ARJ) to every format libarchive writes well (zip, 7z, tar, tar.gz/bz2/xz/zst/lz/lzma/Z/lz4,
// cpio, ISO 9660), without ever unpacking to disk. Not
// WARC: libarchive 3.6 reads its records in a listing, but copying one larger than its read-ahead
// (about 64 KiB) into another archive fails ("Truncated input file"), even for its own WARCs.
//
// A sandboxed reader turns the upload into a sequence of entries; this module checks them
// one by one and passes on only regular files and directories whose names stay inside the
// archive, counting the bytes that really flow (lying size headers, zip bombs and entry floods
// stop at the caps while streaming); a second sandboxed bsdtar writes what passed in the target
// format (`bsdtar -cf output @-`).
//
// The reader is bsdtar (`bsdtar -cf - @input`: one tar stream), except for ar archives and Debian
// packages, which this module reads itself (readAr), and RAR, whose headers it first looks
// through for encryption (rarEncrypted). libarchive 3.6, Debian 12's, lacks
// some methods 7-Zip writes: Deflate64 in a 7z archive fails there with "bsdtar: (null)"
// (libarchive reads Deflate64 only in zip). When bsdtar cannot read a 7z or a zip, 7-Zip (Debian's
// `7zip`, 7zz, the maintained 7-Zip 22+; p7zip is abandoned since 16.02) reads it instead: `7zz l`
// lists the members, each checked before one byte is extracted, then `7zz x -so` streams the
// files' contents back to back, which this module cuts at the listed sizes and checks against
// the listed CRC-32s (a lying listing, a member missing or out of order fails the check). A
// method neither tool has is unsupported_format, naming the method: the file is not damaged.
//
// Nested archives are just files: never opened. Links, devices and fifos are refused, since a
// later unpacking by the user would follow them (docs/security.md#archives). Nothing ever waits for a
// password: stdin is our own stream (bsdtar) or closed with an empty password given (7zz), and an
// encrypted archive fails at once.
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Readable, Transform, type TransformCallback, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';
import tar from 'tar-stream';
import { ConvertdError } from '../../errors.ts';
import { tooExpanded, tooManyMembers } from '../../formats/input-caps.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE, type RunOptions, type RunResult } from '../../process/runner.ts';
import type { ArchiveMember, ArchiveMembers } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import { narrow, numberOption, OPTIONS, type OptionSpec } from '../options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { memberName } from '../../formats/member-names.ts';

const BSDTAR = '/usr/bin/bsdtar';
const SEVEN_ZIP = '/usr/bin/7zz';
/** Formats 7-Zip reads where bsdtar cannot (see the top). */
const SEVEN_ZIP_READS = new Set(['7z', 'zip']);
/**
 * Formats only 7-Zip reads (libarchive 3.6 has no reader for them), with 7-Zip's name for each:
 * told to 7-Zip (`-t`) so that it reads the upload as the format it was sniffed as, never as
 * whatever else it might also parse.
 */
const SEVEN_ZIP_ONLY: Record<string, string> = { squashfs: 'SquashFS', wim: 'wim', arj: 'arj' };
/**
 * bsdtar's options to write each format it writes well: every member kept (names, directories,
 * contents). Left out: xar (libarchive's writer is marked experimental), ar (no directories: a
 * tree would be flattened), WARC (files only, no directories), shar and mtree (not archives of
 * contents one unpacks with common tools).
 */
const WRITE_OPTIONS: Record<string, string[]> = {
  zip: ['--format', 'zip'],
  '7z': ['--format', '7zip'],
  tar: ['--format', 'pax'],
  'tar.gz': ['--format', 'pax', '--gzip'],
  'tar.bz2': ['--format', 'pax', '--bzip2'],
  'tar.xz': ['--format', 'pax', '--xz'],
  'tar.zst': ['--format', 'pax', '--zstd'],
  'tar.lz': ['--format', 'pax', '--lzip'],
  'tar.lzma': ['--format', 'pax', '--lzma'],
  'tar.z': ['--format', 'pax', '-Z'],
  'tar.lz4': ['--format', 'pax', '--lz4'],
  // SVR4 "newc", what cpio(1) and the Linux initramfs write by default.
  cpio: ['--format', 'newc'],
  // Rock Ridge (long names, deep trees) and Joliet on, libarchive's defaults.
  iso: ['--format', 'iso9660'],
};
const WRITES = Object.keys(WRITE_OPTIONS);
/**
 * What libarchive reads besides what it writes. RAR (4 and 5) has no encryption support there: an
 * encrypted one is encrypted_input (rarEncrypted); a Debian package is the ar archive it is.
 */
const READ_ONLY = ['rar', 'cab', 'lzh', 'xar', 'ar', 'deb', 'rpm'];
const READS = [...WRITES, ...READ_ONLY, ...Object.keys(SEVEN_ZIP_ONLY)];
/**
 * One-member archives (sample.txt, "convertd") of the formats neither bsdtar nor any other tool
 * here writes, for the start-up probe: made by test/helpers/archive-writers.ts (RAR 4 stored, a
 * cabinet of one uncompressed folder, LHA level 2 -lh0-, an RPM package).
 */
const PROBE_SAMPLES: Record<string, string> = {
  rar: 'UmFyIRoHAM+QcwAADQAAAAAAAACgSnQAgioACAAAAAgAAAADxJ3VWMBToVgUMAoApIEAAHNhbXBsZS50eHRjb252ZXJ0ZMQ9ewBABwA=',
  cab: 'TVNDRgAAAABXAAAAAAAAACwAAAAAAAAAAwEBAAEAAAAAAAAARwAAAAEAAAAIAAAAAAAAAAAAoVjAU6AAc2FtcGxlLnR4dAAAAAAACAAIAGNvbnZlcnRk',
  lzh: 'MQAtbGgwLQgAAAAIAAAAqBkyZiACgEJVBQAAr2gNAAFzYW1wbGUudHh0BQBQpIEAAGNvbnZlcnRkAA==',
  // An RPM package around a gzip-compressed newc cpio of the one member (archive-writers.ts's rpm).
  rpm: '7avu2wMAAAAAAWNvbnZlcnRkLXNhbXBsZS0xLjAtMQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABAAUAAAAAAAAAAAAAAAAAAAAAjq3oAQAAAAAAAAAAAAAAAI6t6AEAAAAAAAAABQAAACAAAAPoAAAABgAAAAAAAAABAAAD6QAAAAYAAAAQAAAAAQAAA+oAAAAGAAAAFAAAAAEAAARkAAAABgAAABYAAAABAAAEZQAAAAYAAAAbAAAAAWNvbnZlcnRkLXNhbXBsZQAxLjAAMQBjcGlvAGd6aXAAH4sIAAAAAAAAAzMwNzA3MDQwMDFPNE1KNTAwMLAwTDQxwA4MzZIMzMzTzFKgfAsIlZaKQz0MJMEYxYm5BTmpeiUVJQwMDAzJ+XllqUUlKQZQNxAFiFWH0w0hQY6ePq5BioqKIDcAAF8KoGoAAQAA',
};

/**
 * The compression level each target takes (bsdtar's `--options <module>:compression-level=N`), with
 * libarchive's own default, which is what a job without the option gets: the archive as before.
 * bzip2 has no level 0 (libarchive writes 1); plain tar compresses nothing.
 */
const COMPRESSION: Record<string, { module: string; spec: OptionSpec }> = {
  zip: { module: 'zip', spec: narrow(OPTIONS.compression_level, { default: 6 }) },
  '7z': { module: '7zip', spec: narrow(OPTIONS.compression_level, { default: 6, description: 'Compression level of the 7z archive (LZMA): 0 fastest to 9 smallest and slowest.' }) },
  'tar.gz': { module: 'gzip', spec: narrow(OPTIONS.compression_level, { default: 6 }) },
  'tar.bz2': { module: 'bzip2', spec: narrow(OPTIONS.compression_level, { minimum: 1, default: 9, description: 'Compression level of the bzip2 stream: 1 fastest to 9 smallest (bzip2 has no level 0).' }) },
  'tar.xz': { module: 'xz', spec: narrow(OPTIONS.compression_level, { default: 6 }) },
  'tar.zst': { module: 'zstd', spec: narrow(OPTIONS.compression_level, { minimum: 1, default: 3, description: 'Compression level of the Zstandard stream: 1 fastest to 9 (zstd\'s own scale, which goes on to 19; 3 is its default).' }) },
  'tar.lz': { module: 'lzip', spec: narrow(OPTIONS.compression_level, { default: 6 }) },
  'tar.lzma': { module: 'lzma', spec: narrow(OPTIONS.compression_level, { default: 6 }) },
  'tar.lz4': { module: 'lz4', spec: narrow(OPTIONS.compression_level, { minimum: 1, default: 1, description: 'Compression level of the LZ4 stream: 1 fastest (LZ4\'s default) to 9 smallest (LZ4 HC).' }) },
};

/**
 * Target zip with `each` (api-contract.md, "Several files in one result"): every member that can
 * become the format is converted by its own route (src/jobs/batch.ts, through the capability
 * below), the rest carried. The registry fills `each`'s values with every format some engine
 * writes (an archive may hold anything). The image options reach every member's conversion that
 * takes them.
 */
const EACH_MEMBER: OptionSpec[] = [
  narrow(OPTIONS.each, { description: 'Convert every member of the archive that can become this format (by its own route, with the other options given here), keeping its path with the new extension; members that cannot (or whose conversion fails) are carried unchanged and listed in the progress record\'s skipped. Without it, the archive is repacked.' }),
  ...[OPTIONS.width, OPTIONS.height, OPTIONS.fit, OPTIONS.quality, OPTIONS.strip, OPTIONS.background, OPTIONS.pixel_density]
    .map((spec): OptionSpec => ({ ...spec, description: `With each: ${spec.description.charAt(0).toLowerCase()}${spec.description.slice(1)} Applied to every member whose conversion takes it.` })),
];

function edgeOptions(to: string): OptionSpec[] {
  return [...(COMPRESSION[to] ? [COMPRESSION[to].spec] : []), ...(to === 'zip' ? EACH_MEMBER : [])];
}

// Each format read to each written, and zip to itself: a zip converted member by member (each),
// or repacked at another compression level. Never chained: every pair is one step already, and a
// chain through another archive format would apply compression_level to the wrong archive.
const EDGES: ConversionEdge[] = READS.flatMap((from) => WRITES.filter((to) => to !== from || to === 'zip').map((to) => ({ from, to, cost: 2, chainable: false, options: edgeOptions(to) })));

/** Counts the bytes that really pass, and stops the stream past a cap. */
class ByteCounter extends Transform {
  private readonly onBytes: (n: number) => void;

  constructor(onBytes: (n: number) => void) {
    super();
    this.onBytes = onBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      this.onBytes(chunk.length);
      done(null, chunk);
    } catch (error) {
      done(error as Error);
    }
  }
}

/** bsdtar could not read the upload: the answer to give, unless 7-Zip reads it (see the top). */
class ReaderFailed extends Error {
  readonly answer: ConvertdError;

  constructor(answer: ConvertdError) {
    super(answer.message);
    this.answer = answer;
  }
}

const ENCRYPTED = () => new ConvertdError('encrypted_input', 'The archive is encrypted: remove the password and upload it again.');

function readFailure(result: RunResult): ConvertdError {
  const detail = lastErrorLine(result.stderr);
  if (/encrypt|passphrase|password/i.test(result.stderr)) return ENCRYPTED();
  return new ConvertdError('corrupt_input', `The archive could not be read${detail ? ` (${detail})` : ''}: it may be damaged or truncated.`);
}

/** One member as `7zz l -slt` describes it. */
interface ListedMember {
  path: string;
  size: number;
  directory: boolean;
  /** The Unix type letter of its mode (-, d, l, c, b, p, s), when the archive stored one. */
  unixType?: string;
  link: boolean;
  encrypted: boolean;
  crc?: number;
  method: string;
  mtime?: Date;
}

/** "2024-05-01 10:30:00.1234567" (7-Zip prints UTC in the sandbox, which sets no TZ). */
function listedTime(text: string): Date | undefined {
  const time = new Date(`${text.trim().replace(' ', 'T').slice(0, 23)}Z`);
  return Number.isNaN(time.getTime()) ? undefined : time;
}

/** Reads `7zz l -slt -ba` line by line: a block of "Key = value" lines per member, "Path" first. */
class SevenZipListing {
  readonly members: ListedMember[] = [];
  private readonly onMember: (member: ListedMember) => void;
  private current: ListedMember | undefined;

  constructor(onMember: (member: ListedMember) => void) {
    this.onMember = onMember;
  }

  line(line: string): void {
    const at = line.indexOf(' = ');
    if (at < 0) return;
    const key = line.slice(0, at);
    const value = line.slice(at + 3);
    if (key === 'Path') {
      this.end();
      this.current = { path: value, size: 0, directory: false, link: false, encrypted: false, method: '' };
      return;
    }
    const member = this.current;
    if (!member) return;
    switch (key) {
      case 'Size': member.size = Number(value) || 0; break;
      case 'Folder': member.directory ||= value === '+'; break;
      case 'Attributes': {
        // "D drwxr-xr-x", "A -rw-r--r--", " -rw-r--r--" or just "A" (DOS attributes, then a Unix mode).
        const [dos = '', mode] = value.split(' ').filter((part, index) => index === 0 || part !== '');
        if (dos.includes('D')) member.directory = true;
        // 7-Zip's letters for Windows' attributes: L a reparse point (a WIM's symbolic links and
        // junctions), d a device.
        if (dos.includes('L')) member.link = true;
        if (dos.includes('d')) member.unixType ??= 'c';
        if (mode && /^[-dlcbps]/.test(mode)) member.unixType = mode[0];
        break;
      }
      // SquashFS gives the Unix mode on its own line ("Mode = lrwxrwxrwx").
      case 'Mode': if (/^[-dlcbps]/.test(value)) member.unixType = value[0]; break;
      // A WIM's reparse target ("Link = \\?\C:\etc\passwd : C:\etc\passwd").
      case 'Symbolic Link': case 'Hard Link': case 'Link': member.link ||= value !== ''; break;
      case 'Encrypted': member.encrypted = value === '+'; break;
      case 'CRC': member.crc = /^[0-9A-F]{8}$/i.test(value) ? Number.parseInt(value, 16) : undefined; break;
      case 'Method': member.method = value; break;
      case 'Modified': member.mtime = listedTime(value); break;
    }
  }

  end(): void {
    if (this.current) {
      this.members.push(this.current);
      this.onMember(this.current);
    }
    this.current = undefined;
  }
}

/**
 * A 7-Zip failure in words: an encrypted member, a method it does not have (unsupported_format,
 * naming the method from the listing), or damage.
 */
function sevenZipFailure(stderr: string, members: readonly ListedMember[], fallback: ConvertdError | undefined): ConvertdError {
  if (/wrong password|encrypted/i.test(stderr)) return ENCRYPTED();
  if (/unsupported method/i.test(stderr)) {
    const methods = [...new Set(members.map((m) => m.method).filter(Boolean))];
    return new ConvertdError('unsupported_format', `The archive is compressed with a method this service cannot read${methods.length ? ` (${methods.join(', ')})` : ''}: repack it with a common method (Deflate, LZMA2) and upload it again.`);
  }
  const detail = lastErrorLine(stderr);
  return fallback ?? new ConvertdError('corrupt_input', `The archive could not be read${detail ? ` (7-Zip: ${detail})` : ''}: it may be damaged or truncated.`);
}

/** Reads exact runs of bytes from a stream, keeping what a chunk holds past the run. */
class ExactReader {
  private readonly chunks: AsyncIterator<Buffer>;
  private leftover: Buffer = Buffer.alloc(0);

  constructor(source: Readable) {
    this.chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  /** The next `size` bytes, in slices; fewer when the stream ends first. */
  async *take(size: number): AsyncGenerator<Buffer> {
    let remaining = size;
    while (remaining > 0) {
      if (this.leftover.length === 0) {
        const next = await this.chunks.next();
        if (next.done) return;
        this.leftover = next.value;
      }
      const slice = this.leftover.subarray(0, remaining);
      this.leftover = this.leftover.subarray(slice.length);
      remaining -= slice.length;
      yield slice;
    }
  }

  /** Whether any byte is left. */
  async more(): Promise<boolean> {
    if (this.leftover.length > 0) return true;
    const next = await this.chunks.next();
    if (next.done) return false;
    this.leftover = next.value;
    return true;
  }
}

/** Where the members that passed the checks go: a tar stream (repacking) or files on disk (unpacking). */
interface MemberSink {
  directory(name: string, mtime: Date | undefined): void;
  /** The stream a regular file's `size` bytes are written to. */
  file(name: string, size: number, mtime: Date | undefined): Writable;
  /** Every member was written. */
  finalize(): void;
  destroy(error: Error): void;
}

/** The tar stream the writing bsdtar reads. */
class TarSink implements MemberSink {
  readonly pack = tar.pack();

  directory(name: string, mtime: Date | undefined): void {
    if (name) this.pack.entry({ name, type: 'directory', mode: 0o755, mtime });
  }

  file(name: string, size: number, mtime: Date | undefined): Writable {
    // tar-stream's entry is a streamx Writable, which pipes like a Node one.
    return this.pack.entry({ name, size, mode: 0o644, mtime }) as unknown as Writable;
  }

  finalize(): void {
    this.pack.finalize();
  }

  destroy(error: Error): void {
    this.pack.destroy(error);
  }
}

/**
 * Members written to `dir` under numbered names (000001, ...) of our choosing: a member's own
 * name is kept as data only, never used as a path, so no name can reach outside `dir` or collide
 * with a folder. Folders are kept in the names; an empty folder holds no file and is not listed.
 */
class DiskSink implements MemberSink {
  readonly members: ArchiveMember[] = [];
  private readonly dir: string;
  readonly done: Promise<void>;
  private finish: () => void = () => undefined;
  private fail: (error: Error) => void = () => undefined;

  constructor(dir: string) {
    this.dir = dir;
    this.done = new Promise((resolve, reject) => {
      this.finish = resolve;
      this.fail = reject;
    });
    // A failure nobody awaits yet must not count as unhandled: the reader's own rejection is the news.
    this.done.catch(() => undefined);
  }

  directory(): void {
    // Kept in the names of the files under it.
  }

  file(name: string, size: number): Writable {
    const file = path.join(this.dir, String(this.members.length + 1).padStart(6, '0'));
    this.members.push({ name, file, bytes: size });
    return createWriteStream(file, { flags: 'wx', mode: 0o644 });
  }

  finalize(): void {
    this.finish();
  }

  destroy(error: Error): void {
    this.fail(error);
  }
}

/**
 * One repacking or unpacking: the checks every member passes, whoever reads it, on the way to
 * the sink.
 */
class Repack {
  readonly sink: MemberSink;
  readonly abort = new AbortController();
  private entries = 0;
  private expanded = 0;
  private readonly inputBytes: number;
  private readonly onProgress: (fraction: number) => void;

  constructor(sink: MemberSink, inputBytes: number, onProgress: (fraction: number) => void) {
    this.sink = sink;
    this.inputBytes = inputBytes;
    this.onProgress = onProgress;
  }

  stop(error: ConvertdError): void {
    if (!this.abort.signal.aborted) this.abort.abort(error);
  }

  /**
   * A cap records its reason the moment it trips: tearing the streams down afterwards makes the
   * tar parser fail too, and the first reason is the one the user gets.
   */
  refuse(error: ConvertdError): never {
    this.stop(error);
    throw error;
  }

  /** Bytes that really flowed out of the reader. */
  count(bytes: number): void {
    this.expanded += bytes;
    this.checkExpansion(this.expanded);
    this.onProgress(Math.min(0.95, this.expanded / Math.max(1, this.inputBytes * 3)));
  }

  checkExpansion(bytes: number): void {
    // The same caps the input check holds the directory's declared sizes to (formats/input-caps.ts), here against the bytes that come out.
    const breach = tooExpanded(bytes, this.inputBytes);
    if (breach) this.refuse(breach);
  }

  /** Counts a member against the entry cap and checks its name and type; the safe name, '' for the root. */
  admit(rawName: string, type: string): string {
    this.entries += 1;
    const breach = tooManyMembers(this.entries);
    if (breach) this.refuse(breach);
    const name = memberName(rawName);
    if (typeof name !== 'string') this.refuse(new ConvertdError('unsafe_input', `The archive is refused: ${name.refused}.`));
    if (type !== 'directory' && type !== 'file') {
      this.refuse(new ConvertdError('unsafe_input', `The archive is refused: the member "${rawName}" is a ${type}, not a regular file.`));
    }
    return name;
  }

  directory(name: string, mtime: Date | undefined): void {
    this.sink.directory(name, mtime);
  }

  /** A regular file whose `size` bytes come from `content`. */
  async file(name: string, size: number, mtime: Date | undefined, content: Readable | AsyncIterable<Buffer>): Promise<void> {
    await pipeline(content, new ByteCounter((n) => this.count(n)), this.sink.file(name, size, mtime));
  }
}

/** Reads the upload into a Repack's checks, with the options of the reading process. */
type Reader = (repack: Repack, options: RunOptions) => Promise<void>;

/**
 * Whether a RAR archive (4 or 5) has encrypted headers or an encrypted member. libarchive 3.6
 * notes a member's encryption but still copies a stored member's bytes, so the ciphertext would
 * come out as the file: the service walks the block headers first (never the data).
 *
 * RAR 4: after the 7-byte marker, each block is a CRC-16, a type, flags and a header size (plus,
 * when flag 0x8000 is set, the size of the data that follows); a file header's flag 0x04 means a
 * password, the archive header's flag 0x80 encrypted headers. RAR 5: after the 8-byte signature,
 * each block is a CRC-32, the header's size and the header (type, flags, extra-area size when flag
 * 1, data size when flag 2, ..., the extra area last); type 4 is the archive encryption header,
 * and an extra-area record of type 1 in a file (2) or service (3) header is a member's encryption.
 */
async function rarEncrypted(input: string): Promise<boolean> {
  const file = await fs.open(input, 'r');
  try {
    const { size } = await file.stat();
    const bytes = async (at: number, length: number) => {
      const buffer = Buffer.alloc(Math.max(0, Math.min(length, size - at)));
      return buffer.subarray(0, (await file.read(buffer, 0, buffer.length, at)).bytesRead);
    };
    const signature = (await bytes(0, 8)).toString('latin1');
    if (signature.startsWith('Rar!\x1a\x07\x00')) {
      for (let at = 7; at + 7 <= size;) {
        const head = await bytes(at, 11);
        if (head.length < 7) return false;
        const [type, flags, headerSize] = [head[2]!, head.readUInt16LE(3), head.readUInt16LE(5)];
        if (headerSize < 7 || type === 0x7b) return false;
        if (type === 0x73 && flags & 0x80) return true;
        if ((type === 0x74 || type === 0x7a) && flags & 0x04) return true;
        at += headerSize + (flags & 0x8000 && head.length >= 11 ? head.readUInt32LE(7) : 0);
      }
      return false;
    }
    if (signature !== 'Rar!\x1a\x07\x01\x00') return false;
    for (let at = 8; at + 5 <= size;) {
      const sizeField = readVint(await bytes(at + 4, 3), 0);
      // A header is at most 2 MiB (the format's own limit).
      if (!sizeField || sizeField.value < 1 || sizeField.value > 2 * 1024 ** 2) return false;
      const header = await bytes(at + 4 + sizeField.length, sizeField.value);
      if (header.length < sizeField.value) return false;
      const type = readVint(header, 0);
      const flags = type && readVint(header, type.length);
      if (!type || !flags) return false;
      if (type.value === 4) return true;
      let offset = type.length + flags.length;
      const extraSize = flags.value & 1 ? readVint(header, offset) : undefined;
      if (extraSize) offset += extraSize.length;
      const dataSize = flags.value & 2 ? readVint(header, offset) : undefined;
      if ((type.value === 2 || type.value === 3) && extraSize && extraSize.value <= header.length) {
        for (let record = header.length - extraSize.value; record < header.length;) {
          const recordSize = readVint(header, record);
          const recordType = recordSize && readVint(header, record + recordSize.length);
          if (!recordSize || !recordType) break;
          if (recordType.value === 1) return true;
          record += recordSize.length + recordSize.value;
        }
      }
      if (type.value === 5) return false;
      at += 4 + sizeField.length + sizeField.value + (dataSize?.value ?? 0);
    }
    return false;
  } finally {
    await file.close();
  }
}

/** A RAR 5 variable-length integer at `at` (7 bits a byte, low first), or undefined past the end or past 2^53. */
function readVint(buffer: Buffer, at: number): { value: number; length: number } | undefined {
  let value = 0;
  for (let i = 0; i < 8 && at + i < buffer.length; i += 1) {
    const byte = buffer[at + i]!;
    value += (byte & 0x7f) * 2 ** (7 * i);
    if (!(byte & 0x80)) return { value, length: i + 1 };
  }
  return undefined;
}

/** Formats read by readAr below rather than by bsdtar. */
const AR_FORMATS = new Set(['ar', 'deb']);
/** An ar archive's index and name table: ar's own bookkeeping, not members (GNU, then BSD names). */
const AR_BOOKKEEPING = new Set(['/', '//', '/SYM64/', '__.SYMDEF', '__.SYMDEF SORTED']);

/**
 * An ar archive (and so a Debian package), read here: libarchive 3.6 gives a member written in
 * binutils' deterministic mode (a mode without its file type, Debian's default) no type, which
 * bsdtar then cannot write into the tar stream, and it passes GNU's name table on as a member named
 * "//"; 7-Zip hides a package's debian-binary. The format is simple: "!<arch>\n", then per member
 * a 60-byte header (name, times, owner, mode, size in decimal, "`\n") and the bytes, padded to an
 * even offset; long names sit in a "//" table (GNU, "/<offset>") or before the bytes (BSD,
 * "#1/<length>"). Every member is a regular file: ar stores no links (its mode field is not
 * obeyed by binutils, which writes regular files) and no directories. The same checks as every
 * reader's apply (names, counts, bytes that flow).
 */
async function readAr(input: string, repack: Repack, signal: AbortSignal | undefined): Promise<void> {
  const reader = new ExactReader(createReadStream(input));
  const corrupt = (why: string) => repack.refuse(new ConvertdError('corrupt_input', `The archive could not be read (${why}): it may be damaged or truncated.`));
  const take = async (size: number) => {
    const parts: Buffer[] = [];
    for await (const part of reader.take(size)) parts.push(part);
    const bytes = Buffer.concat(parts);
    if (bytes.length < size) corrupt('it ends inside a member');
    return bytes;
  };
  if ((await take(8)).toString('latin1') !== '!<arch>\n') corrupt('no ar signature');
  let longNames = Buffer.alloc(0);
  while (await reader.more()) {
    signal?.throwIfAborted();
    const header = await take(60);
    if (header.toString('latin1', 58, 60) !== '`\n') corrupt('a member header is malformed');
    const field = (from: number, to: number) => header.toString('latin1', from, to).trimEnd();
    if (!/^\d+$/.test(field(48, 58))) corrupt('a member size is not a number');
    let size = Number(field(48, 58));
    const padding = size % 2;
    const rawName = field(0, 16);
    let name: string;
    if (AR_BOOKKEEPING.has(rawName)) {
      const table = await take(size);
      if (rawName === '//') longNames = table;
      await take(padding);
      continue;
    }
    if (/^#1\/\d+$/.test(rawName)) {
      const length = Number(rawName.slice(3));
      if (length > size) corrupt('a member name is longer than its member');
      name = (await take(length)).toString('utf8').replace(/\0+$/, '');
      size -= length;
    } else if (/^\/\d+$/.test(rawName)) {
      const at = Number(rawName.slice(1));
      const end = longNames.indexOf('/\n', at);
      if (at >= longNames.length || end < 0) corrupt('a long member name is missing from the name table');
      name = longNames.toString('utf8', at, end);
    } else {
      name = header.subarray(0, 16).toString('utf8').trimEnd().replace(/\/$/, '');
    }
    const mtime = /^\d+$/.test(field(16, 28)) ? new Date(Number(field(16, 28)) * 1000) : undefined;
    const safe = repack.admit(name, 'file');
    const bytes = async function* () {
      let received = 0;
      for await (const part of reader.take(size)) {
        received += part.length;
        yield part;
      }
      if (received < size) corrupt(`it ends inside "${name}"`);
    };
    await repack.file(safe, size, mtime, Readable.from(bytes()));
    // The padding byte; some writers leave it out after the last member.
    for await (const _ of reader.take(padding)) void _;
  }
  repack.sink.finalize();
}


/** What the archives probe finds: the formats bsdtar writes and reads back, those it reads, and whether 7-Zip works. */
interface ArchiveFacts {
  readonly working: readonly string[];
  readonly readable: readonly string[];
  readonly sevenZip: boolean;
}

function isArchiveFacts(facts: unknown): facts is ArchiveFacts {
  const candidate = facts as Partial<ArchiveFacts> | null;
  const strings = (list: unknown) => Array.isArray(list) && list.every((item) => typeof item === 'string');
  return typeof candidate === 'object' && candidate !== null && strings(candidate.working) && strings(candidate.readable) && typeof candidate.sevenZip === 'boolean';
}

/** The edges the facts allow: from a format read or written to one written; 7-Zip's own formats only with 7-Zip. */
function archiveEdges(facts: ArchiveFacts): ConversionEdge[] {
  const working = new Set(facts.working);
  const readable = new Set([...facts.readable, ...(facts.sevenZip ? Object.keys(SEVEN_ZIP_ONLY) : [])]);
  return EDGES.filter((e) => (working.has(e.from) || readable.has(e.from)) && working.has(e.to));
}

/** A 7-Zip member's type in tar's words. */
function sevenZipType(member: ListedMember): string {
  if (member.link || member.unixType === 'l') return 'symlink';
  if (member.unixType && !['-', 'd'].includes(member.unixType)) return ({ c: 'character device', b: 'block device', p: 'fifo', s: 'socket' } as Record<string, string>)[member.unixType] ?? 'special file';
  return member.directory || member.unixType === 'd' ? 'directory' : 'file';
}

export class ArchiveEngine implements Engine, ArchiveMembers {
  readonly id = 'archives';
  readonly capabilities = { 'archive-members': this };
  readonly timeoutSeconds = 300;
  readonly edges = EDGES;
  readonly reportsProgress = true;
  private readonly context: EngineContext<unknown>;
  /** Whether 7-Zip answered the probe: without it, bsdtar's answer stands. */
  private sevenZip = false;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 0.5 + inputBytes / 5_000_000;
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    return withScratchDir(async (dir) => {
      const working = new Set<string>();
      const readable = new Set<string>();
      const { writeFile } = await import('node:fs/promises');
      await writeFile(path.join(dir, 'sample.txt'), 'convertd');
      const readsBack = async (file: string) => {
        const back = await run(BSDTAR, ['-t', '-f', file], { cwd: dir, timeoutMs: 20_000, captureStdout: true });
        // An ISO 9660 image lists its root directory too.
        return back.exitCode === 0 && back.stdout.split('\n').filter((line) => line !== '' && line !== '.').join() === 'sample.txt';
      };
      const writes = async (file: string, options: string[]) => (await run(BSDTAR, ['-c', '-f', file, ...options, 'sample.txt'], { cwd: dir, timeoutMs: 20_000 })).exitCode === 0;
      for (const format of WRITES) {
        if (await writes(`probe.${format}`, WRITE_OPTIONS[format]!) && await readsBack(`probe.${format}`)) working.add(format);
      }
      // The formats only read: written here by bsdtar where it can (xar), otherwise from the
      // bytes of a one-member archive (PROBE_SAMPLES). ar and Debian packages are read by this
      // module itself (readAr).
      readable.add('ar').add('deb');
      if (await writes('probe.xar', ['--format', 'xar']) && await readsBack('probe.xar')) readable.add('xar');
      for (const [format, base64] of Object.entries(PROBE_SAMPLES)) {
        await writeFile(path.join(dir, `probe.${format}`), Buffer.from(base64, 'base64'));
        if (await readsBack(`probe.${format}`)) readable.add(format);
      }
      if (working.size < 2) throw new Error('bsdtar reads and writes none of the archive formats here');
      const missing = READ_ONLY.filter((format) => !readable.has(format));
      if (missing.length > 0) this.context.log.warn({ formats: missing }, 'bsdtar failed to read these archive formats in its probe: they are not offered');
      if (working.has('7z')) {
        const listed = await run(SEVEN_ZIP, ['l', '-slt', '-ba', '-p', 'probe.7z'], { cwd: dir, timeoutMs: 20_000, captureStdout: true }).catch(() => undefined);
        this.sevenZip = listed?.exitCode === 0 && /^Path = sample\.txt$/m.test(listed.stdout);
        if (!this.sevenZip) this.context.log.warn({ program: SEVEN_ZIP }, '7-Zip is missing or failed its probe: 7z archives that libarchive cannot read (Deflate64) are refused, and SquashFS, WIM and ARJ are not offered');
      }
      this.found = { working: [...working], readable: [...readable], sevenZip: this.sevenZip };
      return archiveEdges(this.found);
    });
  }

  private found: ArchiveFacts | undefined;

  /** What the probe found (the formats bsdtar reads and writes, whether 7-Zip works), restored with the 7-Zip fallback (probe-cache.ts). */
  readonly probeMemory = {
    found: (): unknown => this.found,
    restore: async (facts: unknown): Promise<readonly ConversionEdge[] | undefined> => {
      if (!isArchiveFacts(facts)) return undefined;
      this.sevenZip = facts.sevenZip;
      return archiveEdges(facts);
    },
  };

  async convert(request: ConvertRequest): Promise<void> {
    await this.read(request.input, request.from, (read) => this.repack(request, read));
  }

  /** Runs `work` with bsdtar as the reader, and again with 7-Zip where bsdtar cannot read the archive (see the top). */
  private async read(input: string, from: string, work: (read: Reader) => Promise<void>): Promise<void> {
    if (from === 'rar' && await rarEncrypted(input)) throw ENCRYPTED();
    if (AR_FORMATS.has(from)) return work((repack, options) => readAr(input, repack, options.signal));
    const sevenZipType = SEVEN_ZIP_ONLY[from];
    if (sevenZipType) return work((repack, options) => this.readWith7zip(input, repack, options, undefined, sevenZipType));
    try {
      await work((repack, options) => this.readWithBsdtar(input, repack, options));
    } catch (error) {
      if (!(error instanceof ReaderFailed)) throw error;
      if (!this.sevenZip || !SEVEN_ZIP_READS.has(from) || error.answer.code !== 'corrupt_input') throw error.answer;
      await work((repack, options) => this.readWith7zip(input, repack, options, error.answer));
    }
  }

  /**
   * The archive's regular files, unpacked into `dir` through the same checks as a repacking (the
   * 'archive-members' capability, for target zip with each).
   */
  async unpack(request: Parameters<ArchiveMembers['unpack']>[0]): Promise<ArchiveMember[]> {
    const { input, from, dir, workDir, timeoutMs, signal, onProgress } = request;
    let members: ArchiveMember[] = [];
    await this.read(input, from, async (read) => {
      const { size: inputBytes } = await (await import('node:fs/promises')).stat(input);
      await fs.rm(dir, { recursive: true, force: true });
      await fs.mkdir(dir, { recursive: true });
      const sink = new DiskSink(dir);
      const repack = new Repack(sink, inputBytes, onProgress);
      const stopped = AbortSignal.any([signal, repack.abort.signal]);
      // A cap tripping on the last members, after the reader exited, must still end the wait below.
      stopped.addEventListener('abort', () => sink.destroy(stopped.reason instanceof Error ? stopped.reason : new Error(String(stopped.reason))), { once: true });
      const options = { cwd: workDir, timeoutMs, signal: stopped, limits: { addressSpaceBytes: NATIVE_ADDRESS_SPACE } };
      const [reading] = await Promise.allSettled([read(repack, options)]);
      throwReaderOutcome(reading, repack, signal);
      await sink.done;
      members = sink.members;
    });
    return members;
  }

  /** Runs `read` (which feeds the tar sink) and the writing bsdtar side by side. */
  private async repack(request: ConvertRequest, read: Reader): Promise<void> {
    const { input, output, to, workDir, limits, signal } = request;
    const { size: inputBytes } = await (await import('node:fs/promises')).stat(input);
    const sink = new TarSink();
    const repack = new Repack(sink, inputBytes, request.onProgress);
    const both = AbortSignal.any([signal, repack.abort.signal]);
    const options = { cwd: workDir, timeoutMs: limits.timeoutMs, signal: both, limits: { addressSpaceBytes: NATIVE_ADDRESS_SPACE } };
    // The level is a parsed integer within its bounds, written into bsdtar's option by us.
    const level = numberOption(request.options, 'compression_level');
    const compression = level !== undefined && COMPRESSION[to] ? ['--options', `${COMPRESSION[to].module}:compression-level=${level}`] : [];
    const [reading, write] = await Promise.allSettled([
      read(repack, options).catch((error: unknown) => {
        // The writer must not wait for entries that will never come.
        sink.destroy(error instanceof Error ? error : new Error(String(error)));
        throw error;
      }),
      this.context.run(BSDTAR, ['-c', '-f', path.basename(output), ...WRITE_OPTIONS[to]!, ...compression, '@-'], {
        // tar-stream's pack is a streamx Readable, which pipes like a Node one.
        ...options, stdin: sink.pack as unknown as Readable, limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      }),
    ]);
    // The writer saw the pack torn down or finished early; the reader's failure is the news.
    throwReaderOutcome(reading, repack, signal);
    if (write.status === 'rejected') throw write.reason;
    if (write.value.exitCode !== 0) {
      throw new ConvertdError('conversion_failed', `The ${to} archive could not be written: ${lastErrorLine(write.value.stderr)}.`);
    }
  }

  /** bsdtar turns the upload into one tar stream, walked entry by entry. */
  private async readWithBsdtar(input: string, repack: Repack, options: RunOptions): Promise<void> {
    const fromReader = new PassThrough();
    const extract = tar.extract();
    // Whether a member failed our checks, as opposed to the stream breaking under us.
    let refused = false;
    extract.on('entry', (header, stream, next) => {
      void (async () => {
        const type = header.type === 'contiguous-file' ? 'file' : header.type ?? 'file';
        const name = repack.admit(header.name, type);
        if (type === 'directory') {
          stream.resume();
          repack.directory(name, header.mtime);
          return;
        }
        // tar-stream's entry is a streamx Readable, which pipes like a Node one.
        await repack.file(name, header.size ?? 0, header.mtime, stream as unknown as Readable);
      })().then(() => next(), (error: unknown) => {
        refused = error instanceof ConvertdError;
        repack.stop(error instanceof ConvertdError ? error : new ConvertdError('corrupt_input', `The archive could not be read: ${String(error)}`));
        stream.resume();
      });
    });
    extract.on('finish', () => repack.sink.finalize());
    extract.on('error', (error) => repack.stop(new ConvertdError('corrupt_input', `The archive could not be read: ${error.message}`)));
    fromReader.pipe(extract);

    const result = await this.context.run(BSDTAR, ['-c', '-f', '-', '--format', 'pax', `@${path.basename(input)}`], { ...options, stdout: fromReader });
    if (result.exitCode !== 0 && !refused) {
      // A broken tar stream is only the echo of bsdtar's failure: its own words say more.
      const reason = repack.abort.signal.reason as ConvertdError | undefined;
      if (!reason || reason.code === 'corrupt_input') throw new ReaderFailed(readFailure(result));
    }
  }

  /**
   * 7-Zip lists the members (each is checked, and the declared sizes against the caps, before
   * anything is extracted), then streams their contents, cut here at the listed sizes.
   */
  private async readWith7zip(input: string, repack: Repack, options: RunOptions, bsdtarAnswer: ConvertdError | undefined, type?: string): Promise<void> {
    const archive = path.basename(input);
    const typed = type ? [`-t${type}`] : [];
    const names = new Map<ListedMember, string>();
    let declared = 0;
    let encrypted = false;
    const listing = new SevenZipListing((member) => {
      try {
        names.set(member, repack.admit(member.path, sevenZipType(member)));
        declared += member.size;
        repack.checkExpansion(declared);
        encrypted ||= member.encrypted;
      } catch {
        // admit() recorded the reason and aborted the listing.
      }
    });
    // `-p` with no password: 7-Zip never prompts for one.
    const listed = await this.context.run(SEVEN_ZIP, ['l', '-slt', '-ba', '-p', ...typed, '--', archive], { ...options, onStdoutLine: (line) => listing.line(line) });
    listing.end();
    if (repack.abort.signal.aborted) throw repack.abort.signal.reason;
    if (listed.exitCode !== 0) throw sevenZipFailure(listed.stderr, listing.members, bsdtarAnswer);
    if (encrypted) throw ENCRYPTED();

    const contents = new PassThrough();
    const extracting = this.context.run(SEVEN_ZIP, ['x', '-so', '-p', '-bd', ...typed, '--', archive], { ...options, stdout: contents });
    const feeding = (async () => {
      const reader = new ExactReader(contents);
      for (const member of listing.members) {
        const name = names.get(member)!;
        if (sevenZipType(member) === 'directory') {
          repack.directory(name, member.mtime);
          continue;
        }
        let crc = 0;
        let received = 0;
        const slices = async function* () {
          for await (const slice of reader.take(member.size)) {
            crc = crc32(slice, crc);
            received += slice.length;
            yield slice;
          }
          if (received < member.size) throw new ConvertdError('corrupt_input', `The archive could not be read: 7-Zip gave ${received} of the ${member.size} bytes of "${member.path}".`);
        };
        await repack.file(name, member.size, member.mtime, Readable.from(slices()));
        if (member.crc !== undefined && member.size > 0 && crc >>> 0 !== member.crc) {
          repack.refuse(new ConvertdError('corrupt_input', `The archive could not be read: "${member.path}" does not match its checksum.`));
        }
      }
      if (await reader.more()) repack.refuse(new ConvertdError('corrupt_input', 'The archive could not be read: 7-Zip gave more bytes than its listing declares.'));
      repack.sink.finalize();
    })();
    const [extracted, fed] = await Promise.allSettled([extracting, feeding]);
    if (repack.abort.signal.aborted) throw repack.abort.signal.reason;
    if (extracted.status === 'rejected') throw extracted.reason;
    if (extracted.value.exitCode !== 0) {
      const failure = sevenZipFailure(extracted.value.stderr, listing.members, undefined);
      repack.stop(failure);
      throw failure;
    }
    if (fed.status === 'rejected') throw fed.reason;
  }
}

/**
 * Throws what the reading side's outcome says, most telling first: the reader's own failure (unless
 * the job was aborted), a cap the members tripped, the job's abort, any other error of the reader.
 */
function throwReaderOutcome(reading: PromiseSettledResult<unknown>, repack: Repack, signal: AbortSignal): void {
  if (reading.status === 'rejected' && reading.reason instanceof ReaderFailed) {
    signal.throwIfAborted();
    throw reading.reason;
  }
  if (repack.abort.signal.aborted) throw repack.abort.signal.reason;
  signal.throwIfAborted();
  if (reading.status === 'rejected') throw reading.reason;
}
