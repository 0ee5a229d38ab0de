// Fonts (ttf, otf, woff, woff2, ttx) through fontTools, run by a Python helper in the sandbox.
import { defineEngine } from '../module.ts';
import { FontEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'fonttools',
  summary: "`helper/fonts.py` on Debian's fontTools",
  packages: { debian: ['python3-fonttools', 'python3-brotli'] },
  formats: FORMATS,
  create: (context) => new FontEngine(context),
});
