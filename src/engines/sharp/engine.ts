// Raster images through sharp, in a pool of warm, sandboxed Node processes (the context's node
// pool, loading images.ts): libvips decodes uploads inside the sandbox, under the engine's memory
// cgroup and time limit, and the service process never loads it.
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../../errors.ts';
import type { ProcessPool } from '../../process/pool/index.ts';
import type { RasterImages } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { rasterOptions, type RasterTarget } from '../support/raster-options.ts';
import { isRaster, RASTER_FORMATS, type RasterFormat } from './formats.ts';
import { narrow, OPTIONS, type OptionSpec, type StepOptions } from '../options.ts';
import { PooledEngine } from '../support/pooled-engine.ts';

const IMAGES = fileURLToPath(new URL('./images.ts', import.meta.url));

/** Each target's encoder: its default quality when lossy, and whether it holds transparency. */
const TARGETS: Record<RasterFormat, RasterTarget> = {
  png: { alpha: true },
  jpg: { alpha: false, defaultQuality: 85 },
  webp: { alpha: true, defaultQuality: 82 },
  avif: { alpha: true, defaultQuality: 55 },
  gif: { alpha: true },
  tiff: { alpha: true },
};

// Costs for the planner: AVIF encoding is several times slower than the rest. Every format also
// converts to itself (resized, re-encoded at another quality, its metadata stripped or kept).
/** The formats a frame of an animation may become in a ZIP (`each`). */
const FRAME_FORMATS = ['png', 'jpg', 'webp', 'gif'] as const;

/** Options of an animation's frames in a ZIP: `each`, and the raster options applied to every frame. */
const FRAME_OPTIONS: OptionSpec[] = [
  narrow(OPTIONS.each, { values: [...FRAME_FORMATS], default: 'png', description: 'Every frame of the animation becomes an image of this format (frame-001.png, ...) in the ZIP, in order.' }),
  OPTIONS.width, OPTIONS.height, OPTIONS.fit,
  narrow(OPTIONS.quality, { description: 'Quality of each frame when each is jpg or webp, 1-100: higher is better and larger (default: 85 for jpg, 82 for webp).' }),
  narrow(OPTIONS.background, { description: 'Colour behind transparent areas of each frame when each is jpg, as #rrggbb.' }),
];

// Costs for the planner: AVIF encoding is several times slower than the rest. Every format also
// converts to itself (resized, re-encoded at another quality, its metadata stripped or kept). An
// animated GIF or WebP also becomes a ZIP of its frames, only as the upload itself (never chained:
// a PNG must not reach zip through a GIF).
const EDGES: ConversionEdge[] = [
  ...RASTER_FORMATS.flatMap((from) =>
    RASTER_FORMATS.map((to) => ({ from, to, cost: to === 'avif' ? 3 : 1, options: rasterOptions(TARGETS[to]) }))),
  ...(['gif', 'webp'] as const).map((from) => ({ from, to: 'zip', cost: 2, chainable: false, endsRoute: true, options: FRAME_OPTIONS })),
];

type ImageLimits = Pick<ConvertRequest['limits'], 'maxImagePixels' | 'timeoutMs'>;

export class SharpEngine extends PooledEngine implements Engine, RasterImages {
  readonly id = 'sharp';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  readonly pool: ProcessPool;
  readonly capabilities = { 'raster-images': this };

  constructor(context: EngineContext<unknown>) {
    super();
    this.pool = context.pools.node({
      label: 'sharp',
      logName: 'sharp',
      module: IMAGES,
      // The heap holds little: pixels live in libvips' native memory, which the cgroup limits.
      heapMb: 256,
      tooComplex: 'The image is too complex to convert: send a smaller one.',
    });
  }

  estimateSeconds(inputBytes: number, _from: string, to: string): number {
    const base = 0.2 + inputBytes / 4_000_000;
    // A frame archive encodes every frame as an image of its own.
    return to === 'avif' ? base * 3 : to === 'zip' ? base * 4 : base;
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    await this.pool.init();
    const working = await this.pool.ask({ op: 'probe' }, 60_000, AbortSignal.timeout(90_000)) as string[];
    if (working.length < 2) throw new Error('sharp could not encode and decode its image formats');
    // A frame archive needs its source's decoder and the frames' encoders (png at least: the default).
    return EDGES.filter((edge) => working.includes(edge.from) && (working.includes(edge.to) || (edge.to === 'zip' && working.includes('png'))));
  }

  async convert(request: ConvertRequest): Promise<void> {
    if (request.to === 'zip') {
      const { input, output, from, limits, signal, options } = request;
      await this.pool.convert(input, output, {
        op: 'frames', from, maxImagePixels: limits.maxImagePixels, maxOutputBytes: limits.maxOutputBytes, timeoutSeconds: Math.ceil(limits.timeoutMs / 1000), options,
      }, limits.timeoutMs, signal);
      return;
    }
    await this.reencode(request.input, request.output, request.from, request.to, request.limits, request.signal, request.options);
  }

  /**
   * Converts one raster image to another format, with the raster options (support/raster-options.ts);
   * also for engines that end in an image (poppler's WebP pages).
   */
  async reencode(input: string, output: string, from: string, to: string, limits: ImageLimits, signal: AbortSignal, options: StepOptions = {}): Promise<void> {
    if (!isRaster(from) || !isRaster(to)) throw new ConvertdError('conversion_failed', `sharp does not convert ${from} to ${to}.`);
    await this.pool.convert(input, output, {
      from, to, maxImagePixels: limits.maxImagePixels, timeoutSeconds: Math.ceil(limits.timeoutMs / 1000), options,
    }, limits.timeoutMs, signal);
  }

  /** Writes a PNG of `input` (or of its page `page`, 0-based) flattened onto white (img2pdf refuses transparency). */
  async flattenOntoWhite(input: string, output: string, limits: ImageLimits, signal: AbortSignal, page?: number): Promise<void> {
    await this.pool.convert(input, output, {
      op: 'flatten', maxImagePixels: limits.maxImagePixels, timeoutSeconds: Math.ceil(limits.timeoutMs / 1000), ...(page === undefined ? {} : { page }),
    }, limits.timeoutMs, signal);
  }

  /** Writes a greyscale PGM of `input` flattened onto white (potrace's bitmap, which it thresholds itself). */
  async greymap(input: string, output: string, limits: ImageLimits, signal: AbortSignal): Promise<void> {
    await this.pool.convert(input, output, {
      op: 'greymap', maxImagePixels: limits.maxImagePixels, timeoutSeconds: Math.ceil(limits.timeoutMs / 1000),
    }, limits.timeoutMs, signal);
  }
}
