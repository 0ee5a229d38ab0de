// Deflate for hand-made test files (PNG chunks).
import zlib from 'node:zlib';

export function zlibSync(data: Buffer): Buffer {
  return zlib.deflateSync(data);
}
