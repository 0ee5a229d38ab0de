// Test inputs made by the tests themselves, with the engine's library (the outputs are then
// checked with other tools). Images have a known size and a known average colour.
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';

export const IMAGE_WIDTH = 96;
export const IMAGE_HEIGHT = 64;

/** A two-colour image (left half dark blue, right half orange): its average survives any encoder. */
export async function sampleImage(format: string): Promise<Buffer> {
  const half = IMAGE_WIDTH / 2;
  const left = await sharp({ create: { width: half, height: IMAGE_HEIGHT, channels: 3, background: { r: 20, g: 40, b: 160 } } }).png().toBuffer();
  const image = sharp({ create: { width: IMAGE_WIDTH, height: IMAGE_HEIGHT, channels: 3, background: { r: 240, g: 150, b: 30 } } })
    .composite([{ input: left, left: 0, top: 0 }]);
  const encoded = await image.png().toBuffer();
  const base = sharp(encoded);
  switch (format) {
    case 'png': return base.png().toBuffer();
    case 'jpg': return base.jpeg({ quality: 95 }).toBuffer();
    case 'webp': return base.webp({ quality: 95 }).toBuffer();
    case 'avif': return base.avif({ quality: 80, effort: 2 }).toBuffer();
    case 'gif': return base.gif().toBuffer();
    case 'tiff': return base.tiff().toBuffer();
    default: throw new Error(`no sample for ${format}`);
  }
}

/** Random noise: incompressible, so encoding it takes measurable time (a slow job on purpose). */
export async function noisePng(width: number, height: number): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer();
}
