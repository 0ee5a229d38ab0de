// PDF to PDF/A through Ghostscript (PDF input only, never PostScript uploads).
import { defineEngine } from '../module.ts';
import { GhostscriptEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'ghostscript',
  summary: 'gs pdfwrite with our PDF/A prologue, after the pdfinfo gate',
  packages: { debian: ['ghostscript', 'poppler-utils'] },
  formats: FORMATS,
  create: (context) => new GhostscriptEngine(context),
});
