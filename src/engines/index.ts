// The list of engines: one line per engine module (src/engines/<tool>/). Everything else is
// derived from it (engines/assembly.ts): the format catalogue, the settings, the engines main.ts
// creates and probes, /metrics' pool gauges, /readyz, the Debian packages scripts/setup.mjs and the
// Dockerfile install (through scripts/packages.ts), and docs/architecture.md's engine table. An
// engine folder is imported from here and nowhere else (test/engine-modules.test.ts).
//
// The order is the order of creation, except that an engine that needs a capability is created
// after the engine that provides it.
import type { AnyEngineModule } from './assembly.ts';

export const ENGINE_MODULES: readonly AnyEngineModule[] = [
  (await import('./sharp/index.ts')).default,
  (await import('./vips/index.ts')).default,
  (await import('./imagemagick/index.ts')).default,
  (await import('./rsvg/index.ts')).default,
  (await import('./ffmpeg/index.ts')).default,
  (await import('./fonttools/index.ts')).default,
  (await import('./archives/index.ts')).default,
  (await import('./data/index.ts')).default,
  (await import('./email/index.ts')).default,
  (await import('./libreoffice/index.ts')).default,
  (await import('./pandoc/index.ts')).default,
  (await import('./poppler/index.ts')).default,
  (await import('./ghostscript/index.ts')).default,
  (await import('./img2pdf/index.ts')).default,
  (await import('./calibre/index.ts')).default,
  (await import('./djvulibre/index.ts')).default,
  (await import('./potrace/index.ts')).default,
  (await import('./tesseract/index.ts')).default,
  (await import('./mupdf/index.ts')).default,
  (await import('./gdal/index.ts')).default,
  (await import('./chromium/index.ts')).default,
  (await import('./assimp/index.ts')).default,
  (await import('./inkscape/index.ts')).default,
  (await import('./latex/index.ts')).default,
];

/** The module with this id (for the benchmark and tests that build one engine); throws when none has it. */
export function engineModule(id: string): AnyEngineModule {
  const found = ENGINE_MODULES.find((module) => module.id === id);
  if (!found) throw new Error(`no engine module "${id}": the list has ${ENGINE_MODULES.map((m) => m.id).join(', ')}`);
  return found;
}

/** The ffmpeg engine's WebM encoder arguments, for the benchmark's bare ffmpeg command to use the same. */
export { mp4Encoders, VP9_SPEED, WEBM_ENCODERS } from './ffmpeg/engine.ts';
