// SVG drawings through librsvg's rsvg-convert: to PNG, PDF, EPS and PS.
import { defineEngine } from '../module.ts';
import { RsvgEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'rsvg',
  summary: '`rsvg-convert` (declared canvas size checked against the pixel limit first)',
  packages: { debian: ['librsvg2-bin'] },
  formats: FORMATS,
  create: (context) => new RsvgEngine(context),
});
