// DjVu documents through DjVuLibre: pages as PDF, TIFF and PNG, and the text layer.
import { defineEngine } from '../module.ts';
import { DjvulibreEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'djvulibre',
  summary: "the document's structure read first (`formats/djvu-structure.ts`: indirect documents refused, page and pixel caps), then ddjvu, djvutxt, djvused; PNG pages through 'raster-images'",
  packages: { debian: ['djvulibre-bin'] },
  formats: FORMATS,
  // A page as PNG: ddjvu writes TIFF, which sharp's sandboxed processes encode.
  needs: ['raster-images'],
  create: (context) => new DjvulibreEngine(context),
});
