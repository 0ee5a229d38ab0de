#!/usr/bin/env node
// `npm test`: type check, lint, then every test file under test/ with node's test runner, against
// the real service started by the tests themselves. Fails when any step fails, and when no test
// ran at all (a test command that runs nothing must not look green).
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
  step('lint (eslint)', bin('eslint'), ['.']);
}

process.stdout.write('\n== tests (node --test)\n');
const files = only.length > 0 ? only : ['test/**/*.test.ts'];
const child = spawn(bin('node'), ['--test', '--test-reporter=spec', '--test-concurrency=1', ...files], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, CONVERTD_TEST: '1' },
});
let tail = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  tail = (tail + chunk.toString('utf8')).slice(-4000);
});
child.on('close', (code) => {
  const count = (label) => Number(new RegExp(`ℹ ${label} (\\d+)`).exec(tail)?.[1] ?? 0);
  const tests = count('tests');
  const passed = count('pass');
  const failed = count('fail');
  const skipped = count('skipped');
  process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  if (tests === 0) {
    process.stdout.write('no test ran: failing on purpose\n');
    process.exit(1);
  }
  process.exit(code ?? 1);
});
