// OCR through Tesseract: an image's or a PDF's text as txt and hOCR, and the searchable PDF (target pdf, ocr=true).
import { defineEngine } from '../module.ts';
import { TesseractEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'tesseract',
  summary: "tesseract 5 (OMP_THREAD_LIMIT=1): TIFF pages counted and sized first (`tiff-pages.ts`), every other image flattened to PNG through 'raster-images' (a BMP decoded by 'other-raster-images' first); a PDF's pages drawn by pdftoppm after the pdfinfo gate (`pdf-pages.ts`); languages from `--list-langs`",
  // The language packs installed here besides English: the `language` option offers what the probe
  // finds. poppler-utils: a PDF's pages drawn (pdftoppm), its text layer read, pages joined.
  packages: {
    debian: ['poppler-utils', 'tesseract-ocr', 'tesseract-ocr-eng', 'tesseract-ocr-amh', 'tesseract-ocr-ara', 'tesseract-ocr-ben', 'tesseract-ocr-chi-sim', 'tesseract-ocr-ell', 'tesseract-ocr-heb',
      'tesseract-ocr-hin', 'tesseract-ocr-jpn', 'tesseract-ocr-khm', 'tesseract-ocr-kor', 'tesseract-ocr-rus', 'tesseract-ocr-tam', 'tesseract-ocr-tha'],
  },
  formats: FORMATS,
  needs: ['raster-images', 'other-raster-images'],
  create: (context) => new TesseractEngine(context),
});
