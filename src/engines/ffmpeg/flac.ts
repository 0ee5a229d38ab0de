// FLAC's STREAMINFO, read from the file's first bytes. Debian's ffmpeg 5.1 cannot decode FLAC of
// more than 24 bits a sample (32-bit FLAC came with FLAC 1.4 in 2022; ffmpeg decodes it from 6.1):
// it opens such a file, decodes nothing and exits 0 with an empty output. The engine reads the
// sample width here, before any program runs, and sends those files through Debian's `flac`
// (1.4 decodes them) first.
import fs from 'node:fs/promises';

export interface FlacStreamInfo {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  /** Samples per channel; 0 when the encoder did not know it (a stream). */
  totalSamples: number;
}

/** Widest samples ffmpeg 5.1's FLAC decoder decodes. */
export const FFMPEG_FLAC_MAX_BITS = 24;

/** Size of an ID3v2 tag at the start of `head` (its header, body and footer), or 0 when there is none. */
function id3v2Length(head: Uint8Array): number {
  if (head.length < 10 || head[0] !== 0x49 || head[1] !== 0x44 || head[2] !== 0x33) return 0;
  // The size is "syncsafe": four bytes of seven bits each; a set footer flag adds ten bytes.
  const size = ((head[6]! & 0x7f) << 21) | ((head[7]! & 0x7f) << 14) | ((head[8]! & 0x7f) << 7) | (head[9]! & 0x7f);
  return 10 + size + (head[5]! & 0x10 ? 10 : 0);
}

/**
 * Parses "fLaC" and the STREAMINFO block that must follow it (FLAC format, RFC 9639 section 8.2):
 * a 4-byte block header, then 16+16 bits of block sizes, 24+24 of frame sizes, 20 of sample rate,
 * 3 of channels - 1, 5 of bits per sample - 1, 36 of total samples. Undefined when `bytes` does
 * not start that way.
 */
export function parseStreamInfo(bytes: Uint8Array): FlacStreamInfo | undefined {
  if (bytes.length < 8 + 18) return undefined;
  if (bytes[0] !== 0x66 || bytes[1] !== 0x4c || bytes[2] !== 0x61 || bytes[3] !== 0x43) return undefined;
  // Block type 0 (STREAMINFO), whatever the "last block" bit says.
  if ((bytes[4]! & 0x7f) !== 0) return undefined;
  const b = (i: number) => bytes[8 + i]!;
  const sampleRate = (b(10) << 12) | (b(11) << 4) | (b(12) >> 4);
  const channels = ((b(12) >> 1) & 0x07) + 1;
  const bitsPerSample = (((b(12) & 0x01) << 4) | (b(13) >> 4)) + 1;
  const totalSamples = (b(13) & 0x0f) * 2 ** 32 + ((b(14) << 24) >>> 0) + (b(15) << 16) + (b(16) << 8) + b(17);
  return { sampleRate, channels, bitsPerSample, totalSamples };
}

/** The STREAMINFO of a FLAC file (after an ID3v2 tag, if one comes first), or undefined. */
export async function readStreamInfo(file: string): Promise<FlacStreamInfo | undefined> {
  const handle = await fs.open(file, 'r');
  try {
    const head = new Uint8Array(10);
    await handle.read(head, 0, 10, 0);
    const start = id3v2Length(head);
    const bytes = new Uint8Array(8 + 18);
    const { bytesRead } = await handle.read(bytes, 0, bytes.length, start);
    return parseStreamInfo(bytes.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}
