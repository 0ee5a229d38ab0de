// Markup and document formats through pandoc.
import { defineEngine } from '../module.ts';
import { PandocEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'pandoc',
  summary: 'pandoc (`--sandbox` where it works, heap cap, `filters/no-external-images.lua` image filter for the writers that embed images, `filters/title-heading.lua`, table filters for TEI, XWiki and Muse, citeproc for bibliographies); `prepare-input.py` first carries docx charts and odt header rows, which the reader drops',
  packages: { debian: ['pandoc', 'python3-minimal'] },
  formats: FORMATS,
  create: (context) => new PandocEngine(context),
});
