// Engine processes start in cgroups of their own (cgroups.ts), and entering a cgroup is slow:
// moving a process into one waits on the kernel for 9-20 ms here (cgroup v1, one move per
// hierarchy, memory and pids), which was a third of a small pandoc job (BENCHMARKS.md). So the move
// is made before the process is needed: a launcher is a small Perl program, started through
// cgexec in fresh cgroups as the engine user, that waits for the command line it is to become.
// The runner hands it the command (the same prlimit → bubblewrap → program chain as always) and
// Perl executes it in place: the same process, already inside its cgroups, with the launcher's
// pipes as the program's standard input, output and error. Perl's `exec` with a list never goes
// through a shell. perl-base is Essential in Debian, so it is always there; without it the
// runner starts every process through cgexec directly, as before.
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
 * Reads "cwd \0 count \0 NAME=value... \0 program \0 arg..." from fd 3 to its end, then becomes the
 * program. Exits 127 (like a shell's "command not found") when the message is incomplete (the
 * service went away) or the program cannot be executed.
 */
const SCRIPT = String.raw`
open(my $in, '<&=', 3) or exit 127;
my $message = do { local $/; <$in> } // '';
close $in;
my @fields = split /\0/, $message;
if (@fields < 3) { print STDERR "launcher: incomplete message (" . length($message) . " bytes)\n"; exit 127 }
my $cwd = shift @fields;
my $count = shift @fields;
%ENV = map { split /=/, $_, 2 } splice(@fields, 0, $count);
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
  /** Makes the launcher execute `command` in `cwd` with exactly `env`. */
  start(command: readonly string[], cwd: string, env: Readonly<Record<string, string>>): void;
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
  const [command, ...args] = [...cgroup.prefix, PERL, '-e', SCRIPT];
  const child = spawn(command!, args, {
    cwd: '/',
    env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
    uid: user.uid,
    gid: user.gid,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    // Its own process group, as every engine process has (the runner kills the group).
    detached: true,
  });
  let exited!: () => void;
  const entry: Waiting = { child, cgroup, generation: cgroupGeneration(), user, exited: new Promise((resolve) => { exited = resolve; }), taken: false, alive: true };
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
  let found: Waiting | undefined;
  for (const entry of [...waiting]) {
    const current = entry.generation === generation && entry.user.uid === user.uid && entry.user.gid === user.gid;
    if (!current || !entry.alive) discard(entry);
    else if (!found) found = entry;
  }
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
    start(command, cwd, env) {
      const entries = Object.entries(env).map(([name, value]) => `${name}=${value}`);
      const fields = [cwd, String(entries.length), ...entries, ...command];
      const pipe = streams(child)[3]!;
      pipe.on('error', () => undefined); // a launcher killed meanwhile: its exit says so
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
