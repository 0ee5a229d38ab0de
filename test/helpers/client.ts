// A plain client written from the spec and the contract alone: fetch, FormData, Blob. The shapes
// it reads are typed with the service's own (src/wire/shapes.ts); what it checks is the contract's.
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import type { CatalogueEntry, ErrorBody, FormatList, Limits, ProgressRecord, SubmitAnswer } from '../../src/wire/shapes.ts';

export type { CatalogueEntry, ErrorBody, Limits, ProgressRecord, SubmitAnswer };

export async function submit(base: string, data: Uint8Array, filename: string, target: string | undefined, headers: Record<string, string> = {}): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([data]), filename);
  if (target !== undefined) form.append('target', target);
  return fetch(`${base}/api/convert`, { method: 'POST', body: form, headers });
}

/**
 * Sends a submission, and once more when the first found its kept-alive connection closed: the
 * service closed it for idling while this process was busy (a test that builds a 144-megapixel
 * picture blocks its event loop for seconds), so the request never went out whole and no job
 * exists. A browser sends it again on a new connection; so does this.
 */
export async function sendAgainIfClosed(send: () => Promise<Response>): Promise<Response> {
  return send().catch((error: Error & { cause?: { code?: string } }) => {
    if (error.cause?.code !== 'EPIPE') throw error;
    return send();
  });
}

/** Submits and returns the job id, failing the test on anything but 200 {ok:true}. */
export async function submitOk(base: string, data: Uint8Array, filename: string, target: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await sendAgainIfClosed(() => submit(base, data, filename, target, headers));
  const body = await response.json() as SubmitAnswer;
  assert.equal(response.status, 200, `submission refused: ${JSON.stringify(body)}`);
  assert.equal(body.ok, true);
  assert.match(body.job_id, /^[A-Za-z0-9_-]{22,}$/);
  return body.job_id;
}

/**
 * Submits an upload with conversion options, each a form part beside file and target as the
 * contract sends them; the raw answer (sent again if its kept-alive connection was closed).
 */
export async function submitWithOptions(base: string, data: Uint8Array, filename: string, target: string, options: Readonly<Record<string, string>>): Promise<Response> {
  return sendAgainIfClosed(() => {
    const form = new FormData();
    form.append('file', new Blob([data]), filename);
    form.append('target', target);
    for (const [name, value] of Object.entries(options)) form.append(name, value);
    return fetch(`${base}/api/convert`, { method: 'POST', body: form });
  });
}

/** A job with options to its end (done or error): its final record and the records polled on the way; a refused submission fails the test. */
export async function runWithOptions(base: string, data: Uint8Array, filename: string, target: string, options: Readonly<Record<string, string>> = {}, { timeoutMs = 180_000 } = {}): Promise<{ final: ProgressRecord; seen: ProgressRecord[] }> {
  const response = await submitWithOptions(base, data, filename, target, options);
  const body = await response.json() as SubmitAnswer;
  assert.equal(response.status, 200, `${filename} → ${target} ${JSON.stringify(options)}: ${JSON.stringify(body)}`);
  return waitForJob(base, body.job_id, { timeoutMs });
}

export async function progress(base: string, jobId: string): Promise<{ status: number; body: ProgressRecord }> {
  const response = await fetch(`${base}/api/progress/${jobId}`);
  return { status: response.status, body: await response.json() as ProgressRecord };
}

/** waitForJob's polling without `intervalMs`: soon at first, then less often as a job goes on. */
const FIRST_POLL_MS = 50;
const POLL_GROWTH = 1.5;
const LONGEST_POLL_MS = 300;

/**
 * Polls until done or error, as the spec's client flow does, checking on the way what a client
 * relies on: status only moves forward, progress is an integer that never goes down and is 100
 * exactly when done. Returns the final record and every record seen.
 *
 * `intervalMs` polls at that fixed pace (tests that count the figures seen on the way). Without it
 * the wait grows from 50 to 300 ms: a whole run polls some 7,500 jobs, most of them queued behind
 * others on a machine both lanes keep busy, and each poll costs the service and this process
 * about 1.4 ms of CPU (measured), which a fixed 100 ms spent on jobs that were still waiting.
 */
export async function waitForJob(base: string, jobId: string, { intervalMs, timeoutMs = 60_000 }: { intervalMs?: number; timeoutMs?: number } = {}): Promise<{ final: ProgressRecord; seen: ProgressRecord[] }> {
  let wait = intervalMs ?? FIRST_POLL_MS;
  const order = ['queued', 'running', 'done'];
  const seen: ProgressRecord[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, body } = await progress(base, jobId);
    assert.equal(status, 200, `progress answered ${status}: ${JSON.stringify(body)}`);
    const previous = seen.at(-1);
    if (previous) {
      if (body.status !== 'error') assert.ok(order.indexOf(body.status) >= order.indexOf(previous.status), `status went back from ${previous.status} to ${body.status}`);
      assert.ok((body.progress ?? 0) >= (previous.progress ?? 0), `progress went down from ${previous.progress} to ${body.progress}`);
    }
    if (body.progress !== undefined) {
      assert.ok(Number.isInteger(body.progress) && body.progress >= 0 && body.progress <= 100, `bad progress ${body.progress}`);
      assert.equal(body.progress === 100, body.status === 'done', `progress ${body.progress} with status ${body.status}`);
    }
    seen.push(body);
    if (body.status === 'done') recordPair(body);
    if (body.status === 'done' || body.status === 'error') return { final: body, seen };
    assert.ok(Date.now() < deadline, `job ${jobId} not finished after ${timeoutMs} ms: ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, wait));
    if (intervalMs === undefined) wait = Math.min(LONGEST_POLL_MS, wait * POLL_GROWTH);
  }
}

/**
 * Notes a pair some test converted, for `npm test`'s check that every pair /api/formats lists was
 * converted by a test (scripts/test.mjs sets the ledger's path; scripts/pair-coverage.ts reads it).
 */
function recordPair(record: ProgressRecord): void {
  const ledger = process.env.CONVERTD_PAIR_LEDGER;
  if (ledger && record.source && record.target) appendFileSync(ledger, `${record.source} ${record.target}\n`);
}

/** The catalogue: the `formats` of GET /api/formats. */
export async function fetchCatalogue(base: string): Promise<readonly CatalogueEntry[]> {
  const response = await fetch(`${base}/api/formats`);
  assert.equal(response.status, 200);
  return (await response.json() as FormatList).formats;
}

export async function download(base: string, downloadUrl: string): Promise<{ response: Response; bytes: Buffer }> {
  const response = await fetch(`${base}${downloadUrl}`);
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
}

/** Asserts the contract's error shape and code; returns the body. */
export async function expectError(response: Response, status: number, code: string): Promise<ErrorBody> {
  const text = await response.text();
  assert.equal(response.status, status, `expected ${status} ${code}, got ${response.status}: ${text}`);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json; charset=utf-8/);
  const body = JSON.parse(text) as ErrorBody;
  assert.equal(body.ok, false);
  assert.equal(body.error.code, code);
  assert.ok(body.error.message.length > 10, 'the message should tell the user what to do');
  return body;
}

/**
 * The whole client flow: submit, poll, download. `timeoutMs`: how long the job may take (waitForJob's
 * minute by default; more where a test queues jobs behind processes it makes the service restart).
 */
export async function convert(base: string, data: Uint8Array, filename: string, target: string, { timeoutMs }: { timeoutMs?: number } = {}): Promise<{ record: ProgressRecord; bytes: Buffer; response: Response }> {
  const jobId = await submitOk(base, data, filename, target);
  const { final } = await waitForJob(base, jobId, timeoutMs === undefined ? {} : { timeoutMs });
  assert.equal(final.status, 'done', `job failed: ${JSON.stringify(final.error)}`);
  assert.match(final.download_url ?? '', new RegExp(`^/api/download/[A-Za-z0-9_-]+\\.${target}$`));
  const { response, bytes } = await download(base, final.download_url!);
  assert.equal(response.status, 200);
  assert.equal(bytes.length, final.size, 'size in the progress record is the download\'s byte count');
  return { record: final, bytes, response };
}

/**
 * `work` for every item with at most `limit` in flight, results in the items' order: keeps a few
 * jobs queued behind the service's slots without queueing the whole list at once (a job waits
 * longer than waitForJob allows when dozens are submitted together on a loaded machine).
 */
export async function mapInFlight<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Sends `data` as `filename` to each target, a few jobs in flight at a time, and returns each job's final record. */
export async function finalsForTargets(base: string, data: Uint8Array, filename: string, targets: readonly string[], { inFlight = 6, timeoutMs = 60_000 } = {}): Promise<Array<{ target: string; final: ProgressRecord }>> {
  return mapInFlight(targets, inFlight, async (target) => {
    const jobId = await submitOk(base, data, filename, target);
    return { target, final: (await waitForJob(base, jobId, { timeoutMs })).final };
  });
}
