// What the HTTP layer asks of the jobs layer: accept a submission, tell a job's progress, find a
// result to download, and describe the catalogue and limits. The HTTP layer never touches an
// engine, the store or the disk directly; it calls this.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { ConvertdError } from '../errors.ts';
import type { EngineRegistry } from '../engines/registry.ts';
import { sniffFile } from '../formats/sniff.ts';
import type { FileStorage, ResultHandle, Upload } from '../storage/types.ts';
import type { CatalogueEntry, ConversionOptions, OptionDescriptor, ProgressRecord, Readiness as ReadinessAnswer } from '../wire/shapes.ts';
import { checkOptions, describeOption } from '../engines/options.ts';
import { assignOptions, routeOptions } from '../engines/planner.ts';
import type { JobChanges } from './changes.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { EngineIsolation, JobQueue, JobRecord, JobStore } from './types.ts';

export type { Upload } from '../storage/types.ts';

export interface Submission {
  /** The upload, from receiveUpload: submit makes it the job's input or discards it. */
  readonly upload: Upload;
  readonly filename: string;
  readonly target: string;
  /** The form's other text parts, by name: conversion options as the client sent them (raw text). */
  readonly options?: Readonly<Record<string, string>>;
}

export interface Download {
  readonly job: JobRecord;
  readonly file: ResultHandle;
  readonly mediaType: string;
  /** The file name offered to the browser: the original name with the target's extension. */
  readonly filename: string;
}

/**
 * /readyz's answer but its `status` word: each check with what it found; `ready` when every check
 * passed; `engines_unavailable`, the engines whose start-up probe failed (their formats are not
 * offered, the rest works).
 */
export type Readiness = Omit<ReadinessAnswer, 'status'>;

export function newJobId(): string {
  return randomBytes(18).toString('base64url'); // 144 random bits, URL-safe
}

/** Space kept free on the data disk: below it, new uploads are refused with 507. */
const MIN_FREE_BYTES = 256 * 1024 * 1024;

export interface JobServiceDeps {
  readonly store: JobStore;
  readonly queue: JobQueue;
  readonly storage: FileStorage;
  readonly engines: EngineRegistry;
  readonly config: Config;
  readonly isolation: EngineIsolation;
  readonly log: Logger;
  readonly changes?: JobChanges;
  readonly metrics?: Metrics;
}

export class JobService {
  private readonly deps: JobServiceDeps;

  constructor(deps: JobServiceDeps) {
    this.deps = deps;
  }

  /** Resolves when the job's record next changes, or after timeoutMs (for the event stream). */
  nextChange(jobId: string, timeoutMs: number): Promise<void> {
    return this.deps.changes ? this.deps.changes.next(jobId, timeoutMs) : new Promise((resolve) => setTimeout(resolve, Math.min(timeoutMs, 250)));
  }

  /**
   * Has storage receive an upload from its first byte, up to the size limit (past it: rejects with
   * file_too_large). A failed upload leaves nothing behind; a received one goes to submit, or the
   * caller discards it.
   */
  receiveUpload(source: Readable, onBytes?: (bytes: number) => void): Promise<Upload> {
    return this.deps.storage.receiveUpload(source, { maxBytes: this.deps.config.maxFileBytes, onBytes });
  }

  get catalogue(): readonly CatalogueEntry[] {
    return this.deps.engines.entries;
  }

  /** Throws busy when the queue cannot take another job; cheap enough to call before reading an upload. */
  async checkCapacity(): Promise<void> {
    const waiting = await this.deps.queue.waiting();
    if (waiting >= this.deps.config.queueLimit) {
      throw new ConvertdError('busy', undefined, {}, { 'retry-after': String(this.retryAfterBusySeconds(waiting)) });
    }
  }

  /** Throws insufficient_storage when the data disk is nearly full. */
  async checkDiskSpace(): Promise<void> {
    const free = await this.deps.storage.freeBytes().catch(() => Infinity);
    if (free < MIN_FREE_BYTES + this.deps.config.maxFileBytes) {
      throw new ConvertdError('insufficient_storage', undefined, {}, { 'retry-after': '60' });
    }
  }

  /**
   * What /readyz reports. Ready means a submission can be accepted and converted now: the store
   * takes writes, the disk has room, engines are sandboxed (or explicitly not; memory_limit and
   * process_limit say whether cgroups cap their memory and tasks), and the process
   * pools have a process up. An engine whose probe failed at start does not make the service
   * unready (its formats are simply not offered, as /api/formats shows); it is listed.
   */
  async readiness(): Promise<Readiness> {
    const checks: Readiness['checks'] = {};
    try {
      await this.deps.store.checkWritable();
      checks.store = { ok: true };
    } catch (error) {
      checks.store = { ok: false, problem: error instanceof Error ? error.message : String(error) };
    }
    const disk = await this.deps.storage.diskSpace().catch(() => undefined);
    const needed = MIN_FREE_BYTES + this.deps.config.maxFileBytes;
    checks.disk = disk
      ? { ok: disk.freeBytes >= needed, free_bytes: disk.freeBytes, total_bytes: disk.totalBytes, needed_bytes: needed }
      : { ok: false, problem: 'the data directory cannot be inspected' };
    const { sandboxMode } = this.deps.isolation;
    checks.sandbox = { ok: sandboxMode === 'bwrap' || this.deps.config.sandbox === 'off', mode: sandboxMode };
    // Informational: without a cgroup, engines keep their address-space limits (not a reason to refuse work).
    const limits = this.deps.isolation.cgroupLimits();
    checks.memory_limit = { ok: true, mode: limits.mode, ...(limits.limitBytes ? { limit_bytes: limits.limitBytes } : {}), ...(limits.problem ? { problem: limits.problem } : {}) };
    checks.process_limit = { ok: true, ...(limits.maxTasks ? { max_tasks: limits.maxTasks } : { mode: 'none' }), ...(limits.tasksProblem ? { problem: limits.tasksProblem } : {}) };
    for (const [engine, health] of Object.entries(this.deps.engines.health())) checks[`pool:${engine}`] = { ok: health.ok, ...health.detail };
    try {
      const waiting = await this.deps.queue.waiting();
      checks.queue = { ok: waiting < this.deps.config.queueLimit, waiting, limit: this.deps.config.queueLimit };
    } catch (error) {
      checks.queue = { ok: false, problem: error instanceof Error ? error.message : String(error) };
    }
    try {
      await this.deps.storage.checkAvailable();
      checks.storage = { ok: true };
    } catch (error) {
      checks.storage = { ok: false, problem: error instanceof Error ? error.message : String(error) };
    }
    return {
      ready: Object.values(checks).every((check) => check.ok),
      checks,
      engines_unavailable: this.deps.engines.statuses.filter((s) => !s.ok).map((s) => ({ engine: s.engine, reason: s.reason })),
    };
  }

  private retryAfterBusySeconds(waiting: number): number {
    // About the time the workers need to take the queue below its cap again, within reason.
    return Math.min(60, Math.max(2, Math.ceil(waiting / this.deps.config.concurrency)));
  }

  /** Validates an upload and turns it into a queued job. Durable before it resolves. */
  async submit(submission: Submission): Promise<string> {
    const { store, queue, engines, log } = this.deps;
    const { upload } = submission;
    try {
      const sniffed = await sniffFile(upload.path, submission.filename, engines.formats);
      const source = sniffed.format;
      if (!source || !engines.reads(source.id)) {
        const message = sniffed.detected
          ? `The file looks like ${/^an? /.test(sniffed.detected) ? sniffed.detected : `a ${sniffed.detected} file`}, which this service does not convert: see /api/formats for the formats it reads.`
          : undefined;
        throw new ConvertdError('unsupported_format', message, { detected: sniffed.detected ?? null });
      }
      const target = this.targetOf(source.id, submission.target);
      const { applied, ignored } = this.validateOptions(source.id, target.id, submission.options ?? {});
      await this.checkCapacity();

      const id = newJobId();
      await upload.commit(id);
      await store.create({
        id,
        source: source.id,
        target: target.id,
        filename: submission.filename,
        inputBytes: upload.bytes,
        createdAt: Date.now(),
        options: applied,
        ignoredOptions: ignored,
      });
      for (const name of Object.keys(applied)) this.deps.metrics?.options.inc({ name });
      // Logged before a worker can take it (a worker may be another process that logs at once).
      log.info({ event: 'job_queued', job_id: id, source: source.id, target: target.id, bytes: upload.bytes, ...(Object.keys(applied).length > 0 ? { options: applied } : {}) }, 'job queued');
      await queue.enqueue(id);
      return id;
    } finally {
      // Whatever did not become a job's input goes (a no-op once the upload was committed). One
      // unlink, synchronous: by now a worker may have the job, and a trip through the thread
      // pool would wait behind it, adding a millisecond to the answer (BENCHMARKS.md, change 14).
      upload.discard();
    }
  }

  /**
   * Splits the client's options into those the job's route applies (each value checked by parsing
   * it: 422 invalid_option) and the names that do not apply (ignored, and listed).
   */
  private validateOptions(source: string, target: string, given: Readonly<Record<string, string>>): { applied: Record<string, string>; ignored: string[] } {
    const names = Object.keys(given);
    if (names.length === 0) return { applied: {}, ignored: [] };
    const route = this.deps.engines.route(source, target, names);
    const specs = route ? routeOptions(route) : [];
    const applied: Record<string, string> = {};
    const ignored: string[] = [];
    for (const name of names) {
      if (specs.some((spec) => spec.name === name)) applied[name] = given[name]!.trim();
      else ignored.push(name);
    }
    // Parses every value (throws invalid_option), and checks them together (a size past the pixel cap, a trim that ends before it starts).
    const values = checkOptions(specs, applied, { maxImagePixels: this.deps.config.maxImagePixels });
    // And each step's own check of the values it applies together (a crf within the chosen codec's range).
    if (route) for (const [index, options] of assignOptions(route, values).entries()) route[index]!.checkOptions?.(options);
    return { applied, ignored };
  }

  /** The catalogue format `name` (an id or alias) names, if `source` converts to it; otherwise unsupported_target with the valid ones. */
  private targetOf(source: string, name: string): { id: string } {
    const { engines } = this.deps;
    const targets = engines.targetsFor(source);
    const target = engines.formats.resolve(name);
    if (!target || !targets.includes(target.id)) {
      throw new ConvertdError('unsupported_target', `A ${source} file cannot be converted to "${name}": choose one of ${targets.join(', ')}.`, { source, targets });
    }
    return target;
  }

  /** GET /api/formats/{source}/{target}: the options of a pair and the engines it runs through by default. */
  conversionOptions(sourceName: string, targetName: string): ConversionOptions {
    const { engines } = this.deps;
    const source = engines.formats.resolve(sourceName);
    if (!source || !engines.reads(source.id)) throw new ConvertdError('unsupported_format', `"${sourceName}" is not a format this service reads: see /api/formats.`);
    const target = this.targetOf(source.id, targetName);
    const route = engines.route(source.id, target.id);
    return { source: source.id, target: target.id, steps: (route ?? []).map((step) => step.engine.id), options: engines.planner.optionsBetween(source.id, target.id) };
  }

  /** Every option name some engine takes, described: for the convert form in the API document. */
  optionDescriptors(): OptionDescriptor[] {
    return this.deps.engines.allOptions().map(describeOption);
  }

  /**
   * DELETE on a download URL: the result goes at once, and the job answers 410 from then on (the
   * record stays as a tombstone, as when the sweeper deletes an expired result).
   */
  async deleteResult(token: string, ext: string, now = Date.now()): Promise<void> {
    const job = await this.deps.store.getByToken(token);
    if (!job || job.status !== 'done' || job.target !== ext) throw new ConvertdError('file_not_found');
    if (isExpired(job, now)) throw new ConvertdError('expired');
    // The record first: from this instant the job answers 410, even if removing the file is slow.
    await this.deps.store.markPurged(job.id, now);
    await this.deps.storage.deleteResult(token, ext);
    this.deps.changes?.notify(job.id);
    this.deps.log.info({ event: 'result_deleted', job_id: job.id }, 'result deleted by its owner');
  }

  /** Takes up again every job a previous run accepted and did not finish. */
  async recover(): Promise<number> {
    const unfinished = await this.deps.store.listUnfinished();
    for (const job of unfinished) await this.deps.queue.enqueue(job.id);
    if (unfinished.length > 0) this.deps.log.info({ event: 'jobs_recovered', count: unfinished.length }, 'unfinished jobs queued again');
    return unfinished.length;
  }

  async progress(jobId: string, now = Date.now()): Promise<ProgressRecord> {
    const job = await this.deps.store.get(jobId);
    if (!job) throw new ConvertdError('job_not_found');
    if (isExpired(job, now)) throw new ConvertdError('expired', 'This job\'s result has expired and was deleted: submit the file again.');
    // A queued job's place in the queue changes without its record changing; every other
    // answer follows from the record alone. The embedded store hands out the same frozen record
    // until the job changes, so a polled job's answer is built once, not on every poll: building
    // it (two dates to ISO text) was the largest cost of the endpoint after the socket write
    // (BENCHMARKS.md, change 28).
    if (job.status === 'queued') return this.buildProgress(job);
    let record = this.progressRecords.get(job);
    if (!record) {
      record = Object.freeze(await this.buildProgress(job));
      this.progressRecords.set(job, record);
    }
    return record;
  }

  /**
   * progress()'s answer when it is ready without waiting: the store answers synchronously and
   * the job's answer was built before. Undefined otherwise (and for every error), and the caller
   * asks progress().
   */
  progressNow(jobId: string, now = Date.now()): ProgressRecord | undefined {
    const job = this.deps.store.getNow?.(jobId);
    if (!job || job.status === 'queued' || isExpired(job, now)) return undefined;
    return this.progressRecords.get(job);
  }

  /** Answers already built, by the store's record they were built from (see progress). */
  private readonly progressRecords = new WeakMap<JobRecord, ProgressRecord>();

  private async buildProgress(job: JobRecord): Promise<ProgressRecord> {
    const record: ProgressRecord = {
      job_id: job.id,
      status: job.status,
      progress: job.progress,
      source: job.source,
      target: job.target,
      filename: job.filename,
      created_at: new Date(job.createdAt).toISOString(),
    };
    if (job.status === 'queued') {
      const position = await this.deps.queue.position(job.id);
      if (position !== undefined) record.queue_position = position;
    } else if (job.status === 'done') {
      record.download_url = `/api/download/${job.resultToken}.${job.target}`;
      record.size = job.resultBytes ?? 0;
    } else if (job.status === 'error') {
      record.error = { code: job.errorCode ?? 'internal_error', message: job.errorMessage ?? '' };
    }
    if (job.expiresAt !== null) record.expires_at = new Date(job.expiresAt).toISOString();
    // Only for a job given options: a client that sends none sees the record it always saw.
    if (Object.keys(job.options).length > 0 || job.ignoredOptions.length > 0) {
      record.options = { ...job.options };
      record.ignored_options = [...job.ignoredOptions];
    }
    if (job.skipped.length > 0) record.skipped = [...job.skipped];
    return record;
  }

  async download(token: string, ext: string, now = Date.now()): Promise<Download> {
    const job = await this.deps.store.getByToken(token);
    if (!job || job.status !== 'done' || job.target !== ext) throw new ConvertdError('file_not_found');
    if (isExpired(job, now)) throw new ConvertdError('expired');
    const file = await this.deps.storage.openResult(token, ext);
    if (!file) throw new ConvertdError('file_not_found');
    const format = this.deps.engines.formats.get(job.target);
    return { job, file, mediaType: format?.mediaType ?? 'application/octet-stream', filename: `${this.stem(job)}.${format?.fileExtension ?? job.target}` };
  }

  /** The upload's name without its extension, also a double one ("backup.tar.gz" → "backup"). */
  private stem(job: JobRecord): string {
    const lower = job.filename.toLowerCase();
    const extensions = [...(this.deps.engines.formats.get(job.source)?.extensions ?? [])].sort((a, b) => b.length - a.length);
    const known = extensions.find((ext) => lower.endsWith(`.${ext}`));
    const stem = known ? job.filename.slice(0, -known.length - 1) : path.parse(job.filename).name;
    return stem || 'converted';
  }
}

/** Checked on every request, not left to the sweeper's timing. */
export function isExpired(job: JobRecord, now: number): boolean {
  return job.purgedAt !== null || (job.expiresAt !== null && now >= job.expiresAt);
}
