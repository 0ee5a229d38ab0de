// The raster formats sharp converts here: shared by the engine (in the service) and the image
// module (in the pooled process), so that the service never has to load sharp to know them.
import type { FormatDefinition } from '../../formats/catalogue.ts';

export const RASTER_FORMATS = ['png', 'jpg', 'webp', 'avif', 'gif', 'tiff'] as const;
export type RasterFormat = (typeof RASTER_FORMATS)[number];

export function isRaster(id: string): id is RasterFormat {
  return (RASTER_FORMATS as readonly string[]).includes(id);
}

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'png', name: 'PNG image', category: 'image', mediaType: 'image/png', extensions: ['png'], detect: 'magic' },
  { id: 'jpg', name: 'JPEG image', category: 'image', mediaType: 'image/jpeg', extensions: ['jpg', 'jpeg', 'jpe', 'jfif'], detect: 'magic' },
  { id: 'webp', name: 'WebP image', category: 'image', mediaType: 'image/webp', extensions: ['webp'], detect: 'magic' },
  { id: 'avif', name: 'AVIF image', category: 'image', mediaType: 'image/avif', extensions: ['avif'], detect: 'magic' },
  { id: 'gif', name: 'GIF image', category: 'image', mediaType: 'image/gif', extensions: ['gif'], detect: 'magic' },
  { id: 'tiff', name: 'TIFF image', category: 'image', mediaType: 'image/tiff', extensions: ['tiff', 'tif'], detect: 'magic' },
];
