// Caps that are properties of the input, not of the engine that happens to read it: checked once,
// from the file's own structure, before the first engine of any route runs (engines/pipeline.ts).
// An animated GIF of 100,000 frames was refused at once on its way to WebP (sharp counts frames)
// and kept ffmpeg busy for many minutes on its way to MP4 (issue #32, docs/security.md "Caps").
//
// Read here, in-process and without decoding a pixel or inflating a byte:
// - the frames and canvas of the animated raster formats (GIF, animated WebP; an APNG is told
//   apart by the sniffer and refused);
// - the size a still raster image declares in its header (image-size for the common formats, the
//   readers below for the rest that have a fixed header), held to the pixel cap;
// - the members and declared unpacked size of anything packed as a ZIP archive (zip and cbz, but
//   also docx, xlsx, pptx, OpenDocument, EPUB, iWork...), held to the archive caps, which the
//   archive engine also holds while it streams, against the bytes that really come out;
// - a DjVu document's pages and the size each page declares (formats/djvu-structure.ts), and
//   whether it names files to be read from beside it (an indirect document), which is refused.
// The parsers only walk headers; a file they cannot follow is left to its engine, which reports
// the damage in its own words and keeps its own checks behind these.
import { closeSync, openSync } from 'node:fs';
import { imageSize } from 'image-size';
import { ConvertdError } from '../errors.ts';
import { checkDjvuStructure, readDjvuStructure } from './djvu-structure.ts';
import { withReadAt, type ReadAt } from './read-at.ts';
import { fileSource, LOCAL_HEADER, zipTotals } from './zip-directory.ts';

/** Frames an animation may hold, whatever the route (sharp's all-frames decoding held this before). */
export const MAX_ANIMATION_FRAMES = 1000;

/** Caps on what an archive holds, checked from its directory here and while the archive engine streams it. */
export const ARCHIVE_LIMITS = {
  entries: 10_000,
  expandedBytes: 1024 ** 3,
  /** Expanded size over upload size, above which a big archive counts as a bomb. */
  ratio: 200,
  /** Below this expanded size the ratio is not held against an archive (small files compress well). */
  ratioFloorBytes: 16 * 1024 ** 2,
};

/** The refusal for an archive of more than ARCHIVE_LIMITS.entries members, or undefined. */
export function tooManyMembers(members: number): ConvertdError | undefined {
  return members > ARCHIVE_LIMITS.entries ? new ConvertdError('input_too_complex', `The archive has more than ${ARCHIVE_LIMITS.entries} members.`) : undefined;
}

/** The refusal for an archive expanding to `expandedBytes` from `inputBytes`, or undefined. */
export function tooExpanded(expandedBytes: number, inputBytes: number): ConvertdError | undefined {
  if (expandedBytes > ARCHIVE_LIMITS.expandedBytes) return new ConvertdError('input_too_complex', `The archive expands to more than ${ARCHIVE_LIMITS.expandedBytes / 1024 ** 3} GiB.`);
  if (expandedBytes > ARCHIVE_LIMITS.ratioFloorBytes && expandedBytes > inputBytes * ARCHIVE_LIMITS.ratio) {
    return new ConvertdError('input_too_complex', `The archive expands more than ${ARCHIVE_LIMITS.ratio} times its size: it looks like a decompression bomb.`);
  }
  return undefined;
}

export interface AnimationFacts {
  readonly width: number;
  readonly height: number;
  readonly frames: number;
}

export interface ImageSize {
  readonly width: number;
  readonly height: number;
}

export interface InputCapLimits {
  readonly maxImagePixels: number;
}

/** Bytes read from the front of a file for the header readers (image-size's own choice: a JPEG's EXIF comes before its size). */
const HEAD_BYTES = 512 * 1024;
/** The largest ZIP directory walked here: 10,000 members with names of 1.6 KB each. */
const MAX_ZIP_DIRECTORY_BYTES = 16 * 1024 * 1024;

/** Refuses an input over a cap with input_too_complex; resolves when within them, or when nothing is known of it here. */
export async function checkInputCaps(file: string, format: string, limits: InputCapLimits): Promise<void> {
  await withReadAt(file, async (read, size) => {
    if (format === 'djvu') {
      const structure = await readDjvuStructure(read, size);
      if (structure) checkDjvuStructure(structure, limits);
      return;
    }
    const animation = ANIMATIONS[format];
    const facts = animation ? await animation(read, size) : undefined;
    if (facts && facts.frames > 1) return checkAnimation(facts, limits);
    // The head only for a format whose header is read here: a video's or a document's is not.
    const readsHeader = HEADER_READERS[format] !== undefined || IMAGE_SIZE_KINDS[format] !== undefined;
    const declared = facts ?? (readsHeader ? declaredImageSize(format, await read(0, HEAD_BYTES)) : undefined);
    if (declared && declared.width * declared.height > limits.maxImagePixels) {
      throw new ConvertdError('input_too_complex', `The image declares ${declared.width} × ${declared.height} pixels, more than this service processes (${limits.maxImagePixels.toLocaleString('en-US')} pixels): send a smaller image.`);
    }
    const start = await read(0, 4);
    if (start.length === 4 && start.readUInt32LE(0) === LOCAL_HEADER) checkZipTotals(file, size);
  });
}

function checkAnimation(facts: AnimationFacts, limits: InputCapLimits): void {
  if (facts.frames > MAX_ANIMATION_FRAMES) {
    // Counting stops one past the cap, so the exact number may not be known.
    throw new ConvertdError('input_too_complex', `The animation has more than ${MAX_ANIMATION_FRAMES} frames; this service converts at most ${MAX_ANIMATION_FRAMES}: send a shorter one.`);
  }
  if (facts.width * facts.height * facts.frames > limits.maxImagePixels) {
    throw new ConvertdError('input_too_complex', `The animation has ${facts.frames} frames of ${facts.width} × ${facts.height} pixels, more pixels in all than this service processes: send a smaller or shorter one.`);
  }
}

/** A ZIP-packed upload's members and declared unpacked size against the archive caps: only its end record and directory are read. */
function checkZipTotals(file: string, size: number): void {
  const fd = openSync(file, 'r');
  let totals: ReturnType<typeof zipTotals>;
  try {
    totals = zipTotals(fileSource(fd, size), MAX_ZIP_DIRECTORY_BYTES);
  } finally {
    closeSync(fd);
  }
  if (!totals) return;
  const breach = tooManyMembers(totals.members) ?? tooExpanded(totals.declaredBytes, size);
  if (breach) throw breach;
}

const ANIMATIONS: Readonly<Record<string, (read: ReadAt, size: number) => Promise<AnimationFacts | undefined>>> = {
  gif: async (read, size) => gifFacts(await read(0, size)),
  webp: webpFacts,
};

/** The image-size kinds that may answer for each of our formats (it tells them apart by content). */
const IMAGE_SIZE_KINDS: Readonly<Record<string, readonly string[]>> = {
  png: ['png'], jpg: ['jpg'], gif: ['gif'], webp: ['webp'], bmp: ['bmp'], tiff: ['tiff'], psd: ['psd'], tga: ['tga'], dds: ['dds'],
  ppm: ['pnm'], pgm: ['pnm'], pbm: ['pnm'], pam: ['pnm'], heic: ['heic', 'heif'], avif: ['avif'], jxl: ['jxl', 'jxl-stream'], jp2: ['jp2'], j2k: ['j2c'],
};

/** The width and height a still image declares in its header, or undefined when not known here. */
export function declaredImageSize(format: string, head: Buffer): ImageSize | undefined {
  const own = HEADER_READERS[format];
  if (own) return own(head);
  const kinds = IMAGE_SIZE_KINDS[format];
  if (!kinds) return undefined;
  try {
    const found = imageSize(head);
    if (!kinds.includes(found.type ?? '')) return undefined;
    // A container of several images (a HEIF's tiles and whole) is held to its largest.
    const sizes = [found, ...found.images ?? []];
    return sizes.reduce((largest, size) => size.width * size.height > largest.width * largest.height ? { width: size.width, height: size.height } : largest, { width: 0, height: 0 });
  } catch {
    return undefined; // a header image-size cannot follow: the engine decides
  }
}

const text = (head: Buffer) => head.toString('latin1', 0, Math.min(head.length, 4096));
const sized = (width: number, height: number): ImageSize | undefined => Number.isFinite(width) && Number.isFinite(height) && width >= 0 && height >= 0 ? { width, height } : undefined;

/**
 * Fixed headers of the raster formats image-size does not read, where the size is a field at a
 * known place (each format's specification; ImageMagick's coders read the same fields).
 */
const HEADER_READERS: Readonly<Record<string, (head: Buffer) => ImageSize | undefined>> = {
  // GIMP: after the 14-byte magic ("gimp xcf file" or "gimp xcf v0NN", each ended by a NUL), the canvas.
  xcf: (head) => head.length >= 22 && head.toString('latin1', 0, 9) === 'gimp xcf ' ? sized(head.readUInt32BE(14), head.readUInt32BE(18)) : undefined,
  // A PGX starts with a line "PG ML + 8 width height".
  pgx: (head) => {
    const match = /^PG[ \t]*(?:ML|LM)[ \t]*[+-]?[ \t]*\d+[ \t]+(\d+)[ \t]+(\d+)/.exec(text(head));
    return match ? sized(Number(match[1]), Number(match[2])) : undefined;
  },
  // ZSoft PCX: the window's corners (xmin, ymin, xmax, ymax), little-endian, from byte 4.
  pcx: (head) => head.length >= 12 && head[0] === 0x0a ? sized(head.readUInt16LE(8) - head.readUInt16LE(4) + 1, head.readUInt16LE(10) - head.readUInt16LE(6) + 1) : undefined,
  // SGI: magic 474, then storage, bytes per channel, dimension, xsize, ysize (big-endian).
  sgi: (head) => head.length >= 10 && head.readUInt16BE(0) === 474 ? sized(head.readUInt16BE(6), head.readUInt16BE(8)) : undefined,
  // Sun raster: magic 0x59a66a95, width, height.
  ras: (head) => head.length >= 12 && head.readUInt32BE(0) === 0x59a66a95 ? sized(head.readUInt32BE(4), head.readUInt32BE(8)) : undefined,
  // X Window dump (version 7): the pixmap's width and height at 16 and 20, in the writer's byte order.
  xwd: (head) => {
    if (head.length < 24) return undefined;
    if (head.readUInt32BE(4) === 7) return sized(head.readUInt32BE(16), head.readUInt32BE(20));
    if (head.readUInt32LE(4) === 7) return sized(head.readUInt32LE(16), head.readUInt32LE(20));
    return undefined;
  },
  // Portable float map: "PF" or "Pf", then width and height as text.
  pfm: (head) => {
    const match = /^P[Ff]\s+(\d+)\s+(\d+)/.exec(text(head));
    return match ? sized(Number(match[1]), Number(match[2])) : undefined;
  },
  // Radiance: header lines, an empty line, then the resolution line ("-Y height +X width" or a turned order).
  hdr: (head) => {
    const match = /\n\n([-+])([XY]) (\d+) ([-+])([XY]) (\d+)/.exec(text(head));
    if (!match) return undefined;
    return match[2] === 'Y' ? sized(Number(match[6]), Number(match[3])) : sized(Number(match[3]), Number(match[6]));
  },
  // DPX: "SDPX" (big-endian) or "XPDS"; the image header at 768: pixels per line at 772, lines at 776.
  dpx: (head) => {
    if (head.length < 780) return undefined;
    const magic = head.toString('latin1', 0, 4);
    if (magic === 'SDPX') return sized(head.readUInt32BE(772), head.readUInt32BE(776));
    if (magic === 'XPDS') return sized(head.readUInt32LE(772), head.readUInt32LE(776));
    return undefined;
  },
  // Cineon: magic 0x802a5fd7; the first channel's pixels per line and lines at 200 and 204.
  cin: (head) => {
    if (head.length < 208) return undefined;
    if (head.readUInt32BE(0) === 0x802a5fd7) return sized(head.readUInt32BE(200), head.readUInt32BE(204));
    if (head.readUInt32LE(0) === 0x802a5fd7) return sized(head.readUInt32LE(200), head.readUInt32LE(204));
    return undefined;
  },
  // MNG and JNG: the signature, then the MHDR or JHDR chunk: width and height (big-endian) at 16 and 20.
  mng: (head) => head.length >= 24 && head.toString('latin1', 1, 4) === 'MNG' && head.toString('latin1', 12, 16) === 'MHDR' ? sized(head.readUInt32BE(16), head.readUInt32BE(20)) : undefined,
  jng: (head) => head.length >= 24 && head.toString('latin1', 1, 4) === 'JNG' && head.toString('latin1', 12, 16) === 'JHDR' ? sized(head.readUInt32BE(16), head.readUInt32BE(20)) : undefined,
  // ImageMagick's own MIFF: a text header of key=value pairs before ":\x1a".
  miff: (head) => {
    const header = text(head).split(':\x1a')[0]!;
    const columns = /\bcolumns=(\d+)/.exec(header)?.[1];
    const rows = /\brows=(\d+)/.exec(header)?.[1];
    return columns !== undefined && rows !== undefined ? sized(Number(columns), Number(rows)) : undefined;
  },
  // X bitmap: C source defining NAME_width and NAME_height.
  xbm: (head) => {
    const source = text(head);
    const width = /#define\s+\S*width\s+(\d+)/.exec(source)?.[1];
    const height = /#define\s+\S*height\s+(\d+)/.exec(source)?.[1];
    return width !== undefined && height !== undefined ? sized(Number(width), Number(height)) : undefined;
  },
  // X pixmap: the first string of the array is "width height colours characters-per-pixel".
  xpm: (head) => {
    const match = /static\s+(?:const\s+)?char[^{]*\{[^"]*"\s*(\d+)\s+(\d+)\s+\d+/.exec(text(head));
    return match ? sized(Number(match[1]), Number(match[2])) : undefined;
  },
  // Wireless bitmap type 0: a type byte, a header byte, then width and height as multi-byte integers (7 bits a byte).
  wbmp: (head) => {
    if (head.length < 4 || head[0] !== 0) return undefined;
    let at = 2;
    const next = () => {
      let value = 0;
      for (let count = 0; at < head.length && count < 5; count++) {
        const byte = head[at++]!;
        value = value * 128 + (byte & 0x7f);
        if (!(byte & 0x80)) return value;
      }
      return Number.NaN;
    };
    return sized(next(), next());
  },
  // VICAR: a text label; NS samples per line, NL lines.
  vicar: (head) => {
    const label = text(head);
    const samples = /\bNS=(\d+)/.exec(label)?.[1];
    const lines = /\bNL=(\d+)/.exec(label)?.[1];
    return /^LBLSIZE=/.test(label) && samples !== undefined && lines !== undefined ? sized(Number(samples), Number(lines)) : undefined;
  },
  // CALS type 1: 128-byte text records; "rpelcnt: width,height".
  cals: (head) => {
    const match = /rpelcnt:\s*(\d+)\s*,\s*(\d+)/.exec(text(head));
    return match ? sized(Number(match[1]), Number(match[2])) : undefined;
  },
  // FITS: 80-character cards; NAXIS1 and NAXIS2 are the first two axes.
  fits: (head) => {
    const cards = text(head);
    const axis = (n: number) => new RegExp(`NAXIS${n}\\s*=\\s*(\\d+)`).exec(cards)?.[1];
    const width = axis(1);
    const height = axis(2);
    return width !== undefined && height !== undefined ? sized(Number(width), Number(height)) : undefined;
  },
};

/**
 * GIF: the logical screen, then blocks until the trailer; each image descriptor is a frame.
 * Counting stops one past the cap: the rest need not be walked to refuse the file.
 */
export function gifFacts(bytes: Buffer): AnimationFacts | undefined {
  if (bytes.length < 13 || !/^GIF8[79]a$/.test(bytes.toString('latin1', 0, 6))) return undefined;
  let width = bytes.readUInt16LE(6);
  let height = bytes.readUInt16LE(8);
  let at = 13 + colourTableBytes(bytes[10]!);
  let frames = 0;
  const skipSubBlocks = () => {
    while (at < bytes.length) {
      const size = bytes[at]!;
      at += 1 + size;
      if (size === 0) return;
    }
  };
  while (at < bytes.length && frames <= MAX_ANIMATION_FRAMES) {
    const introducer = bytes[at]!;
    if (introducer === 0x3b) break; // trailer
    if (introducer === 0x21) {
      at += 2; // introducer and label
      skipSubBlocks();
    } else if (introducer === 0x2c) {
      if (at + 10 > bytes.length) break;
      // A frame may reach past the logical screen: decoders draw it on a canvas that holds it.
      width = Math.max(width, bytes.readUInt16LE(at + 1) + bytes.readUInt16LE(at + 5));
      height = Math.max(height, bytes.readUInt16LE(at + 3) + bytes.readUInt16LE(at + 7));
      at += 10 + colourTableBytes(bytes[at + 9]!) + 1; // descriptor, local colour table, LZW code size
      skipSubBlocks();
      frames++;
    } else {
      break; // not a GIF block: the decoder will say what is wrong
    }
  }
  return { width, height, frames };
}

function colourTableBytes(packed: number): number {
  return packed & 0x80 ? 3 * 2 ** ((packed & 0x07) + 1) : 0;
}

/** Animated WebP: the VP8X canvas, and one ANMF chunk per frame. */
export async function webpFacts(read: ReadAt, size: number): Promise<AnimationFacts | undefined> {
  const head = await read(0, 30);
  if (head.length < 30 || head.toString('latin1', 0, 4) !== 'RIFF' || head.toString('latin1', 8, 12) !== 'WEBP' || head.toString('latin1', 12, 16) !== 'VP8X') return undefined;
  if (!(head[20]! & 0x02)) return undefined; // not animated
  const width = head.readUIntLE(24, 3) + 1;
  const height = head.readUIntLE(27, 3) + 1;
  let frames = 0;
  let at = 12;
  while (at + 8 <= size && frames <= MAX_ANIMATION_FRAMES) {
    const header = await read(at, 8);
    if (header.length < 8) break;
    if (header.toString('latin1', 0, 4) === 'ANMF') frames++;
    const length = header.readUInt32LE(4);
    at += 8 + length + (length % 2); // chunks are padded to an even length
  }
  return { width, height, frames };
}
