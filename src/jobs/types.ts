// The job model and the two seams of the jobs layer: the store (durable records) and the queue
// (who runs what, when). The embedded backends are SQLite and an in-process queue; a Redis/BullMQ
// backend implements the same interfaces, and neither the HTTP layer nor the engines notice.
import type { JobErrorCode } from '../errors.ts';
import type { CgroupLimitsState } from '../process/cgroups.ts';
import type { SandboxMode } from '../process/sandbox.ts';

export type JobStatus = 'queued' | 'running' | 'done' | 'error';

export interface JobRecord {
  readonly id: string;
  readonly status: JobStatus;
  /** 0-100, never decreasing; 100 exactly when done. */
  readonly progress: number;
  readonly source: string;
  readonly target: string;
  /** The client's file name, for display and the download's file name only. */
  readonly filename: string;
  readonly inputBytes: number;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  /** How many times a worker started it (a restart mid-job makes a second attempt). */
  readonly attempts: number;
  readonly resultToken: string | null;
  readonly resultBytes: number | null;
  /** When the result (or the error record) stops being served: 410 from this instant on. */
  readonly expiresAt: number | null;
  readonly errorCode: JobErrorCode | null;
  readonly errorMessage: string | null;
  /** When the sweeper deleted the job's files; the record stays as a tombstone for a while. */
  readonly purgedAt: number | null;
  /**
   * The conversion options in force, by name, as the client gave them (text, trimmed): only those
   * the job's route applies. Parsed again by the worker (engines/options.ts). Empty: none.
   */
  readonly options: Readonly<Record<string, string>>;
  /** Option names the client sent that do not apply to this conversion (the progress record lists them). */
  readonly ignoredOptions: readonly string[];
  /** Of a result made of several files (target zip with each): the members carried unconverted. */
  readonly skipped: readonly string[];
}

export type NewJob = Pick<JobRecord, 'id' | 'source' | 'target' | 'filename' | 'inputBytes' | 'createdAt'> & Partial<Pick<JobRecord, 'options' | 'ignoredOptions'>>;

/** What a finished job records about its result. */
export interface JobResult {
  readonly token: string;
  readonly bytes: number;
  readonly finishedAt: number;
  readonly expiresAt: number;
  readonly skipped?: readonly string[];
}

export interface JobStore {
  /** Persists a new queued job; durable once the promise resolves. */
  create(job: NewJob): Promise<void>;
  get(id: string): Promise<JobRecord | undefined>;
  /**
   * The same record as get, answered without waiting, for a store that can (the embedded one
   * reads its memory or its database synchronously). Absent on stores that need I/O.
   */
  getNow?(id: string): JobRecord | undefined;
  getByToken(token: string): Promise<JobRecord | undefined>;
  /** Marks a job running for a new attempt and returns the attempt number. */
  markRunning(id: string, at: number): Promise<number>;
  /** Raises the progress (never lowers it). */
  setProgress(id: string, progress: number): Promise<void>;
  /**
   * Records the result unless the job already finished; false when it had (another worker, given
   * the job after this one was presumed dead, finished first: the caller discards its result).
   */
  markDone(id: string, result: JobResult): Promise<boolean>;
  /** Records the failure unless the job already finished; false when it had. */
  markError(id: string, error: { code: JobErrorCode; message: string; finishedAt: number; expiresAt: number }): Promise<boolean>;
  /** Queued and running jobs, oldest first: what a restart must take up again. */
  listUnfinished(): Promise<JobRecord[]>;
  /** Finished jobs past their expiry whose files are not deleted yet. */
  listExpired(now: number): Promise<JobRecord[]>;
  markPurged(id: string, at: number): Promise<void>;
  /** Forgets tombstones purged before the given time; returns how many. */
  deleteTombstones(purgedBefore: number): Promise<number>;
  /** Rejects unless the store can take a write now (for /readyz). */
  checkWritable(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Runs one job. "finished": the job's outcome (done or error) is in the store, or there was nothing
 * to do; "interrupted": the run was cut short (shutdown, or shared storage away) and the job must
 * run again.
 */
/**
 * How long a job interrupted while the service keeps running (Redis or the object store away for
 * a moment) waits before it runs again, in either queue.
 */
export const RETRY_INTERRUPTED_MS = 2000;

export type JobHandler = (jobId: string, signal: AbortSignal) => Promise<'finished' | 'interrupted'>;

export interface JobQueue {
  enqueue(jobId: string): Promise<void>;
  /** Jobs accepted and not yet started (by any worker). */
  waiting(): Promise<number>;
  /** Jobs being converted now (by any worker). */
  active(): Promise<number>;
  /** 1-based place in line of a waiting job, or undefined. */
  position(jobId: string): Promise<number | undefined>;
  /** Starts running jobs through the handler in this process, at most `concurrency` at once. */
  start(handler: JobHandler): void;
  /**
   * Stops taking jobs, waits up to graceMs for running ones, then aborts the rest (their handler
   * leaves them to be taken up again, after a restart or by another worker).
   */
  stop(graceMs: number): Promise<void>;
}

/**
 * How engines are isolated, as far as the jobs layer needs to know: set up at start by the process
 * layer (src/process/sandbox.ts, cgroups.ts) and handed to JobService and JobWorker by main.ts, so
 * that they read no module state of that layer and a test can build them with any setting.
 */
export interface EngineIsolation {
  /** The sandbox engines run in (/readyz). */
  readonly sandboxMode: SandboxMode;
  /** How engine memory and tasks are limited now (/readyz). */
  cgroupLimits(): CgroupLimitsState;
  /**
   * Hands the named entries (a fresh work directory and the input just linked into it) to the
   * user engines run as, when they run as one. Synchronous, as the job path's other metadata calls.
   */
  giveToEngineUser(entries: readonly string[]): void;
}
