// Memory limits for engine processes through a cgroup (issue #5, shared/security.md: "cap memory
// with a cgroup"; RLIMIT_AS breaks V8 and is a poor proxy for resident memory anyway).
//
// At start the service makes a cgroup of its own under the one it runs in (convertd-<pid>), and
// the runner gives every engine process a child cgroup of it (run-<n>) with the memory limit, and
// swap included, so an engine cannot swap its way past it. The engine enters its cgroup before
// it runs: the runner starts it through `cgexec` (Debian's cgroup-tools), which moves itself into
// the cgroup and then executes the rest of the command, so there is no moment where the engine
// runs unlimited. When the kernel's OOM killer ends a process there, the cgroup counts it, and the
// runner reports the job as `input_too_complex` rather than as a mysterious crash.
//
// Where no memory cgroup can be made (not root, a read-only cgroupfs, a cgroup v2 hierarchy whose
// memory controller is not delegated to us, cgexec missing), the service says so at start and in
// /readyz and carries on with the per-engine address-space limits, as the issue allows.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, chownSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const CGEXEC = '/usr/bin/cgexec';

export type MemoryLimitMode = 'cgroup-v1' | 'cgroup-v2' | 'none';

export interface MemoryLimitState {
  readonly mode: MemoryLimitMode;
  /** The limit per engine process, when enforced. */
  readonly limitBytes?: number;
  /** Why there is no cgroup limit, when there is none although one was asked for. */
  readonly problem?: string;
}

interface Hierarchy {
  readonly version: 1 | 2;
  /** Where the hierarchy is mounted. */
  readonly mountPoint: string;
  /** The service's own cgroup, as a directory under the mount point. */
  readonly ownDir: string;
}

/** One engine process's cgroup. */
export interface RunCgroup {
  /** Arguments that start a command inside this cgroup: `cgexec -g memory:<path>`. */
  readonly prefix: readonly string[];
  /** Whether the kernel's OOM killer killed a process in it. */
  outOfMemory(): boolean;
  /** Removes the cgroup once its processes are gone (retries a little while they are exiting). */
  remove(): void;
}

let state: MemoryLimitState = { mode: 'none' };
let hierarchy: Hierarchy | undefined;
let serviceDir: string | undefined;
let engineUser: { uid: number; gid: number } | undefined;
let nextRun = 1;

export function memoryLimitState(): MemoryLimitState {
  return state;
}

/** Reads /proc/self/cgroup and /proc/self/mountinfo: where the memory controller is, and our cgroup in it. */
function findMemoryHierarchy(): Hierarchy | undefined {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n').filter(Boolean);
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).map((line) => {
    // id parent major:minor root mountpoint options... - fstype source superoptions
    const [before, after = ''] = line.split(' - ');
    const fields = before!.split(' ');
    const [fsType = '', , superOptions = ''] = after.split(' ');
    return { root: fields[3] ?? '/', mountPoint: fields[4] ?? '', fsType, superOptions: superOptions.split(',') };
  });
  const v1 = lines.map((l) => l.split(':')).find(([, controllers]) => controllers?.split(',').includes('memory'));
  if (v1) {
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes('memory'));
    if (!mount) return undefined;
    return { version: 1, mountPoint: mount.mountPoint, ownDir: underMount(mount, v1.slice(2).join(':')) };
  }
  const v2 = lines.map((l) => l.split(':')).find(([id, controllers]) => id === '0' && controllers === '');
  const mount = mounts.find((m) => m.fsType === 'cgroup2');
  if (!v2 || !mount) return undefined;
  return { version: 2, mountPoint: mount.mountPoint, ownDir: underMount(mount, v2.slice(2).join(':')) };
}

/** The directory of cgroup `cgroupPath` in a mount whose own root may be a subtree of the hierarchy. */
function underMount(mount: { root: string; mountPoint: string }, cgroupPath: string): string {
  const relative = path.posix.relative(mount.root, cgroupPath);
  return relative.startsWith('..') ? mount.mountPoint : path.join(mount.mountPoint, relative);
}

function limitFiles(version: 1 | 2): { memory: string; swap: string; events: string; procs: readonly string[] } {
  return version === 1
    ? { memory: 'memory.limit_in_bytes', swap: 'memory.memsw.limit_in_bytes', events: 'memory.oom_control', procs: ['cgroup.procs', 'tasks'] }
    : { memory: 'memory.max', swap: 'memory.swap.max', events: 'memory.events', procs: ['cgroup.procs'] };
}

/** Removes a cgroup directory and the cgroups below it (empty ones only: the kernel refuses the rest). */
function removeTree(dir: string): boolean {
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) removeTree(path.join(dir, entry.name));
    }
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

/** Removes a cgroup tree now, or within a few seconds while the processes in it finish exiting. */
function removeTreeSoon(dir: string): void {
  let tries = 0;
  const attempt = () => {
    if (removeTree(dir) || ++tries >= 50) return;
    setTimeout(attempt, 100).unref();
  };
  attempt();
}

/** Cgroups left by earlier runs of the service that were killed before they could remove them. */
function removeStaleServiceDirs(ownDir: string): void {
  for (const name of readdirSync(ownDir)) {
    const match = /^convertd-(\d+)$/.exec(name);
    if (!match || Number(match[1]) === process.pid) continue;
    if (existsSync(`/proc/${match[1]}`)) continue; // another convertd on this machine
    removeTreeSoon(path.join(ownDir, name));
  }
}

/**
 * Sets the memory limit up at start. `limitMb` is CONVERTD_ENGINE_MEMORY_MB (0: no cgroup limit);
 * `user` is the unprivileged user engines run as, who must be able to enter the cgroups.
 */
export function configureMemoryLimit(limitMb: number, user: { uid?: number; gid?: number }): MemoryLimitState {
  engineUser = user.uid !== undefined && user.gid !== undefined ? { uid: user.uid, gid: user.gid } : undefined;
  if (limitMb === 0) {
    state = { mode: 'none' };
    return state;
  }
  const limitBytes = limitMb * 1024 * 1024;
  try {
    if (!existsSync(CGEXEC)) throw new Error(`${CGEXEC} is missing (apt-get install cgroup-tools)`);
    const found = findMemoryHierarchy();
    if (!found) throw new Error('this machine has no memory cgroup controller');
    removeStaleServiceDirs(found.ownDir);
    const dir = path.join(found.ownDir, `convertd-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    if (found.version === 2 && !existsSync(path.join(dir, 'memory.max'))) {
      removeTree(dir);
      throw new Error(`the cgroup v2 memory controller is not delegated to ${found.ownDir} (enable it in its cgroup.subtree_control)`);
    }
    hierarchy = found;
    serviceDir = dir;
    state = { mode: found.version === 1 ? 'cgroup-v1' : 'cgroup-v2', limitBytes };
    // The proof: a process started as engines are started lands in its cgroup.
    const run = openRunCgroup()!;
    const probe = spawnSync(run.prefix[0]!, [...run.prefix.slice(1), '/usr/bin/cat', '/proc/self/cgroup'], { encoding: 'utf8', ...engineUser, timeout: 10_000 });
    run.remove();
    const target = run.prefix[2]!.slice('memory:'.length);
    if (probe.status !== 0 || !probe.stdout.includes(target)) {
      throw new Error(`cgexec could not enter a cgroup: ${(probe.stderr || probe.error?.message || probe.stdout).trim()}`);
    }
  } catch (error) {
    if (serviceDir) removeTree(serviceDir);
    hierarchy = undefined;
    serviceDir = undefined;
    state = { mode: 'none', problem: error instanceof Error ? error.message : String(error) };
  }
  return state;
}

/** A fresh cgroup with the memory limit for one engine process, or undefined when there are none. */
export function openRunCgroup(): RunCgroup | undefined {
  if (!hierarchy || !serviceDir || state.limitBytes === undefined) return undefined;
  const files = limitFiles(hierarchy.version);
  const dir = path.join(serviceDir, `run-${nextRun++}`);
  mkdirSync(dir);
  writeFileSync(path.join(dir, files.memory), String(state.limitBytes));
  // Swap counts towards the limit (v1: memory+swap; v2: no swap at all), where swap accounting exists.
  if (existsSync(path.join(dir, files.swap))) writeFileSync(path.join(dir, files.swap), hierarchy.version === 1 ? String(state.limitBytes) : '0');
  // cgexec runs as the engine's user and moves itself: that user must be able to write the
  // cgroup's process list (the sandbox mounts no cgroupfs, so engines cannot reach it).
  if (engineUser) for (const file of files.procs) chownSync(path.join(dir, file), engineUser.uid, engineUser.gid);
  const relative = path.relative(hierarchy.mountPoint, dir);
  return {
    prefix: [CGEXEC, '-g', `memory:${relative}`],
    outOfMemory: () => {
      try {
        const match = /^oom_kill (\d+)$/m.exec(readFileSync(path.join(dir, files.events), 'utf8'));
        return Number(match?.[1] ?? 0) > 0;
      } catch {
        return false;
      }
    },
    // The process group was killed; its members may take a moment to leave.
    remove: () => removeTreeSoon(dir),
  };
}

/** Removes the service's cgroups at shutdown (what is still busy goes at the next start). */
export function removeServiceCgroup(): void {
  if (serviceDir) removeTree(serviceDir);
}
