// The TypeScript client (src/client/convertd-client.ts), the `convertd` command and the progress
// event stream, against a real running service.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ConvertdApiError, ConvertdClient, type ProgressRecord } from '../src/client/convertd-client.ts';
import { submitOk, type ErrorBody, type Limits } from './helpers/client.ts';
import { noisePng, sampleImage } from './helpers/fixtures.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { fileMime, writeTemp } from './helpers/tools.ts';

const CLI = path.resolve('src/cli/main.ts');
let server: RunningServer;

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '1' });
});
after(async () => {
  await server?.stop();
});

/** A fetch that records the URL and status of every request. */
function recordingFetch(log: Array<{ url: string; status: number }>): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    log.push({ url: String(input), status: response.status });
    return response;
  };
}

function runCli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, CONVERTD_URL: '', CONVERTD_REDIS_URL: '' } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('the client converts a file: progress rises, the result is the target format, named after the upload', async () => {
  const seen: ProgressRecord[] = [];
  const client = new ConvertdClient(server.url);
  const { data, filename, record } = await client.convert(new Blob([await sampleImage('png')]), 'holiday.png', 'webp', { onProgress: (r) => seen.push(r) });
  assert.equal(filename, 'holiday.webp');
  assert.equal(record.status, 'done');
  assert.equal(data.size, record.size);
  assert.equal(fileMime(await writeTemp(Buffer.from(await data.arrayBuffer()), 'out.webp')), 'image/webp');
  assert.ok(seen.length >= 1);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.progress >= seen[i - 1]!.progress, 'progress never goes down');
  assert.equal(seen.at(-1)!.status, 'done');
});

test('the client follows the event stream when offered, and polls when told not to', async () => {
  const withEvents: Array<{ url: string; status: number }> = [];
  await new ConvertdClient(server.url, { fetch: recordingFetch(withEvents) }).convert(new Blob([await sampleImage('png')]), 'a.png', 'jpg');
  assert.ok(withEvents.some((r) => r.url.endsWith('/events') && r.status === 200), 'the stream was used');
  assert.ok(!withEvents.some((r) => /\/api\/progress\/[^/]+$/.test(r.url)), 'no polling needed');

  const polling: Array<{ url: string; status: number }> = [];
  await new ConvertdClient(server.url, { fetch: recordingFetch(polling) }).convert(new Blob([await sampleImage('png')]), 'b.png', 'jpg', { events: false, pollIntervalMs: 100 });
  assert.ok(!polling.some((r) => r.url.endsWith('/events')));
  assert.ok(polling.some((r) => /\/api\/progress\/[^/]+$/.test(r.url)));
});

test('the client throws typed errors with the service\'s codes', async () => {
  const client = new ConvertdClient(server.url);
  await assert.rejects(client.convert(new Blob(['just words']), 'notes.png', 'webp'), (error: unknown) => {
    assert.ok(error instanceof ConvertdApiError);
    assert.equal(error.code, 'unsupported_format');
    assert.equal(error.status, 415);
    return true;
  });
  await assert.rejects(client.convert(new Blob([await sampleImage('png')]), 'a.png', 'mp3'), (error: unknown) => error instanceof ConvertdApiError && error.code === 'unsupported_target' && error.status === 422);
  // A job that fails: a PNG signature followed by garbage.
  const broken = Buffer.concat([(await sampleImage('png')).subarray(0, 40), Buffer.alloc(200, 7)]);
  await assert.rejects(client.convert(new Blob([broken]), 'broken.png', 'webp'), (error: unknown) => {
    assert.ok(error instanceof ConvertdApiError);
    assert.equal(error.status, 0, 'a failed job, not an HTTP error');
    assert.equal(error.code, 'corrupt_input');
    return true;
  });
  await assert.rejects(new ConvertdClient('http://127.0.0.1:9').formats(), (error: unknown) => error instanceof ConvertdApiError && error.code === 'network_error');
});

test('the client waits out a 429 with its Retry-After and then succeeds', { timeout: 60_000 }, async () => {
  const limited = await startServer({ CONVERTD_RATE_LIMITS: '2/3s', CONVERTD_READ_RATE_LIMITS: 'off' });
  try {
    const log: Array<{ url: string; status: number }> = [];
    const client = new ConvertdClient(limited.url, { fetch: recordingFetch(log) });
    const png = new Blob([await sampleImage('png')]);
    for (let i = 0; i < 3; i++) await client.submit(png, `n${i}.png`, 'jpg');
    assert.ok(log.some((r) => r.status === 429), 'the third submission met the limit');
    assert.equal(log.filter((r) => r.url.endsWith('/api/convert') && r.status === 200).length, 3, 'and went through after waiting');
    // With no retries allowed, the 429 reaches the caller with its Retry-After.
    await assert.rejects(client.submit(png, 'x.png', 'jpg', { maxRetries: 0 }).then(() => client.submit(png, 'y.png', 'jpg', { maxRetries: 0 })).then(() => client.submit(png, 'z.png', 'jpg', { maxRetries: 0 })),
      (error: unknown) => error instanceof ConvertdApiError && error.code === 'rate_limited' && error.status === 429 && (error.retryAfterSeconds ?? 0) >= 1);
  } finally {
    await limited.stop();
  }
});

test('a conversion is cancelled through its signal', async () => {
  const client = new ConvertdClient(server.url);
  const controller = new AbortController();
  // A slow job (a large noise image to AVIF) so that there is something to cancel.
  const pending = client.convert(new Blob([await noisePng(2400, 2400)]), 'noise.png', 'avif', { signal: controller.signal, onProgress: () => controller.abort(new Error('user cancelled')) });
  await assert.rejects(pending, /user cancelled/);
});

test('the event stream sends the progress records in order and ends after done; unknown jobs are 404', async () => {
  const jobId = await submitOk(server.url, await sampleImage('png'), 'c.png', 'webp');
  const records = await new Promise<ProgressRecord[]>((resolve, reject) => {
    http.get(`${server.url}/api/progress/${jobId}/events`, (response) => {
      assert.equal(response.statusCode, 200);
      assert.match(response.headers['content-type'] ?? '', /^text\/event-stream/);
      let text = '';
      response.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; });
      response.on('end', () => resolve(text.split('\n\n').filter((e) => e.startsWith('data:')).map((e) => JSON.parse(e.slice(5)) as ProgressRecord)));
    }).on('error', reject);
  });
  assert.ok(records.length >= 1);
  assert.equal(records.at(-1)!.status, 'done');
  assert.ok(records.at(-1)!.download_url);
  for (let i = 1; i < records.length; i++) assert.ok(records[i]!.progress >= records[i - 1]!.progress);
  const missing = await fetch(`${server.url}/api/progress/nosuchjobnosuchjobnosuch/events`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json() as ErrorBody).error.code, 'job_not_found');
});

test('the CLI converts files, prints JSON for machines, and exits with codes scripts can rely on', { timeout: 120_000 }, async () => {
  const dir = await tempDir('convertd-cli-');
  await fs.writeFile(path.join(dir, 'one.png'), await sampleImage('png'));
  await fs.writeFile(path.join(dir, 'two.jpg'), await sampleImage('jpg'));
  await fs.writeFile(path.join(dir, 'words.png'), 'not an image');
  const out = path.join(dir, 'out');

  const ok = runCli(['convert', path.join(dir, 'one.png'), path.join(dir, 'two.jpg'), '--to', 'webp', '--server', server.url, '--out', out, '--json']);
  assert.equal(ok.status, 0, ok.stderr);
  const { results } = JSON.parse(ok.stdout) as { results: Array<{ ok: boolean; output: string; size: number }> };
  assert.deepEqual(results.map((r) => [r.ok, path.basename(r.output)]), [[true, 'one.webp'], [true, 'two.webp']]);
  for (const result of results) assert.equal(fileMime(result.output), 'image/webp');

  const mixed = runCli(['convert', path.join(dir, 'one.png'), path.join(dir, 'words.png'), '--to', 'jpg', '--server', server.url, '--out', out, '--json']);
  assert.equal(mixed.status, 1, 'one failure: exit 1');
  const parsed = JSON.parse(mixed.stdout) as { results: Array<{ ok: boolean; error?: { code: string } }> };
  assert.equal(parsed.results[0]!.ok, true);
  assert.equal(parsed.results[1]!.error?.code, 'unsupported_format');

  const plain = runCli(['convert', path.join(dir, 'one.png'), '--to', 'gif', '--server', server.url, '--out', out]);
  assert.equal(plain.status, 0);
  assert.match(plain.stderr, /one\.png: done → .*one\.gif/, 'plain progress lines when not on a terminal');

  assert.equal(runCli(['convert', path.join(dir, 'one.png'), '--server', server.url]).status, 2, 'no --to: usage error');
  assert.equal(runCli(['frobnicate']).status, 2);
  assert.equal(runCli(['convert', path.join(dir, 'one.png'), '--to', 'webp', '--server', 'http://127.0.0.1:9', '--out', out]).status, 3, 'unreachable service');

  const formats = runCli(['formats', '--from', 'png', '--server', server.url, '--json']);
  assert.equal(formats.status, 0);
  assert.ok((JSON.parse(formats.stdout) as { targets: string[] }).targets.includes('webp'));
  const limits = runCli(['limits', '--server', server.url, '--json']);
  assert.equal(limits.status, 0);
  assert.equal((JSON.parse(limits.stdout) as Limits).max_file_size_bytes, 26_214_400);
  const serveHelp = runCli(['serve', '--help']);
  assert.equal(serveHelp.status, 0);
  assert.match(serveHelp.stdout, /--no-workers/);
  assert.match(serveHelp.stdout, /CONVERTD_REDIS_URL/);
  const workerHelp = runCli(['worker', '--help']);
  assert.equal(workerHelp.status, 0);
  assert.match(workerHelp.stdout, /--concurrency N/);
  // API nodes and workers share jobs through Redis: without it they refuse to start, saying why.
  for (const args of [['worker'], ['serve', '--no-workers']]) {
    const alone = runCli([...args, '--data-dir', dir]);
    assert.equal(alone.status, 2, `convertd ${args.join(' ')} without Redis: exit 2`);
    assert.match(alone.stderr, /needs CONVERTD_REDIS_URL/);
  }
  await fs.rm(dir, { recursive: true, force: true });
});
