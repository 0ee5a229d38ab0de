// The warm-process supervisor (src/process/pool/) driven directly, against a fake helper
// (helpers/fake-pool-helper.mjs) that speaks the pool's JSON-lines protocol and misbehaves on
// request, as Gotenberg tests its supervisor with a mock: starts, crashes, hangs, recycling and
// hand-over, the queue cap, aborts and shutdown, in seconds and without LibreOffice. The real
// pools are tested end to end by libreoffice-pool.test.ts and the sharp and data engines' tests.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { ConvertdError } from '../src/errors.ts';
import { ProcessPool, type PooledProgram, type PoolOptions } from '../src/process/pool/index.ts';
import { waitFor } from './helpers/wait.ts';

const HELPER = fileURLToPath(new URL('./helpers/fake-pool-helper.mjs', import.meta.url));
/** Room for any healthy job on a loaded machine: the time limits under test are set per job. */
const JOB_MS = 20_000;

interface JobOptions {
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  readonly probe?: boolean;
  readonly onProgress?: (fraction: number) => void;
}

/** A ProcessPool running the fake helper, with what a test needs to watch it. */
class FakePool {
  readonly pool: ProcessPool;
  readonly dir: string;
  readonly stateDir: string;
  /** The arguments the helper's next processes start with (helpers/fake-pool-helper.mjs). */
  args: string[];
  private readonly logs: Array<Record<string, unknown>> = [];
  private readonly journal: string;
  private jobs = 0;

  constructor(dir: string, options: Partial<PoolOptions>, program: Partial<PooledProgram>, args: string[]) {
    this.dir = dir;
    this.stateDir = path.join(dir, 'state');
    this.journal = path.join(dir, 'journal');
    this.args = args;
    const log = pino({ level: 'info' }, { write: (line: string) => this.logs.push(JSON.parse(line) as Record<string, unknown>) });
    this.pool = new ProcessPool({
      label: 'Fake',
      logName: 'fake',
      retryAfterCrash: false,
      command: () => ({ program: process.execPath, args: [HELPER, ...this.args], readOnly: [], env: { FAKE_JOURNAL: this.journal }, limits: {} }),
      failure: (reply) => new ConvertdError(reply.code === 'corrupt_input' ? 'corrupt_input' : 'conversion_failed', reply.message),
      explainDeath: (stderr) => /heap out of memory/.test(stderr) ? new ConvertdError('input_too_complex', 'too complex for the fake') : undefined,
      ...program,
    }, { size: 1, maxJobsPerProcess: 100, start: 'lazy', maxWaiting: 10, stateDir: this.stateDir, startTimeoutMs: JOB_MS, log, ...options });
  }

  /** The pids of the helper's processes, in the order they became ready. */
  readyPids(): number[] {
    if (!existsSync(this.journal)) return [];
    return readFileSync(this.journal, 'utf8').split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { pid: number }).pid);
  }

  /** The pool's log events named fake_<name>. */
  events(name: string): Array<Record<string, unknown>> {
    return this.logs.filter((entry) => entry.event === `fake_${name}`);
  }

  /** Runs one job through the pool; resolves with its output. */
  async convert(message: Record<string, unknown> = {}, { timeoutMs = JOB_MS, signal = new AbortController().signal, probe = false, onProgress }: JobOptions = {}): Promise<string> {
    const n = ++this.jobs;
    const input = path.join(this.dir, `in-${n}.txt`);
    const output = path.join(this.dir, `out-${n}.txt`);
    writeFileSync(input, `job ${n}`);
    await this.pool.convert(input, output, message, timeoutMs, signal, { probe, onProgress });
    return readFileSync(output, 'utf8');
  }

  /** Runs one job whose output is the pid of the process that served it. */
  async stampedPid(message: Record<string, unknown> = {}, options: JobOptions = {}): Promise<number> {
    return Number(await this.convert({ stamp: true, ...message }, options));
  }

  /** A gate for jobs: the helper holds a job given `message` until open() is called. */
  gate(): { message: Record<string, unknown>; open(): void } {
    const file = path.join(this.dir, `gate-${++this.jobs}`);
    return { message: { gate: file }, open: () => writeFileSync(file, '') };
  }

  /** Whether a job's input is staged in a process's job/ directory (the job has reached its helper). */
  jobStaged(): boolean {
    return readdirSync(this.stateDir).some((dir) => existsSync(path.join(this.stateDir, dir, 'job', 'input.txt')));
  }
}

/** A fake pool for one test, initialised (init() starts an eager pool's processes), closed after it. */
async function fakePool(t: TestContext, options: Partial<PoolOptions> = {}, program: Partial<PooledProgram> = {}, args: string[] = []): Promise<FakePool> {
  const fake = new FakePool(mkdtempSync(path.join(os.tmpdir(), 'convertd-pool-')), options, program, args);
  t.after(async () => {
    await fake.pool.close();
    await fs.rm(fake.dir, { recursive: true, force: true });
  });
  await fake.pool.init();
  return fake;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('eager start: init starts every process, and jobs run on them in a job directory emptied afterwards', async (t) => {
  const fake = await fakePool(t, { size: 2, start: 'eager' });
  assert.equal(fake.readyPids().length, 2);
  assert.deepEqual(fake.pool.health(), { ok: true, detail: { size: 2, alive: 2, busy: 0, waiting: 0, started: 2, restarts: 0, start: 'eager' } });
  assert.equal(await fake.convert(), 'job 1', 'the helper got the input and its output was moved out');
  assert.ok(fake.readyPids().includes(await fake.stampedPid()));
  for (const dir of readdirSync(fake.stateDir)) assert.ok(!existsSync(path.join(fake.stateDir, dir, 'job')), `${dir}/job is removed after the job`);
  assert.equal(fake.pool.stats().started, 2, 'no job started a process');
});

test('lazy start: no process before the first job, then one per concurrent job', async (t) => {
  const fake = await fakePool(t, { size: 2, start: 'lazy' });
  assert.deepEqual(fake.pool.stats(), { size: 2, alive: 0, busy: 0, waiting: 0, started: 0, restarts: 0 });
  assert.equal(fake.pool.health().ok, true, 'a lazy pool that needed no process yet is healthy');
  await fake.convert();
  assert.equal(fake.pool.stats().started, 1);
  const gate = fake.gate();
  const jobs = [fake.convert(gate.message), fake.convert(gate.message)];
  await waitFor('both slots to be busy', () => fake.pool.stats().busy === 2);
  gate.open();
  await Promise.all(jobs);
  assert.deepEqual(fake.pool.stats(), { size: 2, alive: 2, busy: 0, waiting: 0, started: 2, restarts: 0 });
});

test("a helper's refusal is the program's error, a missing output conversion_failed, and the process serves on", async (t) => {
  const fake = await fakePool(t);
  const pid = await fake.stampedPid();
  await assert.rejects(fake.convert({ behave: 'refuse' }), { name: 'ConvertdError', code: 'corrupt_input', message: 'fake helper: refused' });
  await assert.rejects(fake.convert({ behave: 'no-output' }), { name: 'ConvertdError', code: 'conversion_failed', message: /^Fake wrote no output/ });
  assert.equal(await fake.stampedPid(), pid);
  assert.deepEqual(fake.pool.stats(), { size: 1, alive: 1, busy: 0, waiting: 0, started: 1, restarts: 0 });
});

test("a helper's progress lines reach the job they name, clamped to 0..1, before its answer; no other job hears them", async (t) => {
  const fake = await fakePool(t);
  const heard: number[] = [];
  const output = await fake.convert({ progress: [0.25, 0.5, 1.5] }, { onProgress: (fraction) => heard.push(fraction) });
  assert.equal(output, 'job 1', 'the answer after the progress lines is the job\'s');
  assert.deepEqual(heard, [0.25, 0.5, 1], 'each fraction in order, the one past the end clamped; the line for another id not among them');
  assert.equal(await fake.convert(), 'job 2', 'the process serves on');
});

test('a crash mid-job is retried once on a fresh process where the program asks for it', async (t) => {
  const fake = await fakePool(t, {}, { retryAfterCrash: true });
  const first = await fake.stampedPid();
  const marker = path.join(fake.dir, 'died-once');
  const second = await fake.stampedPid({ behave: 'die-once', marker });
  assert.ok(existsSync(marker), 'the first try died');
  assert.notEqual(second, first, 'the retry ran on a fresh process');
  assert.deepEqual(fake.events('crash').map((entry) => entry.attempt), [1]);
  assert.equal(fake.pool.stats().restarts, 1);
});

test('a second crash fails the job', async (t) => {
  const fake = await fakePool(t, {}, { retryAfterCrash: true });
  await assert.rejects(fake.convert({ behave: 'die' }), { name: 'ConvertdError', code: 'conversion_failed', message: /^Fake crashed twice on this file/ });
  assert.deepEqual(fake.events('crash').map((entry) => entry.attempt), [1, 2]);
  assert.equal(fake.pool.stats().started, 2);
});

test('without a retry a crash fails the job at once, with the verdict its death explains where it does', async (t) => {
  const fake = await fakePool(t);
  await assert.rejects(fake.convert({ behave: 'die' }), { name: 'ConvertdError', code: 'conversion_failed', message: /^Fake crashed on this file/ });
  assert.equal(fake.pool.stats().started, 1, 'not retried');
  await assert.rejects(fake.convert({ behave: 'oom' }), { name: 'ConvertdError', code: 'input_too_complex', message: 'too complex for the fake' });
  assert.equal(await fake.convert(), 'job 3', 'the next job gets a fresh process');
});

test("a hang: the request's time limit kills the process, the job fails with timeout, and a fresh process is ready for the next", async (t) => {
  const fake = await fakePool(t);
  const first = await fake.stampedPid();
  await assert.rejects(fake.convert({ behave: 'hang' }, { timeoutMs: 300 }), { name: 'ConvertdError', code: 'timeout' });
  await waitFor('the replacement to be ready', () => fake.readyPids().length === 2);
  await waitFor('the hung process to end', () => !isRunning(first));
  assert.equal(await fake.stampedPid(), fake.readyPids()[1]);
  assert.deepEqual(fake.pool.stats(), { size: 1, alive: 1, busy: 0, waiting: 0, started: 2, restarts: 1 });
});

test('a process that dies between jobs is replaced at once, in the background', async (t) => {
  const fake = await fakePool(t);
  process.kill(await fake.stampedPid(), 'SIGKILL');
  await waitFor('the replacement to be ready', () => fake.readyPids().length === 2);
  assert.equal(fake.events('exit').length, 1);
  assert.equal(await fake.stampedPid(), fake.readyPids()[1]);
  assert.deepEqual(fake.pool.stats(), { size: 1, alive: 1, busy: 0, waiting: 0, started: 2, restarts: 1 });
});

test('a process that fails its health check (its ping unanswered) is replaced before the job', async (t) => {
  const fake = await fakePool(t, { healthTimeoutMs: 500 });
  const first = await fake.stampedPid();
  await fake.pool.ask({ op: 'mute' }, JOB_MS, new AbortController().signal);
  const second = await fake.stampedPid();
  assert.notEqual(second, first);
  assert.equal(fake.events('unhealthy').length, 1);
  assert.deepEqual(fake.pool.stats(), { size: 1, alive: 1, busy: 0, waiting: 0, started: 2, restarts: 1 });
});

test('recycling after maxJobsPerProcess: the successor starts during the last quarter and takes over with no job waiting for a start', async (t) => {
  const fake = await fakePool(t, { maxJobsPerProcess: 4 });
  await fake.convert({}, { probe: true }); // a start-up probe is not one of the process's jobs
  const first = await fake.stampedPid();
  assert.deepEqual([await fake.stampedPid(), await fake.stampedPid()], [first, first]);
  assert.equal(fake.pool.stats().started, 1, 'three jobs of four: no successor yet');
  const gate = fake.gate();
  const fourth = fake.stampedPid(gate.message);
  await waitFor('the successor to be ready while the fourth job runs', () => fake.readyPids().length === 2);
  assert.equal(fake.pool.stats().busy, 1);
  assert.deepEqual(fake.events('recycle').map((entry) => entry.jobs), [3]);
  gate.open();
  assert.equal(await fourth, first);
  assert.equal(await fake.stampedPid(), fake.readyPids()[1], 'the fifth job runs on the successor');
  await waitFor('the old process to be closed', () => !isRunning(first));
  assert.deepEqual(fake.pool.stats(), { size: 1, alive: 1, busy: 0, waiting: 0, started: 2, restarts: 0 });
});

test('a successor still starting when its process is due is waited for, not replaced by another', async (t) => {
  // Every process takes 0.3 s to start; at one job per process, the first one's successor starts
  // as soon as it is ready, and the second job comes long before that successor is.
  const fake = await fakePool(t, { maxJobsPerProcess: 1, start: 'eager' }, {}, ['--start-delay=300']);
  const first = await fake.stampedPid();
  await waitFor('the successor to be starting', () => fake.pool.stats().started === 2);
  const second = await fake.stampedPid();
  assert.notEqual(second, first);
  assert.equal(second, fake.readyPids()[1], 'the second job ran on the successor started before it');
  assert.equal(fake.pool.stats().restarts, 0);
});

test('the waiting queue is capped at maxWaiting: a job beyond it fails at once', async (t) => {
  const fake = await fakePool(t, { maxWaiting: 1, start: 'eager' });
  const gate = fake.gate();
  const running = fake.convert(gate.message);
  await waitFor('the slot to be busy', () => fake.pool.stats().busy === 1);
  const waiting = fake.convert();
  await waitFor('a job to wait', () => fake.pool.stats().waiting === 1);
  assert.deepEqual(fake.pool.stats(), { size: 1, alive: 1, busy: 1, waiting: 1, started: 1, restarts: 0 });
  await assert.rejects(fake.convert(), { name: 'ConvertdError', code: 'conversion_failed', message: /^Too many files are waiting for Fake/ });
  gate.open();
  await Promise.all([running, waiting]);
  assert.deepEqual(fake.pool.stats(), { size: 1, alive: 1, busy: 0, waiting: 0, started: 1, restarts: 0 });
});

test('a job aborted while it waits leaves the queue; one aborted while it runs kills its process', async (t) => {
  const fake = await fakePool(t, { start: 'eager' });
  const [first] = fake.readyPids();
  const gate = fake.gate();
  const running = fake.stampedPid(gate.message);
  await waitFor('the slot to be busy', () => fake.pool.stats().busy === 1);
  const waiter = new AbortController();
  const waiting = fake.convert({}, { signal: waiter.signal });
  await waitFor('a job to wait', () => fake.pool.stats().waiting === 1);
  waiter.abort(new Error('the client went away'));
  await assert.rejects(waiting, { message: 'the client went away' });
  assert.equal(fake.pool.stats().waiting, 0);
  gate.open();
  assert.equal(await running, first, 'the running job was not disturbed');

  const runner = new AbortController();
  const held = fake.gate();
  const aborted = fake.convert(held.message, { signal: runner.signal });
  await waitFor('the job to reach the helper', () => fake.jobStaged());
  runner.abort(new Error('cancelled'));
  await assert.rejects(aborted, { message: 'cancelled' });
  await waitFor('the killed process to be replaced', () => fake.readyPids().length === 2);
  assert.equal(await fake.stampedPid(), fake.readyPids()[1]);
  assert.equal(fake.events('crash').length, 0, 'an abort is not a crash');
  assert.ok(!isRunning(first!));
});

test('a job aborted while its process starts is never sent to it', async (t) => {
  const fake = await fakePool(t, { start: 'lazy' }, {}, ['--start-delay=600']);
  const job = new AbortController();
  const converting = fake.convert({}, { signal: job.signal });
  await waitFor('the slot to be taken', () => fake.pool.stats().busy === 1);
  job.abort(new Error('cancelled during the start'));
  await assert.rejects(converting, { message: 'cancelled during the start' });
  await waitFor('the process to be ready', () => fake.readyPids().length === 1);
  assert.ok(!fake.jobStaged(), 'the aborted job never reached the helper');
  assert.equal(fake.pool.stats().busy, 0);
  assert.equal(await fake.stampedPid(), fake.readyPids()[0], 'the process serves the next job');
});

test('a helper that cannot start, or dies at once, fails its job with conversion_failed; the next start serves', async (t) => {
  const fake = await fakePool(t);
  fake.args = ['--fail-start'];
  await assert.rejects(fake.convert(), { name: 'ConvertdError', code: 'conversion_failed', message: /^Fake could not be started \(Fake did not start: exited with code 1: fake helper: cannot start\)/ });
  fake.args = ['--die-after-start'];
  await assert.rejects(fake.convert(), { name: 'ConvertdError', code: 'conversion_failed', message: /^Fake crashed on this file/ });
  fake.args = [];
  assert.equal(await fake.convert(), 'job 3');
  assert.equal(fake.pool.stats().started, 3);
  await assert.rejects(fakePool(t, { start: 'eager' }, {}, ['--fail-start']), { name: 'ConvertdError', code: 'conversion_failed' }, 'an eager pool whose helper cannot start fails its init');
});

test('a helper that does not say it is ready within startTimeoutMs fails its job, and is stopped', async (t) => {
  const fake = await fakePool(t, { startTimeoutMs: 300 }, {}, ['--start-delay=60000']);
  await assert.rejects(fake.convert(), { name: 'ConvertdError', code: 'conversion_failed', message: /^Fake could not be started \(Fake did not start within 0.3 s\)/ });
  await waitFor('the helper to be stopped', () => fake.events('exit').length === 1);
  assert.deepEqual(fake.pool.stats(), { size: 1, alive: 0, busy: 0, waiting: 0, started: 1, restarts: 0 });
});

test('close() stops every process, a successor included, and refuses new jobs', async (t) => {
  const fake = await fakePool(t, { size: 2, maxJobsPerProcess: 1, start: 'eager' });
  const gate = fake.gate();
  const cut = fake.convert(gate.message).then(() => undefined, (error: unknown) => error);
  // At one job per process, each process's successor starts as soon as it is ready (its next job is its last).
  await waitFor('both processes and their successors to be ready', () => fake.readyPids().length === 4);
  const pids = fake.readyPids();
  await fake.pool.close();
  assert.deepEqual(pids.filter(isRunning), [], 'no process is left');
  assert.ok(await cut instanceof ConvertdError, 'the job cut short fails');
  assert.equal(fake.pool.stats().alive, 0);
  assert.equal(fake.pool.health().ok, false);
  await assert.rejects(fake.convert(), { name: 'ConvertdError', code: 'conversion_failed', message: /^The pool of Fake is shutting down/ });
});
