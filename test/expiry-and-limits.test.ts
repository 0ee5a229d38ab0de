// Expiry (410 from the instant of expiry, files gone within the sweep interval) and rate limits
// with the default numbers (20/minute on submissions, counted per client, exact under
// concurrency, /64 for IPv6, X-Forwarded-For only from a trusted proxy).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { convert, expectError, submit, type Limits } from './helpers/client.ts';
import { sampleImage } from './helpers/fixtures.ts';
import { startServer } from './helpers/server.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a result expires at creation + lifetime: 410 on download and progress, file deleted by the sweeper', async () => {
  const server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_FILE_LIFETIME_SECONDS: '2', CONVERTD_SWEEP_INTERVAL_SECONDS: '1' });
  try {
    const png = await sampleImage('png');
    const { record } = await convert(server.url, png, 'a.png', 'webp');
    const expiresAt = Date.parse(String(record.expires_at));
    assert.ok(expiresAt > Date.now(), 'expires_at lies in the future');
    const jobId = String(record.job_id);
    const results = path.join(server.dataDir, 'results');
    assert.equal((await fs.readdir(results)).length, 1);

    await sleep(Math.max(0, expiresAt - Date.now()) + 50);
    await expectError(await fetch(`${server.url}${record.download_url}`), 410, 'expired');
    await expectError(await fetch(`${server.url}/api/progress/${jobId}`), 410, 'expired');

    // The sweeper runs every second here: the file is gone soon after.
    await sleep(1500);
    assert.deepEqual(await fs.readdir(results), []);
    assert.deepEqual(await fs.readdir(path.join(server.dataDir, 'inputs')), [], 'the input went when the job ended');
    await expectError(await fetch(`${server.url}${record.download_url}`), 410, 'expired');
  } finally {
    await server.stop();
  }
});

test('a job polled up to its expiry answers 410 from that instant, before any sweep', async () => {
  // The sweeper is 60 s away: the answer must not rest on it (a polled job's answer is kept in
  // memory, and that copy must not outlive the job).
  const server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_FILE_LIFETIME_SECONDS: '2', CONVERTD_SWEEP_INTERVAL_SECONDS: '60' });
  try {
    const { record } = await convert(server.url, await sampleImage('png'), 'a.png', 'webp');
    const progressUrl = `${server.url}/api/progress/${String(record.job_id)}`;
    const expiresAt = Date.parse(String(record.expires_at));
    while (Date.now() < expiresAt - 200) {
      assert.deepEqual(await (await fetch(progressUrl)).json(), record, 'until it expires, a done job\'s answer stays the same');
      await sleep(100);
    }
    await sleep(Math.max(0, expiresAt - Date.now()) + 50);
    await expectError(await fetch(progressUrl), 410, 'expired');
    await expectError(await fetch(`${server.url}${record.download_url}`), 410, 'expired');
  } finally {
    await server.stop();
  }
});

test('rate limits: the 21st submission in a minute answers 429 with Retry-After and details', async () => {
  const server = await startServer(); // default limits: 20/minute, 200/hour, 1000/day
  try {
    const png = await sampleImage('png');
    // Fired all at once: the count must be exact under concurrency. Accepted or not, each counts.
    const responses = await Promise.all(Array.from({ length: 25 }, (_, i) =>
      submit(server.url, i % 5 === 0 ? Buffer.from('not an image') : png, 'a.png', 'webp')));
    const statuses = responses.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 429).length, 5, `statuses: ${statuses.join(',')}`);
    assert.equal(statuses.filter((s) => s !== 429).length, 20);

    for (const response of responses.filter((r) => r.status !== 429)) {
      assert.equal(response.headers.get('ratelimit-limit'), '20');
      assert.ok(Number(response.headers.get('ratelimit-remaining')) >= 0);
      assert.ok(Number(response.headers.get('ratelimit-reset')) > 0);
      await response.body?.cancel();
    }
    const limited = responses.find((r) => r.status === 429)!;
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(limited.headers.get('ratelimit-remaining'), '0');
    const body = await expectError(limited, 429, 'rate_limited');
    assert.equal(body.error.limit, 20);
    assert.equal(body.error.window_seconds, 60);
    assert.equal(body.error.retry_after_seconds, retryAfter);

    // Polling and the catalogue do not count against submissions.
    for (let i = 0; i < 30; i++) assert.equal((await fetch(`${server.url}/api/formats`)).status, 200);
    const limits = await (await fetch(`${server.url}/api/limits`)).json() as Limits;
    const windows = limits.rate_limits.filter((w) => w.applies_to === 'submissions');
    assert.deepEqual(windows.map((w) => [w.limit, w.window_seconds]), [[20, 60], [200, 3600], [1000, 86400]]);
    assert.equal(windows[0]!.remaining, 0);
    assert.equal(windows[1]!.remaining, 175);
  } finally {
    await server.stop();
  }
});

test('rate limits count per client: X-Forwarded-For from a trusted proxy, IPv6 by /64', async () => {
  const server = await startServer({ CONVERTD_RATE_LIMITS: '2/minute', CONVERTD_TRUSTED_PROXIES: '127.0.0.1' });
  const untrusted = await startServer({ CONVERTD_RATE_LIMITS: '2/minute' });
  try {
    const png = await sampleImage('png');
    const from = (base: string, address: string) => submit(base, png, 'a.png', 'webp', { 'x-forwarded-for': address });
    const codes = async (base: string, addresses: string[]) => {
      const out: number[] = [];
      for (const address of addresses) {
        const response = await from(base, address);
        await response.body?.cancel();
        out.push(response.status);
      }
      return out;
    };
    // Behind the trusted proxy each forwarded client has its own count.
    assert.deepEqual(await codes(server.url, ['203.0.113.5', '203.0.113.5', '203.0.113.5']), [200, 200, 429]);
    assert.deepEqual(await codes(server.url, ['203.0.113.6', '203.0.113.6']), [200, 200]);
    // Two addresses of one IPv6 /64 share a count; another /64 has its own.
    assert.deepEqual(await codes(server.url, ['2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:db8:1:2::abcd']), [200, 200, 429]);
    assert.deepEqual(await codes(server.url, ['2001:db8:1:3::1']), [200]);
    // The first untrusted address from the right counts, not one the client made up.
    assert.deepEqual(await codes(server.url, ['198.51.100.1, 203.0.113.5']), [429]);

    // Without a trusted proxy the header is ignored: every request is the socket's address.
    assert.deepEqual(await codes(untrusted.url, ['203.0.113.7', '203.0.113.8', '203.0.113.9']), [200, 200, 429]);
  } finally {
    await Promise.all([server.stop(), untrusted.stop()]);
  }
});

test('the other endpoints have their own, separate limit', async () => {
  const server = await startServer({ CONVERTD_READ_RATE_LIMITS: '5/minute' });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const response = await fetch(`${server.url}/api/formats`);
      await response.body?.cancel();
      statuses.push(response.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    const limited = await fetch(`${server.url}/api/progress/whatever`);
    assert.ok(Number(limited.headers.get('retry-after')) > 0);
    await expectError(limited, 429, 'rate_limited');
    // Submissions are counted apart.
    const png = await sampleImage('png');
    assert.equal((await submit(server.url, png, 'a.png', 'webp')).status, 200);
  } finally {
    await server.stop();
  }
});
