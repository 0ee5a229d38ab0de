// Raster images through sharp, in a pool of warm, sandboxed Node processes (process-pool.ts with
// helpers/node-host.ts loading sharp/images.ts): libvips decodes uploads inside the sandbox, under
// the engine's memory cgroup and time limit, and the service process never loads it. A warm process
// costs a JSON line and a hard link per image, where starting Node with sharp for each would cost
// a third of a second.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { ConvertdError, JOB_ERROR_CODES, type JobErrorCode } from '../errors.ts';
import { ProcessPool, type PooledProgram, type Reply } from './process-pool.ts';
import { isRaster, RASTER_FORMATS } from './sharp/formats.ts';
import type { ConversionEdge, ConvertRequest, Engine } from './types.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HOST = fileURLToPath(new URL('./helpers/node-host.ts', import.meta.url));
const IMAGES = fileURLToPath(new URL('./sharp/images.ts', import.meta.url));
/** What the Node process reads: our code and its libraries (sharp's libvips among them), not the data dir. */
const READ_ONLY = [path.join(ROOT, 'node_modules'), path.join(ROOT, 'src'), path.join(ROOT, 'package.json')];

// Costs for the planner: AVIF encoding is several times slower than the rest.
const EDGES: ConversionEdge[] = RASTER_FORMATS.flatMap((from) =>
  RASTER_FORMATS.filter((to) => to !== from).map((to) => ({ from, to, cost: to === 'avif' ? 3 : 1 })),
);

type ImageLimits = Pick<ConvertRequest['limits'], 'maxImagePixels' | 'timeoutMs'>;

/** What other engines may ask of sharp's sandboxed processes. */
export type ImageEncoder = Pick<SharpEngine, 'reencode' | 'flattenOntoWhite'>;

export interface SharpOptions {
  /** Processes in the pool: one per concurrent job. */
  readonly size: number;
  readonly start: 'eager' | 'lazy';
  /** Where the processes' directories live. */
  readonly stateDir: string;
  readonly maxOutputBytes: number;
}

function sharpProgram(maxOutputBytes: number): PooledProgram {
  return {
    label: 'sharp',
    logName: 'sharp',
    // A decoder that crashed on a file crashes on it again.
    retryAfterCrash: false,
    command: () => ({
      program: process.execPath,
      // The heap holds little (pixels live in libvips' native memory, which the cgroup limits).
      args: ['--max-old-space-size=256', '--disable-warning=ExperimentalWarning', HOST, IMAGES],
      readOnly: READ_ONLY,
      limits: { fileSizeBytes: maxOutputBytes },
    }),
    failure: (reply: Reply) => new ConvertdError(
      (JOB_ERROR_CODES as readonly string[]).includes(reply.code ?? '') ? reply.code as JobErrorCode : 'conversion_failed',
      reply.message,
    ),
  };
}

export class SharpEngine implements Engine {
  readonly id = 'sharp';
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  readonly pool: ProcessPool;

  constructor(options: SharpOptions, log?: Logger) {
    this.pool = new ProcessPool(sharpProgram(options.maxOutputBytes), {
      size: options.size,
      // Recycled now and then: libvips' native heap fragments over thousands of images.
      maxJobsPerProcess: 1000,
      start: options.start,
      // The job queue already holds jobs back to CONVERTD_CONCURRENCY, one per process.
      maxWaiting: 10_000,
      stateDir: options.stateDir,
      log,
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
    await this.reencode(request.input, request.output, request.from, request.to, request.limits, request.signal);
  }

  /** Converts one raster image to another format; also for engines that end in an image (poppler's WebP pages). */
  async reencode(input: string, output: string, from: string, to: string, limits: ImageLimits, signal: AbortSignal): Promise<void> {
    if (!isRaster(from) || !isRaster(to)) throw new ConvertdError('conversion_failed', `sharp does not convert ${from} to ${to}.`);
    await this.pool.convert(input, output, {
      from, to, maxImagePixels: limits.maxImagePixels, timeoutSeconds: Math.ceil(limits.timeoutMs / 1000),
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

  async close(): Promise<void> {
    await this.pool.close();
  }
}
