// The one place where the service starts external programs. Every engine goes through runProcess:
// an argument array (never a shell string), a clean environment, stdin closed (nothing can wait on
// a password prompt), resource limits (setrlimit, by the launcher or prlimit), a wall-clock timeout, and on timeout or
// abort the whole process group is killed: soffice, gs under ImageMagick and chromium leave
// grandchildren behind a plain child.kill() (soffice leaves oosplash and soffice.bin running;
// docs/security.md#resource-limits). Inside, the program runs in the
// bubblewrap sandbox of sandbox.ts (its PID namespace dies with bwrap, taking every child along),
// and, where the machine allows, in cgroups of its own that cap its memory and tasks (cgroups.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { ConvertdError } from '../errors.ts';
import { cgroupLimitsState, openRunCgroup } from './cgroups.ts';
import { RLIMIT, takeLauncher } from './launchers.ts';
import { sandboxSettings, wrap } from './sandbox.ts';

export interface ResourceLimits {
  /** CPU seconds (RLIMIT_CPU). */
  readonly cpuSeconds?: number;
  /** Largest file the process may write (RLIMIT_FSIZE): the output cap. */
  readonly fileSizeBytes?: number;
  /** Open file descriptors (RLIMIT_NOFILE). */
  readonly openFiles?: number;
  /** Address space (RLIMIT_AS). Breaks V8 and Chromium: leave unset for them. */
  readonly addressSpaceBytes?: number;
}

export interface RunOptions {
  /** The job's work directory: the working directory, HOME, TMPDIR, and the only writable place. */
  readonly cwd: string;
  /** Paths outside /usr the tool must read (its configuration, say), bound read-only in the sandbox. */
  readonly readOnly?: readonly string[];
  /** Variables added to the minimal environment (PATH, HOME, TMPDIR, LANG). */
  readonly env?: Readonly<Record<string, string>>;
  /** `true`: a /proc in the sandbox, for the programs that need one; none otherwise (sandbox.ts). */
  readonly procfs?: boolean;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly limits?: ResourceLimits;
  /** Called with each complete line of standard output (progress parsing). */
  readonly onStdoutLine?: (line: string) => void;
  /** Called with each complete line of standard error (what a tool says of its input). */
  readonly onStderrLine?: (line: string) => void;
  /** Keep standard output in the result (for probes and small answers); otherwise only lines go to onStdoutLine. */
  readonly captureStdout?: boolean;
  /** Binary input for the program (otherwise stdin is closed). */
  readonly stdin?: Readable;
  /** Where the program's binary output goes (instead of line parsing). */
  readonly stdout?: Writable;
}

export interface RunResult {
  /** Exit code, or null when the process died of a signal. */
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  /** The last STDERR_KEEP bytes of standard error. */
  readonly stderr: string;
  readonly durationMs: number;
}

/**
 * Address space for native engines (ffmpeg, ImageMagick, vips, librsvg, bsdtar, Python): room
 * for a 4K video or a 100-megapixel image, not for a runaway. Not for V8, which reserves far more
 * than it uses (Node engines cap their heap instead).
 */
export const NATIVE_ADDRESS_SPACE = 4 * 1024 ** 3;

const STDERR_KEEP = 16 * 1024;
const STDOUT_KEEP = 1024 * 1024;
const PRLIMIT = '/usr/bin/prlimit';

/** The limits as prlimit's arguments and as the launcher's resource → value pairs. */
function limitsOf(limits: ResourceLimits): { args: string[]; pairs: Array<readonly [number, number]> } {
  const named: Array<[keyof typeof RLIMIT, number | undefined]> = [
    ['cpu', limits.cpuSeconds], ['fsize', limits.fileSizeBytes], ['nofile', limits.openFiles], ['as', limits.addressSpaceBytes],
  ];
  const set = named.filter((entry): entry is [keyof typeof RLIMIT, number] => entry[1] !== undefined && entry[1] > 0);
  return {
    args: set.map(([name, value]) => `--${name}=${value}`),
    pairs: set.map(([name, value]) => [RLIMIT[name], value] as const),
  };
}

function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: the group is already gone
  }
}

/** What every engine process gets besides what its engine asks for. */
export interface CommonEnvironment {
  readonly env: Readonly<Record<string, string>>;
  readonly readOnly: readonly string[];
}

let common: CommonEnvironment = { env: {}, readOnly: [] };

/**
 * Sets what every engine process started from now on gets: variables and read-only paths that are
 * not one engine's business (the fonts' configuration and cache, src/engines/support/fonts/). Set
 * once, when the engines are assembled; an engine's own values win over these.
 */
export function setCommonEnvironment(value: CommonEnvironment): void {
  common = value;
}

/**
 * Runs a program to completion. Resolves with its exit status whatever it is (engines decide what
 * a non-zero exit means); rejects with ConvertdError('timeout') past the timeout, and with the
 * signal's reason when aborted.
 */
export function runProcess(program: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  options.signal?.throwIfAborted();
  // A clean environment: nothing of the service's own (credentials, config) reaches a tool.
  const env = {
    PATH: '/usr/bin:/bin',
    HOME: options.cwd,
    TMPDIR: options.cwd,
    LANG: 'C.UTF-8',
    ...common.env,
    ...options.env,
  };
  const sandbox = sandboxSettings();
  const readOnly = [...common.readOnly, ...(options.readOnly ?? [])];
  const wrapped = wrap(program, args, { workDir: options.cwd, readOnly, env, procfs: options.procfs }, sandbox);
  // Every engine process has CPU-time and open-file limits, whatever the engine asks; an engine
  // adds the output-size cap and, where it does not break the program (V8 reserves huge address
  // space), an address-space cap.
  const limits = limitsOf({
    cpuSeconds: Math.ceil(options.timeoutMs / 1000) + 5,
    openFiles: 1024,
    ...options.limits,
  });
  // The engine never runs outside its cgroups: either a launcher already inside them becomes the
  // command, setting the limits itself (launchers.ts), or cgexec enters them first and prlimit sets
  // the limits before the rest is executed. Launchers enter the working directory as the engine
  // user, which bubblewrap needs to be able to do anyway; unsandboxed, the process is started from
  // here, which enters it before switching user.
  const launcher = sandbox.mode === 'bwrap' ? takeLauncher(sandbox) : undefined;
  const cgroup = launcher?.cgroup ?? openRunCgroup();
  const usePrlimit = !launcher?.setsLimits && limits.args.length > 0 && existsSync(PRLIMIT);
  const limited = usePrlimit ? [PRLIMIT, ...limits.args, '--', wrapped.command, ...wrapped.argv] : [wrapped.command, ...wrapped.argv];

  return new Promise((resolve, reject) => {
    const started = performance.now();
    let child: ChildProcess;
    if (launcher) {
      child = launcher.child;
      launcher.start(limited, options.cwd, env, launcher.setsLimits ? limits.pairs : []);
      // A launcher's stdin is a pipe: closed at once when the program is given none.
      if (!options.stdin) child.stdin!.end();
    } else {
      const [command, ...argv] = cgroup ? [...cgroup.prefix, ...limited] : limited;
      child = spawn(command!, argv, {
        cwd: options.cwd,
        env,
        // As an unprivileged user when the service itself is root.
        uid: sandbox.uid,
        gid: sandbox.gid,
        stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
        // Its own process group, so that the whole tree can be killed at once.
        detached: true,
        shell: false,
      });
    }

    let stderr = '';
    let stdout = '';
    const stdoutLines = lineReader(options.onStdoutLine);
    const stderrLines = lineReader(options.onStderrLine);
    let settled = false;
    let failure: unknown;

    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_KEEP);
      stderrLines.push(chunk);
    });
    if (options.stdout) child.stdout!.pipe(options.stdout);
    else child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      if (options.captureStdout && stdout.length < STDOUT_KEEP) stdout += chunk;
      stdoutLines.push(chunk);
    });

    const stop = (reason: unknown) => {
      if (failure === undefined) failure = reason;
      killGroup(child.pid);
    };
    if (options.stdin && child.stdin) {
      // The program may stop reading early (it failed, or was killed): its exit says why.
      child.stdin.on('error', () => undefined);
      options.stdin.on('error', (error) => stop(error));
      options.stdin.pipe(child.stdin);
    }
    const timer = setTimeout(() => stop(new ConvertdError('timeout')), options.timeoutMs);
    const onAbort = () => stop(options.signal?.reason ?? new Error('aborted'));
    options.signal?.addEventListener('abort', onAbort, { once: true });

    const finish = (error: unknown, exitCode: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      // Whatever the main process left running in its group goes with it.
      killGroup(child.pid);
      stdoutLines.end();
      stderrLines.end();
      const outOfMemory = exitCode !== 0 && (cgroup?.outOfMemory() ?? false);
      // Past RLIMIT_FSIZE (the output cap) the kernel sends SIGXFSZ; through bubblewrap it reaches
      // us as exit status 128 + 25. Every engine's answer to that is the same: the output is too large.
      const pastOutputCap = options.limits?.fileSizeBytes !== undefined && (signal === 'SIGXFSZ' || exitCode === EXIT_BY_SIGXFSZ);
      cgroup?.remove();
      if (failure !== undefined) reject(failure);
      else if (error) reject(error);
      else if (outOfMemory) reject(outOfMemoryError());
      else if (pastOutputCap) reject(new ConvertdError('output_too_large'));
      else resolve({ exitCode, signal, stdout, stderr, durationMs: Math.round(performance.now() - started) });
    };
    // When the main process exits, grandchildren may still hold its pipes open and delay 'close'
    // for ever: kill the group at once, so that 'close' follows.
    child.on('exit', () => {
      killGroup(child.pid);
      if (failure !== undefined) {
        // Stopped by us: what it wrote is not wanted. 'close' waits for its stdout to be read to
        // the end, which never happens when the consumer has stopped reading (the archive
        // engine's parser after a cap tripped): discard the rest, and stop feeding its stdin.
        if (options.stdout) child.stdout?.unpipe(options.stdout);
        child.stdout?.resume();
        // (Only the pipe's end is ours to close: the source may be a streamx stream, tar-stream's.)
        child.stdin?.destroy();
      }
    });
    child.on('error', (error) => finish(error, null, null));
    child.on('close', (code, signal) => finish(undefined, code, signal));
  });
}

/** Cuts a text stream into lines for `onLine` (nothing to do without one). */
function lineReader(onLine: ((line: string) => void) | undefined): { push(chunk: string): void; end(): void } {
  let pending = '';
  return {
    push(chunk) {
      if (!onLine) return;
      const lines = (pending + chunk).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    },
    end() {
      if (onLine && pending) onLine(pending);
      pending = '';
    },
  };
}

/** The exit status of a process killed by SIGXFSZ, as bubblewrap (or a shell) reports it. */
export const EXIT_BY_SIGXFSZ = 128 + 25;

function outOfMemoryError(): ConvertdError {
  const megabytes = Math.round((cgroupLimitsState().limitBytes ?? 0) / 1024 / 1024);
  return new ConvertdError('input_too_complex',
    `The conversion needed more than ${megabytes} MB of memory, the limit per engine (CONVERTD_ENGINE_MEMORY_MB): send a smaller or simpler file.`,
    { memory_limit_bytes: cgroupLimitsState().limitBytes });
}

/** The last meaningful line of a tool's error output, for a job's error message. */
export function lastErrorLine(stderr: string): string {
  const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
  // A Node process that dies of an uncaught error (a pool's helper) prints the error, its stack
  // and "Node.js v24…": the line that says what went wrong is the one before the stack.
  const stack = /^Node\.js v\d/.test(lines.at(-1) ?? '') ? lines.findIndex((line) => line.startsWith('at ')) : -1;
  return ((stack > 0 ? lines[stack - 1] : lines.at(-1)) ?? '').slice(0, 300);
}

/** Throws conversion_failed unless the process exited 0. */
export function ensureSuccess(result: RunResult, tool: string): void {
  if (result.exitCode === 0) return;
  const how = result.exitCode === null ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
  const detail = lastErrorLine(result.stderr);
  throw new ConvertdError('conversion_failed', `${tool} ${how}${detail ? `: ${detail}` : ''}.`);
}
