// How close a raster target must come to its source, shared by the suites that compare pictures
// (image-pairs, raster-formats, vector-and-hostile-images): mean SSIM of the luma over 7x7 windows
// (1 = the same picture; the sample mirrored scores below 0). The values measured on the sample
// are in image-pairs.test.ts's comments.

/** Lossless targets keep every pixel; 0.99 leaves room only for decoders' rounding. */
export const SSIM_LOSSLESS = 0.99;
/** Lossy encoders at the engines' settings: 0.96 to 0.999 measured, so a fall in quality fails too. */
export const SSIM_LOSSY = 0.93;
/** A palette of at most 256 colours (GIF, XPM): the ramp is quantised. */
export const SSIM_PALETTE = 0.95;
/** Grey against the source's grey: ImageMagick weighs the channels a little differently from BT.601. */
export const SSIM_GREY = 0.97;
/** Black and white is dithered: compared over 4x4 block averages, where a dither pattern counts as its grey. */
export const SSIM_BILEVEL = 0.95;
/**
 * Radiance HDR keeps 8 bits of mantissa per channel with a shared exponent: dark, saturated
 * colours lose a little (0.992 measured on a red-blue gradient).
 */
export const SSIM_HDR = 0.98;

/** The least SSIM of each raster target against its source. */
export const SSIM_AT_LEAST: Readonly<Record<string, number>> = {
  png: SSIM_LOSSLESS, tiff: SSIM_LOSSLESS, bmp: SSIM_LOSSLESS, ico: SSIM_LOSSLESS, tga: SSIM_LOSSLESS, pcx: SSIM_LOSSLESS, ppm: SSIM_LOSSLESS,
  jpg: SSIM_LOSSY, webp: SSIM_LOSSY, avif: SSIM_LOSSY, heic: SSIM_LOSSY, jxl: SSIM_LOSSY, jp2: SSIM_LOSSY,
  gif: SSIM_PALETTE, xpm: SSIM_PALETTE, pgm: SSIM_GREY, pbm: SSIM_BILEVEL,
  xbm: SSIM_BILEVEL, wbmp: SSIM_BILEVEL, otb: SSIM_BILEVEL, fits: SSIM_GREY,
  xwd: SSIM_LOSSLESS, sgi: SSIM_LOSSLESS, ras: SSIM_LOSSLESS, pam: SSIM_LOSSLESS, pfm: SSIM_LOSSLESS, dpx: SSIM_LOSSLESS,
  mng: SSIM_LOSSLESS, cur: SSIM_LOSSLESS, hdr: SSIM_HDR, jng: SSIM_LOSSY, dcx: SSIM_LOSSLESS,
  // ImageMagick writes the JPEG 2000 codestream losslessly; SIXEL holds a palette (of colours in
  // percent: 101 levels a channel); VICAR and PGX one grey plane; CALS type 1 black and white.
  j2k: SSIM_LOSSLESS, vips: SSIM_LOSSLESS, sixel: SSIM_PALETTE, vicar: SSIM_GREY, pgx: SSIM_GREY, cals: SSIM_BILEVEL,
};
/** Each colour band's mean (0-255) may move this much: a swapped or shifted colour moves it by far more. */
export const MEAN_TOLERANCE = 8;
/** Black-and-white targets: compared over 4x4 blocks (a dither pattern counts as its grey), and by luma. */
export const BILEVEL: ReadonlySet<string> = new Set(['pbm', 'xbm', 'wbmp', 'otb', 'cals']);
/** Grey targets: compared by luma. */
export const GREY: ReadonlySet<string> = new Set(['pgm', 'fits', 'vicar', 'pgx', ...BILEVEL]);

export const luma = ([r, g, b]: readonly number[]) => 0.299 * r! + 0.587 * g! + 0.114 * b!;
