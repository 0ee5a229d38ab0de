// What engines offer each other. An engine that needs another's work (poppler's WebP pages and
// img2pdf's flattening need sharp's sandboxed image processes) asks its context for a capability
// by name, never for an engine class: any engine that provides it will do, and an engine folder is
// imported from nowhere but the list (engines/index.ts; test/engine-modules.test.ts checks it).
import type { ConvertRequest } from './types.ts';

type ImageLimits = Pick<ConvertRequest['limits'], 'maxImagePixels' | 'timeoutMs'>;

/** Raster image work in a sandbox: what sharp's pool offers. */
export interface RasterImages {
  /** Converts one raster image to another raster format (png, jpg, webp, avif, gif, tiff). */
  reencode(input: string, output: string, from: string, to: string, limits: ImageLimits, signal: AbortSignal): Promise<void>;
  /** Writes a PNG of `input` flattened onto white (for tools that refuse transparency). */
  flattenOntoWhite(input: string, output: string, limits: ImageLimits, signal: AbortSignal): Promise<void>;
}

export interface Capabilities {
  readonly 'raster-images': RasterImages;
}

export type CapabilityName = keyof Capabilities;
