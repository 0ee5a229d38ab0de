// Ebooks through calibre's ebook-convert.
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { CalibreEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'calibre',
  summary: '`ebook-convert` (input always `input.<format>` of its own list, real progress)',
  packages: { debian: ['calibre', ...FONT_PACKAGES] },
  formats: FORMATS,
  create: (context) => new CalibreEngine(context),
});
