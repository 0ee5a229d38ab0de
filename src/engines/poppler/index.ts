// PDF through poppler: pages as images, the text, HTML.
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { PopplerEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'poppler',
  summary: "pdfinfo gate (`support/pdf-info.ts`), pdftoppm, pdftotext, pdftohtml; WebP pages through 'raster-images'",
  packages: { debian: ['poppler-utils', ...FONT_PACKAGES] },
  formats: FORMATS,
  needs: ['raster-images'],
  create: (context) => new PopplerEngine(context),
});
