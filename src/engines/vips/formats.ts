// The formats the vips engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'heic', name: 'HEIC/HEIF image', category: 'image', mediaType: 'image/heic', extensions: ['heic', 'heif', 'hif'], detect: 'magic' },
  { id: 'jxl', name: 'JPEG XL image', category: 'image', mediaType: 'image/jxl', extensions: ['jxl'], detect: 'magic' },
  { id: 'exr', name: 'OpenEXR image (HDR)', category: 'image', mediaType: 'image/x-exr', extensions: ['exr'], detect: 'magic', signature: (head) => head.readUInt32BE(0) === 0x762f3101 },
  { id: 'jp2', name: 'JPEG 2000 image', category: 'image', mediaType: 'image/jp2', extensions: ['jp2', 'jpf'], detect: 'magic' },
  // libvips' own format: a 64-byte header (its magic in either byte order), the pixels as they are
  // in memory, then its metadata as XML. Written as .v, the extension vips gives it.
  { id: 'vips', name: 'VIPS image', category: 'image', mediaType: 'image/x-vips', extensions: ['vips', 'v'], fileExtension: 'v', detect: 'magic', signature: (head) => head.length >= 64 && [0x08f2a6b6, 0xb6a6f208].includes(head.readUInt32BE(0)) },
];
