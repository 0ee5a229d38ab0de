// Ebooks through calibre's ebook-convert.
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { CalibreEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'calibre',
  summary: "`ebook-convert` warm in a pool (`calibre-pool.ts`, `helper/calibre.py`: a child forked per job; input always `input.<format>` of its own list, real progress; cb7 and cbc comics unpacked through 'archive-members' first)",
  packages: { debian: ['calibre', ...FONT_PACKAGES] },
  formats: FORMATS,
  // cb7 and cbc comics are unpacked through the archive engine's caps before calibre reads them.
  needs: ['archive-members'],
  create: (context) => new CalibreEngine(context),
});
