// Archives through bsdtar, with the service checking every member between reading and writing.
import { defineEngine } from '../module.ts';
import { ArchiveEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'archives',
  summary: 'bsdtar → member walk in the service → bsdtar',
  packages: { debian: ['libarchive-tools'], npm: ['tar-stream'] },
  formats: FORMATS,
  create: (context) => new ArchiveEngine(context),
});
