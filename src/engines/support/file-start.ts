// The first bytes of a file an engine wrote: several tools (Inkscape, Ghostscript) exit 0 after
// failing, so whether they wrote a result is read from the result's own signature.
import fs from 'node:fs/promises';

/** Up to `length` bytes from the start of `file`; empty when it does not exist. */
export async function fileStart(file: string, length = 256): Promise<Buffer> {
  const handle = await fs.open(file, 'r').catch(() => undefined);
  if (!handle) return Buffer.alloc(0);
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(length), 0, length, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
