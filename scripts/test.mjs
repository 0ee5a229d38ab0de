#!/usr/bin/env node
// `npm test`: type check, lint, then every test file under test/ with node's test runner, against
// the real service started by the tests themselves. Fails when any step fails, and when no test
// ran at all (a test command that runs nothing must not look green).
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

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
const files = only.length > 0 ? only : ['test/**/*.test.ts'];
// Where the test client notes every pair a test converted (test/helpers/client.ts): after a whole
// run, every pair /api/formats lists must be in it (scripts/pair-coverage.ts).
const ledger = path.join(mkdtempSync(path.join(os.tmpdir(), 'convertd-pairs-')), 'converted.txt');
writeFileSync(ledger, '');
const fileTimes = path.join(path.dirname(ledger), 'file-times.txt');
const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=./scripts/file-times-reporter.mjs', `--test-reporter-destination=${fileTimes}`];
const child = spawn(bin('node'), ['--test', ...reporters, '--test-concurrency=1', ...files], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
  // One probe cache for the run's ~90 service starts (src/engines/probe-cache.ts): each engine
  // is probed at the first start with its settings, and again whenever they or the code change.
  env: { ...process.env, CONVERTD_TEST: '1', CONVERTD_PAIR_LEDGER: ledger, CONVERTD_PROBE_CACHE_DIR: path.join(path.dirname(ledger), 'probes') },
});
// The runner's summary lines ("ℹ tests 706"), remembered as they stream past: the details of
// failures follow them, so they are not at the end of the output.
const summary = new Map();
let pending = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  const lines = (pending + chunk.toString('utf8')).split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) {
    const match = /^ℹ (\w+) (\d+)$/.exec(line.trim());
    if (match) summary.set(match[1], Number(match[2]));
  }
});
child.on('close', (code) => {
  const count = (label) => summary.get(label) ?? 0;
  const tests = count('tests');
  const passed = count('pass');
  const failed = count('fail');
  const skipped = count('skipped');
  try {
    process.stdout.write(readFileSync(fileTimes, 'utf8'));
  } catch {
    // no file finished
  }
  process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  if (tests === 0) {
    process.stdout.write('no test ran: failing on purpose\n');
    process.exit(1);
  }
  if (only.length === 0) {
    process.stdout.write('\n== every advertised pair converted by a test\n');
    const coverage = spawnSync(bin('node'), [path.join(root, 'scripts', 'pair-coverage.ts'), ledger], { cwd: root, stdio: 'inherit' });
    if (coverage.status !== 0) process.stdout.write('\npair coverage: see the pairs above (not yet enforced)\n');
  }
  process.exit(code ?? 1);
});
