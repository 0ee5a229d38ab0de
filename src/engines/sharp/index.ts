// Raster images (png, jpg, webp, avif, gif, tiff) through sharp, in warm sandboxed Node processes;
// offers 'raster-images' to the engines that end in or pass through a raster image.
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { SharpEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'sharp',
  summary: 'sharp in pooled, sandboxed Node processes (`images.ts`; pixel limit, frame cap, timeout)',
  // sharp brings its own libvips in npm; the Node processes need nothing from Debian.
  packages: { debian: [...FONT_PACKAGES], npm: ['sharp'] },
  formats: FORMATS,
  provides: ['raster-images'],
  create: (context) => new SharpEngine(context),
});
