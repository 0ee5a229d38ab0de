// A warm process of the pool (supervisor.ts) and the JSON-lines protocol it speaks.
//
// A pooled process is a long-lived helper that speaks JSON lines over stdin/stdout: it prints
// {"ready": true} once it can work, then answers each {"id", "op", ...} with {"id", "ok", ...}
// ("ping" is the health check); while it works on a request it may send {"id", "progress": f},
// f the fraction done, as often as it likes (calibre's helper relays its tool's). It runs in a
// bubblewrap sandbox started by the process runner, with its memory cgroup, so killing it takes
// everything it started along.
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, runProcess, type ResourceLimits } from '../runner.ts';

/**
 * The protocol for helpers written in Python (python/pool_protocol.py): a program whose helper is
 * Python puts this folder among its read-only paths and on its PYTHONPATH.
 */
export const PYTHON_PROTOCOL = fileURLToPath(new URL('./python/', import.meta.url));

/** A process lives until it is recycled; the wall-clock limit per job is the pool's. */
const PROCESS_LIFETIME_MS = 2 ** 31 - 1; // about 24 days, the longest a Node timer can wait

/** What a pool runs: the helper program, and how its failures read to a user. */
export interface PooledProgram {
  /** The tool's name in messages ("LibreOffice"). */
  readonly label: string;
  /** The prefix of its log events ("libreoffice" → libreoffice_start, libreoffice_crash, ...). */
  readonly logName: string;
  /** Prepares a new process's directory before it starts (LibreOffice writes its profile there). */
  prepare?(dir: string): Promise<void>;
  /**
   * The helper's command line; it runs with its directory as working directory and only writable
   * place. `procfs: false` gives it no /proc (it has one unless it says so).
   */
  command(dir: string): { program: string; args: string[]; readOnly: string[]; env?: Record<string, string>; limits: ResourceLimits; procfs?: boolean };
  /** The job error for a helper's refusal ({"ok": false, "code", "message"}). */
  failure(reply: Reply): ConvertdError;
  /** Whether a job whose process died under it is tried once more on a fresh process. */
  readonly retryAfterCrash: boolean;
  /** The job error a death explains, from the helper's last error output (a heap exhausted, say). */
  explainDeath?(stderr: string): ConvertdError | undefined;
}

export interface Reply {
  readonly id?: number;
  readonly ok?: boolean;
  readonly ready?: boolean;
  readonly code?: string;
  readonly message?: string;
  /** What a non-conversion request answers (a probe's findings). */
  readonly result?: unknown;
  /** A progress line about a request still in work: the fraction done, from 0 to 1. */
  readonly progress?: number;
}

/**
 * A pooled process died (or was killed) while it held a request. `verdict` is the job error the
 * death explains, when it does: its memory cgroup killed it, or its helper ran out of heap.
 */
export class ProcessCrashed extends Error {
  readonly verdict: ConvertdError | undefined;
  constructor(message: string, verdict?: ConvertdError) {
    super(message);
    this.verdict = verdict;
  }
}

export class WarmProcess {
  readonly dir: string;
  private readonly label: string;
  jobs = 0;
  /** Set when the pool closes it on purpose (recycled, replaced, shut down). */
  retiring = false;
  /** Set when the pool kills it (a job past its time limit, or aborted). */
  killed = false;
  readonly bornAt = Date.now();
  private readonly stdin = new PassThrough();
  private readonly stop = new AbortController();
  private readonly pending = new Map<number, { resolve: (reply: Reply) => void; reject: (error: unknown) => void; onProgress?: (fraction: number) => void }>();
  private nextId = 1;
  private alive = true;
  private started = false;
  private exitReason = '';
  private exitError: ConvertdError | undefined;
  private readonly ready: Promise<void>;
  readonly exited: Promise<void>;

  constructor(program: PooledProgram, dir: string, startTimeoutMs: number) {
    this.dir = dir;
    this.label = program.label;
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
        return; // not ours: tools' chatter goes to stderr, but be lenient
      }
      if (reply.ready) {
        this.started = true;
        markReady();
      }
      else if (reply.id !== undefined && reply.ok === undefined && typeof reply.progress === 'number') {
        // Progress, not the answer: the request is still in work.
        if (Number.isFinite(reply.progress)) this.pending.get(reply.id)?.onProgress?.(Math.min(1, Math.max(0, reply.progress)));
      }
      else if (reply.id !== undefined) {
        this.pending.get(reply.id)?.resolve(reply);
        this.pending.delete(reply.id);
      }
    };
    const command = program.command(dir);
    this.exited = runProcess(command.program, command.args, {
      cwd: dir,
      // Node (libuv reads /proc/self/exe and /proc/cpuinfo) and soffice ("/proc not mounted -
      // LibreOffice is unlikely to work") need one; calibre's helper does without, as
      // ebook-convert did before it was pooled.
      procfs: command.procfs ?? true,
      readOnly: command.readOnly,
      env: command.env,
      timeoutMs: PROCESS_LIFETIME_MS,
      signal: this.stop.signal,
      stdin: this.stdin,
      onStdoutLine: onLine,
      limits: { cpuSeconds: Math.floor(PROCESS_LIFETIME_MS / 1000), ...command.limits },
    }).then(
      (result) => {
        this.exitError = program.explainDeath?.(result.stderr);
        return `exited with code ${result.exitCode ?? result.signal}${result.stderr ? `: ${lastErrorLine(result.stderr)}` : ''}`;
      },
      (error: unknown) => {
        if (error instanceof ConvertdError && error.code === 'input_too_complex') this.exitError = error;
        return error instanceof Error ? error.message : String(error);
      },
    ).then((reason) => {
      this.alive = false;
      this.exitReason = reason;
      failStart(new Error(`${this.label} did not start: ${reason}`));
      for (const { reject } of this.pending.values()) reject(new ProcessCrashed(`${this.label} ${reason}`, this.exitError));
      this.pending.clear();
    });
    const startTimer = setTimeout(() => failStart(new Error(`${this.label} did not start within ${startTimeoutMs / 1000} s`)), startTimeoutMs);
    void this.ready.then(() => clearTimeout(startTimer), () => clearTimeout(startTimer));
  }

  get isAlive(): boolean {
    return this.alive;
  }

  /** Started, answering requests, and not dead since. */
  get isServing(): boolean {
    return this.alive && this.started;
  }

  /** Whether it ever got as far as answering. */
  get hasStarted(): boolean {
    return this.started;
  }

  get deathReason(): string {
    return this.exitReason;
  }

  waitUntilReady(): Promise<void> {
    return this.ready;
  }

  /** Sends one request; on timeout or abort the whole process is killed. `onProgress` hears its progress lines. */
  request(message: Record<string, unknown>, timeoutMs: number, signal?: AbortSignal, onProgress?: (fraction: number) => void): Promise<Reply> {
    if (!this.alive) return Promise.reject(new ProcessCrashed(`${this.label} ${this.exitReason}`, this.exitError));
    // A listener added to a signal that already fired would never run: refuse now, send nothing.
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
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
        onProgress,
      });
      this.stdin.write(`${JSON.stringify({ id, ...message })}\n`);
    });
  }

  kill(): void {
    this.killed = true;
    this.stop.abort(new ProcessCrashed(`${this.label} was stopped`));
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
