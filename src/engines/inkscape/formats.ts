// The format the inkscape engine adds to the catalogue: Adobe Illustrator's .ai (→ svg, emf, wmf,
// dxf here; its pdf, eps and ps are Ghostscript's, its png poppler's: each reads it as the PDF it
// is). An Illustrator
// file since version 9 is a PDF (its own data in a private stream beside the PDF content), so it
// bears PDF's signature: it is taken as `ai` only when its name says .ai (signatureOf/nameDecides,
// as a PDF/A is), so a plain PDF named .pdf stays a PDF and an EPS stays an EPS. Illustrator 8
// and older wrote PostScript: such a file has PostScript's signature, not PDF's, and is read by
// its content as PostScript (Ghostscript's), never as `ai` (README "Known limitations").
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  {
    id: 'ai', name: 'Adobe Illustrator drawing', category: 'vector', mediaType: 'application/illustrator', extensions: ['ai'],
    detect: 'magic', signatureOf: 'pdf', nameDecides: true,
  },
];
