// Vector drawings through Inkscape 1.2: svg/svgz → emf, wmf, dxf; svg → plain svg; dxf → svg, pdf,
// png, eps, ps, emf, wmf; pdf and Illustrator (.ai) → emf, wmf, dxf, and ai → svg; emf, wmf → each
// other, eps, ps, dxf (an Illustrator file's pdf, eps and ps are Ghostscript's, its png poppler's).
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { InkscapeEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'inkscape',
  summary: '`inkscape` per job (SVG made self-contained first; DXF read by its dxf_input.py under python3; WMF fonts checked (`wmf-fonts.ts`); PDF and .ai pages counted by pdfinfo), HOME in the work dir',
  // python3-lxml: Inkscape's Python extensions (the DXF importer and exporter) import lxml; Debian
  // only recommends it. poppler-utils: pdfinfo, which checks a PDF (or an Illustrator file) and counts its pages.
  packages: { debian: ['inkscape', 'python3', 'python3-lxml', 'python3-numpy', 'poppler-utils', ...FONT_PACKAGES] },
  formats: FORMATS,
  create: (context) => new InkscapeEngine(context),
});
