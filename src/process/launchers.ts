// Engine processes start in cgroups of their own (cgroups.ts), and entering a cgroup is slow:
// moving a process into one waits on the kernel for 9-20 ms here (cgroup v1, one move per
// hierarchy, memory and pids), which was a third of a small pandoc job (BENCHMARKS.md). So the move
// is made before the process is needed: a launcher is a small Perl program, started as the engine
// user, that writes its own PID into its fresh cgroups' process lists, says it is ready, and waits
// for the command line it is to become. The runner hands it the command (bubblewrap → program),
// the environment and the resource limits; Perl sets the limits (setrlimit, as prlimit would) and
// executes the command in place: the same process, already inside its cgroups and limits, with
// the launcher's pipes as the program's standard input, output and error. Perl's `exec` with a
// list never goes through a shell. perl-base is Essential in Debian, so it is always there;
// without it the runner starts every process through cgexec and prlimit directly, as before.
//
// Doing the cgroup move and the limits in the launcher instead of through cgexec and prlimit
// saves two program starts for every engine process: about 20 ms of CPU each time (issue #30:
// the test suite starts some 20,000 of them; BENCHMARKS.md).
//
// A few launchers wait at a time, and a taken one is replaced at once. Launchers made before the
// cgroups or the engine user changed are discarded. A launcher whose service dies reads the end of
// its command pipe and exits.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { cgroupGeneration, openRunCgroup, type RunCgroup } from './cgroups.ts';

const PERL = '/usr/bin/perl';
/** Launchers kept waiting: the archive engine starts two processes at once, and two jobs run at a time. */
export const LAUNCHERS_WAITING = 2;

/**
 * setrlimit's system call number, for the architectures whose number is known here; elsewhere the
 * runner puts prlimit in front of the command instead (`setsLimits` false).
 */
const SETRLIMIT_CALL: Partial<Record<NodeJS.Architecture, number>> = { x64: 160, arm64: 164 };
/** The resources the runner limits (asm-generic/resource.h, the same on x86-64 and arm64). */
export const RLIMIT = { cpu: 0, fsize: 1, nofile: 7, as: 9 } as const;

/**
 * Arguments: setrlimit's call number (0: none), then the cgroup process lists to enter. Enters them
 * (exit 125 if it cannot), writes "R" on fd 3 (which the runner reads as "inside"), then reads "cwd \0 count \0 NAME=value... \0
 * limits \0 resource \0 value... \0 program \0 arg..." from fd 3 to its end, sets each limit
 * (soft and hard) and becomes the program. Exits 127 (like a shell's "command not found") when the
 * message is incomplete (the service went away) or a limit or the program fails.
 */
const SCRIPT = String.raw`
my $setrlimit = shift @ARGV;
for my $procs (@ARGV) {
  open(my $cg, '>', $procs) or do { print STDERR "launcher: cannot enter $procs: $!\n"; exit 125 };
  print $cg "$$\n";
  close $cg or do { print STDERR "launcher: cannot enter $procs: $!\n"; exit 125 };
}
open(my $in, '+<&=', 3) or exit 127;
{ local $SIG{PIPE} = 'IGNORE'; syswrite($in, 'R') } # the service may have sent its command and closed already
my $message = do { local $/; <$in> } // '';
close $in;
my @fields = split /\0/, $message;
if (@fields < 4) { print STDERR "launcher: incomplete message (" . length($message) . " bytes)\n"; exit 127 }
my $cwd = shift @fields;
my $count = shift @fields;
%ENV = map { split /=/, $_, 2 } splice(@fields, 0, $count);
my $limits = shift @fields;
for (1 .. $limits) {
  my ($resource, $value) = splice(@fields, 0, 2);
  my $both = pack('QQ', $value, $value);
  syscall($setrlimit + 0, $resource + 0, $both) == 0 or do { print STDERR "launcher: cannot set limit $resource: $!\n"; exit 127 };
}
chdir $cwd or do { print STDERR "launcher: cannot enter $cwd: $!\n"; exit 127 };
exec { $fields[0] } @fields or print STDERR "launcher: cannot execute $fields[0]: $!\n";
exit 127;
`;

export interface EngineUser {
  readonly uid?: number;
  readonly gid?: number;
}

interface Waiting {
  readonly child: ChildProcess;
  /** Inside its cgroups (it said so on fd 3). */
  ready: boolean;
  readonly cgroup: RunCgroup;
  readonly generation: number;
  readonly user: EngineUser;
  readonly exited: Promise<void>;
  taken: boolean;
  alive: boolean;
}

/** A launcher handed to the runner: its process (stdin, stdout and stderr are pipes) and its cgroups. */
export interface Launcher {
  readonly child: ChildProcess;
  readonly cgroup: RunCgroup;
  /** Whether it sets resource limits itself (otherwise the command must start with prlimit). */
  readonly setsLimits: boolean;
  /** Makes the launcher set `limits` (resource number → value) and execute `command` in `cwd` with exactly `env`. */
  start(command: readonly string[], cwd: string, env: Readonly<Record<string, string>>, limits: ReadonlyArray<readonly [number, number]>): void;
}

const waiting: Waiting[] = [];
const available = existsSync(PERL);
/** The cgroups' generation when the launchers were stopped: none are made until they change. */
let stoppedIn: number | undefined;

function streams(child: ChildProcess): Array<Socket | undefined> {
  return child.stdio.map((stream) => stream as Socket | undefined);
}

/** Takes a launcher out of the stock and ends it; its cgroups go when it has exited. */
function discard(entry: Waiting): void {
  const index = waiting.indexOf(entry);
  if (index >= 0) waiting.splice(index, 1);
  if (!entry.alive) return;
  try {
    process.kill(-entry.child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}

function launch(user: EngineUser): void {
  const cgroup = openRunCgroup();
  if (!cgroup) return;
  const child = spawn(PERL, ['-e', SCRIPT, String(SETRLIMIT_CALL[process.arch] ?? 0), ...cgroup.procsFiles], {
    cwd: '/',
    env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
    uid: user.uid,
    gid: user.gid,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    // Its own process group, as every engine process has (the runner kills the group).
    detached: true,
  });
  let exited!: () => void;
  const entry: Waiting = { child, ready: false, cgroup, generation: cgroupGeneration(), user, exited: new Promise((resolve) => { exited = resolve; }), taken: false, alive: true };
  const gone = () => {
    if (!entry.alive) return;
    entry.alive = false;
    // Once taken, the process and its cgroups are the runner's.
    if (!entry.taken) {
      discard(entry);
      cgroup.remove();
    }
    exited();
  };
  child.once('exit', gone);
  child.once('error', gone);
  const control = streams(child)[3]!;
  control.once('data', () => {
    entry.ready = true;
  });
  control.on('error', () => undefined); // a launcher that died: its exit says so
  // A waiting launcher does not keep the service (or a test) running.
  child.unref();
  for (const stream of streams(child)) stream?.unref();
  waiting.push(entry);
}

/**
 * A launcher in fresh cgroups for the engine user, or undefined when none is waiting (the runner
 * then starts the process through cgexec itself). Either way the stock is topped up afterwards.
 */
export function takeLauncher(user: EngineUser): Launcher | undefined {
  if (!available) return undefined;
  const generation = cgroupGeneration();
  for (const entry of [...waiting]) {
    const current = entry.generation === generation && entry.user.uid === user.uid && entry.user.gid === user.gid;
    if (!current || !entry.alive) discard(entry);
  }
  // One already inside its cgroups if there is one; else one still entering them (it reads the
  // command only once inside, so the move is then on this process's path, as cgexec's would be).
  const found = waiting.find((entry) => entry.ready) ?? waiting[0];
  // Topped up after the caller has started its process, off its path.
  setImmediate(() => {
    while (waiting.length < LAUNCHERS_WAITING && cgroupGeneration() === generation && stoppedIn !== generation) {
      const before = waiting.length;
      launch(user);
      if (waiting.length === before) break;
    }
  });
  if (!found) return undefined;
  waiting.splice(waiting.indexOf(found), 1);
  found.taken = true;
  const { child, cgroup } = found;
  child.ref();
  for (const stream of streams(child)) stream?.ref();
  return {
    child,
    cgroup,
    setsLimits: SETRLIMIT_CALL[process.arch] !== undefined,
    start(command, cwd, env, limits) {
      const entries = Object.entries(env).map(([name, value]) => `${name}=${value}`);
      const fields = [cwd, String(entries.length), ...entries, String(limits.length), ...limits.flat().map(String), ...command];
      const pipe = streams(child)[3]!;
      pipe.end(Buffer.from(fields.map((field) => `${field}\0`).join('')), () => pipe.destroy());
    },
  };
}

/** Ends every waiting launcher and removes its cgroups (at shutdown, before the service's own go). */
export async function stopLaunchers(): Promise<void> {
  stoppedIn = cgroupGeneration();
  const entries = [...waiting];
  for (const entry of entries) {
    // Waited for: their exit must keep the service running until it is seen.
    entry.child.ref();
    discard(entry);
  }
  await Promise.all(entries.map((entry) => entry.exited));
}
