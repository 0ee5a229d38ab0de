// A node:test reporter beside `spec` (scripts/test.mjs): the wall time of each test file, longest
// first, printed at the end of `npm test`, so that whoever adds tests sees what the suite's length
// is made of (keep it near 30 minutes on a 2-core machine: README, "Tests").
export default async function* fileTimes(source) {
  const files = [];
  for await (const event of source) {
    // With one process per file, the runner reports each file as a test of its own, named by its path.
    if (event.type === 'test:complete' && event.data.nesting === 0 && event.data.name === event.data.file?.replace(`${process.cwd()}/`, '')) {
      files.push({ file: event.data.name, seconds: (event.data.details?.duration_ms ?? 0) / 1000, passed: event.data.details?.passed !== false });
    }
  }
  files.sort((a, b) => b.seconds - a.seconds);
  const total = files.reduce((sum, f) => sum + f.seconds, 0);
  yield `\n== time per test file (${Math.round(total / 60)} min in all)\n`;
  for (const { file, seconds, passed } of files) yield `${seconds.toFixed(0).padStart(6)} s  ${file}${passed ? '' : '  (failed)'}\n`;
}
