// The scale-out topology on loopback, with real servers: two API nodes (convertd serve
// --no-workers) and two workers (convertd worker) sharing a real Redis and a real S3 server
// (Swift + s3api). Fifty jobs of mixed families, one worker killed with SIGKILL halfway while it
// converts; every job completes once with a valid output, progress never goes down; rate limits
// hold across the nodes; Redis crashing makes the API answer 503 with Retry-After and the whole
// topology recovers by itself; expiry deletes results from the bucket.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { download, expectError, progress, submit, waitForJob, type ProgressRecord } from './helpers/client.ts';
import { startRedis, type RedisServer } from './helpers/backing-servers.ts';
import { MARKER, TEXT_SAMPLES } from './helpers/documents.ts';
import { sampleImage } from './helpers/fixtures.ts';
import { sharedS3, startScaledService } from './helpers/scaled-service.ts';
import { startApiNode, startWorker, tempDir, type RunningServer } from './helpers/server.ts';
import { fileMime, writeTemp } from './helpers/tools.ts';
import { waitFor } from './helpers/wait.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A mono 16-bit PCM WAV of a sine tone: long enough that ffmpeg is still at work when killed. */
function sineWav(seconds: number, rate = 22_050): Buffer {
  const samples = seconds * rate;
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) data.writeInt16LE(Math.round(Math.sin((i * 440 * 2 * Math.PI) / rate) * 12_000), i * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0); header.writeUInt32LE(36 + data.length, 4); header.write('WAVE', 8);
  header.write('fmt ', 12); header.writeUInt32LE(16, 16); header.writeUInt16LE(1, 20); header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24); header.writeUInt32LE(rate * 2, 28); header.writeUInt16LE(2, 32); header.writeUInt16LE(16, 34);
  header.write('data', 36); header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

interface Sample {
  readonly name: string;
  readonly bytes: Buffer;
  readonly target: string;
  /** What `file --mime-type` must say of the output. */
  readonly mime: string;
  /** Text the output must contain (documents). */
  readonly marker?: string;
}

async function mixedSamples(): Promise<Sample[]> {
  return [
    { name: 'photo.png', bytes: await sampleImage('png'), target: 'webp', mime: 'image/webp' },
    { name: 'photo.png', bytes: await sampleImage('png'), target: 'jpg', mime: 'image/jpeg' },
    { name: 'tone.wav', bytes: sineWav(120), target: 'mp3', mime: 'audio/mpeg' },
    { name: 'report.fodt', bytes: Buffer.from(TEXT_SAMPLES.fodt!), target: 'pdf', mime: 'application/pdf', marker: MARKER },
    { name: 'report.md', bytes: Buffer.from(TEXT_SAMPLES.md!), target: 'docx', mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', marker: MARKER },
    { name: 'report.md', bytes: Buffer.from(TEXT_SAMPLES.md!), target: 'html', mime: 'text/html', marker: MARKER },
    { name: 'fish.csv', bytes: Buffer.from(`name,count\n${MARKER},2\ntrout,5\n`), target: 'json', mime: 'application/json', marker: MARKER },
  ];
}

function jsonLines(logs: readonly string[]): Array<Record<string, unknown>> {
  return logs.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('scale-out: 2 API nodes, 2 workers, Redis, S3', () => {
  let redis: RedisServer;
  let apis: RunningServer[] = [];
  let workers: RunningServer[] = [];
  const workerLogs: string[][] = [[], []];

  before(async () => {
    redis = await startRedis();
    const s3 = await sharedS3();
    const bucket = await s3.createBucket();
    const env = {
      ...s3.env(bucket), CONVERTD_REDIS_URL: redis.url,
      CONVERTD_TRUSTED_PROXIES: '127.0.0.1', CONVERTD_READ_RATE_LIMITS: 'off',
      CONVERTD_CONCURRENCY: '1', CONVERTD_LIBREOFFICE_POOL: '1',
    };
    // Each worker serves its own /healthz, /readyz and /metrics on a free port.
    workers = await Promise.all(workerLogs.map(async (logs) => startWorker({ ...env, CONVERTD_WORKER_PORT: '0' }, await tempDir(), logs)));
    apis = await Promise.all([0, 1].map(() => startApiNode(env)));
  });

  after(async () => {
    await Promise.all([...apis, ...workers].map((node) => node.stop()));
    await redis?.stop();
  });

  test('50 mixed jobs through both API nodes; a worker killed mid-job; every job completes once with a valid output', { timeout: 600_000 }, async () => {
    const samples = await mixedSamples();
    const jobs: Array<{ id: string; sample: Sample; api: RunningServer }> = [];
    for (let i = 0; i < 50; i++) {
      const sample = samples[i % samples.length]!;
      const api = apis[i % 2]!;
      // A client address of its own per job: this test is about the workers, not the limits.
      const response = await submit(api.url, sample.bytes, sample.name, sample.target, { 'x-forwarded-for': `10.0.${i}.1` });
      assert.equal(response.status, 200, await response.clone().text());
      jobs.push({ id: ((await response.json()) as { job_id: string }).job_id, sample, api });
    }

    // Early on, kill the first worker at a moment it holds a job it has not finished: a slow one
    // (ffmpeg on two minutes of audio, or LibreOffice) whose start this loop saw just now. The
    // worker logs "job done" after the store has the result, and a SIGKILL can take that line
    // with it: a quicker job seen "in hand" here (pandoc's md → docx did, once in five runs) may
    // already be done when the kill lands, and then no other worker runs it again.
    const victim = workers[0]!;
    const events = () => jsonLines(workerLogs[0]!).filter((e) => e.job_id && e.event);
    const slowKind = (e: Record<string, unknown>) => e.source === 'wav' || e.source === 'fodt';
    const firstSeen = new Map<string, number>();
    const killedDuring = await waitFor('the first worker to start a slow job', () => {
      const seen = events();
      const finished = new Set(seen.filter((e) => e.event === 'job_done' || e.event === 'job_error').map((e) => e.job_id));
      const now = Date.now();
      for (const e of seen) {
        if (e.event === 'job_running' && slowKind(e) && !firstSeen.has(String(e.job_id))) firstSeen.set(String(e.job_id), now);
      }
      const justStarted = [...firstSeen].find(([id, at]) => !finished.has(id) && now - at < 30)?.[0];
      if (finished.size < 5 || !justStarted) return undefined;
      victim.child.kill('SIGKILL');
      return justStarted;
    }, 300_000, 10);
    await victim.stop();
    // The kill landed before that job was done (else this test would not see a take-over).
    const atKill = (await progress(apis[0]!.url, killedDuring)).body;
    assert.equal(atKill.status, 'running', `the killed worker's job was still running: ${JSON.stringify(atKill)}`);

    // Every job ends, polled through either node; progress never goes down (waitForJob checks).
    const finals = new Map<string, ProgressRecord>();
    for (const [index, job] of jobs.entries()) {
      const { final } = await waitForJob(apis[(index + 1) % 2]!.url, job.id, { timeoutMs: 300_000, intervalMs: 200 });
      finals.set(job.id, final);
    }
    const failed = [...finals.values()].filter((record) => record.status !== 'done');
    assert.deepEqual(failed, [], 'every job is done');

    // Each output is what was asked for, read by independent tools, downloaded from the node that did not take the upload.
    for (const job of jobs) {
      const final = finals.get(job.id)!;
      const api = apis.find((node) => node !== job.api)!;
      const { response, bytes } = await download(api.url, final.download_url!);
      assert.equal(response.status, 200);
      assert.equal(bytes.length, final.size);
      const file = await writeTemp(bytes, `out.${job.sample.target}`);
      assert.equal(fileMime(file), job.sample.mime, `${job.sample.name} → ${job.sample.target}`);
      if (job.sample.marker) {
        const text = job.sample.target === 'pdf' || job.sample.target === 'docx'
          ? execFileSync('/usr/bin/python3', [path.resolve('test/helpers/read_document.py'), file, job.sample.target], { encoding: 'utf8' })
          : bytes.toString('utf8');
        assert.ok(text.includes(job.sample.marker), `${job.sample.target} output holds the document's text`);
      }
    }

    // The killed worker's job was taken over by the other worker, and no job was finished twice.
    const survivor = jsonLines(workerLogs[1]!);
    assert.ok(survivor.some((e) => e.event === 'job_running' && e.job_id === killedDuring), 'the surviving worker took over the interrupted job');
    const doneLines = [...jsonLines(workerLogs[0]!), ...survivor].filter((e) => e.event === 'job_done');
    const doneCounts = new Map<string, number>();
    for (const line of doneLines) doneCounts.set(String(line.job_id), (doneCounts.get(String(line.job_id)) ?? 0) + 1);
    assert.equal(doneCounts.size, 50);
    assert.ok([...doneCounts.values()].every((count) => count === 1), 'each job completed exactly once');

    // The surviving worker's own metrics count the jobs it finished; it is ready; it serves no API.
    const worker = workers[1]!;
    const metrics = await (await fetch(`${worker.url}/metrics`)).text();
    const finishedHere = survivor.filter((e) => e.event === 'job_done').length;
    const counted = [...metrics.matchAll(/^convertd_jobs_total\{status="done"[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    assert.equal(counted, finishedHere, 'convertd_jobs_total on the worker counts the jobs it finished');
    assert.equal((await fetch(`${worker.url}/readyz`)).status, 200);
    await expectError(await fetch(`${worker.url}/api/formats`), 404, 'not_found');
  });

  test('rate limits are exact across API nodes: 20 submissions a minute in total', async () => {
    const png = await sampleImage('png');
    const client = { 'x-forwarded-for': '10.99.99.99' };
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => submit(apis[i % 2]!.url, png, 'a.png', 'webp', client)));
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 200).length, 20, `statuses: ${statuses.join(',')}`);
    assert.equal(statuses.filter((status) => status === 429).length, 10);
    const refused = responses.find((response) => response.status === 429)!;
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    for (const response of responses) await response.body?.cancel();
  });

  test('Redis down: the API answers 503 with Retry-After, never hangs; Redis back: all recovers by itself', { timeout: 120_000 }, async () => {
    const png = await sampleImage('png');
    const before = await submit(apis[0]!.url, png, 'kept.png', 'webp', { 'x-forwarded-for': '10.1.1.1' });
    assert.equal(before.status, 200);
    const keptId = ((await before.json()) as { job_id: string }).job_id;
    await waitForJob(apis[0]!.url, keptId, { timeoutMs: 60_000 });

    await redis.kill();
    for (const api of apis) {
      // A bound on the wait is the assertion here: a hung request fails the test.
      const progress = await fetch(`${api.url}/api/progress/${keptId}`, { signal: AbortSignal.timeout(15_000) });
      const body = await expectError(progress, 503, 'unavailable');
      assert.ok(Number(progress.headers.get('retry-after')) > 0);
      assert.match(body.error.message, /try again/);
      await expectError(await submit(api.url, png, 'a.png', 'webp', { 'x-forwarded-for': '10.1.1.2' }), 503, 'unavailable');
      const ready = await fetch(`${api.url}/readyz`, { signal: AbortSignal.timeout(15_000) });
      assert.equal(ready.status, 503);
    }

    await redis.start();
    // The nodes reconnect by themselves; the job accepted before the crash is still there.
    let answer: Response | undefined;
    for (let i = 0; i < 100 && answer?.status !== 200; i++) {
      await sleep(200);
      answer = await fetch(`${apis[1]!.url}/api/progress/${keptId}`);
    }
    assert.equal(answer?.status, 200);
    assert.equal(((await answer!.json()) as ProgressRecord).status, 'done');
    const after = await submit(apis[1]!.url, png, 'after.png', 'webp', { 'x-forwarded-for': '10.1.1.3' });
    assert.equal(after.status, 200);
    const { final } = await waitForJob(apis[1]!.url, ((await after.json()) as { job_id: string }).job_id, { timeoutMs: 90_000 });
    assert.equal(final.status, 'done', 'the surviving worker took a new job after Redis came back');
  });
});

test('scale-out expiry: the result is deleted from the bucket on time; 410 after; downloads stream from the bucket with ranges', { timeout: 120_000 }, async () => {
  const service = await startScaledService({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_FILE_LIFETIME_SECONDS: '3', CONVERTD_SWEEP_INTERVAL_SECONDS: '1' });
  try {
    const png = await sampleImage('png');
    const response = await submit(service.url, png, 'a.png', 'webp');
    const { final } = await waitForJob(service.url, ((await response.json()) as { job_id: string }).job_id);
    assert.equal(final.status, 'done');
    const results = await service.s3.list(service.bucket, 'convertd/results/');
    assert.equal(results.length, 1, 'the result is in the bucket');
    assert.deepEqual(await service.s3.list(service.bucket, 'convertd/inputs/'), [], 'the input went when the job ended');

    const whole = await download(service.url, final.download_url!);
    const ranged = await fetch(`${service.url}${final.download_url}`, { headers: { range: 'bytes=4-11' } });
    assert.equal(ranged.status, 206);
    assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), whole.bytes.subarray(4, 12));

    await sleep(Math.max(0, Date.parse(String(final.expires_at)) - Date.now()) + 50);
    await expectError(await fetch(`${service.url}${final.download_url}`), 410, 'expired');
    await expectError(await fetch(`${service.url}/api/progress/${final.job_id}`), 410, 'expired');
    let left = results;
    for (let i = 0; i < 50 && left.length > 0; i++) {
      await sleep(200);
      left = await service.s3.list(service.bucket, 'convertd/results/');
    }
    assert.deepEqual(left, [], 'the sweeper deleted the result from the bucket');
    await expectError(await fetch(`${service.url}${final.download_url}`), 410, 'expired');
  } finally {
    await service.stop();
  }
});
