// Memory and process-count limits for engine processes through cgroups (issue #5,
// docs/security.md#resource-limits: memory is capped with a cgroup; RLIMIT_AS breaks V8 and is a poor proxy for
// resident memory, and RLIMIT_NPROC counts every process of the engine user at once).
//
// At start the service makes a cgroup of its own (convertd-<pid>) under the one it runs in, in the
// memory hierarchy and in the pids hierarchy, and the runner gives every engine process a child
// cgroup there (run-<n>): the memory limit, swap included so that an engine cannot swap its way
// past it, and a cap on its tasks (processes and threads), so that a fork bomb stops there. The
// engine enters its cgroups before it runs: the runner starts it through `cgexec` (Debian's
// cgroup-tools), which moves itself and then executes the rest of the command, so there is no
// moment where the engine runs unlimited. When the kernel's OOM killer ends a process there, the
// cgroup counts it, and the runner reports the job as `input_too_complex` rather than as a crash.
//
// Where a controller is unavailable (not root, a read-only cgroupfs, a cgroup v2 hierarchy whose
// controllers are not delegated to us, cgexec missing), the service says so at start and in
// /readyz and carries on without that limit; engines keep their address-space limits.
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

export const CGEXEC = '/usr/bin/cgexec';
/** Tasks (processes and threads) one engine process tree may have: soffice uses about 40, Node 15. */
export const MAX_ENGINE_TASKS = 512;

export type CgroupMode = 'cgroup-v1' | 'cgroup-v2' | 'none';
type Controller = 'memory' | 'pids';

export interface CgroupLimitsState {
  /** How engine memory is limited. */
  readonly mode: CgroupMode;
  /** The memory limit per engine process, when enforced. */
  readonly limitBytes?: number;
  /** Why there is no memory limit, when one was asked for. */
  readonly problem?: string;
  /** The task cap per engine process, when enforced. */
  readonly maxTasks?: number;
  /** Why there is no task cap. */
  readonly tasksProblem?: string;
}

interface Hierarchy {
  readonly version: 1 | 2;
  /** Where the hierarchy is mounted. */
  readonly mountPoint: string;
  /** The service's own cgroup, as a directory under the mount point. */
  readonly ownDir: string;
}

/** A controller in use: its hierarchy and the service's cgroup in it. */
interface Active {
  readonly hierarchy: Hierarchy;
  readonly serviceDir: string;
}

/** One engine process's cgroups. */
export interface RunCgroup {
  /** Arguments that start a command inside these cgroups: `cgexec -g memory:<path> -g pids:<path>`. */
  readonly prefix: readonly string[];
  /** The process list of each of these cgroups: a process that writes its own PID in each is inside them. */
  readonly procsFiles: readonly string[];
  /** Whether the kernel's OOM killer killed a process in it. */
  outOfMemory(): boolean;
  /** Removes the cgroups once their processes are gone (retries a little while they are exiting). */
  remove(): void;
}

let state: CgroupLimitsState = { mode: 'none' };
const active = new Map<Controller, Active>();
let memoryLimitBytes: number | undefined;
let engineUser: { uid: number; gid: number } | undefined;
let nextRun = 1;
/** Changes whenever the limits are torn down (and so also when they are set up again): what was prepared before is stale. */
let generation = 0;

export function cgroupLimitsState(): CgroupLimitsState {
  return state;
}

/** A number that changes whenever the cgroups are set up again or removed. */
export function cgroupGeneration(): number {
  return generation;
}

/** Reads /proc/self/cgroup and /proc/self/mountinfo: where a controller is, and our cgroup in it. */
function findHierarchy(controller: Controller): Hierarchy | undefined {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n').filter(Boolean).map((l) => l.split(':'));
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).map((line) => {
    // id parent major:minor root mountpoint options... - fstype source superoptions
    const [before, after = ''] = line.split(' - ');
    const fields = before!.split(' ');
    const [fsType = '', , superOptions = ''] = after.split(' ');
    return { root: fields[3] ?? '/', mountPoint: fields[4] ?? '', fsType, superOptions: superOptions.split(',') };
  });
  const v1 = lines.find(([, controllers]) => controllers?.split(',').includes(controller));
  if (v1) {
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes(controller));
    return mount ? { version: 1, mountPoint: mount.mountPoint, ownDir: underMount(mount, v1.slice(2).join(':')) } : undefined;
  }
  const v2 = lines.find(([id, controllers]) => id === '0' && controllers === '');
  const mount = mounts.find((m) => m.fsType === 'cgroup2');
  return v2 && mount ? { version: 2, mountPoint: mount.mountPoint, ownDir: underMount(mount, v2.slice(2).join(':')) } : undefined;
}

/** The directory of cgroup `cgroupPath` in a mount whose own root may be a subtree of the hierarchy. */
function underMount(mount: { root: string; mountPoint: string }, cgroupPath: string): string {
  const relative = path.posix.relative(mount.root, cgroupPath);
  return relative.startsWith('..') ? mount.mountPoint : path.join(mount.mountPoint, relative);
}

/** The file that limits a controller, in a hierarchy of a given version. */
function limitFile(controller: Controller, version: 1 | 2): string {
  if (controller === 'pids') return 'pids.max';
  return version === 1 ? 'memory.limit_in_bytes' : 'memory.max';
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

/** removeTree through libuv's thread pool. */
async function removeTreeInBackground(dir: string): Promise<boolean> {
  try {
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && !await removeTreeInBackground(path.join(dir, entry.name))) return false;
    }
    await fs.rmdir(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT'; // gone already (the service's teardown)
  }
}

/**
 * Removes a cgroup tree now, or within a few seconds while the processes in it finish exiting.
 * In the thread pool, not on the event loop: removing a memory cgroup that held a process waits
 * in the kernel (about 2.5 ms per hierarchy here, cgroup v1), which held up every engine run's
 * result by 5 ms, and every request being served meanwhile (BENCHMARKS.md, change 16).
 */
async function removeTreeSoon(dir: string, { awaited = false } = {}): Promise<boolean> {
  for (let tries = 1; ; tries++) {
    if (await removeTreeInBackground(dir)) return true;
    if (tries >= 50) return false;
    // Unawaited, the retries never hold the process up. Awaited (the stop), the timer must keep
    // the event loop alive: with nothing else left, Node would exit in the middle of the stop.
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 100);
      if (!awaited) timer.unref();
    });
  }
}

/** Cgroups left by earlier runs of the service that were killed before they could remove them. */
function removeStaleServiceDirs(ownDir: string): void {
  for (const name of readdirSync(ownDir)) {
    const match = /^convertd-(\d+)$/.exec(name);
    if (!match || Number(match[1]) === process.pid) continue;
    if (existsSync(`/proc/${match[1]}`)) continue; // another convertd on this machine
    void removeTreeSoon(path.join(ownDir, name));
  }
}

/** Makes the service's cgroup for a controller; throws with the reason it cannot. */
function activate(controller: Controller): Active {
  if (!existsSync(CGEXEC)) throw new Error(`${CGEXEC} is missing (apt-get install cgroup-tools)`);
  const hierarchy = findHierarchy(controller);
  if (!hierarchy) throw new Error(`this machine has no ${controller} cgroup controller`);
  removeStaleServiceDirs(hierarchy.ownDir);
  const serviceDir = path.join(hierarchy.ownDir, `convertd-${process.pid}`);
  mkdirSync(serviceDir, { recursive: true });
  if (!existsSync(path.join(serviceDir, limitFile(controller, hierarchy.version)))) {
    removeTree(serviceDir);
    throw new Error(`the cgroup v2 ${controller} controller is not delegated to ${hierarchy.ownDir} (enable it in its cgroup.subtree_control)`);
  }
  return { hierarchy, serviceDir };
}

/**
 * Sets the limits up at start. `memoryMb` is CONVERTD_ENGINE_MEMORY_MB (0: no memory limit); `user`
 * is the unprivileged user engines run as, who must be able to enter the cgroups. Each controller
 * is proven by starting a process in it, as engines are started.
 */
export function configureCgroupLimits(memoryMb: number, user: { uid?: number; gid?: number }): CgroupLimitsState {
  engineUser = user.uid !== undefined && user.gid !== undefined ? { uid: user.uid, gid: user.gid } : undefined;
  removeServiceCgroups(); // (a new generation)
  memoryLimitBytes = memoryMb * 1024 * 1024;
  const problems: Partial<Record<Controller, string>> = {};
  for (const controller of ['memory', 'pids'] as const) {
    if (controller === 'memory' && memoryMb === 0) continue;
    try {
      active.set(controller, activate(controller));
      const run = openRunCgroup()!;
      const probe = spawnSync(run.prefix[0]!, [...run.prefix.slice(1), '/usr/bin/cat', '/proc/self/cgroup'], { encoding: 'utf8', ...engineUser, timeout: 10_000 });
      run.remove();
      const target = `convertd-${process.pid}/run-`;
      const entered = probe.stdout.split('\n').some((line) => line.includes(target) && (line.startsWith('0::') || line.split(':')[1]?.split(',').includes(controller)));
      if (probe.status !== 0 || !entered) throw new Error(`cgexec could not enter a cgroup: ${(probe.stderr || probe.error?.message || probe.stdout).trim()}`);
    } catch (error) {
      const failed = active.get(controller);
      if (failed) removeTree(failed.serviceDir);
      active.delete(controller);
      problems[controller] = error instanceof Error ? error.message : String(error);
    }
  }
  const memory = active.get('memory');
  state = {
    mode: memory ? (memory.hierarchy.version === 1 ? 'cgroup-v1' : 'cgroup-v2') : 'none',
    ...(memory ? { limitBytes: memoryLimitBytes } : {}),
    ...(problems.memory ? { problem: problems.memory } : {}),
    ...(active.has('pids') ? { maxTasks: MAX_ENGINE_TASKS } : {}),
    ...(problems.pids ? { tasksProblem: problems.pids } : {}),
  };
  return state;
}

/** Fresh cgroups with the limits for one engine process, or undefined when there are none. */
export function openRunCgroup(): RunCgroup | undefined {
  if (active.size === 0) return undefined;
  const name = `run-${nextRun++}`;
  // Controllers that share a hierarchy (cgroup v2) share the directory.
  const dirs = new Map<string, { hierarchy: Hierarchy; controllers: Controller[] }>();
  for (const [controller, { hierarchy, serviceDir }] of active) {
    const dir = path.join(serviceDir, name);
    const entry = dirs.get(dir) ?? { hierarchy, controllers: [] };
    entry.controllers.push(controller);
    dirs.set(dir, entry);
  }
  const prefix: string[] = [CGEXEC];
  const procsFiles: string[] = [];
  let memoryDir: string | undefined;
  for (const [dir, { hierarchy, controllers }] of dirs) {
    mkdirSync(dir);
    const { version } = hierarchy;
    if (controllers.includes('memory')) {
      memoryDir = dir;
      writeFileSync(path.join(dir, limitFile('memory', version)), String(memoryLimitBytes));
      // Swap counts towards the limit (v1: memory+swap; v2: no swap at all), where swap accounting exists.
      const swap = path.join(dir, version === 1 ? 'memory.memsw.limit_in_bytes' : 'memory.swap.max');
      if (existsSync(swap)) writeFileSync(swap, version === 1 ? String(memoryLimitBytes) : '0');
    }
    if (controllers.includes('pids')) writeFileSync(path.join(dir, 'pids.max'), String(MAX_ENGINE_TASKS));
    // cgexec and the launchers run as the engine's user and move themselves: that user must be able to write the
    // cgroup's process list (the sandbox mounts no cgroupfs, so engines cannot reach it).
    if (engineUser) {
      for (const file of version === 1 ? ['cgroup.procs', 'tasks'] : ['cgroup.procs']) chownSync(path.join(dir, file), engineUser.uid, engineUser.gid);
    }
    prefix.push('-g', `${controllers.join(',')}:${path.relative(hierarchy.mountPoint, dir)}`);
    procsFiles.push(path.join(dir, 'cgroup.procs'));
  }
  const eventsFile = memoryDir ? path.join(memoryDir, dirs.get(memoryDir)!.hierarchy.version === 1 ? 'memory.oom_control' : 'memory.events') : undefined;
  return {
    prefix,
    procsFiles,
    outOfMemory: () => {
      if (!eventsFile) return false;
      try {
        const match = /^oom_kill (\d+)$/m.exec(readFileSync(eventsFile, 'utf8'));
        return Number(match?.[1] ?? 0) > 0;
      } catch {
        return false;
      }
    },
    // The process group was killed; its members may take a moment to leave.
    remove: () => {
      for (const dir of dirs.keys()) void removeTreeSoon(dir);
    },
  };
}

/**
 * At shutdown: the service's cgroups removed, as a run's are, waiting while processes stopped a
 * moment ago finish leaving them (the kernel refuses a cgroup until its last process is reaped).
 * What is still busy after removeTreeSoon's few seconds goes at the next start.
 */
export async function removeServiceCgroupsAtStop(): Promise<void> {
  const dirs = [...active.values()].map(({ serviceDir }) => serviceDir);
  generation++;
  active.clear();
  await Promise.all(dirs.map((dir) => removeTreeSoon(dir, { awaited: true })));
}

/** Removes the service's cgroups (at once; what is still busy goes at the next start). */
export function removeServiceCgroups(): void {
  generation++;
  for (const { serviceDir } of active.values()) removeTree(serviceDir);
  active.clear();
}
