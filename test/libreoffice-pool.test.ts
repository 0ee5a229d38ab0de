// The warm LibreOffice pool under supervision, seen from outside: through the HTTP API, with the
// real soffice processes found in /proc. A process killed mid-job is replaced and the job still
// finishes; a job past its time limit fails with `timeout` and the next one is served; a process
// is replaced after its N-th job, by a successor that starts beside it; N concurrent jobs all finish.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { after, test } from 'node:test';
import { convert, submitOk, waitForJob } from './helpers/client.ts';
import { TEXT_SAMPLES } from './helpers/documents.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';
import { waitFor } from './helpers/wait.ts';
import { execFileSync } from 'node:child_process';

const running: RunningServer[] = [];
after(async () => {
  await Promise.all(running.map((s) => s.stop()));
});

async function start(env: Record<string, string>): Promise<RunningServer> {
  const server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_LIBREOFFICE_START: 'eager', ...env });
  running.push(server);
  return server;
}

/**
 * Jobs queued behind a pool that starts a process per job (or per few): the last waits for every
 * start before it, and a start takes seconds more on a busy machine than waitForJob's minute allows.
 */
const QUEUED = { timeoutMs: 170_000 };

/** Host pids of the soffice.bin processes working for this server (their profile is under its data dir). */
async function sofficePids(server: RunningServer): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await fs.readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('soffice.bin') && cmdline.includes(server.dataDir)) pids.push(Number(name));
  }
  return pids;
}

function events(server: RunningServer, event: string): Array<Record<string, unknown>> {
  return server.logs.flatMap((line) => {
    try {
      const entry = JSON.parse(line) as Record<string, unknown>;
      return entry.event === event ? [entry] : [];
    } catch {
      return [];
    }
  });
}

/** A plain text long enough to keep LibreOffice busy for seconds (thousands of pages of PDF). */
function longText(lines: number): Buffer {
  return Buffer.from(Array.from({ length: lines }, (_, i) => `Line ${i} of a long document, written to keep LibreOffice busy for a while.`).join('\n'));
}

function pdfPages(bytes: Buffer): Promise<number> {
  return writeTemp(bytes, 'out.pdf').then((file) => Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [file], { encoding: 'utf8' }))?.[1]));
}

/** Waits until /metrics counts `count` restarts of the LibreOffice pool: a replacement has taken over. */
async function restartsCounted(server: RunningServer, count: number): Promise<void> {
  const line = `convertd_pool_restarts_total{pool="libreoffice"} ${count}`;
  await waitFor(`/metrics to count ${count} restart(s)`, async () => {
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    return metrics.split('\n').includes(line);
  }, 60_000, 100);
}

test('a LibreOffice process killed mid-job is replaced, and the job is retried on the new one', { timeout: 300_000 }, async () => {
  const server = await start({ CONVERTD_LIBREOFFICE_POOL: '1' });
  const [before] = await sofficePids(server);
  assert.ok(before, 'the pool starts LibreOffice at once (eager)');
  const jobId = await submitOk(server.url, longText(60_000), 'long.txt', 'pdf');
  // Wait until the job is really inside LibreOffice, then kill soffice.bin under it.
  await waitFor('the job to start', () => events(server, 'job_running').length > 0, 30_000, 50);
  await new Promise((resolve) => setTimeout(resolve, 700));
  process.kill(before, 'SIGKILL');
  const { final } = await waitForJob(server.url, jobId, { timeoutMs: 150_000 });
  assert.equal(final.status, 'done', `the job should survive the crash: ${JSON.stringify(final.error)}`);
  assert.ok(events(server, 'libreoffice_crash').length >= 1, 'the crash is logged');
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(metrics, /^convertd_pool_restarts_total\{pool="libreoffice"\} [1-9]/m, 'and counted as a restart in /metrics');
  const [after] = await sofficePids(server);
  assert.ok(after && after !== before, 'a new soffice process replaced the killed one');
  // And the replacement serves the next job.
  const { bytes } = await convert(server.url, Buffer.from(TEXT_SAMPLES.txt!), 'next.txt', 'pdf');
  assert.equal(await pdfPages(bytes), 1);
});

test('a job past its time limit fails with "timeout", and LibreOffice is replaced for the next job', { timeout: 300_000 }, async () => {
  const server = await start({ CONVERTD_LIBREOFFICE_POOL: '1', CONVERTD_JOB_TIMEOUT_SECONDS: '2', CONVERTD_MAX_ATTEMPTS: '1' });
  const [before] = await sofficePids(server);
  const jobId = await submitOk(server.url, longText(200_000), 'huge.txt', 'pdf');
  const { final } = await waitForJob(server.url, jobId, { timeoutMs: 60_000 });
  assert.equal(final.status, 'error');
  assert.equal(final.error?.code, 'timeout');
  // Replaced at once, before any next job (whose 2 s would otherwise include the start).
  await restartsCounted(server, 1);
  const [after] = await sofficePids(server);
  assert.ok(after && after !== before, 'the process that ran out of time was killed and replaced');
  const { bytes } = await convert(server.url, Buffer.from(TEXT_SAMPLES.txt!), 'next.txt', 'pdf');
  assert.equal(await pdfPages(bytes), 1);
  assert.deepEqual(await sofficePids(server), [after], 'the next job ran on it, and no soffice.bin is left behind');
});

test('a LibreOffice process that dies while idle is replaced at once, without waiting for a job', { timeout: 300_000 }, async () => {
  const server = await start({ CONVERTD_LIBREOFFICE_POOL: '1' });
  await convert(server.url, Buffer.from(TEXT_SAMPLES.txt!), 'first.txt', 'pdf');
  const [before] = await sofficePids(server);
  assert.ok(before);
  process.kill(before, 'SIGKILL');
  // No job is sent: the replacement is started, and takes over, by itself.
  await restartsCounted(server, 1);
  const [after] = await sofficePids(server);
  assert.ok(after && after !== before, 'a new soffice process replaced the killed one');
  const { bytes } = await convert(server.url, Buffer.from(TEXT_SAMPLES.txt!), 'next.txt', 'pdf');
  assert.equal(await pdfPages(bytes), 1);
  assert.deepEqual(await sofficePids(server), [after]);
});

test('the pool replaces a process after its N-th job: a fresh one starts beside it and takes over', { timeout: 300_000 }, async () => {
  const server = await start({ CONVERTD_LIBREOFFICE_POOL: '1', CONVERTD_LIBREOFFICE_MAX_JOBS: '2' });
  const [first] = await sofficePids(server);
  assert.ok(first, 'the pool starts LibreOffice at once (eager)');
  const served = [first];
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 2; i++) {
      const { bytes } = await convert(server.url, Buffer.from(TEXT_SAMPLES.fodt!), `doc${round}-${i}.fodt`, 'pdf');
      assert.equal(await pdfPages(bytes), 1);
    }
    // The pool is idle now: the successor takes over as soon as it is ready, and the old process ends.
    const next = await waitFor('the successor to take over', async () => {
      const pids = await sofficePids(server);
      return pids.length === 1 && !served.includes(pids[0]!) ? pids[0] : undefined;
    }, 60_000, 100);
    served.push(next);
  }
  assert.equal(events(server, 'libreoffice_recycle').length, 2);
  // The third process serves the next job.
  const { bytes } = await convert(server.url, Buffer.from(TEXT_SAMPLES.txt!), 'last.txt', 'pdf');
  assert.equal(await pdfPages(bytes), 1);
  assert.deepEqual(await sofficePids(server), [served[2]], 'one process at a time: the old ones are gone');
});

test('with CONVERTD_LIBREOFFICE_MAX_JOBS=1 every job gets a process of its own, started ahead of it', { timeout: 300_000 }, async () => {
  const server = await start({ CONVERTD_LIBREOFFICE_POOL: '1', CONVERTD_LIBREOFFICE_MAX_JOBS: '1', CONVERTD_CONCURRENCY: '2' });
  // Each a LibreOffice job (html → pdf is Chromium's: it would start no LibreOffice process).
  const sources = ['fodt', 'txt', 'fodp', 'fods'];
  const results = await Promise.all(sources.map((ext, i) => convert(server.url, Buffer.from(TEXT_SAMPLES[ext]!), `doc${i}.${ext}`, 'pdf', QUEUED)));
  for (const { bytes } of results) assert.ok(await pdfPages(bytes) >= 1);
  // The first process, then one more per job: each job's successor starts while it runs. A
  // process that served two jobs would leave fewer starts.
  const starts = await waitFor('the pool to settle at one process', async () => {
    const started = events(server, 'libreoffice_start').length;
    return started - events(server, 'libreoffice_exit').length === 1 && (await sofficePids(server)).length === 1 ? started : undefined;
  }, 60_000, 100);
  assert.equal(starts, sources.length + 1);
});

test('jobs that run while processes are recycled all finish, and no process is left behind', { timeout: 300_000 }, async () => {
  const server = await start({ CONVERTD_LIBREOFFICE_POOL: '2', CONVERTD_LIBREOFFICE_MAX_JOBS: '3', CONVERTD_CONCURRENCY: '4' });
  const sources = ['fodt', 'fods', 'fodp', 'txt', 'html', 'fodt', 'fods', 'fodp', 'txt', 'html', 'fodt', 'fods', 'fodp', 'txt', 'html', 'fodt'];
  const results = await Promise.all(sources.map((ext, i) => convert(server.url, Buffer.from(TEXT_SAMPLES[ext]!), `doc${i}.${ext}`, 'pdf', QUEUED)));
  for (const { bytes } of results) assert.ok(await pdfPages(bytes) >= 1);
  assert.ok(events(server, 'libreoffice_recycle').length >= 1, 'processes were recycled during the jobs');
  assert.equal(events(server, 'libreoffice_crash').length, 0);
  // Successors still starting take over; in the end the pool is back to its two processes.
  await waitFor('the pool to settle at two processes', async () => {
    const starting = events(server, 'libreoffice_start').length - events(server, 'libreoffice_exit').length;
    return starting === 2 && (await sofficePids(server)).length === 2;
  }, 60_000, 100);
});

test('concurrent jobs share the pool and all finish', { timeout: 300_000 }, async () => {
  const server = await start({ CONVERTD_LIBREOFFICE_POOL: '2', CONVERTD_CONCURRENCY: '4' });
  assert.equal((await sofficePids(server)).length, 2, 'two warm processes');
  const sources = ['fodt', 'fods', 'fodp', 'txt', 'html', 'fodt', 'fods', 'fodp'];
  const results = await Promise.all(sources.map((ext, i) => convert(server.url, Buffer.from(TEXT_SAMPLES[ext]!), `doc${i}.${ext}`, 'pdf', QUEUED)));
  for (const { bytes } of results) assert.ok(await pdfPages(bytes) >= 1);
  const pids = await sofficePids(server);
  assert.equal(pids.length, 2, 'still two processes: none crashed or leaked');
  // Each started as a LibreOffice that had run before (office-pool.ts): its profile names the
  // installed version, so soffice skipped the graphics self-test of a version's first start
  // (about 1.3 s of CPU at every pooled start), whose log it would have left in the profile.
  const version = /LibreOffice (\d+\.\d+)/.exec(execFileSync('soffice', ['--version'], { encoding: 'utf8' }))![1]!;
  for (const pid of pids) {
    const profile = /-env:UserInstallation=file:\/\/([^\0]+)/.exec(await fs.readFile(`/proc/${pid}/cmdline`, 'utf8'))![1]!;
    const settings = await fs.readFile(`${decodeURIComponent(profile)}/user/registrymodifications.xcu`, 'utf8');
    assert.match(settings, new RegExp(`oor:name="ooSetupLastVersion"[^>]*><value>${version.replace('.', '\\.')}</value>`), 'the profile names the installed version');
    await assert.rejects(fs.access(`${decodeURIComponent(profile)}/user/GraphicsRenderTests.log`), 'no graphics self-test ran');
  }
});
