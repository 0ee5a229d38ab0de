// Positioned reads of a file, for parsers that walk a container's headers (box, chunk, block)
// without reading what lies between them.

import fs from 'node:fs/promises';

/** Reads `length` bytes at `position` (fewer at the end of the file). */
export type ReadAt = (position: number, length: number) => Promise<Buffer>;

/** Opens `file`, hands `work` a reader and the file's size, and closes it whatever happens. */
export async function withReadAt<T>(file: string, work: (read: ReadAt, size: number) => Promise<T>): Promise<T> {
  const handle = await fs.open(file, 'r');
  try {
    const { size } = await handle.stat();
    return await work(async (position, length) => {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, position);
      return buffer.subarray(0, bytesRead);
    }, size);
  } finally {
    await handle.close();
  }
}
