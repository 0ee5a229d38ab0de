// Runs one job: takes its input into a fresh private work directory, runs the planned route of
// engines, checks and stores the result, and records every transition in the store. A job whose
// run is cut short by shutdown stays "running" in the store and is taken up again at the next
// start (the store, not memory, is the truth); a job that keeps dying is given up after
// CONVERTD_MAX_ATTEMPTS starts so that one poisonous file cannot crash the service for ever.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.ts';
import type { JobChanges } from './changes.ts';
import type { Config } from '../config.ts';
import { ConvertdError, isDiskFull, JOB_ERROR_CODES, type JobErrorCode } from '../errors.ts';
import { checkOptions } from '../engines/options.ts';
import { assignOptions, routeOptions } from '../engines/planner.ts';
import type { EngineRegistry } from '../engines/registry.ts';
import type { FileStorage } from '../storage/types.ts';
import { runConversion } from './batch.ts';
import type { EngineIsolation, JobStore } from './types.ts';

export interface WorkerDeps {
  readonly store: JobStore;
  readonly storage: FileStorage;
  readonly engines: EngineRegistry;
  readonly config: Config;
  readonly isolation: EngineIsolation;
  readonly log: Logger;
  readonly metrics?: Metrics;
  readonly changes?: JobChanges;
}

/** Free space below which a failed write is put down to a full disk. */
const NEARLY_FULL_BYTES = 2 * 1024 * 1024;

export function newToken(): string {
  return randomBytes(24).toString('base64url'); // 192 random bits
}

function asJobError(error: unknown): { code: JobErrorCode; message: string; unexpected: boolean } {
  if (isDiskFull(error) || (error instanceof ConvertdError && error.code === 'insufficient_storage')) {
    return { code: 'insufficient_storage', message: 'The server ran out of disk space during the conversion: submit the file again later.', unexpected: false };
  }
  if (error instanceof ConvertdError && (JOB_ERROR_CODES as readonly string[]).includes(error.code)) {
    return { code: error.code as JobErrorCode, message: error.message, unexpected: false };
  }
  if (error instanceof DOMException && error.name === 'TimeoutError') {
    return { code: 'timeout', message: new ConvertdError('timeout').message, unexpected: false };
  }
  return { code: 'internal_error', message: 'The conversion failed because of an error in the service: try again, and report it if it persists.', unexpected: true };
}

export class JobWorker {
  private readonly deps: WorkerDeps;

  constructor(deps: WorkerDeps) {
    this.deps = deps;
  }

  readonly process = async (jobId: string, shutdown: AbortSignal): Promise<'finished' | 'interrupted'> => {
    const { store, storage, engines, config } = this.deps;
    const job = await store.get(jobId);
    if (!job || (job.status !== 'queued' && job.status !== 'running')) return 'finished';
    const log = this.deps.log.child({ job_id: jobId });
    const lifetimeMs = config.fileLifetimeSeconds * 1000;

    const attempt = await store.markRunning(jobId, Date.now());
    if (attempt > config.maxAttempts) {
      await this.fail(jobId, { code: 'interrupted', message: new ConvertdError('interrupted').message }, lifetimeMs, log);
      return 'finished';
    }
    log.info({ event: 'job_running', attempt, source: job.source, target: job.target }, 'job running');
    this.deps.changes?.notify(jobId);
    if (attempt === 1) this.deps.metrics?.queueWaitSeconds.observe(Math.max(0, Date.now() - job.createdAt) / 1000);
    let engineIds = 'none';

    const started = performance.now();
    const signal = AbortSignal.any([shutdown, AbortSignal.timeout(config.jobTimeoutSeconds * 1000)]);
    let lastProgress = job.progress;
    try {
      // The same route as at submission (the planner is deterministic), and the options parsed again
      // from the stored text: a job taken up after a restart converts exactly as it was asked.
      const route = engines.route(job.source, job.target, Object.keys(job.options));
      if (!route) throw new ConvertdError('conversion_failed', `No converter on this server turns ${job.source} into ${job.target} any more.`);
      const stepOptions = assignOptions(route, checkOptions(routeOptions(route), job.options, { maxImagePixels: config.maxImagePixels }));
      engineIds = route.map((s) => s.engine.id).join('+');
      const workDir = await storage.createWorkDir(jobId);
      const input = await storage.fetchInput(jobId, workDir, job.source);
      // The directory was made for this attempt and holds the input alone.
      this.deps.isolation.giveToEngineUser([workDir, input]);
      const prepared = performance.now();
      // The route's pipeline, or an archive converted member by member (batch.ts).
      const { output, skipped } = await runConversion({
        engines,
        jobOptions: job.options,
        isolation: this.deps.isolation,
        log,
        route,
        input,
        workDir,
        signal,
        formats: engines.formats,
        engineTimeouts: config.engineTimeouts,
        stepOptions,
        limits: {
          timeoutMs: config.jobTimeoutSeconds * 1000,
          maxOutputBytes: config.maxOutputBytes,
          maxImagePixels: config.maxImagePixels,
          maxMediaSeconds: config.maxMediaSeconds,
        },
        onProgress: (fraction) => {
          // 100 belongs to "done" alone.
          const progress = Math.min(99, Math.floor(fraction * 100));
          if (progress > lastProgress) {
            lastProgress = progress;
            void store.setProgress(jobId, progress).then(() => this.deps.changes?.notify(jobId), (error: unknown) => log.warn({ err: error }, 'progress not saved'));
          }
        },
      });
      const converted = performance.now();
      const token = newToken();
      const bytes = await storage.commitResult(token, job.target, output);
      const finishedAt = Date.now();
      if (!await store.markDone(jobId, { token, bytes, finishedAt, expiresAt: finishedAt + lifetimeMs, ...(skipped.length > 0 ? { skipped } : {}) })) {
        // Another worker, given this job when this one was presumed dead, finished it first: its
        // outcome stands, so a client never sees two different results for one job.
        await storage.deleteResult(token, job.target);
        log.warn({ event: 'job_finished_elsewhere' }, 'the job was finished by another worker first; this result is discarded');
        return 'finished';
      }
      this.deps.changes?.notify(jobId);
      const doneAt = performance.now();
      // Where the job's time went: taking the input in, the engines, storing the result.
      const steps = { prepare: Math.round(prepared - started), convert: Math.round(converted - prepared), store: Math.round(doneAt - converted) };
      log.info({ event: 'job_done', ms: Math.round(doneAt - started), steps, bytes, engines: route.map((s) => s.engine.id) }, 'job done');
      const category = (format: string) => engines.formats.get(format)?.category ?? 'unknown';
      this.deps.metrics?.jobs.inc({ status: 'done', code: '', engines: engineIds });
      this.deps.metrics?.conversionSeconds.observe({ engines: engineIds, family: `${category(job.source)}>${category(job.target)}` }, (performance.now() - started) / 1000);
      await storage.deleteInput(jobId);
      return 'finished';
    } catch (error) {
      if (shutdown.aborted) {
        // Not a failure of the job: it stays "running" in the store and runs again, after the
        // restart or on another worker.
        log.info({ event: 'job_interrupted' }, 'job interrupted by shutdown; it will run again');
        return 'interrupted';
      }
      if (error instanceof ConvertdError && error.code === 'unavailable') {
        // Redis or the object store is away for a moment: not the file's fault. The job runs
        // again (its attempts stay bounded by CONVERTD_MAX_ATTEMPTS).
        log.warn({ event: 'job_interrupted', err: error.cause ?? error }, 'job interrupted: shared storage unavailable; it will run again');
        return 'interrupted';
      }
      // Some tools only say "write error": with next to nothing free on the disk at the moment of
      // the failure, the disk is the cause.
      const diskFull = (await storage.freeBytes().catch(() => Infinity)) < NEARLY_FULL_BYTES;
      const failure = asJobError(diskFull ? new ConvertdError('insufficient_storage') : error);
      if (failure.unexpected) log.error({ err: error }, 'unexpected error in a conversion');
      // Partial outputs go first: on a full disk they hold the space the failure record needs.
      await storage.removeWorkDir(jobId).catch(() => undefined);
      this.deps.metrics?.jobs.inc({ status: 'error', code: failure.code, engines: engineIds });
      try {
        await this.fail(jobId, failure, lifetimeMs, log);
      } catch (recordError) {
        // The store itself failed (a full disk takes the job store with it): the job stays
        // "running" in the store and runs again after the next start.
        log.error({ err: recordError, code: failure.code }, 'the job failed and its failure could not be recorded');
      }
      return 'finished';
    } finally {
      await storage.removeWorkDir(jobId).catch(() => undefined);
    }
  };

  private async fail(jobId: string, error: { code: JobErrorCode; message: string }, lifetimeMs: number, log: Logger): Promise<void> {
    const finishedAt = Date.now();
    if (!await this.deps.store.markError(jobId, { ...error, finishedAt, expiresAt: finishedAt + lifetimeMs })) {
      log.warn({ event: 'job_finished_elsewhere', code: error.code }, 'the job was finished by another worker first; this failure is not recorded');
      return;
    }
    this.deps.changes?.notify(jobId);
    await this.deps.storage.deleteInput(jobId);
    log.info({ event: 'job_error', code: error.code, reason: error.message }, 'job failed');
  }
}
