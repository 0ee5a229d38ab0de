// Image formats the libvips bundled with sharp lacks (HEIC/HEIF, JPEG XL, JPEG 2000), through Debian's vips command.
import { defineEngine } from '../module.ts';
import { VipsCliEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'vips',
  summary: 'Debian `vips` (explicit loaders, header pixel check)',
  packages: { debian: ['libvips-tools'] },
  formats: FORMATS,
  create: (context) => new VipsCliEngine(context),
});
