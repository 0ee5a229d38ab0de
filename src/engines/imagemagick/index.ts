// Rare raster formats through ImageMagick 6, under the policy this folder ships.
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { ImageMagickEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'imagemagick',
  summary: 'ImageMagick 6 (explicit coders, `policy/policy.xml`)',
  packages: { debian: ['imagemagick', ...FONT_PACKAGES] },
  formats: FORMATS,
  provides: ['other-raster-images'],
  create: (context) => new ImageMagickEngine(context),
});
