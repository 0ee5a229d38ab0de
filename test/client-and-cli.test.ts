// The TypeScript client (src/client/convertd-client.ts), the `convertd` command and the progress
// event stream, against a real running service.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ConvertdApiError, ConvertdClient, type ProgressRecord } from '../src/client/convertd-client.ts';
import { submitOk, type ErrorBody, type Limits } from './helpers/client.ts';
import { IMAGE_HEIGHT, IMAGE_WIDTH, noisePng, sampleImage } from './helpers/fixtures.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { decodeImage, fileMime, writeTemp } from './helpers/tools.ts';

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

/**
 * The CLI run without blocking this process (spawnSync would stall its event loop, and a kept-alive
 * connection the service closes meanwhile would fail the next fetch with "other side closed").
 */
function runCliAsync(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, CONVERTD_URL: '', CONVERTD_REDIS_URL: '' } }, (error, stdout, stderr) => {
      resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
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

test('the client waits out a 429 with its Retry-After and then succeeds', { timeout: 180_000 }, async () => {
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

// Conversion options (issue #29) through the client and the CLI.

/** A JPEG at quality 20 must be well under one at 90 of the same noisy picture: at most this share of its size. */
const LOW_QUALITY_MAX_SHARE = 0.7;

test('the client lists a pair\'s options, sends options with a conversion and reads the echo', async () => {
  const client = new ConvertdClient(server.url);
  const pair = await client.options('png', 'jpg');
  assert.deepEqual([pair.source, pair.target], ['png', 'jpg']);
  const quality = pair.options.find((o) => o.name === 'quality');
  assert.ok(quality, 'png → jpg takes quality');
  assert.deepEqual([quality.type, quality.minimum, quality.maximum], ['integer', 1, 100]);
  assert.ok(pair.options.some((o) => o.name === 'width'));
  await assert.rejects(client.options('png', 'mp3'), (error: unknown) => error instanceof ConvertdApiError && error.code === 'unsupported_target');

  const noise = new Blob([await noisePng(320, 240)]);
  const [low, high] = await Promise.all([
    // page_range does not apply to an image: ignored and said so, never an error.
    client.convert(noise, 'noise.png', 'jpg', { options: { quality: 20, width: 160, page_range: '2-3', strip: true } }),
    client.convert(noise, 'noise.png', 'jpg', { options: { quality: 90 } }),
  ]);
  assert.deepEqual(low.record.options, { quality: '20', width: '160', strip: 'true' }, 'the options in force, echoed as given');
  assert.deepEqual(low.record.ignored_options, ['page_range']);
  assert.deepEqual(high.record.options, { quality: '90' });
  const lowFacts = decodeImage(await writeTemp(Buffer.from(await low.data.arrayBuffer()), 'low.jpg'));
  const highFacts = decodeImage(await writeTemp(Buffer.from(await high.data.arrayBuffer()), 'high.jpg'));
  assert.deepEqual([lowFacts.width, lowFacts.height], [160, 120], 'width alone keeps the aspect ratio');
  assert.deepEqual([highFacts.width, highFacts.height], [320, 240]);
  // Compared at the same size: quality 20 of the full picture against 90.
  const low320 = await client.convert(noise, 'noise.png', 'jpg', { options: { quality: 20 } });
  assert.ok(low320.data.size < high.data.size * LOW_QUALITY_MAX_SHARE, `quality 20: ${low320.data.size} B, quality 90: ${high.data.size} B`);

  // Without options nothing changes: no echo, no ignored list.
  const plain = await client.convert(new Blob([await sampleImage('png')]), 'plain.png', 'jpg');
  assert.equal(plain.record.options, undefined);
  assert.equal(plain.record.ignored_options, undefined);
});

test('the client surfaces a refused option with what is allowed', async () => {
  const client = new ConvertdClient(server.url);
  const png = new Blob([await sampleImage('png')]);
  await assert.rejects(client.convert(png, 'a.png', 'jpg', { options: { quality: 500 } }), (error: unknown) => {
    assert.ok(error instanceof ConvertdApiError);
    assert.equal(error.code, 'invalid_option');
    assert.equal(error.status, 422);
    assert.equal(error.details.option, 'quality');
    assert.equal(error.details.maximum, 100);
    assert.match(error.message, /quality/);
    return true;
  });
  await assert.rejects(client.convert(png, 'a.png', 'jpg', { options: { fit: 'sideways' } }),
    (error: unknown) => error instanceof ConvertdApiError && error.code === 'invalid_option' && Array.isArray(error.details.values) && (error.details.values as string[]).includes('crop'));
  // Not even sent: a name that cannot be an option, a number that is not one.
  await assert.rejects(client.submit(png, 'a.png', 'jpg', { options: { target: 'webp' } }), (error: unknown) => error instanceof ConvertdApiError && error.code === 'invalid_option' && error.status === 0);
  await assert.rejects(client.submit(png, 'a.png', 'jpg', { options: { width: Number.NaN } }), (error: unknown) => error instanceof ConvertdApiError && error.code === 'invalid_option');
});

test('the client deletes a result: its download and progress record then answer 410 expired', async () => {
  const client = new ConvertdClient(server.url);
  const { record } = await client.convert(new Blob([await sampleImage('png')]), 'gone.png', 'webp');
  assert.equal((await fetch(`${server.url}${record.download_url}`)).status, 200, 'there before');
  await client.delete(record.download_url!);
  const download = await fetch(`${server.url}${record.download_url}`);
  assert.equal(download.status, 410);
  assert.equal((await download.json() as ErrorBody).error.code, 'expired');
  await assert.rejects(client.progress(record.job_id), (error: unknown) => error instanceof ConvertdApiError && error.code === 'expired' && error.status === 410);
  await assert.rejects(client.download(record), (error: unknown) => error instanceof ConvertdApiError && error.status === 410);

  // The record itself and an absolute URL do as well as the relative URL.
  const second = await client.convert(new Blob([await sampleImage('png')]), 'gone2.png', 'gif');
  await client.delete(`${server.url}${second.record.download_url}`);
  assert.equal((await fetch(`${server.url}${second.record.download_url}`)).status, 410);
  const third = await client.convert(new Blob([await sampleImage('png')]), 'gone3.png', 'gif');
  await client.delete(third.record);
  assert.equal((await fetch(`${server.url}${third.record.download_url}`)).status, 410);

  await assert.rejects(client.delete('/api/download/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.webp'), (error: unknown) => error instanceof ConvertdApiError && error.code === 'file_not_found' && error.status === 404);
});

test('the CLI takes --option (repeatable, a value may hold "="), lists options, and deletes after download', { timeout: 120_000 }, async () => {
  const dir = await tempDir('convertd-cli-options-');
  const source = path.join(dir, 'shot.png');
  await fs.writeFile(source, await sampleImage('png'));
  const out = path.join(dir, 'out');

  const table = await runCliAsync(['options', 'png', 'jpg', '--server', server.url]);
  assert.equal(table.status, 0, table.stderr);
  assert.match(table.stdout, /^png → jpg/);
  assert.match(table.stdout, /^NAME\s+TYPE\s+ALLOWED\s+DEFAULT\s+DESCRIPTION/m);
  assert.match(table.stdout, /^quality\s+integer\s+1-100\s+\d+\s+\S/m, 'a row per option: name, type, allowed, default, description');
  assert.match(table.stdout, /^fit\s+enum\s+max, crop, scale\s+max\s/m);
  const json = await runCliAsync(['options', 'PNG', 'jpg', '--server', server.url, '--json']);
  assert.equal(json.status, 0);
  assert.deepEqual(JSON.parse(json.stdout), await new ConvertdClient(server.url).options('png', 'jpg'), '--json prints the service\'s answer');
  const wrongPair = await runCliAsync(['options', 'png', 'mp3', '--server', server.url]);
  assert.equal(wrongPair.status, 1);
  assert.match(wrongPair.stderr, /cannot be converted to "mp3"/);
  assert.equal((await runCliAsync(['options', 'png', '--server', server.url])).status, 2, 'one format only: usage error');

  const converted = await runCliAsync(['convert', source, '--to', 'jpg', '--option', 'width=48', '-o', 'quality=40', '--option', 'page_range=1-2', '--server', server.url, '--out', out, '--json']);
  assert.equal(converted.status, 0, converted.stderr);
  const [result] = (JSON.parse(converted.stdout) as { results: Array<{ ok: boolean; output: string; options?: Record<string, string>; ignored_options?: string[]; deleted?: boolean }> }).results;
  assert.deepEqual(result!.options, { width: '48', quality: '40' });
  assert.deepEqual(result!.ignored_options, ['page_range']);
  assert.equal(result!.deleted, undefined, 'kept unless asked');
  const facts = decodeImage(result!.output);
  assert.deepEqual([facts.width, facts.height], [48, Math.round((48 * IMAGE_HEIGHT) / IMAGE_WIDTH)]);

  const plain = await runCliAsync(['convert', source, '--to', 'jpg', '--option', 'quality=40', '--option', 'page_range=1', '--server', server.url, '--out', out]);
  assert.equal(plain.status, 0, plain.stderr);
  assert.match(plain.stderr, /shot\.png: done → .*shot\.jpg.*ignored page_range/, 'the plain output says what was ignored');

  // Refused values: exit 1, the code and what is allowed in words; everything after the first "=" is the value.
  const refused = await runCliAsync(['convert', source, '--to', 'jpg', '--option', 'quality=500', '--server', server.url, '--out', out]);
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /failed \(invalid_option\): .*quality.*1-100/);
  const withEquals = await runCliAsync(['convert', source, '--to', 'jpg', '--option', 'quality=5=5', '--server', server.url, '--out', out, '--json']);
  assert.equal(withEquals.status, 1);
  assert.match((JSON.parse(withEquals.stdout) as { results: Array<{ error: { message: string } }> }).results[0]!.error.message, /"5=5" is not a whole number/);
  for (const bad of [['--option', 'quality'], ['--option', '=5'], ['--option', 'quality=1', '--option', 'quality=2']]) {
    const usage = await runCliAsync(['convert', source, '--to', 'jpg', ...bad, '--server', server.url, '--out', out]);
    assert.equal(usage.status, 2, `${bad.join(' ')}: usage error`);
    assert.match(usage.stderr, /--option/);
  }

  const deleted = await runCliAsync(['convert', source, '--to', 'webp', '--delete-after', '--server', server.url, '--out', out, '--json']);
  assert.equal(deleted.status, 0, deleted.stderr);
  const [gone] = (JSON.parse(deleted.stdout) as { results: Array<{ ok: boolean; output: string; deleted: boolean; download_url: string }> }).results;
  assert.equal(gone!.deleted, true);
  assert.equal(fileMime(gone!.output), 'image/webp', 'downloaded first');
  const after = await fetch(`${server.url}${gone!.download_url}`);
  assert.equal(after.status, 410, 'then gone from the service');
  assert.equal((await after.json() as ErrorBody).error.code, 'expired');

  const help = await runCliAsync(['--help']);
  assert.match(help.stdout, /--option, -o NAME=VALUE/);
  assert.match(help.stdout, /--delete-after/);
  assert.match(help.stdout, /convertd options SOURCE TARGET/);
  await fs.rm(dir, { recursive: true, force: true });
});
