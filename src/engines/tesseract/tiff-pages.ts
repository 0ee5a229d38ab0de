// The pages of a TIFF and the size each declares, read from its image file directories (IFDs)
// without decoding a pixel: the input caps (formats/input-caps.ts, image-size) read only the first
// page's size, and tesseract reads every page of a multi-page TIFF, so a second page of 100,000 ×
// 100,000 pixels, or 100,000 one-pixel pages, would reach leptonica unseen. Classic TIFF and
// BigTIFF, either byte order; a directory chain that loops or points outside the file ends the
// walk as damaged.
import fs from 'node:fs/promises';

/**
 * Pages of a TIFF whose text is read, at most. A page takes tesseract one to a few seconds on one
 * core: 300 pages stay within the engine's time limit (900 s) on an ordinary machine.
 */
export const MAX_TIFF_PAGES = 300;

export interface TiffPage {
  readonly width: number;
  readonly height: number;
}

/** Bytes read for one directory: its count, up to 4,096 entries of 20 bytes (BigTIFF), the next offset. */
const MAX_DIRECTORY_ENTRIES = 4096;

/**
 * The pages of `file` (width and height each; 0 when a page does not say), stopping after
 * `atMost`; undefined when it is not a TIFF or its directories are damaged.
 */
export async function readTiffPages(file: string, atMost: number): Promise<TiffPage[] | undefined> {
  const handle = await fs.open(file, 'r');
  try {
    const { size } = await handle.stat();
    const read = async (offset: number, length: number): Promise<Buffer | undefined> => {
      if (offset < 0 || offset + length > size) return undefined;
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, offset);
      return bytesRead === length ? buffer : undefined;
    };
    const header = await read(0, 16) ?? await read(0, 8);
    if (!header) return undefined;
    const order = header.toString('latin1', 0, 2);
    if (order !== 'II' && order !== 'MM') return undefined;
    const little = order === 'II';
    const u16 = (b: Buffer, at: number) => (little ? b.readUInt16LE(at) : b.readUInt16BE(at));
    const u32 = (b: Buffer, at: number) => (little ? b.readUInt32LE(at) : b.readUInt32BE(at));
    const u64 = (b: Buffer, at: number) => Number(little ? b.readBigUInt64LE(at) : b.readBigUInt64BE(at));
    const version = u16(header, 2);
    const big = version === 43;
    if (version !== 42 && !big) return undefined;
    if (big && header.length < 16) return undefined;
    const countBytes = big ? 8 : 2;
    const entryBytes = big ? 20 : 12;
    const offsetBytes = big ? 8 : 4;
    let next = big ? u64(header, 8) : u32(header, 4);
    const seen = new Set<number>();
    const pages: TiffPage[] = [];
    while (next !== 0 && pages.length < atMost) {
      if (seen.has(next)) return undefined;
      seen.add(next);
      const countBuffer = await read(next, countBytes);
      if (!countBuffer) return undefined;
      const count = big ? u64(countBuffer, 0) : u16(countBuffer, 0);
      if (count === 0 || count > MAX_DIRECTORY_ENTRIES) return undefined;
      const body = await read(next + countBytes, count * entryBytes + offsetBytes);
      if (!body) return undefined;
      let width = 0;
      let height = 0;
      for (let entry = 0; entry < count; entry++) {
        const at = entry * entryBytes;
        const tag = u16(body, at);
        if (tag !== 256 && tag !== 257) continue;
        const type = u16(body, at + 2);
        const valueAt = at + (big ? 12 : 8);
        // SHORT, LONG or LONG8, stored in the entry itself (one value).
        const value = type === 3 ? u16(body, valueAt) : type === 4 ? u32(body, valueAt) : type === 16 && big ? u64(body, valueAt) : 0;
        if (tag === 256) width = value;
        else height = value;
      }
      pages.push({ width, height });
      next = big ? u64(body, count * entryBytes) : u32(body, count * entryBytes);
    }
    return pages;
  } finally {
    await handle.close();
  }
}
