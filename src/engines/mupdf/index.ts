// XPS and OpenXPS through MuPDF: the document as PDF, a page as PNG or SVG, the text; a PDF's page as SVG.
import { defineEngine } from '../module.ts';
import { MupdfEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'mupdf',
  summary: "MuPDF measures the document first (`mutool run`: page count and page size, held to the PDF gate's caps; a PDF passes `support/pdf-info.ts`), then mutool draw (PDF, PNG, SVG, text)",
  packages: { debian: ['mupdf-tools'] },
  formats: FORMATS,
  create: (context) => new MupdfEngine(context),
});
