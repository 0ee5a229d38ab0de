// A node:test reporter beside `spec` (scripts/test.mjs): the wall time of each test file, longest
// first, printed at the end of `npm test`, so that whoever adds tests sees what the suite's length
// is made of (keep it near 30 minutes on a 2-core machine: README, "Tests"). Beside it, the CPU
// the file used with what it started and reaped (the service, its engines, the checkers): the
// runner reaps each file's process, so its children's CPU time grows by that much when the file
// ends (a process left to init is not counted: a lower bound). With two lanes on two cores, CPU
// rather than wall time says what to make cheaper.
import { readFileSync } from 'node:fs';

/** CPU seconds of this process's reaped children and theirs (/proc/self/stat cutime + cstime). */
function childrenCpuSeconds() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 16 and 17 of stat(5), counted from the state (field 3) here; in clock ticks (100 a second on Linux).
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return Number.NaN;
  }
}

export default async function* fileTimes(source) {
  const files = [];
  let cpuBefore = childrenCpuSeconds();
  for await (const event of source) {
    // With one process per file, the runner reports each file as a test of its own, named by its path.
    if (event.type === 'test:complete' && event.data.nesting === 0 && event.data.name === event.data.file?.replace(`${process.cwd()}/`, '')) {
      const cpuNow = childrenCpuSeconds();
      files.push({ file: event.data.name, seconds: (event.data.details?.duration_ms ?? 0) / 1000, cpu: cpuNow - cpuBefore, passed: event.data.details?.passed !== false });
      cpuBefore = cpuNow;
    }
  }
  files.sort((a, b) => b.seconds - a.seconds);
  const total = files.reduce((sum, f) => sum + f.seconds, 0);
  const cpu = files.reduce((sum, f) => sum + f.cpu, 0);
  yield `\n== time per test file (${Math.round(total / 60)} min in all; CPU of the processes each reaped, a lower bound: ${Math.round(cpu / 60)} min)\n`;
  for (const { file, seconds, cpu: used, passed } of files) yield `${seconds.toFixed(0).padStart(6)} s ${used.toFixed(0).padStart(6)} s CPU  ${file}${passed ? '' : '  (failed)'}\n`;
}
