// A supervised pool of warm LibreOffice processes, in the manner of Gotenberg's supervisor.
// Starting soffice costs over a second; a warm one converts a small document in about 0.1 s
// (shared/stack.md). Each pooled process is a long-lived Python helper (helpers/libreoffice.py,
// run by Debian's /usr/bin/python3 for python3-uno) that starts its own soffice with a private
// profile and speaks JSON lines over stdin/stdout; both run in one bubblewrap sandbox started by
// the process runner, so killing the sandbox takes oosplash/soffice.bin along.
//
// Supervision: each slot starts lazily or at once, is health-checked (a UNO round trip) before a
// job, restarted after maxJobs conversions (soffice grows from 85 to 300 MiB over 300 jobs) and
// after any crash, hang or timeout. Jobs wait in a capped queue for a free slot. A job whose
// process crashes under it is retried once on a fresh process; a second crash fails it.
//
// Isolation: a process sees its own directory only: its profile, and a job/ directory that holds
// the current job's input and output and is emptied between jobs. Profiles are written fresh from
// the secure settings below for every new process, so nothing a document did to one outlives
// maxJobs conversions.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { ConvertdError } from '../errors.ts';
import { lastErrorLine, runProcess } from '../process/runner.ts';
import { giveToEngineUser } from '../process/sandbox.ts';

const PYTHON = '/usr/bin/python3';
const HELPERS = fileURLToPath(new URL('./helpers/', import.meta.url));
const SCRIPT = path.join(HELPERS, 'libreoffice.py');
/** Debian keeps LibreOffice's registry under /etc (share/registry is a link to it). */
const LIBREOFFICE_ETC = '/etc/libreoffice';
const HEALTH_TIMEOUT_MS = 10_000;
/** Room for soffice on a big spreadsheet, not for the 3 GB a hostile docx can make it grow to. */
const OFFICE_ADDRESS_SPACE = 6 * 1024 ** 3;
/** A process lives until it is recycled; the wall-clock limit per job is the pool's. */
const PROCESS_LIFETIME_MS = 2 ** 31 - 1; // about 24 days, the longest a Node timer can wait

/**
 * The settings of every profile (shared/security.md 6): macros never run, linked images and other
 * untrusted references are never fetched or embedded, links are never updated on load (Writer:
 * 2 = never; Calc: 1 = never), no auto-save, no recovery data, no update checks, no lock files.
 */
const PROFILE_SETTINGS: ReadonlyArray<[string, string, string]> = [
  ['/org.openoffice.Office.Common/Security/Scripting', 'MacroSecurityLevel', '3'],
  ['/org.openoffice.Office.Common/Security/Scripting', 'DisableMacrosExecution', 'true'],
  ['/org.openoffice.Office.Common/Security/Scripting', 'BlockUntrustedRefererLinks', 'true'],
  ['/org.openoffice.Office.Writer/Content/Update', 'Link', '2'],
  ['/org.openoffice.Office.Calc/Content/Update', 'Link', '1'],
  ['/org.openoffice.Office.Common/Save/Document', 'AutoSave', 'false'],
  ['/org.openoffice.Office.Recovery/AutoSave', 'Enabled', 'false'],
  ['/org.openoffice.Office.Recovery/RecoveryInfo', 'Enabled', 'false'],
  ['/org.openoffice.Office.Common/Misc', 'UseLocking', 'false'],
  ['/org.openoffice.Office.Common/Misc', 'FirstRun', 'false'],
  ['/org.openoffice.Setup/Office', 'ooSetupInstCompleted', 'true'],
];

function profileXml(): string {
  const items = PROFILE_SETTINGS.map(([group, name, value]) =>
    `<item oor:path="${group}"><prop oor:name="${name}" oor:op="fuse"><value>${value}</value></prop></item>`);
  return '<?xml version="1.0" encoding="UTF-8"?>\n'
    + '<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
    + `${items.join('\n')}\n</oor:items>\n`;
}

export interface OfficeRequest {
  /** Export filter name, e.g. "writer_pdf_Export". */
  readonly filter: string;
  readonly importFilter?: string;
  readonly importOptions?: string;
  /** A FilterOptions string, or FilterData properties. */
  readonly exportOptions?: string | Readonly<Record<string, string | number | boolean>>;
}

interface Reply {
  readonly id?: number;
  readonly ok?: boolean;
  readonly ready?: boolean;
  readonly code?: string;
  readonly message?: string;
}

/** The process died (or was killed) while it held a request. */
/** A pooled process died; `outOfMemory` carries the runner's error when its memory cgroup killed it. */
class OfficeCrashed extends Error {
  readonly outOfMemory: ConvertdError | undefined;
  constructor(message: string, outOfMemory?: ConvertdError) {
    super(message);
    this.outOfMemory = outOfMemory;
  }
}

class OfficeProcess {
  readonly dir: string;
  jobs = 0;
  private readonly stdin = new PassThrough();
  private readonly stop = new AbortController();
  private readonly pending = new Map<number, { resolve: (reply: Reply) => void; reject: (error: unknown) => void }>();
  private nextId = 1;
  private alive = true;
  private exitReason = '';
  private exitError: ConvertdError | undefined;
  private readonly ready: Promise<void>;
  readonly exited: Promise<void>;

  constructor(dir: string, maxOutputBytes: number, startTimeoutMs: number) {
    this.dir = dir;
    let markReady: () => void = () => undefined;
    let failStart: (error: unknown) => void = () => undefined;
    this.ready = new Promise((resolve, reject) => {
      markReady = resolve;
      failStart = reject;
    });
    this.ready.catch(() => undefined);
    const onLine = (line: string) => {
      let reply: Reply;
      try {
        reply = JSON.parse(line) as Reply;
      } catch {
        return; // not ours: soffice chatter goes to stderr, but be lenient
      }
      if (reply.ready) markReady();
      else if (reply.id !== undefined) {
        this.pending.get(reply.id)?.resolve(reply);
        this.pending.delete(reply.id);
      }
    };
    this.exited = runProcess(PYTHON, [SCRIPT, path.join(dir, 'profile')], {
      cwd: dir,
      readOnly: [HELPERS, LIBREOFFICE_ETC],
      env: { PYTHONDONTWRITEBYTECODE: '1', SAL_USE_VCLPLUGIN: 'svp' },
      timeoutMs: PROCESS_LIFETIME_MS,
      signal: this.stop.signal,
      stdin: this.stdin,
      onStdoutLine: onLine,
      limits: { cpuSeconds: Math.floor(PROCESS_LIFETIME_MS / 1000), fileSizeBytes: maxOutputBytes, addressSpaceBytes: OFFICE_ADDRESS_SPACE },
    }).then(
      (result) => `exited with code ${result.exitCode ?? result.signal}${result.stderr ? `: ${lastErrorLine(result.stderr)}` : ''}`,
      (error: unknown) => {
        if (error instanceof ConvertdError && error.code === 'input_too_complex') this.exitError = error;
        return error instanceof Error ? error.message : String(error);
      },
    ).then((reason) => {
      this.alive = false;
      this.exitReason = reason;
      failStart(new Error(`LibreOffice did not start: ${reason}`));
      for (const { reject } of this.pending.values()) reject(new OfficeCrashed(`LibreOffice ${reason}`, this.exitError));
      this.pending.clear();
    });
    const startTimer = setTimeout(() => failStart(new Error(`LibreOffice did not start within ${startTimeoutMs / 1000} s`)), startTimeoutMs);
    void this.ready.then(() => clearTimeout(startTimer), () => clearTimeout(startTimer));
  }

  get isAlive(): boolean {
    return this.alive;
  }

  get deathReason(): string {
    return this.exitReason;
  }

  waitUntilReady(): Promise<void> {
    return this.ready;
  }

  /** Sends one request; on timeout or abort the whole process is killed. */
  request(message: Record<string, unknown>, timeoutMs: number, signal?: AbortSignal): Promise<Reply> {
    if (!this.alive) return Promise.reject(new OfficeCrashed(`LibreOffice ${this.exitReason}`, this.exitError));
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      const settle = (action: () => void) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.pending.delete(id);
        action();
      };
      const timer = setTimeout(() => settle(() => {
        this.kill();
        reject(new ConvertdError('timeout'));
      }), timeoutMs);
      const onAbort = () => settle(() => {
        this.kill();
        reject(signal?.reason ?? new Error('aborted'));
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        resolve: (reply) => settle(() => resolve(reply)),
        reject: (error) => settle(() => reject(error)),
      });
      this.stdin.write(`${JSON.stringify({ id, ...message })}\n`);
    });
  }

  kill(): void {
    this.stop.abort(new OfficeCrashed('LibreOffice was stopped'));
  }

  /** Asks the helper to close soffice cleanly; kills it if that takes long. */
  async close(): Promise<void> {
    if (this.alive) {
      this.stdin.end();
      const timer = setTimeout(() => this.kill(), 5000);
      await this.exited;
      clearTimeout(timer);
    }
  }
}

export interface OfficePoolOptions {
  /** Number of LibreOffice processes. */
  readonly size: number;
  /** Conversions after which a process is replaced by a fresh one. */
  readonly maxJobsPerProcess: number;
  /** 'eager' starts every process at once; 'lazy' on its first job. */
  readonly start: 'eager' | 'lazy';
  /** Jobs that may wait for a free process; more fail at once. */
  readonly maxWaiting: number;
  /** Where the processes' directories live; emptied at start. */
  readonly stateDir: string;
  readonly maxOutputBytes: number;
  readonly startTimeoutMs?: number;
  readonly log?: Logger;
}

interface Slot {
  readonly index: number;
  process?: OfficeProcess;
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

export class OfficePool {
  private readonly options: OfficePoolOptions;
  private readonly slots: Slot[];
  private readonly waiters: Array<(slot: Slot) => void> = [];
  private started = 0;
  private restarts = 0;
  private closed = false;

  constructor(options: OfficePoolOptions) {
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

  /**
   * Converts `input` to `output` with the given filters on a pooled process. The input is linked
   * (or copied) into the process's job directory, and the output moved out of it. `probe` marks
   * the start-up check, which does not count as one of a process's jobs.
   */
  async convert(input: string, output: string, request: OfficeRequest, timeoutMs: number, signal: AbortSignal, { probe = false } = {}): Promise<void> {
    const slot = await this.acquire(signal);
    try {
      for (let attempt = 1; ; attempt++) {
        const process = await this.healthyProcess(slot);
        const jobDir = path.join(process.dir, 'job');
        const stagedInput = path.join(jobDir, `input${path.extname(input)}`);
        const stagedOutput = path.join(jobDir, `output${path.extname(output)}`);
        await fs.rm(jobDir, { recursive: true, force: true });
        await fs.mkdir(jobDir, { mode: 0o700 });
        await fs.link(input, stagedInput).catch(() => fs.copyFile(input, stagedInput));
        await giveToEngineUser(jobDir);
        try {
          const reply = await process.request({
            op: 'convert',
            input: stagedInput,
            output: stagedOutput,
            filter: request.filter,
            import_filter: request.importFilter ?? null,
            import_options: request.importOptions ?? null,
            export_options: request.exportOptions ?? null,
          }, timeoutMs, signal);
          // The start-up probe's tiny documents do not count towards recycling.
          if (!probe) process.jobs++;
          if (!reply.ok) {
            const code = reply.code === 'corrupt_input' ? 'corrupt_input' : 'conversion_failed';
            throw new ConvertdError(code, code === 'corrupt_input'
              ? 'LibreOffice could not open the file: check that it is a valid document of its type.'
              : `LibreOffice could not convert the file (${(reply.message ?? 'no detail').slice(0, 300)}).`);
          }
          await fs.rename(stagedOutput, output).catch(async (error: NodeJS.ErrnoException) => {
            if (error.code === 'ENOENT') throw new ConvertdError('conversion_failed', 'LibreOffice wrote no output: the document may use features it cannot convert.');
            await fs.copyFile(stagedOutput, output);
          });
          return;
        } catch (error) {
          if (error instanceof OfficeCrashed && !signal.aborted) {
            this.options.log?.warn({ event: 'libreoffice_crash', slot: slot.index, attempt, reason: error.message }, 'a LibreOffice process died during a job');
            if (attempt < 2) continue;
            // Killed for its memory twice, the second time on a fresh process: the file is too big for the limit.
            if (error.outOfMemory) throw error.outOfMemory;
            throw new ConvertdError('conversion_failed', 'LibreOffice crashed twice on this file: it may be damaged or too complex.');
          }
          throw error;
        } finally {
          await fs.rm(jobDir, { recursive: true, force: true }).catch(() => undefined);
        }
      }
    } finally {
      this.release(slot);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot.process?.close()));
  }

  private acquire(signal: AbortSignal): Promise<Slot> {
    signal.throwIfAborted();
    if (this.closed) return Promise.reject(new ConvertdError('conversion_failed', 'The LibreOffice pool is shutting down.'));
    const free = this.slots.find((s) => !s.busy);
    if (free) {
      free.busy = true;
      return Promise.resolve(free);
    }
    if (this.waiters.length >= this.options.maxWaiting) {
      return Promise.reject(new ConvertdError('conversion_failed', 'Too many documents are waiting for LibreOffice; try again in a minute.'));
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
    else slot.busy = false;
  }

  /** The slot's process, started, recycled or replaced as needed, and answering. */
  private async healthyProcess(slot: Slot): Promise<OfficeProcess> {
    let current = slot.process;
    if (current && current.isAlive && current.jobs >= this.options.maxJobsPerProcess) {
      this.options.log?.info({ event: 'libreoffice_recycle', slot: slot.index, jobs: current.jobs }, 'recycling a LibreOffice process after its maximum number of jobs');
      await this.retire(slot);
      current = undefined;
    }
    if (current && current.isAlive) {
      const healthy = await current.request({ op: 'ping' }, HEALTH_TIMEOUT_MS).then((r) => r.ok === true, () => false);
      if (healthy) return current;
      this.options.log?.warn({ event: 'libreoffice_unhealthy', slot: slot.index }, 'a LibreOffice process failed its health check; replacing it');
    }
    if (current) {
      // Dead or unresponsive (a recycled one was retired above): this is a restart.
      this.restarts++;
      await this.retire(slot);
    }
    const fresh = await this.startProcess(slot);
    try {
      await fresh.waitUntilReady();
    } catch (error) {
      await this.retire(slot);
      throw new ConvertdError('conversion_failed', `LibreOffice could not be started (${error instanceof Error ? error.message : String(error)}); try again later.`);
    }
    return fresh;
  }

  private async retire(slot: Slot): Promise<void> {
    const old = slot.process;
    if (!old) return;
    slot.process = undefined;
    if (old.isAlive) await old.close();
    else await old.exited;
    await fs.rm(old.dir, { recursive: true, force: true });
  }

  /** Starts a new process in a slot that has none, in a fresh directory with a fresh profile. */
  private async startProcess(slot: Slot): Promise<OfficeProcess> {
    slot.generation++;
    const dir = path.join(this.options.stateDir, `slot${slot.index}-${slot.generation}-${randomBytes(4).toString('hex')}`);
    await fs.mkdir(path.join(dir, 'profile', 'user'), { recursive: true, mode: 0o700 });
    await fs.writeFile(path.join(dir, 'profile', 'user', 'registrymodifications.xcu'), profileXml());
    await giveToEngineUser(dir);
    const process = new OfficeProcess(dir, this.options.maxOutputBytes, this.options.startTimeoutMs ?? 60_000);
    slot.process = process;
    this.started++;
    this.options.log?.info({ event: 'libreoffice_start', slot: slot.index, generation: slot.generation }, 'starting a LibreOffice process');
    void process.exited.then(() => {
      if (!this.closed) this.options.log?.info({ event: 'libreoffice_exit', slot: slot.index, reason: process.deathReason }, 'a LibreOffice process ended');
    });
    return process;
  }
}
