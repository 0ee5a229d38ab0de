// PNG and JPEG images to PDF, losslessly, through img2pdf.
import { defineEngine } from '../module.ts';
import { Img2PdfEngine } from './engine.ts';

export default defineEngine({
  id: 'img2pdf',
  summary: "img2pdf (transparency flattened first through 'raster-images')",
  packages: { debian: ['img2pdf'] },
  formats: [],
  needs: ['raster-images'],
  create: (context) => new Img2PdfEngine(context),
});
