// Raster → vector tracing with potrace (issue #31): png, jpg, webp, gif, tiff and avif (what
// sharp reads; every other raster format reaches them through png) traced to svg, eps, dxf and
// geojson, in one colour. sharp's sandboxed processes ('raster-images') first write the image's
// luminance as a PGM, flattened onto white; potrace reads that greymap and thresholds it itself
// (-k, the blacklevel): one cut, made by the tool that traces, with no second bitmap to keep in
// step with it, and the decoding of hostile uploads stays in sharp's sandbox, never in potrace's
// own readers (it reads only the PGM made here). A single-colour trace: the dark parts (or, with
// invert, the light ones) become filled outlines of one colour; colours and greys are not kept.
//
// The traced PDF is asked for with option trace=true (target pdf): png, jpg, ... → pdf stays
// img2pdf's picture PDF for a client that sends only file and target (this edge costs more), and
// the planner takes the route applying most options, so trace=true moves the job here (as
// ocr=true moves it to Tesseract). trace=false, or a tracing option without trace=true, is
// refused (422) rather than read as a wish for a traced PDF or silently dropped.
//
// Hostile here: a noisy picture, whose outline is a path per speck (a 1-megapixel noise image
// gives tens of megabytes of SVG). potrace drops specks of up to turdsize pixels (2 by default, as
// potrace's own), runs under the output cap (RLIMIT_FSIZE: past it the runner ends the job as
// output_too_large), the address-space cap and the engine's time limit. Option values reach argv
// only as numbers this file formats, or a colour rebuilt from its three bytes.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { RasterImages } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import { booleanOption, narrow, numberOption, OPTIONS, refuseFalse, rgbHex, rgbOption, type OptionSpec, type StepOptions } from '../options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const POTRACE = '/usr/bin/potrace';

/** The formats sharp decodes in its sandbox: the inputs potrace's greymap is made from. */
export const TRACED_SOURCES = ['png', 'jpg', 'webp', 'gif', 'tiff', 'avif'] as const;
/** potrace's backends (-b) and the targets they write (pdf with trace=true). */
export const TRACED_TARGETS = ['svg', 'eps', 'dxf', 'geojson', 'pdf'] as const;
type TracedTarget = (typeof TRACED_TARGETS)[number];

/** The default blacklevel, in percent: potrace's own 0.5. */
const DEFAULT_THRESHOLD = 50;
/** The default speck size dropped, in pixels: potrace's own. */
const DEFAULT_TURDSIZE = 2;

const COMMON: readonly OptionSpec[] = [OPTIONS.threshold, narrow(OPTIONS.turdsize, { default: DEFAULT_TURDSIZE }), OPTIONS.invert];
/** svg, eps and pdf fill their outlines with a colour; dxf and geojson have no fill to colour. */
const FILLED: readonly OptionSpec[] = [...COMMON, OPTIONS.color];

// An outline ends its route: a traced SVG is not a picture to trace, render or convert again (an
// svg → png of it would only be a blurred copy of the source). Cost 2: a decode by sharp and a
// trace. Every raster format that reaches png through ImageMagick or vips is traced through it
// (a TGA's outline is as useful as a PNG's); a vector drawing is not: never after rsvg, nor after
// sharp (whose inputs all have an edge here, so a sharp step before one only ever came from
// rsvg's PNG: svg → png → jpg → dxf). Tracing the rendering of an SVG throws its own curves away
// for approximations of them, which no one converting svg → dxf wants.
const TRACE_OPTION = OPTIONS.trace;

/** The traced PDF only with trace=true: false is the picture PDF's route, and a tracing option alone no wish for an outline. */
function traceMustBeTrue(options: StepOptions): void {
  refuseFalse(options, 'trace', 'the picture in a PDF, through img2pdf', 'for the traced outline');
  if (booleanOption(options, 'trace') === true) return;
  throw new ConvertdError('invalid_option', 'The tracing options make a traced PDF: send trace=true with them (without it, the PDF is the picture itself).', { option: 'trace', reason: 'needed by the tracing options', values: [true] });
}

const EDGES: ConversionEdge[] = TRACED_SOURCES.flatMap((from) => TRACED_TARGETS.map((to): ConversionEdge => (to === 'pdf'
  // Cost 8: dearer than every img2pdf route to pdf, so that a job without trace=true stays there.
  // Not endsRoute (as the outlines are): the planner's walk of targets follows a format from the
  // engine that first reached it, so an ending pdf here hid avif → pdf → pdfa; nor unchainable, for
  // the same reason. It never becomes the middle of a longer route: trace counts on a route's last
  // step only, and without it img2pdf's way is cheaper (as with Tesseract's searchable PDF); a
  // PDF's pages as a ZIP never follow it (poppler's notAfter), as they never follow img2pdf's.
  ? { from, to, cost: 8, notAfter: ['rsvg', 'sharp'], options: [TRACE_OPTION, ...FILLED], checkOptions: traceMustBeTrue }
  : { from, to, cost: 2, endsRoute: true, notAfter: ['rsvg', 'sharp'], options: to === 'svg' || to === 'eps' ? FILLED : COMMON })));

/** The tiny greymap of the start-up probe: 16 × 16 white with a black 8 × 8 square. */
function probeGreymap(): Buffer {
  const pixels = Buffer.alloc(16 * 16, 255);
  for (let y = 4; y < 12; y++) pixels.fill(0, y * 16 + 4, y * 16 + 12);
  return Buffer.concat([Buffer.from('P5\n16 16\n255\n', 'latin1'), pixels]);
}

/** What each backend's output starts with (or holds, for DXF's leading comment), checked by the probe. */
const WROTE: Record<TracedTarget, RegExp> = {
  svg: /<svg[\s\S]*<path /,
  eps: /^%!PS-Adobe-[\d.]+ EPSF/,
  dxf: /\bENTITIES\b[\s\S]*\bPOLYLINE\b/,
  geojson: /"FeatureCollection"[\s\S]*"Polygon"/,
  pdf: /^%PDF-[\s\S]*\/Contents\b/,
};

export class PotraceEngine implements Engine {
  readonly id = 'potrace';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;
  private readonly images: RasterImages;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
    this.images = context.use('raster-images');
  }

  estimateSeconds(inputBytes: number): number {
    return 0.5 + inputBytes / 2_000_000;
  }

  /** Traces the probe's square with each backend; the targets whose output looks like theirs pass. */
  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    return withScratchDir(async (dir) => {
      await fs.writeFile(path.join(dir, 'probe.pgm'), probeGreymap());
      const works = new Set<string>();
      for (const target of TRACED_TARGETS) {
        const result = await run(POTRACE, ['-b', target, '-o', `./probe.${target}`, './probe.pgm'], { cwd: dir, timeoutMs: 20_000 });
        const text = await fs.readFile(path.join(dir, `probe.${target}`), 'latin1').catch(() => '');
        if (result.exitCode === 0 && WROTE[target].test(text)) works.add(target);
      }
      if (works.size === 0) throw new Error('potrace traced nothing');
      return EDGES.filter((edge) => works.has(edge.to));
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, to, workDir, limits, signal, options } = request;
    const greymap = path.join(workDir, 'trace.pgm');
    try {
      await this.images.greymap(input, greymap, limits, signal);
      request.onProgress(0.3);
      const result = await this.context.run(POTRACE, [...traceArguments(to as TracedTarget, options), '-o', `./${path.basename(output)}`, `./${path.basename(greymap)}`], {
        cwd: workDir, timeoutMs: limits.timeoutMs, signal,
        limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      });
      if (result.exitCode !== 0) {
        await fs.rm(output, { force: true });
        // The greymap is this service's own: a failure here is potrace's (memory, most likely, on a huge noisy picture).
        throw new ConvertdError(result.signal === 'SIGKILL' || result.signal === 'SIGSEGV' || /memory/i.test(result.stderr) ? 'input_too_complex' : 'conversion_failed',
          `potrace could not trace the image (${lastErrorLine(result.stderr) || result.signal || `exit ${result.exitCode}`}).`);
      }
    } finally {
      await fs.rm(greymap, { force: true });
    }
  }
}

/** potrace's arguments for a target and the step's parsed options: numbers formatted here, a colour rebuilt from its bytes. */
export function traceArguments(to: TracedTarget, options: ConvertRequest['options']): string[] {
  const threshold = numberOption(options, 'threshold') ?? DEFAULT_THRESHOLD;
  const turdsize = numberOption(options, 'turdsize') ?? DEFAULT_TURDSIZE;
  const args = ['-b', to, '-k', (threshold / 100).toFixed(4), '-t', String(Math.trunc(turdsize))];
  if (booleanOption(options, 'invert')) args.push('-i');
  const colour = rgbOption(options, 'color');
  if (colour && (to === 'svg' || to === 'eps' || to === 'pdf')) args.push('--color', rgbHex(colour));
  return args;
}
