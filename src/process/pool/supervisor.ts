// A supervised pool of warm helper processes, in the manner of Gotenberg's supervisor, for engines
// that are slow to start: LibreOffice (engines/libreoffice/office-pool.ts: starting soffice costs over a
// second, a warm one converts a small document in about 0.1 s) and our own Node code
// (node-program.ts: sharp with libvips loaded, and the data converters, so that uploads are
// decoded inside the sandbox, not in the service). The pool's processes and their JSON-lines
// protocol are in messaging.ts, a job's directory in staging.ts; this file keeps the slots.
//
// Supervision: each slot starts lazily or at once, is health-checked before a job, recycled after
// maxJobs conversions (soffice grows from 85 to 300 MiB over 300 jobs) and restarted after any
// crash, hang or timeout (at once: a process that dies in service is replaced in the background,
// not by the next job). A process's successor starts ahead, while it serves the last quarter of
// its jobs, and takes over after its last, so that no job waits for a start: with two slots under
// load, both reached maxJobs together, and while soffice restarted the pool served nothing (about
// a tenth of its throughput at 100 jobs per process). Jobs wait in a capped queue for a free slot.
// A job whose process crashes under it is retried once on a fresh process where the program asks
// for it; a second crash fails it.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { ConvertdError } from '../../errors.ts';
import { giveToEngineUser } from '../sandbox.ts';
import { ProcessCrashed, WarmProcess, type PooledProgram } from './messaging.ts';
import { inJobDir } from './staging.ts';

const HEALTH_TIMEOUT_MS = 10_000;
/** A process that dies after this long in service is replaced at once rather than on the next job. */
const REPLACE_AT_ONCE_AFTER_MS = 10_000;

export interface PoolOptions {
  /** Number of processes. */
  readonly size: number;
  /** Conversions after which a process is replaced by a fresh one. */
  readonly maxJobsPerProcess: number;
  /** 'eager' starts every process at once; 'lazy' on its first job. */
  readonly start: 'eager' | 'lazy';
  /** Jobs that may wait for a free process; more fail at once. */
  readonly maxWaiting: number;
  /** Where the processes' directories live; emptied at start. */
  readonly stateDir: string;
  readonly startTimeoutMs?: number;
  /** How long a health check (a ping before a job) may take before its process is replaced; 10 s unless set. */
  readonly healthTimeoutMs?: number;
  readonly log?: Logger;
}

interface Slot {
  readonly index: number;
  process?: WarmProcess;
  /** A fresh process starting to take over from one past its maximum number of jobs. */
  successor?: Promise<WarmProcess | undefined>;
  /** That process once it is ready; it takes over when the slot is next free. */
  readySuccessor?: WarmProcess;
  generation: number;
  busy: boolean;
}

export interface PoolStats {
  readonly size: number;
  /** Processes running now. */
  readonly alive: number;
  readonly busy: number;
  readonly waiting: number;
  readonly started: number;
  readonly restarts: number;
}

export class ProcessPool {
  private readonly program: PooledProgram;
  private readonly options: PoolOptions;
  private readonly slots: Slot[];
  private readonly waiters: Array<(slot: Slot) => void> = [];
  private started = 0;
  private restarts = 0;
  private closed = false;

  constructor(program: PooledProgram, options: PoolOptions) {
    this.program = program;
    this.options = options;
    this.slots = Array.from({ length: Math.max(1, options.size) }, (_, index) => ({ index, generation: 0, busy: false }));
  }

  async init(): Promise<void> {
    await fs.rm(this.options.stateDir, { recursive: true, force: true });
    await fs.mkdir(this.options.stateDir, { recursive: true, mode: 0o711 });
    if (this.options.start === 'eager') await Promise.all(this.slots.map((slot) => this.healthyProcess(slot)));
  }

  stats(): PoolStats {
    return {
      size: this.slots.length,
      alive: this.slots.filter((s) => s.process?.isAlive).length,
      busy: this.slots.filter((s) => s.busy).length,
      waiting: this.waiters.length,
      started: this.started,
      restarts: this.restarts,
    };
  }

  /** For /readyz: healthy when a process is up, or when processes start on demand (lazy) and none is needed yet. */
  health(): { ok: boolean; detail: Readonly<Record<string, unknown>> } {
    const stats = this.stats();
    return { ok: stats.alive > 0 || this.options.start === 'lazy', detail: { ...stats, start: this.options.start } };
  }

  /**
   * Converts `input` to `output` on a pooled process: the input is linked (or copied) into the
   * process's job directory, the helper gets {"op": "convert", "input", "output", ...message},
   * and the output is moved out. `probe` marks start-up checks, which do not count as one of a
   * process's jobs; `onProgress` hears the helper's progress lines, if it sends any.
   */
  async convert(input: string, output: string, message: Readonly<Record<string, unknown>>, timeoutMs: number, signal: AbortSignal,
    { probe = false, onProgress }: { probe?: boolean; onProgress?: (fraction: number) => void } = {}): Promise<void> {
    await this.withProcess(signal, (process) => inJobDir(process.dir, input, output, this.program.label, async (stagedInput, stagedOutput) => {
      const reply = await process.request({ op: 'convert', input: stagedInput, output: stagedOutput, ...message }, timeoutMs, signal, onProgress);
      if (!probe) process.jobs++;
      if (!reply.ok) throw this.program.failure(reply);
    }));
  }

  /** Sends one request that involves no file (a probe of what the helper can do); resolves with its result. */
  async ask(message: Readonly<Record<string, unknown>>, timeoutMs: number, signal: AbortSignal): Promise<unknown> {
    return this.withProcess(signal, async (process) => {
      const reply = await process.request(message, timeoutMs, signal);
      if (!reply.ok) throw this.program.failure(reply);
      return reply.result;
    });
  }

  /** Runs `work` on a healthy process of a free slot; a crash under it is retried once where the program wants it. */
  private async withProcess<T>(signal: AbortSignal, work: (process: WarmProcess) => Promise<T>): Promise<T> {
    const { label, logName } = this.program;
    const slot = await this.acquire(signal);
    try {
      for (let attempt = 1; ; attempt++) {
        const process = await this.healthyProcess(slot);
        // Aborted while its process started or passed its health check: the job is not sent.
        signal.throwIfAborted();
        try {
          return await work(process);
        } catch (error) {
          if (error instanceof ProcessCrashed && !signal.aborted) {
            this.options.log?.warn({ event: `${logName}_crash`, slot: slot.index, attempt, reason: error.message }, `a ${label} process died during a job`);
            if (attempt < 2 && this.program.retryAfterCrash) continue;
            // Killed for its memory (the second time on a fresh process): the file is too big for the limit.
            if (error.verdict) throw error.verdict;
            throw new ConvertdError('conversion_failed', this.program.retryAfterCrash
              ? `${label} crashed twice on this file: it may be damaged or too complex.`
              : `${label} crashed on this file: it may be damaged or too complex.`);
          }
          throw error;
        }
      }
    } finally {
      this.release(slot);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map(async (slot) => {
      const successor = await slot.successor;
      await Promise.all([slot.process?.close(), successor?.close()]);
    }));
  }

  private acquire(signal: AbortSignal): Promise<Slot> {
    signal.throwIfAborted();
    if (this.closed) return Promise.reject(new ConvertdError('conversion_failed', `The pool of ${this.program.label} is shutting down.`));
    const free = this.slots.find((s) => !s.busy);
    if (free) {
      free.busy = true;
      return Promise.resolve(free);
    }
    if (this.waiters.length >= this.options.maxWaiting) {
      return Promise.reject(new ConvertdError('conversion_failed', `Too many files are waiting for ${this.program.label}; try again in a minute.`));
    }
    return new Promise((resolve, reject) => {
      const waiter = (slot: Slot) => {
        signal.removeEventListener('abort', onAbort);
        resolve(slot);
      };
      const onAbort = () => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private release(slot: Slot): void {
    const next = this.waiters.shift();
    if (next) next(slot); // stays busy, handed over
    else {
      slot.busy = false;
      if (slot.readySuccessor && this.isDue(slot)) this.handOver(slot);
    }
  }

  /** Whether the slot's process must give way: it has done its maximum number of jobs, or died. */
  private isDue(slot: Slot): boolean {
    return !slot.process?.isAlive || slot.process.jobs >= this.options.maxJobsPerProcess;
  }

  /**
   * Starts the successor of the slot's process ahead of time, while the process serves the last
   * quarter of its jobs (the last job when it serves one), so that it is ready when needed: under
   * load soffice took 2.5-3 s to start, while a process served 10 small jobs in 1.3 s.
   */
  private prepareSuccessor(slot: Slot): void {
    const { label, logName } = this.program;
    const current = slot.process;
    const max = this.options.maxJobsPerProcess;
    if (this.closed || slot.successor || !current?.isServing || max - current.jobs > Math.ceil(max / 4)) return;
    this.options.log?.info({ event: `${logName}_recycle`, slot: slot.index, jobs: current.jobs }, `a ${label} process nears its maximum number of jobs: starting the fresh one that takes over after its last`);
    this.startSuccessor(slot);
  }

  /** Starts the process that takes the slot over when its current one is due (isDue). */
  private startSuccessor(slot: Slot): void {
    const { label, logName } = this.program;
    if (this.closed || slot.successor) return;
    const successor = this.spawnProcess(slot).then(async (fresh) => {
      try {
        await fresh.waitUntilReady();
        return fresh;
      } catch (error) {
        this.options.log?.warn({ event: `${logName}_recycle_failed`, slot: slot.index, reason: error instanceof Error ? error.message : String(error) }, `the ${label} process meant to take over did not start; one is started when needed`);
        await this.retireProcess(fresh);
        return undefined;
      }
    }, () => undefined);
    slot.successor = successor;
    void successor.then((fresh) => {
      if (slot.successor !== successor) return; // taken over meanwhile
      if (!fresh || this.closed) {
        slot.successor = undefined;
        return;
      }
      slot.readySuccessor = fresh;
      if (!slot.busy && this.isDue(slot)) this.handOver(slot);
    });
  }

  /** Puts a ready successor in its slot's place; the old process is closed in the background. */
  private handOver(slot: Slot): void {
    const fresh = slot.readySuccessor;
    slot.successor = undefined;
    slot.readySuccessor = undefined;
    if (!fresh) return;
    if (!fresh.isServing) {
      void this.retireProcess(fresh); // died while waiting: another is started when needed
      return;
    }
    const old = slot.process;
    slot.process = fresh;
    if (old && !old.isAlive) this.restarts++; // it died before its last job
    if (old) void this.retireProcess(old);
  }

  /** The slot's process, started, recycled or replaced as needed, and answering. */
  private async healthyProcess(slot: Slot): Promise<WarmProcess> {
    const { label, logName } = this.program;
    if (slot.successor && this.isDue(slot)) {
      // The successor started ahead takes over, once it has started if it has not yet.
      await slot.successor;
      this.handOver(slot);
    }
    let current = slot.process;
    if (current && current.isAlive && current.jobs >= this.options.maxJobsPerProcess) {
      // No successor could be started ahead of time: recycle it now.
      this.options.log?.info({ event: `${logName}_recycle`, slot: slot.index, jobs: current.jobs }, `recycling a ${label} process after its maximum number of jobs`);
      await this.retire(slot);
      current = undefined;
    }
    if (current && current.isAlive) {
      const healthy = await current.request({ op: 'ping' }, this.options.healthTimeoutMs ?? HEALTH_TIMEOUT_MS).then((r) => r.ok === true, () => false);
      if (healthy) {
        this.prepareSuccessor(slot);
        return current;
      }
      this.options.log?.warn({ event: `${logName}_unhealthy`, slot: slot.index }, `a ${label} process failed its health check; replacing it`);
    }
    if (current) {
      // Dead or unresponsive (a recycled one was retired above): this is a restart.
      this.restarts++;
      await this.retire(slot);
      if (slot.successor) {
        // It died during the health check, and its replacement is already on its way.
        await slot.successor;
        this.handOver(slot);
        if (slot.process?.isServing) return slot.process;
      }
    }
    const fresh = await this.startProcess(slot);
    try {
      await fresh.waitUntilReady();
    } catch (error) {
      await this.retire(slot);
      throw new ConvertdError('conversion_failed', `${label} could not be started (${error instanceof Error ? error.message : String(error)}); try again later.`);
    }
    this.prepareSuccessor(slot);
    return fresh;
  }

  private async retire(slot: Slot): Promise<void> {
    const old = slot.process;
    if (!old) return;
    slot.process = undefined;
    await this.retireProcess(old);
  }

  /** Closes a process (or waits for its end) and removes its directory. */
  private async retireProcess(old: WarmProcess): Promise<void> {
    old.retiring = true;
    if (old.isAlive) await old.close();
    else await old.exited;
    await fs.rm(old.dir, { recursive: true, force: true });
  }

  /** Starts a new process in a slot that has none. */
  private async startProcess(slot: Slot): Promise<WarmProcess> {
    const process = await this.spawnProcess(slot);
    slot.process = process;
    return process;
  }

  /** Starts a new process for a slot, in a fresh directory (the slot's process, or its successor). */
  private async spawnProcess(slot: Slot): Promise<WarmProcess> {
    const { label, logName } = this.program;
    slot.generation++;
    const dir = path.join(this.options.stateDir, `slot${slot.index}-${slot.generation}-${randomBytes(4).toString('hex')}`);
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    await this.program.prepare?.(dir);
    await giveToEngineUser(dir);
    const process = new WarmProcess(this.program, dir, this.options.startTimeoutMs ?? 60_000);
    this.started++;
    this.options.log?.info({ event: `${logName}_start`, slot: slot.index, generation: slot.generation }, `starting a process for ${label}`);
    void process.exited.then(() => {
      if (this.closed) return;
      this.options.log?.info({ event: `${logName}_exit`, slot: slot.index, reason: process.deathReason }, `a ${label} process ended`);
      // A process that died in service (a crash, or killed for a timeout) is replaced at once,
      // so that the slot's next job does not wait for a start, which counts against its time
      // limit. Not one that died young by itself: a tool that cannot stay up is not restarted in
      // a loop (the next job starts it again, as before).
      const inService = process.hasStarted && (process.killed || process.jobs > 0 || Date.now() - process.bornAt > REPLACE_AT_ONCE_AFTER_MS);
      if (slot.process === process && !process.retiring && inService) this.startSuccessor(slot);
    });
    return process;
  }
}
