// The sandbox every engine process runs in (docs/security.md#the-sandbox): bubblewrap with every
// namespace unshared (so no network at all), a read-only view of /usr and of the few config paths
// a tool names, the job's work directory as the only writable place, a private /tmp, a private
// /proc only for the engines that need one, no /sys, a clean environment, a new session (no terminal to inject into), and death with its parent. When the
// service runs as root, the engine runs as an unprivileged user besides.
import { spawnSync } from 'node:child_process';
import { existsSync, lchownSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

export type SandboxMode = 'bwrap' | 'off';

export interface SandboxSettings {
  readonly mode: SandboxMode;
  /** Set when the service runs as root: engines run as this user and group instead. */
  readonly uid?: number;
  readonly gid?: number;
}

const BWRAP = '/usr/bin/bwrap';
/** The unprivileged user engines run as when the service is root (Debian's "nobody"). */
const ENGINE_UID = 65534;
const ENGINE_GID = 65534;

/** Paths every dynamically linked tool needs to start, read-only, when they exist. */
const BASE_READ_ONLY = ['/etc/ld.so.cache', '/etc/alternatives', '/etc/fonts', '/usr/share/fonts', '/etc/localtime'];

let settings: SandboxSettings = { mode: 'off' };

export function sandboxSettings(): SandboxSettings {
  return settings;
}

/**
 * Decides the sandbox at start. `requested` is CONVERTD_SANDBOX: "auto" (the default) uses
 * bubblewrap and refuses to start without it; "off" runs engines unconfined, which must be
 * asked for explicitly. Returns a problem description when the sandbox cannot work.
 */
export function configureSandbox(requested: 'auto' | 'off'): { settings: SandboxSettings; problem?: string } {
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const user = asRoot ? { uid: ENGINE_UID, gid: ENGINE_GID } : {};
  if (requested === 'off') {
    settings = { mode: 'off', ...user };
    return { settings };
  }
  const problem = probeBubblewrap(user.uid, user.gid);
  settings = problem ? { mode: 'off', ...user } : { mode: 'bwrap', ...user };
  return problem ? { settings, problem } : { settings };
}

function probeBubblewrap(uid?: number, gid?: number): string | undefined {
  if (!existsSync(BWRAP)) return 'bubblewrap is not installed (apt-get install bubblewrap)';
  const { command, argv } = wrap('/usr/bin/true', [], { workDir: '/', readOnly: [] }, { mode: 'bwrap' });
  const result = spawnSync(command, argv, { uid, gid, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 10_000 });
  if (result.status === 0) return undefined;
  return `bubblewrap cannot start a sandbox here (${(result.stderr || result.error?.message || `exit ${result.status}`).trim()}); user namespaces may be disabled`;
}

export interface SandboxRequest {
  /** The only writable directory, also the working directory. */
  readonly workDir: string;
  /** Extra paths the tool needs, bound read-only where they exist. */
  readonly readOnly: readonly string[];
  /** Environment inside the sandbox. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * `true`: a /proc inside, for the programs that do not run without one (LibreOffice, calibre,
   * Node). A fresh one, of the sandbox's own PID namespace, so it shows the engine's processes
   * only, but among them its own environment, command line, working directory and mounts, which
   * hold the job's path. Every other program runs without (the default), so that a document
   * naming /proc/self/... finds nothing there (docs/security.md#the-sandbox).
   */
  readonly procfs?: boolean;
}

/** The command line that runs `program args` inside the sandbox (or as is, when off). */
export function wrap(program: string, args: readonly string[], request: SandboxRequest, current: SandboxSettings = settings): { command: string; argv: string[] } {
  if (current.mode === 'off') return { command: program, argv: [...args] };
  const argv = [
    '--unshare-all', // network, IPC, PID, UTS, cgroup and user namespaces: no network inside
    '--die-with-parent',
    '--new-session',
    '--ro-bind', '/usr', '/usr',
    '--symlink', 'usr/lib', '/lib',
    '--symlink', 'usr/lib64', '/lib64',
    '--symlink', 'usr/bin', '/bin',
    '--symlink', 'usr/sbin', '/sbin',
    // No /sys: no engine needs one (ImageMagick binds its one read-only directory of memory settings).
    ...(request.procfs === true ? ['--proc', '/proc'] : []),
    '--dev', '/dev',
    '--tmpfs', '/tmp',
  ];
  for (const dir of [...BASE_READ_ONLY, ...request.readOnly]) {
    if (existsSync(dir)) argv.push('--ro-bind', dir, dir);
  }
  if (request.workDir !== '/') argv.push('--bind', request.workDir, request.workDir, '--chdir', request.workDir);
  argv.push('--clearenv');
  for (const [name, value] of Object.entries(request.env ?? {})) argv.push('--setenv', name, value);
  argv.push('--', program, ...args);
  return { command: BWRAP, argv };
}

/** Hands a work directory (and what is in it) to the engine user, when engines run as one. */
export async function giveToEngineUser(dir: string, current: SandboxSettings = settings): Promise<void> {
  if (current.uid === undefined || current.gid === undefined) return;
  const { uid, gid } = current;
  const walk = async (target: string): Promise<void> => {
    await fs.lchown(target, uid, gid);
    const stat = await fs.lstat(target);
    if (stat.isDirectory()) {
      for (const name of await fs.readdir(target)) await walk(path.join(target, name));
    }
  };
  await walk(dir);
}

/**
 * The first directory above `dir` (or `dir` itself) that the engine user, who is neither its owner
 * nor in its group, may not pass through (no execute bit for others), or undefined when there is
 * none or engines run as this process's user. The engines run in work directories under the data
 * directory: under such a parent each one failed with "launcher: cannot enter ...", so main.ts
 * refuses to start instead.
 */
export function unenterableDirectory(dir: string, current: SandboxSettings = settings): string | undefined {
  if (current.uid === undefined) return undefined;
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const stat = statSync(at, { throwIfNoEntry: false }); // not made yet: the service makes it traversable
    if (stat && stat.uid !== current.uid && stat.gid !== current.gid && (stat.mode & 0o001) === 0) return at;
    if (path.dirname(at) === at) return undefined;
  }
}

/**
 * Hands the named entries (not what a directory holds) to the engine user: for a directory just
 * made and the files just linked into it, where a walk would only find what the caller already
 * knows. Synchronous, as the job path's other metadata calls are (storage/local.ts says why).
 */
export function giveEntriesToEngineUser(entries: readonly string[], current: SandboxSettings = settings): void {
  if (current.uid === undefined || current.gid === undefined) return;
  for (const entry of entries) lchownSync(entry, current.uid, current.gid);
}
