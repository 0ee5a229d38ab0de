// Markup and document formats through pandoc.
import { defineEngine } from '../module.ts';
import { PandocEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'pandoc',
  summary: 'pandoc (readers always under `--sandbox`, writers too where they work; the others read that tree, emptied of outside references by `filters/no-external-images.lua` and `filters/no-external-resources.lua`; no /proc, heap cap, `filters/title-heading.lua`, table filters for TEI, XWiki and Muse, citeproc for bibliographies); `prepare-input.py` first carries docx charts and odt header rows, which the reader drops',
  packages: { debian: ['pandoc', 'python3-minimal'] },
  formats: FORMATS,
  create: (context) => new PandocEngine(context),
});
