// What engines offer each other. An engine that needs another's work (poppler's WebP pages,
// img2pdf's flattening and potrace's greymaps need sharp's sandboxed image processes, tesseract
// reads a BMP through ImageMagick's PNG of it) asks its context for a capability
// by name, never for an engine class: any engine that provides it will do, and an engine folder is
// imported from nowhere but the list (engines/index.ts; test/engine-modules.test.ts checks it).
import type { ConvertRequest } from './types.ts';

type ImageLimits = Pick<ConvertRequest['limits'], 'maxImagePixels' | 'timeoutMs'>;

/** Raster image work in a sandbox: what sharp's pool offers. */
export interface RasterImages {
  /** Converts one raster image to another raster format (png, jpg, webp, avif, gif, tiff). */
  reencode(input: string, output: string, from: string, to: string, limits: ImageLimits, signal: AbortSignal): Promise<void>;
  /** Writes a PNG of `input` (its page `page`, 0-based, of a multi-page TIFF) flattened onto white (for tools that refuse transparency). */
  flattenOntoWhite(input: string, output: string, limits: ImageLimits, signal: AbortSignal, page?: number): Promise<void>;
  /**
   * Writes a binary greymap (PGM, P5: 8-bit luminance) of `input` flattened onto white: the
   * bitmap a tracer reads (potrace), which then thresholds it itself.
   */
  greymap(input: string, output: string, limits: ImageLimits, signal: AbortSignal): Promise<void>;
}

/**
 * Raster formats sharp does not read (bmp, pcx, tga, ...), decoded by ImageMagick under its
 * policy: what lets an engine that takes only PNGs it trusts (tesseract) read a BMP upload.
 */
export interface OtherRasterImages {
  /** Writes the step's input (a `from` image: its first frame, an icon's largest) as a PNG at `output`, under the step's limits. */
  toPng(request: Pick<ConvertRequest, 'input' | 'from' | 'workDir' | 'limits' | 'signal'>, output: string): Promise<void>;
}

/** One regular file of an unpacked archive. */
export interface ArchiveMember {
  /** Its path inside the archive, checked safe (no `..`, not absolute, no control characters). */
  readonly name: string;
  /** Where its bytes are on disk: a name the engine chose, never the member's own. */
  readonly file: string;
  readonly bytes: number;
}

/**
 * An archive's members on disk, through the same checks as a repacking (member count, expanded
 * size and ratio, unsafe names, links and devices refused): what the archives engine offers the
 * jobs layer for target zip with `each` (src/jobs/batch.ts).
 */
export interface ArchiveMembers {
  /** Writes every regular file of `input` (a `from` archive) into `dir`, in the archive's order; folders are kept in the names. */
  unpack(request: { input: string; from: string; dir: string; workDir: string; timeoutMs: number; signal: AbortSignal; onProgress: (fraction: number) => void }): Promise<ArchiveMember[]>;
}

export interface Capabilities {
  readonly 'raster-images': RasterImages;
  readonly 'other-raster-images': OtherRasterImages;
  readonly 'archive-members': ArchiveMembers;
}

export type CapabilityName = keyof Capabilities;
