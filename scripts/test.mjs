#!/usr/bin/env node
// `npm test`: type check, lint, then every test file under test/ with node's test runner, against
// the real service started by the tests themselves. Fails when any step fails, and when no test
// ran at all (a test command that runs nothing must not look green).
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { referenceBlasEnvironment } from '../src/engines/support/reference-blas.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const only = process.argv.slice(2); // e.g. npm test -- test/rate-limits.test.ts

function step(title, command, args) {
  process.stdout.write(`\n== ${title}\n`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    process.stdout.write(`\n${title} failed\n`);
    process.exit(result.status ?? 1);
  }
}

if (only.length === 0) {
  step('type check (tsc --noEmit, strict)', bin('tsc'), ['--noEmit', '-p', '.']);
  step('type check of the web page (DOM types)', bin('tsc'), ['--noEmit', '-p', 'src/web/page']);
  step('lint (eslint)', bin('eslint'), ['.']);
}

process.stdout.write('\n== tests (node --test)\n');
// Where the test client notes every pair a test converted (test/helpers/client.ts): after a whole
// run, every pair /api/formats lists must be in it (scripts/pair-coverage.ts).
const runDir = mkdtempSync(path.join(os.tmpdir(), 'convertd-pairs-'));
const ledger = path.join(runDir, 'converted.txt');
writeFileSync(ledger, '');
const env = {
  ...process.env,
  CONVERTD_TEST: '1',
  CONVERTD_PAIR_LEDGER: ledger,
  // One probe cache for the run's ~90 service starts (src/engines/probe-cache.ts): each engine
  // is probed at the first start with its settings, and again whenever they or the code change.
  CONVERTD_PROBE_CACHE_DIR: path.join(runDir, 'probes'),
  // The tests' own tools and checkers (ffmpeg and GDAL's tools some 500 times, Python with numpy)
  // get the reference BLAS the engines get: loading OpenBLAS, which none of them calls here, cost
  // each ffmpeg start ~45 ms (src/engines/support/reference-blas.ts). Where the machine has no
  // reference BLAS, OpenBLAS keeps to one thread: its threads spin at start, about 15 % of each
  // short run's CPU. (Engines get a clean environment.)
  OPENBLAS_NUM_THREADS: '1',
  ...referenceBlasEnvironment(),
  // The tests' own Tesseract readings (vector-formats, ocr-formats) on one thread, as the engine's
  // are (src/engines/tesseract/engine.ts): with its OpenMP threads a 150 dpi page took 7.2 s of
  // CPU here, on one 2.2 s, in less wall time too (the threads spin while they wait).
  OMP_THREAD_LIMIT: '1',
  // The run starts Node some 250 times (test files, services, the CLI): Node's compile cache keeps
  // each TypeScript file's stripped source and V8 code between them, about a second of CPU a
  // service start here. (Engines' sandboxed pool processes get none: a cache they could all write
  // would be a channel between jobs.)
  NODE_COMPILE_CACHE: path.join(runDir, 'node-compile-cache'),
};

/**
 * The suites that convert every pair of a family keep both cores busy for most of their time;
 * the others mostly wait (restarts, expiry, rate-limit windows, slow clients, pools recycling).
 * A whole run is two lanes side by side: these suites one after another, and the rest one after
 * another, so a waiting suite's idle core serves a busy one and two busy ones never compete.
 */
const BUSY_SUITES = [
  'document-pairs', 'image-pairs', 'media-pairs', 'markup-formats',
  'archive-formats', 'media-formats', 'office-formats', 'ebook-formats', 'corpus', 'corpus-documents',
  'data-formats', 'data-formats-more', 'real-world-formats', 'iwork-formats', 'postscript-formats', 'fonts', 'potrace-formats',
  'djvu-formats', 'mupdf-formats', 'ocr-formats', 'geodata-formats', 'model-formats',
  'vector-formats', 'latex-formats',
].map((name) => `test/${name}.test.ts`);
// chromium-formats is a waiting suite: pages held to their time limit, browsers recycled and
// crashed on purpose (237 s of a whole run here, 18 s of CPU reaped); in the busy lane it made
// that lane the longer by four minutes.
/**
 * Busy suites that run in the other lane, after its waiting suites (those take about 45 minutes
 * here), in a second node --test of their own (one orders its files by name): a lane that ends
 * with suites that only wait would leave a core idle once the busy lane is done.
 */
const BUSY_AFTER_WAITING = ['email-formats', 'raster-formats', 'subtitle-pairs', 'vector-and-hostile-images', 'rendered-scripts', 'options-documents', 'options-media', 'options-images'].map((name) => `test/${name}.test.ts`);

function testFiles() {
  return readdirSync(path.join(root, 'test')).filter((name) => name.endsWith('.test.ts')).sort().map((name) => `test/${name}`);
}

/** Runs node --test on each group of files in turn (runLane), as one lane: its exit code, summed summary and file times. */
async function runInOrder(name, groups, output) {
  const results = [];
  for (const [index, files] of groups.entries()) {
    if (files.length > 0) results.push(await runLane(`${name}-${index + 1}`, files, output));
  }
  const summary = new Map();
  for (const result of results) for (const [label, value] of result.summary) summary.set(label, (summary.get(label) ?? 0) + value);
  return { code: results.some((result) => result.code !== 0) ? 1 : 0, summary, times: results.map((result) => result.times).join('') };
}

/** Runs node --test on `files`; its spec output goes to `output` as it comes. Resolves with its exit code, summary and file times. */
function runLane(name, files, output) {
  const fileTimes = path.join(runDir, `file-times-${name}.txt`);
  const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=./scripts/file-times-reporter.mjs', `--test-reporter-destination=${fileTimes}`];
  // --max-semi-space-size=8 (MB) reaches every test file's process (node --test passes V8 flags
  // on; the services keep their own, src/node-flags.ts). A test process starts thousands of tools
  // and checkers, and each start forks it: the kernel copies the page tables of all the memory it
  // has touched, which V8's young generation (32 MB semi-spaces by default on a machine with this
  // much memory, mostly garbage but resident) dominated. Measured: image-pairs and data-formats
  // together, 51 → 47 s of CPU.
  const child = spawn(bin('node'), ['--test', '--max-semi-space-size=8', ...reporters, '--test-concurrency=1', ...files], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env });
  // The runner's summary lines ("ℹ tests 706"), remembered as they stream past: the details of
  // failures follow them, so they are not at the end of the output.
  const summary = new Map();
  let pending = '';
  child.stdout.on('data', (chunk) => {
    output(chunk);
    const lines = (pending + chunk.toString('utf8')).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const match = /^ℹ (\w+) (\d+)$/.exec(line.trim());
      if (match) summary.set(match[1], Number(match[2]));
    }
  });
  child.stderr.on('data', (chunk) => output(chunk));
  return new Promise((resolve) => child.on('close', (code) => {
    let times = '';
    try {
      times = readFileSync(fileTimes, 'utf8');
    } catch {
      // no file finished
    }
    resolve({ code: code ?? 1, summary, times });
  }));
}

let lanes;
if (only.length > 0) {
  lanes = [await runLane('only', only, (chunk) => process.stdout.write(chunk))];
} else {
  const all = testFiles();
  const busy = all.filter((file) => BUSY_SUITES.includes(file));
  const waiting = all.filter((file) => !BUSY_SUITES.includes(file) && !BUSY_AFTER_WAITING.includes(file));
  const after = BUSY_AFTER_WAITING.filter((file) => all.includes(file));
  process.stdout.write(`${busy.length} busy suites in one lane, printed as they run; beside them ${waiting.length} waiting suites, then ${after.length} busy ones, printed when their lane ends\n`);
  // The second lane's output is kept whole (and in a file, should the run be cut short) and
  // printed after it ends, so that each lane's lines stay together.
  const waitingLog = path.join(runDir, 'waiting-lane.log');
  writeFileSync(waitingLog, '');
  const waitingOutput = [];
  lanes = await Promise.all([
    runLane('busy', busy, (chunk) => process.stdout.write(chunk)),
    runInOrder('waiting', [waiting, after], (chunk) => { waitingOutput.push(chunk); appendFileSync(waitingLog, chunk); }).then((lane) => {
      process.stdout.write(`\n== the other lane (${waitingLog})\n`);
      for (const chunk of waitingOutput) process.stdout.write(chunk);
      return lane;
    }),
  ]);
}

const count = (label) => lanes.reduce((sum, lane) => sum + (lane.summary.get(label) ?? 0), 0);
for (const lane of lanes) process.stdout.write(lane.times);
const tests = count('tests');
process.stdout.write(`\ntests: ${count('pass')} passed, ${count('fail')} failed, ${count('skipped')} skipped\n`);
if (tests === 0) {
  process.stdout.write('no test ran: failing on purpose\n');
  process.exit(1);
}
if (only.length === 0) {
  process.stdout.write('\n== every advertised pair converted by a test\n');
  const coverage = spawnSync(bin('node'), [path.join(root, 'scripts', 'pair-coverage.ts'), ledger], { cwd: root, stdio: 'inherit' });
  if (coverage.status !== 0) {
    // Every advertised pair must be proven by a test (the brief): a pair no test converted fails the run.
    process.stdout.write('\npair coverage: the pairs above are advertised and no test converted them: failing\n');
    process.exit(1);
  }
}
process.exit(lanes.some((lane) => lane.code !== 0) ? 1 : 0);
