// Archives through bsdtar (7-Zip reads the 7z and zip archives libarchive cannot), with the service
// checking every member between reading and writing.
import { defineEngine } from '../module.ts';
import { ArchiveEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'archives',
  summary: 'bsdtar → member walk in the service → bsdtar',
  packages: { debian: ['libarchive-tools', '7zip'], npm: ['tar-stream'] },
  formats: FORMATS,
  create: (context) => new ArchiveEngine(context),
});
