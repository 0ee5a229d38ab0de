// The one process runner every engine goes through: whole-tree kill on timeout and abort, stderr
// capture, a clean environment, closed stdin, and resource limits. It has no HTTP surface of its
// own yet (the image engine runs in-process), so it is exercised directly with real programs.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { ConvertdError } from '../src/errors.ts';
import { ensureSuccess, lastErrorLine, runProcess } from '../src/process/runner.ts';
import { tempDir } from './helpers/server.ts';

/** True when the process is gone or a zombie (PID 1 here does not reap orphans). */
async function isDead(pid: number): Promise<boolean> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat === undefined || / Z /.test(stat);
}

test('a timeout kills the whole process tree, grandchildren included', async () => {
  const cwd = await tempDir();
  let grandchild = 0;
  const started = Date.now();
  await assert.rejects(
    runProcess('/bin/sh', ['-c', 'sleep 60 & echo $!; wait'], {
      cwd, timeoutMs: 500, onStdoutLine: (line) => { grandchild = Number(line); },
    }),
    (error: unknown) => error instanceof ConvertdError && error.code === 'timeout',
  );
  assert.ok(Date.now() - started < 5000);
  assert.ok(grandchild > 0);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.ok(await isDead(grandchild), 'the background sleep survived the timeout');
});

test('a grandchild left running after the main process exits is killed too', async () => {
  const cwd = await tempDir();
  let grandchild = 0;
  const result = await runProcess('/bin/sh', ['-c', 'sleep 60 & echo $!'], { cwd, timeoutMs: 10_000, onStdoutLine: (l) => { grandchild = Number(l); } });
  assert.equal(result.exitCode, 0);
  assert.ok(result.durationMs < 5000, 'the runner did not wait for the orphan');
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.ok(await isDead(grandchild));
});

test('an abort signal stops the program with the signal\'s reason', async () => {
  const cwd = await tempDir();
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error('cancelled by test')), 200);
  await assert.rejects(runProcess('/bin/sleep', ['60'], { cwd, timeoutMs: 60_000, signal: controller.signal }), /cancelled by test/);
});

test('stderr is captured and a failure becomes conversion_failed with its last line', async () => {
  const cwd = await tempDir();
  const result = await runProcess('/bin/sh', ['-c', 'echo noise >&2; echo "bad header in input" >&2; exit 3'], { cwd, timeoutMs: 10_000 });
  assert.equal(result.exitCode, 3);
  assert.match(result.stderr, /bad header in input/);
  assert.throws(() => ensureSuccess(result, 'sometool'),
    (error: unknown) => error instanceof ConvertdError && error.code === 'conversion_failed' && /sometool exited with code 3: bad header in input/.test(error.message));
});

test('a Node helper that dies of an uncaught error is explained by its error line, not by its stack or version trailer', async () => {
  const cwd = await tempDir();
  const result = await runProcess(process.execPath, ['-e', "throw Object.assign(new Error('the browser could not start'), { code: 'E_X' })"], { cwd, timeoutMs: 20_000 });
  assert.equal(result.exitCode, 1);
  assert.match(result.stderr, /Node\.js v\d+/);
  assert.equal(lastErrorLine(result.stderr), 'Error: the browser could not start');
  assert.equal(lastErrorLine('noise\nbad header in input\n'), 'bad header in input');
});

test('the environment is clean and stdin is closed', async () => {
  const cwd = await tempDir();
  process.env.CONVERTD_SECRET_FOR_TEST = 'leak';
  const env = await runProcess('/usr/bin/env', [], { cwd, timeoutMs: 10_000, captureStdout: true });
  delete process.env.CONVERTD_SECRET_FOR_TEST;
  assert.doesNotMatch(env.stdout, /CONVERTD_SECRET_FOR_TEST/);
  assert.match(env.stdout, new RegExp(`^HOME=${cwd}$`, 'm'));
  assert.match(env.stdout, new RegExp(`^TMPDIR=${cwd}$`, 'm'));
  // cat on a closed stdin ends at once instead of waiting for input (a password prompt would too)
  const cat = await runProcess('/bin/cat', [], { cwd, timeoutMs: 5000 });
  assert.equal(cat.exitCode, 0);
});

test('resource limits: the output size cap stops a program that writes too much, as output_too_large', async () => {
  const cwd = await tempDir();
  // The kernel stops it with SIGXFSZ (exit 153 through bubblewrap): whatever the engine, that is
  // the output cap, never a damaged input.
  await assert.rejects(runProcess('/bin/dd', ['if=/dev/zero', `of=${cwd}/big`, 'bs=1M', 'count=5'], { cwd, timeoutMs: 10_000, limits: { fileSizeBytes: 1_000_000 } }),
    (error: Error & { code?: string }) => error.code === 'output_too_large');
  assert.ok((await fs.stat(`${cwd}/big`)).size <= 1_000_000);
});

test('a program stopped while nobody reads its output any more still ends (no hang on a full pipe)', { timeout: 30_000 }, async () => {
  const dir = await tempDir();
  // A consumer that stopped reading, as the archive engine's parser does once a cap trips.
  const stalled = new PassThrough({ highWaterMark: 16 });
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error('cap tripped')), 300);
  await assert.rejects(runProcess('/usr/bin/yes', [], { cwd: dir, timeoutMs: 60_000, signal: controller.signal, stdout: stalled }), /cap tripped/);
  await fs.rm(dir, { recursive: true, force: true });
});
