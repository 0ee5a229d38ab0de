// Audio and video through Debian's ffmpeg (and Debian's flac, for the FLAC files too wide for it).
import { defineEngine } from '../module.ts';
import { REFERENCE_BLAS_PACKAGES, referenceBlasEnvironment } from '../support/reference-blas.ts';
import { FfmpegEngine } from './engine.ts';
import { FORMATS } from './formats.ts';
import { SETTINGS } from './settings.ts';
import { SUBTITLE_FORMATS } from './subtitle-formats.ts';

export default defineEngine({
  id: 'ffmpeg',
  summary: 'one ffmpeg run, stopped by the gate reading its own input description (allow-lists, real progress)',
  packages: { debian: ['ffmpeg', 'flac', ...REFERENCE_BLAS_PACKAGES] },
  formats: [...FORMATS, ...SUBTITLE_FORMATS],
  settings: SETTINGS,
  environment: referenceBlasEnvironment,
  create: (context) => new FfmpegEngine(context),
});
