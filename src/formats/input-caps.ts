// Caps that are properties of the input, not of the engine that happens to read it: checked once,
// from the file's own structure, before the first engine of any route runs (engines/pipeline.ts).
// An animated GIF of 100,000 frames was refused at once on its way to WebP (sharp counts frames)
// and kept ffmpeg busy for many minutes on its way to MP4 (issue #32, docs/security.md "Caps").
//
// Read here, in-process and without decoding a pixel: the frames and canvas of the animated
// raster formats (GIF, animated WebP; an APNG is told apart by the sniffer and refused). The
// parsers only walk block and chunk headers; a file they cannot follow is left to its engine,
// which reports the damage in its own words.
import fs from 'node:fs/promises';
import { ConvertdError } from '../errors.ts';
import { withReadAt, type ReadAt } from './read-at.ts';

/** Frames an animation may hold, whatever the route (sharp's all-frames decoding held this before). */
export const MAX_ANIMATION_FRAMES = 1000;

export interface AnimationFacts {
  readonly width: number;
  readonly height: number;
  readonly frames: number;
}

export interface InputCapLimits {
  readonly maxImagePixels: number;
}

/** Refuses an input over a cap with input_too_complex; resolves when within them, or when nothing is known of it here. */
export async function checkInputCaps(file: string, format: string, limits: InputCapLimits): Promise<void> {
  const reader = READERS[format];
  if (!reader) return;
  const facts = await reader(file);
  if (!facts || facts.frames <= 1) return;
  if (facts.frames > MAX_ANIMATION_FRAMES) {
    // Counting stops one past the cap, so the exact number may not be known.
    throw new ConvertdError('input_too_complex', `The animation has more than ${MAX_ANIMATION_FRAMES} frames; this service converts at most ${MAX_ANIMATION_FRAMES}: send a shorter one.`);
  }
  if (facts.width * facts.height * facts.frames > limits.maxImagePixels) {
    throw new ConvertdError('input_too_complex', `The animation has ${facts.frames} frames of ${facts.width} × ${facts.height} pixels, more pixels in all than this service processes: send a smaller or shorter one.`);
  }
}

const READERS: Readonly<Record<string, (file: string) => Promise<AnimationFacts | undefined>>> = {
  gif: async (file) => gifFacts(await fs.readFile(file)),
  webp: (file) => withReadAt(file, webpFacts),
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
