// The Debian packages the process layer itself needs, whatever the engines: the sandbox and the
// limits every engine process runs under. scripts/packages.ts adds them to the engines' packages.
export const PROCESS_PACKAGES: readonly string[] = [
  'util-linux', // prlimit: resource limits for every engine process
  'bubblewrap', // the sandbox every engine process runs in
  'cgroup-tools', // cgexec: starts an engine process inside its memory cgroup when no launcher waits
  'perl-base', // the launchers that wait inside fresh cgroups (process/launchers.ts)
];
