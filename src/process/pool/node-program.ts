// Pooled Node processes (supervisor.ts) that run our own conversion code inside the sandbox:
// node-host.ts loads a module (engines/sharp/images.ts, engines/data/convert.ts) and calls its
// handlers. Warm, they cost a JSON line and a hard link per file, where starting Node with the
// libraries for each file cost about 0.4 s.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConvertdError, JOB_ERROR_CODES, type JobErrorCode } from '../../errors.ts';
import type { Logger } from 'pino';
import type { PooledProgram, Reply } from './messaging.ts';
import { ProcessPool } from './supervisor.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const HOST = fileURLToPath(new URL('./node-host.ts', import.meta.url));
/** What the process reads: our code and its libraries, not the data dir. */
const READ_ONLY = [path.join(ROOT, 'node_modules'), path.join(ROOT, 'src'), path.join(ROOT, 'package.json')];

export interface NodeProgramOptions {
  readonly label: string;
  readonly logName: string;
  /** The module whose `handlers` answer the pool's requests. */
  readonly module: string;
  /** V8's heap cap: a runaway parse stops here (the memory cgroup bounds native memory). */
  readonly heapMb: number;
  /** What a file that exhausted the heap is told. */
  readonly tooComplex: string;
}

export interface NodePoolOptions {
  /** Processes in the pool: one per concurrent job. */
  readonly size: number;
  /** Conversions after which a process is replaced by a fresh one (1000 unless set). */
  readonly maxJobsPerProcess?: number;
  readonly start: 'eager' | 'lazy';
  /** Where the processes' directories live. */
  readonly stateDir: string;
  readonly maxOutputBytes: number;
}

/** A pool of warm Node processes running `program.module`. */
export function createNodePool(program: NodeProgramOptions, options: NodePoolOptions, log?: Logger): ProcessPool {
  return new ProcessPool(nodeProgram(program, options.maxOutputBytes), {
    size: options.size,
    // Recycled now and then: native heaps (libvips') fragment over thousands of files; an engine
    // whose helper keeps a bigger program warm (Chromium) asks for fewer.
    maxJobsPerProcess: options.maxJobsPerProcess ?? 1000,
    start: options.start,
    // The job queue already holds jobs back to CONVERTD_CONCURRENCY, one per process.
    maxWaiting: 10_000,
    stateDir: options.stateDir,
    log,
  });
}

function nodeProgram(options: NodeProgramOptions, maxOutputBytes: number): PooledProgram {
  return {
    label: options.label,
    logName: options.logName,
    // Our code crashing on a file crashes on it again.
    retryAfterCrash: false,
    command: () => ({
      program: process.execPath,
      args: [`--max-old-space-size=${options.heapMb}`, '--disable-warning=ExperimentalWarning', HOST, options.module],
      readOnly: READ_ONLY,
      // No address-space limit: V8 reserves far more than it uses.
      limits: { fileSizeBytes: maxOutputBytes },
    }),
    failure: (reply: Reply) => new ConvertdError(
      (JOB_ERROR_CODES as readonly string[]).includes(reply.code ?? '') ? reply.code as JobErrorCode : 'conversion_failed',
      reply.message,
    ),
    explainDeath: (stderr) => /heap out of memory|allocation failed/i.test(stderr) ? new ConvertdError('input_too_complex', options.tooComplex) : undefined,
  };
}
