// Raster images through sharp, in a pool of warm, sandboxed Node processes (the context's node
// pool, loading images.ts): libvips decodes uploads inside the sandbox, under the engine's memory
// cgroup and time limit, and the service process never loads it.
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../../errors.ts';
import type { PoolStats, ProcessPool } from '../../process/pool/index.ts';
import type { RasterImages } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { rasterOptions, type RasterTarget } from '../support/raster-options.ts';
import { isRaster, RASTER_FORMATS, type RasterFormat } from './formats.ts';
import type { StepOptions } from '../options.ts';

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
const EDGES: ConversionEdge[] = RASTER_FORMATS.flatMap((from) =>
  RASTER_FORMATS.map((to) => ({ from, to, cost: to === 'avif' ? 3 : 1, options: rasterOptions(TARGETS[to]) })),
);

type ImageLimits = Pick<ConvertRequest['limits'], 'maxImagePixels' | 'timeoutMs'>;

export class SharpEngine implements Engine, RasterImages {
  readonly id = 'sharp';
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  readonly pool: ProcessPool;
  readonly capabilities = { 'raster-images': this };

  constructor(context: EngineContext<unknown>) {
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
    return to === 'avif' ? base * 3 : base;
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    await this.pool.init();
    const working = await this.pool.ask({ op: 'probe' }, 60_000, AbortSignal.timeout(90_000)) as string[];
    if (working.length < 2) throw new Error('sharp could not encode and decode its image formats');
    return EDGES.filter((edge) => working.includes(edge.from) && working.includes(edge.to));
  }

  async convert(request: ConvertRequest): Promise<void> {
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

  /** Writes a PNG of `input` flattened onto white (img2pdf refuses transparency). */
  async flattenOntoWhite(input: string, output: string, limits: ImageLimits, signal: AbortSignal): Promise<void> {
    await this.pool.convert(input, output, {
      op: 'flatten', maxImagePixels: limits.maxImagePixels, timeoutSeconds: Math.ceil(limits.timeoutMs / 1000),
    }, limits.timeoutMs, signal);
  }

  health(): { ok: boolean; detail: Readonly<Record<string, unknown>> } {
    return this.pool.health();
  }

  poolStats(): PoolStats {
    return this.pool.stats();
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}
