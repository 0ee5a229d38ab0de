// SVG drawings through librsvg's rsvg-convert: to PNG, PDF, EPS and PS.
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { RsvgEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'rsvg',
  summary: '`rsvg-convert` (declared canvas size checked against the pixel limit first)',
  packages: { debian: ['librsvg2-bin', ...FONT_PACKAGES] },
  formats: FORMATS,
  create: (context) => new RsvgEngine(context),
});
