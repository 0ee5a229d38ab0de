// PDF to PDF/A and PDF through Ghostscript; uploaded EPS and PostScript to PDF and PNG.
import { defineEngine } from '../module.ts';
import { GhostscriptEngine } from './engine.ts';
import { FORMATS } from './formats.ts';
import { SETTINGS } from './settings.ts';

export default defineEngine({
  id: 'ghostscript',
  summary: 'gs pdfwrite with our PDF/A prologue, after the pdfinfo gate; EPS and PostScript run once, in a short time limit, into a PDF that is then cut or rendered',
  packages: { debian: ['ghostscript', 'poppler-utils'] },
  formats: FORMATS,
  settings: SETTINGS,
  create: (context) => new GhostscriptEngine(context),
});
