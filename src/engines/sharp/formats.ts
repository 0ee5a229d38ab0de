// The raster formats sharp converts here: shared by the engine (in the service) and the image
// module (in the pooled process), so that the service never has to load sharp to know them.
export const RASTER_FORMATS = ['png', 'jpg', 'webp', 'avif', 'gif', 'tiff'] as const;
export type RasterFormat = (typeof RASTER_FORMATS)[number];

export function isRaster(id: string): id is RasterFormat {
  return (RASTER_FORMATS as readonly string[]).includes(id);
}
