// Health, readiness and metrics, checked for their values after a known sequence of requests.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { convert, submitOk, waitForJob } from './helpers/client.ts';
import { noisePng, sampleImage } from './helpers/fixtures.ts';
import { startServer, type RunningServer } from './helpers/server.ts';

let server: RunningServer;
before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: '3/minute', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_LIBREOFFICE_POOL: '1', CONVERTD_LIBREOFFICE_START: 'eager' });
});
after(async () => {
  await server?.stop();
});

/** The value of one sample of the Prometheus text format, or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = /\{([^}]*)\}/.exec(line)?.[1] ?? '';
    const found = Object.fromEntries([...labelText.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(line.split(' ').at(-1));
  }
  return undefined;
}

test('/healthz answers while the process lives; /readyz lists its checks', async () => {
  const health = await fetch(`${server.url}/healthz`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: 'ok' });
  const ready = await fetch(`${server.url}/readyz`);
  const body = await ready.json() as { status: string; ready: boolean; checks: Record<string, { ok: boolean; [k: string]: unknown }> };
  assert.equal(ready.status, 200, JSON.stringify(body));
  assert.equal(body.status, 'ready');
  for (const name of ['store', 'disk', 'sandbox', 'queue', 'pool:libreoffice']) assert.equal(body.checks[name]?.ok, true, `${name}: ${JSON.stringify(body.checks[name])}`);
  assert.equal(body.checks['pool:libreoffice']!.alive, 1);
  assert.equal(body.checks.sandbox!.mode, 'bwrap');
});

test('/readyz answers 503 and names the failing check when the service cannot take jobs', async () => {
  const full = await startServer({ CONVERTD_QUEUE_LIMIT: '0', CONVERTD_LIBREOFFICE_START: 'lazy' });
  try {
    const response = await fetch(`${full.url}/readyz`);
    assert.equal(response.status, 503);
    const body = await response.json() as { status: string; checks: Record<string, { ok: boolean }> };
    assert.equal(body.status, 'not_ready');
    assert.equal(body.checks.queue!.ok, false);
    assert.equal(body.checks.store!.ok, true);
  } finally {
    await full.stop();
  }
});

test('/readyz while the service shuts down: 503 in the readiness shape, never a 500', async () => {
  const stopping = await startServer({ CONVERTD_LIBREOFFICE_START: 'lazy', CONVERTD_SHUTDOWN_GRACE_SECONDS: '30', CONVERTD_CONCURRENCY: '1' });
  // A job in progress keeps the process in its grace period. A request begun before the signal
  // (its headers half sent) is finished after it: the service answers it while shutting down.
  await submitOk(stopping.url, await noisePng(1400, 1000), 'slow.png', 'avif');
  const socket = net.connect(stopping.port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write('GET /readyz HTTP/1.1\r\nHost: test\r\n');
  let answer = '';
  socket.on('data', (chunk: Buffer) => { answer += chunk.toString('latin1'); });
  const exited = stopping.stop('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 700));
  socket.end('Connection: close\r\n\r\n');
  await once(socket, 'close');
  await exited;
  assert.match(answer, /^HTTP\/1\.1 503 /, answer.slice(0, 300));
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, '')) as { status: string; ready: boolean; checks: Record<string, { ok: boolean }> };
  assert.equal(body.status, 'not_ready');
  assert.equal(body.ready, false);
  assert.equal(body.checks.shutdown?.ok, false);
});

test('/metrics counts requests, jobs, bytes, refusals and reports the pool after a known sequence', { timeout: 120_000 }, async () => {
  const png = await sampleImage('png');
  const first = await convert(server.url, png, 'a.png', 'webp');
  const second = await convert(server.url, png, 'b.png', 'jpg');
  const broken = Buffer.concat([png.subarray(0, 40), Buffer.alloc(100, 1)]);
  const failedId = await submitOk(server.url, broken, 'broken.png', 'webp');
  assert.equal((await waitForJob(server.url, failedId)).final.error?.code, 'corrupt_input');
  // The fourth submission in a minute meets the limit of 3.
  const form = new FormData();
  form.append('file', new Blob([png]), 'd.png');
  form.append('target', 'gif');
  assert.equal((await fetch(`${server.url}/api/convert`, { method: 'POST', body: form })).status, 429);

  const response = await fetch(`${server.url}/metrics`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await response.text();
  assert.equal(sample(text, 'convertd_jobs_total', { status: 'done', engines: 'sharp' }), 2);
  assert.equal(sample(text, 'convertd_jobs_total', { status: 'error', code: 'corrupt_input' }), 1);
  assert.equal(sample(text, 'convertd_http_requests_total', { route: '/api/convert', method: 'POST', status: '200' }), 3);
  assert.equal(sample(text, 'convertd_http_requests_total', { route: '/api/convert', method: 'POST', status: '429' }), 1);
  assert.equal(sample(text, 'convertd_rate_limited_total', { kind: 'submissions' }), 1);
  assert.equal(sample(text, 'convertd_download_bytes_total'), first.bytes.length + second.bytes.length);
  assert.ok((sample(text, 'convertd_upload_bytes_total') ?? 0) >= 2 * png.length + broken.length);
  assert.equal(sample(text, 'convertd_conversion_seconds_count', { engines: 'sharp', family: 'image>image' }), 2);
  assert.equal(sample(text, 'convertd_queue_wait_seconds_count'), 3);
  assert.equal(sample(text, 'convertd_queue_depth'), 0);
  assert.equal(sample(text, 'convertd_pool_size', { pool: 'libreoffice' }), 1);
  assert.equal(sample(text, 'convertd_pool_restarts_total', { pool: 'libreoffice' }), 0);
  assert.ok((sample(text, 'convertd_data_disk_bytes', { kind: 'free' }) ?? 0) > 0);
  assert.ok((sample(text, 'convertd_process_resident_memory_bytes') ?? 0) > 0);
});
