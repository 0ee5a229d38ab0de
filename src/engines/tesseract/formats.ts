// The format the tesseract engine adds to the catalogue: hOCR, the recognised words with their
// boxes as XHTML (`ocr_page`, `ocr_line`, `ocrx_word` elements, `bbox` in their titles). It is
// written only: an uploaded .hocr is XHTML to the sniffer, and nothing here reads hOCR.
import type { FormatDefinition } from '../../formats/catalogue.ts';

export const FORMATS: readonly FormatDefinition[] = [
  { id: 'hocr', name: 'hOCR (recognised words with their boxes, XHTML)', category: 'document', mediaType: 'application/xhtml+xml', extensions: ['hocr'], detect: 'extension' },
];
