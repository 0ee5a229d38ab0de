// The API of conversion options, results deleted at once, and what a client that sends no option
// sees (api-contract.md: "Conversion options", "DELETE"). Through HTTP against the real service,
// with sharp's options (png → jpg quality, width) as the example pair; each engine's options are
// proven in their own files (test/options-*.test.ts).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ConversionOptions, ProgressRecord } from '../src/wire/shapes.ts';
import { download, expectError, progress, submitOk, waitForJob } from './helpers/client.ts';
import { noisePng, sampleImage } from './helpers/fixtures.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { decodeImage, writeTemp } from './helpers/tools.ts';

const ENV = { CONVERTD_RATE_LIMITS: 'off' };
let server: RunningServer;
let png: Buffer;

before(async () => {
  server = await startServer(ENV);
  png = await sampleImage('png');
});
after(async () => server.stop());

/** A submission with option parts beside `file` and `target`, in the order given. */
function submitWith(data: Uint8Array, filename: string, target: string, options: ReadonlyArray<readonly [string, string]>): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([data]), filename);
  form.append('target', target);
  for (const [name, value] of options) form.append(name, value);
  return fetch(`${server.url}/api/convert`, { method: 'POST', body: form });
}

async function finished(response: Response): Promise<ProgressRecord> {
  const body = await response.json() as { ok: boolean; job_id: string };
  assert.equal(response.status, 200, JSON.stringify(body));
  return (await waitForJob(server.url, body.job_id)).final;
}

test('GET /api/formats/{source}/{target} describes a pair\'s options, from the engines\' declarations', async () => {
  const response = await fetch(`${server.url}/api/formats/PNG/.jpeg`);
  assert.equal(response.status, 200);
  const answer = await response.json() as ConversionOptions;
  assert.equal(answer.source, 'png');
  assert.equal(answer.target, 'jpg');
  assert.deepEqual(answer.steps, ['sharp']);
  const byName = new Map(answer.options.map((o) => [o.name, o]));
  assert.deepEqual([...byName.keys()], [...byName.keys()].sort(), 'sorted by name');
  assert.deepEqual(byName.get('quality'), { name: 'quality', type: 'integer', description: byName.get('quality')!.description, minimum: 1, maximum: 100, default: 85 });
  assert.deepEqual(byName.get('fit')?.values, ['max', 'crop', 'scale']);
  assert.equal(byName.get('strip')?.default, true, 'metadata is stripped unless asked to keep it');
  assert.equal(byName.get('background')?.type, 'string');
  assert.ok(byName.get('background')?.pattern);
  for (const option of answer.options) assert.ok(option.description.length > 10, `${option.name} is described`);
  // A format that keeps transparency takes no background.
  const webp = await (await fetch(`${server.url}/api/formats/png/webp`)).json() as ConversionOptions;
  assert.ok(!webp.options.some((o) => o.name === 'background'));
  // Same format: listed among the targets where options make it useful.
  const catalogue = await (await fetch(`${server.url}/api/formats`)).json() as { formats: Array<{ id: string; targets: string[] }> };
  assert.ok(catalogue.formats.find((f) => f.id === 'png')!.targets.includes('png'));
  assert.ok((await (await fetch(`${server.url}/api/formats/png/png`)).json() as ConversionOptions).options.some((o) => o.name === 'width'));

  await expectError(await fetch(`${server.url}/api/formats/nonsense/png`), 404, 'unsupported_format');
  const wrong = await expectError(await fetch(`${server.url}/api/formats/png/mp3`), 404, 'unsupported_target');
  assert.ok((wrong.error.targets as string[]).includes('webp'));
  await expectError(await fetch(`${server.url}/api/formats/png/jpg`, { method: 'POST' }), 405, 'method_not_allowed');
});

test('options apply, are echoed as given, and names that do not apply are ignored and listed', async () => {
  const record = await finished(await submitWith(png, 'photo.png', 'jpg', [['quality', ' 30 '], ['width', '48'], ['bogus', '1'], ['page_range', '2']]));
  assert.equal(record.status, 'done', JSON.stringify(record.error));
  assert.deepEqual(record.options, { quality: '30', width: '48' });
  assert.deepEqual(record.ignored_options, ['bogus', 'page_range']);
  const { bytes } = await download(server.url, record.download_url!);
  const small = decodeImage(await writeTemp(bytes, 'small.jpg'));
  assert.equal(small.width, 48);
  assert.equal(small.height, 32, 'the height follows the aspect ratio (96 × 64 source)');
  // And a client that sends no option sees the record it always saw: no options fields at all.
  const plain = (await waitForJob(server.url, await submitOk(server.url, png, 'photo.png', 'jpg'))).final;
  assert.equal(plain.status, 'done');
  assert.ok(!('options' in plain) && !('ignored_options' in plain) && !('skipped' in plain), JSON.stringify(plain));
  assert.equal(decodeImage(await writeTemp((await download(server.url, plain.download_url!)).bytes, 'plain.jpg')).width, 96);
});

test('a wrong value is refused before the job exists: 422 invalid_option with what is allowed', async () => {
  const cases: Array<[string, string, Record<string, unknown>]> = [
    ['quality', '101', { minimum: 1, maximum: 100 }],
    ['quality', 'high', { minimum: 1, maximum: 100 }],
    ['width', '-5', { minimum: 1 }],
    ['width', '1000000', { maximum: 16384 }],
    ['fit', 'zoom', { values: ['max', 'crop', 'scale'] }],
    ['background', 'red', {}],
    ['quality', '80\u0000', {}],
    ['quality', '80\n--help', {}],
    ['width', 'x'.repeat(300), {}],
  ];
  await Promise.all(cases.map(async ([name, value, allowed]) => {
    const body = await expectError(await submitWith(png, 'a.png', 'jpg', [[name, value]]), 422, 'invalid_option');
    assert.equal(body.error.option, name);
    assert.equal(typeof body.error.reason, 'string');
    for (const [key, expected] of Object.entries(allowed)) assert.deepEqual(body.error[key], expected, `${name}=${value}: ${key}`);
  }));
  // Together: a size past the pixel limit; the same option twice; a value past the form's field size.
  await expectError(await submitWith(png, 'a.png', 'png', [['width', '16000'], ['height', '16000']]), 422, 'invalid_option');
  assert.equal((await expectError(await submitWith(png, 'a.png', 'jpg', [['quality', '40'], ['quality', '50']]), 422, 'invalid_option')).error.option, 'quality');
  await expectError(await submitWith(png, 'a.png', 'jpg', [['quality', '9'.repeat(1024 * 1024)]]), 422, 'invalid_option');
  // A thousand parts: the form is refused whole, cleanly.
  await expectError(await submitWith(png, 'a.png', 'jpg', Array.from({ length: 1000 }, (_, i) => [`o${i}`, '1'] as const)), 400, 'invalid_request');
  // An option that does not apply is never checked: its value cannot refuse the job.
  const record = await finished(await submitWith(png, 'a.png', 'webp', [['background', 'not a colour']]));
  assert.equal(record.status, 'done');
  assert.deepEqual(record.ignored_options, ['background']);
});

test('options are stored with the job: one accepted before a crash converts as asked after the restart', async () => {
  const dir = await tempDir();
  let node = await startServer({ ...ENV, CONVERTD_CONCURRENCY: '1' }, dir);
  try {
    // A slow job ahead keeps the optioned one queued when the process is killed.
    const slow = await submitOk(node.url, await noisePng(1400, 1000), 'slow.png', 'avif');
    const response = await fetch(`${node.url}/api/convert`, { method: 'POST', body: (() => {
      const form = new FormData();
      form.append('file', new Blob([png]), 'queued.png');
      form.append('target', 'png');
      form.append('width', '24');
      form.append('unknown_thing', 'x');
      return form;
    })() });
    const { job_id: queued } = await response.json() as { job_id: string };
    assert.equal((await progress(node.url, queued)).body.status, 'queued');
    await node.stop('SIGKILL');
    node = await startServer({ ...ENV, CONVERTD_CONCURRENCY: '1' }, dir);
    const { final } = await waitForJob(node.url, queued, { timeoutMs: 90_000 });
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    assert.deepEqual(final.options, { width: '24' });
    assert.deepEqual(final.ignored_options, ['unknown_thing']);
    assert.equal(decodeImage(await writeTemp((await download(node.url, final.download_url!)).bytes, 'after.png')).width, 24);
    await waitForJob(node.url, slow, { timeoutMs: 90_000 });
  } finally {
    await node.stop('SIGKILL');
  }
});

test('DELETE on a download URL removes the result at once: 204, then 410 for the download and the job', async () => {
  const jobId = await submitOk(server.url, png, 'gone.png', 'webp');
  const { final } = await waitForJob(server.url, jobId);
  const url = `${server.url}${final.download_url!}`;
  assert.equal((await fetch(url, { method: 'HEAD' })).status, 200);
  const deleted = await fetch(url, { method: 'DELETE' });
  assert.equal(deleted.status, 204);
  assert.equal((await deleted.arrayBuffer()).byteLength, 0);
  await expectError(await fetch(url), 410, 'expired');
  await expectError(await fetch(`${server.url}/api/progress/${jobId}`), 410, 'expired');
  await expectError(await fetch(url, { method: 'DELETE' }), 410, 'expired');
  await expectError(await fetch(`${server.url}/api/download/${'A'.repeat(32)}.webp`, { method: 'DELETE' }), 404, 'file_not_found');
  await expectError(await fetch(`${server.url}/api/download/nonsense`, { method: 'DELETE' }), 404, 'file_not_found');
  // The right token with the wrong extension deletes nothing.
  const other = (await waitForJob(server.url, await submitOk(server.url, png, 'kept.png', 'webp'))).final;
  await expectError(await fetch(`${server.url}${other.download_url!.replace(/\.webp$/, '.png')}`, { method: 'DELETE' }), 404, 'file_not_found');
  assert.equal((await fetch(`${server.url}${other.download_url!}`)).status, 200);
});

test('metrics count the options applied, by name', async () => {
  await finished(await submitWith(png, 'm.png', 'jpg', [['quality', '50']]));
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const count = Number(/convertd_options_total\{name="quality"\} (\d+)/.exec(text)?.[1] ?? 0);
  assert.ok(count >= 1, text.split('\n').filter((l) => l.includes('options')).join('\n'));
});
