import zlib from 'node:zlib';
// Test inputs made by the tests themselves, with the engine's library (the outputs are then
// checked with other tools). Images have a known size and a known average colour.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';

export const IMAGE_WIDTH = 96;
export const IMAGE_HEIGHT = 64;

/**
 * A picture with structure, so that comparing an output with it (SSIM) means something: a dark
 * blue half with a white disc, an orange half with black bars of three widths, and a black-to-white
 * ramp along the bottom (edges, flat areas, fine detail and every grey level).
 */
export const SAMPLE_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="${IMAGE_WIDTH}" height="${IMAGE_HEIGHT}">
  <defs><linearGradient id="ramp"><stop offset="0" stop-color="#000"/><stop offset="1" stop-color="#fff"/></linearGradient></defs>
  <rect width="48" height="64" fill="rgb(20,40,160)"/>
  <rect x="48" width="48" height="64" fill="rgb(240,150,30)"/>
  <circle cx="22" cy="22" r="12" fill="#fff"/>
  <rect x="56" y="6" width="3" height="36" fill="#000"/>
  <rect x="64" y="6" width="5" height="36" fill="#000"/>
  <rect x="74" y="6" width="8" height="36" fill="#000"/>
  <rect y="48" width="${IMAGE_WIDTH}" height="16" fill="url(#ramp)"/>
</svg>`;

export async function sampleImage(format: string): Promise<Buffer> {
  const encoded = await sharp(Buffer.from(SAMPLE_SVG)).flatten().png().toBuffer();
  const base = sharp(encoded);
  switch (format) {
    case 'png': return base.png().toBuffer();
    case 'jpg': return base.jpeg({ quality: 95 }).toBuffer();
    case 'webp': return base.webp({ quality: 95 }).toBuffer();
    case 'avif': return base.avif({ quality: 80, effort: 2 }).toBuffer();
    case 'gif': return base.gif().toBuffer();
    case 'tiff': return base.tiff().toBuffer();
    case 'heic': case 'jxl': case 'jp2': case 'vips': return viaVipsCli(encoded, format);
    case 'bmp': case 'ico': case 'tga': case 'pcx': case 'ppm': case 'pgm': case 'pbm': case 'xpm': case 'psd': case 'dds':
    case 'xbm': case 'xwd': case 'sgi': case 'ras': case 'pam': case 'pfm': case 'hdr': case 'dpx': case 'fits': case 'mng':
    case 'jng': case 'cur': case 'wbmp': case 'otb': case 'pict': case 'cin': case 'miff': case 'viff': case 'dcx':
    case 'j2k': case 'sixel': case 'cals': case 'vicar': case 'pgx':
      return viaImageMagick(encoded, format);
    case 'xcf': return xcfFrom(encoded);
    case 'tim': return timFrom(encoded);
    case 'exr': return exrFrom(encoded);
    default: throw new Error(`no sample for ${format}`);
  }
}

/** Random noise: incompressible, so encoding it takes measurable time (a slow job on purpose). */
export async function noisePng(width: number, height: number): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer();
}

/** Formats sharp cannot write, made with Debian's vips command (without sharp's VIPSHOME). */
async function viaVipsCli(png: Buffer, format: string): Promise<Buffer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'convertd-fixture-'));
  await fs.writeFile(path.join(dir, 'in.png'), png);
  const { VIPSHOME: _ignored, ...env } = process.env;
  execFileSync('vips', ['copy', path.join(dir, 'in.png'), path.join(dir, `out.${format}`)], { env });
  return fs.readFile(path.join(dir, `out.${format}`));
}

/**
 * ImageMagick's own arguments for a sample: FITS as one grey plane, HDR and PFM in linear light as
 * their readers expect, the black-and-white formats dithered.
 */
const IMAGEMAGICK_SAMPLE_ARGS: Record<string, string[]> = {
  fits: ['-grayscale', 'Rec601Luma', '-depth', '8'], hdr: ['-colorspace', 'RGB'], pfm: ['-colorspace', 'RGB'],
  xbm: ['-grayscale', 'Rec601Luma', '-ordered-dither', 'o8x8'], wbmp: ['-grayscale', 'Rec601Luma', '-ordered-dither', 'o8x8'],
  otb: ['-grayscale', 'Rec601Luma', '-ordered-dither', 'o8x8'], cals: ['-grayscale', 'Rec601Luma', '-ordered-dither', 'o8x8'],
  vicar: ['-grayscale', 'Rec601Luma', '-depth', '8'], pgx: ['-grayscale', 'Rec601Luma', '-depth', '8'],
  // ImageMagick 6's TGA writer declares a bottom-left origin for a picture whose orientation is
  // not set, yet writes its rows top first: Pillow, ffmpeg and the service's engine (which honours
  // the declared origin) read such a file upside down. The engine sets the orientation itself
  // (-auto-orient) before writing, so its TGAs are right; the sample says it explicitly.
  tga: ['-orient', 'TopLeft'],
};
/** ImageMagick's coder where its name is not the format id. */
const IMAGEMAGICK_CODER: Record<string, string> = { ras: 'SUN' };

/** Rare raster formats, made with Debian's ImageMagick under its own system policy. */
async function viaImageMagick(png: Buffer, format: string): Promise<Buffer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'convertd-fixture-'));
  await fs.writeFile(path.join(dir, 'in.png'), png);
  const coder = IMAGEMAGICK_CODER[format] ?? format.toUpperCase();
  execFileSync('/usr/bin/convert-im6.q16', [path.join(dir, 'in.png'), ...(IMAGEMAGICK_SAMPLE_ARGS[format] ?? []), `${coder}:${path.join(dir, `out.${format}`)}`]);
  const bytes = await fs.readFile(path.join(dir, `out.${format}`));
  return format === 'cur' ? asCursor(bytes) : bytes;
}

/**
 * ImageMagick 6's CUR coder writes an icon (resource type 1); a cursor says 2, and its directory
 * entries hold a hotspot (here 0, 0) where an icon's hold planes and bit count.
 */
function asCursor(icon: Buffer): Buffer {
  const cursor = Buffer.from(icon);
  cursor.writeUInt16LE(2, 2);
  for (let entry = 0; entry < cursor.readUInt16LE(4); entry++) cursor.writeUInt32LE(0, 6 + 16 * entry + 4);
  return cursor;
}

/**
 * A PlayStation TIM written here (ImageMagick has no TIM writer): flags 2 (15-bit direct colour),
 * then one block: its length, position, width in 16-bit units, height, and pixels of 5 bits per
 * channel, red lowest.
 */
async function timFrom(png: Buffer): Promise<Buffer> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const pixels = Buffer.alloc(info.width * info.height * 2);
  for (let index = 0; index < info.width * info.height; index++) {
    const [r, g, b] = [data[index * 3]! >> 3, data[index * 3 + 1]! >> 3, data[index * 3 + 2]! >> 3];
    pixels.writeUInt16LE(r | (g << 5) | (b << 10), index * 2);
  }
  const header = Buffer.alloc(20);
  header.writeUInt32LE(0x10, 0);
  header.writeUInt32LE(2, 4);
  header.writeUInt32LE(12 + pixels.length, 8);
  header.writeUInt16LE(info.width, 16);
  header.writeUInt16LE(info.height, 18);
  return Buffer.concat([header, pixels]);
}

/** XCF's RLE of one channel of a tile: runs of one byte repeated (n ≤ 126: n + 1 copies) or literal bytes (256 − n of them). */
function xcfRle(bytes: Buffer): Buffer {
  const out: number[] = [];
  let index = 0;
  while (index < bytes.length) {
    let same = 1;
    while (index + same < bytes.length && same < 127 && bytes[index + same] === bytes[index]) same++;
    if (same >= 2) {
      out.push(same - 1, bytes[index]!);
      index += same;
      continue;
    }
    let literal = 1;
    while (index + literal < bytes.length && literal < 127 && bytes[index + literal] !== bytes[index + literal - 1]) literal++;
    out.push(256 - literal, ...bytes.subarray(index, index + literal));
    index += literal;
  }
  return Buffer.from(out);
}

/**
 * A GIMP XCF written here (ImageMagick has no XCF writer and GIMP is not installed): version 0,
 * RGB, RLE tiles of 64 × 64, and the picture cut in two RGBA layers side by side (the right half
 * the upper layer, at an offset), so that only a reader that places and flattens the layers shows
 * the whole picture. `square`: one more layer on top, a black square, hidden or at an opacity.
 */
export async function xcfFrom(png: Buffer, square?: { x: number; y: number; size: number; visible: boolean; opacity: number }): Promise<Buffer> {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const { width, height } = info;
  const half = Math.floor(width / 2);
  const cut = (x: number, w: number) => {
    const pixels = Buffer.alloc(w * height * 4);
    for (let y = 0; y < height; y++) data.copy(pixels, y * w * 4, (y * width + x) * 4, (y * width + x + w) * 4);
    return pixels;
  };
  const black = square && Buffer.alloc(square.size * square.size * 4).fill(Buffer.from([0, 0, 0, 255]));
  // Top layer first, as XCF lists them.
  const layers = [
    ...(square ? [{ x: square.x, y: square.y, w: square.size, h: square.size, pixels: black!, visible: square.visible, opacity: square.opacity, name: 'square' }] : []),
    { x: half, y: 0, w: width - half, h: height, pixels: cut(half, width - half), visible: true, opacity: 255, name: 'right' },
    { x: 0, y: 0, w: half, h: height, pixels: cut(0, half), visible: true, opacity: 255, name: 'left' },
  ];
  const u32 = (...values: number[]) => Buffer.concat(values.map((v) => { const b = Buffer.alloc(4); b.writeUInt32BE(v >>> 0); return b; }));
  const property = (type: number, payload: Buffer) => Buffer.concat([u32(type, payload.length), payload]);
  const parts: Buffer[] = [];
  let size = 0;
  const place = (buffer: Buffer) => { const at = size; parts.push(buffer); size += buffer.length; return at; };
  // The header: magic, canvas, RGB, the image's properties (RLE compression), the layer pointers
  // and the (empty) channel list; written last, when the pointers are known.
  const headerLength = 14 + 12 + (8 + 1) + 8 + 4 * (layers.length + 1) + 4;
  place(Buffer.alloc(headerLength));
  const layerOffsets: number[] = [];
  for (const layer of layers) {
    const tiles: number[] = [];
    for (let ty = 0; ty < layer.h; ty += 64) {
      for (let tx = 0; tx < layer.w; tx += 64) {
        const [tw, th] = [Math.min(64, layer.w - tx), Math.min(64, layer.h - ty)];
        const channels = [0, 1, 2, 3].map((channel) => {
          const plane = Buffer.alloc(tw * th);
          for (let y = 0; y < th; y++) for (let x = 0; x < tw; x++) plane[y * tw + x] = layer.pixels[((ty + y) * layer.w + tx + x) * 4 + channel]!;
          return xcfRle(plane);
        });
        tiles.push(place(Buffer.concat(channels)));
      }
    }
    const level = place(Buffer.concat([u32(layer.w, layer.h), u32(...tiles, 0)]));
    const hierarchy = place(Buffer.concat([u32(layer.w, layer.h, 4), u32(level, 0)]));
    const name = Buffer.from(`${layer.name}\0`);
    // Offsets (15), visible (8), opacity (6), end.
    const properties = Buffer.concat([property(15, u32(layer.x, layer.y)), property(8, u32(layer.visible ? 1 : 0)), property(6, u32(layer.opacity)), u32(0, 0)]);
    // Type 1: RGB with alpha.
    layerOffsets.push(place(Buffer.concat([u32(layer.w, layer.h, 1), u32(name.length), name, properties, u32(hierarchy, 0)])));
  }
  Buffer.concat([Buffer.from('gimp xcf file\0', 'latin1'), u32(width, height, 0), property(17, Buffer.from([1])), u32(0, 0), u32(...layerOffsets, 0), u32(0)]).copy(parts[0]!);
  return Buffer.concat(parts);
}

/** An OpenEXR made by ffmpeg's encoder, given linear light (the sRGB curve undone on 16-bit values), as an EXR holds it. */
async function exrFrom(png: Buffer): Promise<Buffer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'convertd-fixture-'));
  await fs.writeFile(path.join(dir, 'in.png'), png);
  const linear = 'if(lt(val/65535\\,0.04045)\\,val/12.92\\,pow((val/65535+0.055)/1.055\\,2.4)*65535)';
  execFileSync('ffmpeg', ['-v', 'error', '-i', path.join(dir, 'in.png'), '-vf', `format=rgb48le,lutrgb=r='${linear}':g='${linear}':b='${linear}',format=gbrpf32le`, '-c:v', 'exr', '-f', 'image2', path.join(dir, 'out.exr')]);
  return fs.readFile(path.join(dir, 'out.exr'));
}

/**
 * An 8-bit RGB PNG written by hand whose header declares width x height, in one flat colour. With
 * `rows` below the height, only that many rows of pixels follow (a pixel flood: a header that
 * lies); with all of them, a few hundred kilobytes that decode to width x height x 3 bytes.
 */
export function flatPng(width: number, height: number, rows = height): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // RGB
  const row = Buffer.alloc(1 + width * 3, 0x40);
  row[0] = 0; // filter: none
  const pixels = zlib.deflateSync(Buffer.concat(Array.from({ length: rows }, () => row)), { level: 9 });
  return Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), chunk('IHDR', header), chunk('IDAT', pixels), chunk('IEND', Buffer.alloc(0))]);
}
