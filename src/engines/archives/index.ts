// Archives through bsdtar (7-Zip reads the 7z and zip archives libarchive cannot, and SquashFS, WIM and ARJ), with the service
// checking every member between reading and writing; offers 'archive-members' (an archive's files
// unpacked through the same checks) to the jobs layer's batches (target zip with each).
import { defineEngine } from '../module.ts';
import { ArchiveEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'archives',
  summary: 'bsdtar (7-Zip for SquashFS, WIM, ARJ) → member walk in the service → bsdtar',
  packages: { debian: ['libarchive-tools', '7zip'], npm: ['tar-stream'] },
  formats: FORMATS,
  provides: ['archive-members'],
  create: (context) => new ArchiveEngine(context),
});
