// Every rejection the contract defines, with its status, code, details and headers, plus the
// download headers, HEAD and Range. One server with a small upload limit so that 413 is cheap.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { convert, expectError, fetchCatalogue, submit, submitOk, waitForJob, type Limits, type SubmitAnswer } from './helpers/client.ts';
import { sampleImage } from './helpers/fixtures.ts';
import { startServer, type RunningServer } from './helpers/server.ts';

const MAX = 1024 * 1024;
let server: RunningServer;
let png: Buffer;

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_MAX_FILE_BYTES: String(MAX) });
  png = await sampleImage('png');
});
after(async () => {
  await server.stop();
});

/** Sends raw bytes and returns status and body: for requests fetch will not make. */
function rawRequest(port: number, head: string, body: Buffer | string = ''): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      // The whole request, without half-closing: the answer comes on the open connection.
      socket.write(head);
      socket.write(body);
    });
    let data = '';
    socket.setEncoding('latin1').on('data', (chunk) => { data += chunk; });
    socket.on('error', reject);
    socket.on('close', () => {
      const [headText = '', ...rest] = data.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = headText.split('\r\n');
      const headers: http.IncomingHttpHeaders = {};
      for (const line of headerLines) {
        const index = line.indexOf(':');
        headers[line.slice(0, index).toLowerCase()] = line.slice(index + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}

test('a successful submission answers 200 {ok:true, job_id} and the job is queued or further', async () => {
  const response = await submit(server.url, png, 'a.png', 'webp');
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json; charset=utf-8/);
  const body = await response.json() as SubmitAnswer;
  assert.deepEqual(Object.keys(body).sort(), ['job_id', 'ok']);
  assert.equal(body.ok, true);
  // at least 128 random bits, URL-safe
  assert.ok(Buffer.from(body.job_id, 'base64url').length >= 16);
  const { final, seen } = await waitForJob(server.url, body.job_id);
  assert.equal(final.status, 'done');
  assert.ok(['queued', 'running', 'done'].includes(seen[0]!.status));
});

test('400 invalid_request: a body that is not multipart', async () => {
  const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body: JSON.stringify({ file: 'x', target: 'png' }), headers: { 'content-type': 'application/json' } });
  await expectError(response, 400, 'invalid_request');
  const empty = await fetch(`${server.url}/api/convert`, { method: 'POST' });
  await expectError(empty, 400, 'invalid_request');
});

test('400 invalid_request: a malformed or truncated multipart body', async () => {
  const truncated = '--XB\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nabcdef';
  const result = await rawRequest(server.port,
    `POST /api/convert HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=XB\r\nContent-Length: ${truncated.length}\r\nConnection: close\r\n\r\n`, truncated);
  assert.equal(result.status, 400);
  assert.equal(JSON.parse(result.body).error.code, 'invalid_request');

  const noBoundary = await fetch(`${server.url}/api/convert`, { method: 'POST', body: 'hello', headers: { 'content-type': 'multipart/form-data' } });
  await expectError(noBoundary, 400, 'invalid_request');
});

test('400 invalid_request: two file parts', async () => {
  const form = new FormData();
  form.append('file', new Blob([png]), 'a.png');
  form.append('file', new Blob([png]), 'b.png');
  form.append('target', 'webp');
  await expectError(await fetch(`${server.url}/api/convert`, { method: 'POST', body: form }), 400, 'invalid_request');
});

test('400 missing_file: no file part, or an empty file', async () => {
  const form = new FormData();
  form.append('target', 'webp');
  await expectError(await fetch(`${server.url}/api/convert`, { method: 'POST', body: form }), 400, 'missing_file');
  await expectError(await submit(server.url, new Uint8Array(0), 'empty.png', 'webp'), 400, 'missing_file');
});

test('400 missing_target: no target part, or an empty one', async () => {
  await expectError(await submit(server.url, png, 'a.png', undefined), 400, 'missing_target');
  await expectError(await submit(server.url, png, 'a.png', '   '), 400, 'missing_target');
});

test('413 file_too_large with max_bytes, whether or not the length was announced', async () => {
  const big = Buffer.alloc(MAX + 1, 7);
  const body = await expectError(await submit(server.url, big, 'big.png', 'webp'), 413, 'file_too_large');
  assert.equal(body.error.max_bytes, MAX);

  // Chunked, no Content-Length: the service must notice while streaming and answer before the
  // client has sent everything (the client here would send 64 MiB).
  const answer = await new Promise<{ status: number; sentBytes: number; text: string }>((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port: server.port, method: 'POST', path: '/api/convert', headers: { 'content-type': 'multipart/form-data; boundary=XB' } });
    let sent = 0;
    let answered = false;
    request.on('response', (response) => {
      answered = true;
      let text = '';
      response.setEncoding('utf8').on('data', (d) => { text += d; });
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, sentBytes: sent, text }); request.destroy(); });
    });
    request.on('error', (error) => { if (!answered) reject(error); });
    request.write('--XB\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n');
    const chunk = Buffer.alloc(64 * 1024, 1);
    const pump = () => {
      while (!answered && sent < 64 * 1024 * 1024) {
        sent += chunk.length;
        if (!request.write(chunk)) { request.once('drain', pump); return; }
      }
    };
    pump();
  });
  assert.equal(answer.status, 413);
  assert.equal(JSON.parse(answer.text).error.code, 'file_too_large');
  assert.ok(answer.sentBytes < 64 * 1024 * 1024, `the answer came only after the whole body (${answer.sentBytes} bytes)`);
  // Nothing of the refused upload stays on disk.
  const { readdir } = await import('node:fs/promises');
  assert.deepEqual(await readdir(`${server.dataDir}/uploads`), []);
});

test('415 unsupported_format: content no engine reads, whatever its name', async () => {
  await expectError(await submit(server.url, Buffer.from('just some words\n'), 'notes.png', 'webp'), 415, 'unsupported_format');
  // A file with a signature the service knows but no engine reads (an SQLite database).
  const sqlite = Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(84)]);
  const body = await expectError(await submit(server.url, sqlite, 'data.png', 'webp'), 415, 'unsupported_format');
  assert.equal(body.error.detected, 'sqlite');
});

test('422 unsupported_target: with the source and the valid targets', async () => {
  const body = await expectError(await submit(server.url, png, 'a.png', 'mp3'), 422, 'unsupported_target');
  assert.equal(body.error.source, 'png');
  const catalogue = await fetchCatalogue(server.url);
  assert.deepEqual(body.error.targets, catalogue.find((f) => f.id === 'png')!.targets, 'the valid targets are the catalogue\'s');
  assert.ok((body.error.targets as string[]).includes('webp'));
  // A format is its own target only where that does something (a PNG resized, an SVG made plain):
  // a DXF has no such edge (Inkscape would write its outlines and drop its text), so converting
  // it to DXF is not a conversion.
  assert.ok((body.error.targets as string[]).includes('png'), 'png → png (resized, re-encoded) is listed');
  const dxf = Buffer.from(['0', 'SECTION', '2', 'ENTITIES', '0', 'LINE', '8', '0', '10', '0', '20', '0', '11', '10', '21', '10', '0', 'ENDSEC', '0', 'EOF', ''].join('\n'));
  const own = await expectError(await submit(server.url, dxf, 'a.dxf', 'dxf'), 422, 'unsupported_target');
  assert.equal(own.error.source, 'dxf');
  assert.ok(!(own.error.targets as string[]).includes('dxf'));
});

test('404 job_not_found for an unknown job id', async () => {
  await expectError(await fetch(`${server.url}/api/progress/nosuchjobnosuchjob123`), 404, 'job_not_found');
});

test('404 file_not_found for an unknown token and for a real token with a wrong extension', async () => {
  await expectError(await fetch(`${server.url}/api/download/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.webp`), 404, 'file_not_found');
  await expectError(await fetch(`${server.url}/api/download/../../etc/passwd`), 404, 'not_found');
  const { record } = await convert(server.url, png, 'a.png', 'webp');
  const wrong = record.download_url!.replace(/\.webp$/, '.png');
  await expectError(await fetch(`${server.url}${wrong}`), 404, 'file_not_found');
});

test('unknown paths under /api answer 404 not_found in JSON', async () => {
  await expectError(await fetch(`${server.url}/api/nothing/here`), 404, 'not_found');
  await expectError(await fetch(`${server.url}/api`), 404, 'not_found');
});

test('a wrong method answers 405 method_not_allowed with Allow', async () => {
  const cases: Array<[string, string, string]> = [
    ['GET', '/api/convert', 'POST'],
    ['DELETE', '/api/formats', 'GET, HEAD'],
    ['POST', '/api/limits', 'GET, HEAD'],
    ['PUT', '/api/progress/abc', 'GET, HEAD'],
    ['PUT', '/api/download/abc.png', 'DELETE, GET, HEAD'],
  ];
  for (const [method, path, allow] of cases) {
    const response = await fetch(`${server.url}${path}`, { method });
    assert.equal(response.headers.get('allow'), allow, `${method} ${path}`);
    await expectError(response, 405, 'method_not_allowed');
  }
});

test('downloads: type, attachment, nosniff, CSP, HEAD and byte ranges', async () => {
  const { record, bytes, response } = await convert(server.url, png, 'picture.png', 'webp');
  assert.equal(response.headers.get('content-type'), 'image/webp');
  assert.equal(response.headers.get('content-length'), String(bytes.length));
  assert.match(response.headers.get('content-disposition') ?? '', /^attachment; filename="?picture\.webp"?/);
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
  assert.match(response.headers.get('content-security-policy') ?? '', /default-src 'none'.*sandbox/);
  assert.equal(response.headers.get('accept-ranges'), 'bytes');

  const head = await fetch(`${server.url}${record.download_url}`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-length'), String(bytes.length));
  assert.equal((await head.arrayBuffer()).byteLength, 0);

  const part = await fetch(`${server.url}${record.download_url}`, { headers: { range: 'bytes=2-9' } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), `bytes 2-9/${bytes.length}`);
  assert.deepEqual(Buffer.from(await part.arrayBuffer()), bytes.subarray(2, 10));

  const suffix = await fetch(`${server.url}${record.download_url}`, { headers: { range: 'bytes=-4' } });
  assert.equal(suffix.status, 206);
  assert.deepEqual(Buffer.from(await suffix.arrayBuffer()), bytes.subarray(bytes.length - 4));

  const beyond = await fetch(`${server.url}${record.download_url}`, { headers: { range: `bytes=${bytes.length + 10}-` } });
  assert.equal(beyond.headers.get('content-range'), `bytes */${bytes.length}`);
  await expectError(beyond, 416, 'range_not_satisfiable');
});

test('the progress record of a failed job carries error {code, message}', async () => {
  // A PNG signature followed by garbage: recognised as PNG, impossible to decode.
  const broken = Buffer.concat([png.subarray(0, 33), Buffer.alloc(200, 0x41)]);
  const jobId = await submitOk(server.url, broken, 'broken.png', 'webp');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.status, 'error');
  assert.equal(final.error?.code, 'corrupt_input');
  assert.ok((final.error?.message.length ?? 0) > 10);
  assert.equal(final.download_url, undefined);
});

test('the formats and limits endpoints have the contract\'s shapes', async () => {
  for (const entry of await fetchCatalogue(server.url)) {
    assert.deepEqual(Object.keys(entry).sort(), ['category', 'extensions', 'id', 'media_type', 'name', 'targets']);
  }
  const limits = await (await fetch(`${server.url}/api/limits`)).json() as Limits;
  assert.equal(limits.max_file_size_bytes, MAX);
  assert.equal(limits.file_lifetime_seconds, 1800);
  assert.ok(Array.isArray(limits.rate_limits));
});

test('/api/formats lists what README and docs/formats.md say: the same formats with the same targets', async () => {
  // The docs are generated from the engines' declarations; the service lists what passed its
  // probes. On a machine set up by the README's commands the two must agree.
  const { formatRows } = await import('../scripts/formats-table.ts');
  const listed = (await fetchCatalogue(server.url)).map((entry) => ({ id: entry.id, targets: [...entry.targets] }));
  assert.deepEqual(listed, formatRows().map((row) => ({ id: row.format.id, targets: [...row.targets] })));
});

test('the README\'s example client converts a PNG to WebP against the running service', async () => {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const { writeFile } = await import('node:fs/promises');
  const { tempDir } = await import('./helpers/server.ts');
  const { fileMime } = await import('./helpers/tools.ts');
  const dir = await tempDir();
  await writeFile(`${dir}/photo.png`, png);
  const { stdout } = await promisify(execFile)(process.execPath, ['examples/convert.mjs', `${dir}/photo.png`, 'webp', server.url]);
  assert.equal(stdout.trim(), `${dir}/photo.webp`);
  assert.equal(fileMime(`${dir}/photo.webp`), 'image/webp');
});

test('structured logs: one JSON line per request and per job transition, never a download token', async () => {
  const { record } = await convert(server.url, png, 'logged.png', 'webp');
  const jobId = String(record.job_id);
  const token = record.download_url!.split('/').pop()!.split('.')[0]!;
  await new Promise((resolve) => setTimeout(resolve, 100));
  const entries = server.logs.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
  // By time: with separate API and worker processes the lines arrive on two pipes.
  const events = entries.filter((e) => e.job_id === jobId && e.event).sort((a, b) => Number(a.time) - Number(b.time)).map((e) => e.event);
  assert.deepEqual(events, ['job_queued', 'job_running', 'job_done']);
  const requests = entries.filter((e) => e.msg === 'request');
  assert.ok(requests.every((e) => typeof e.reqId === 'string'), 'every request line has its request id');
  assert.ok(requests.some((e) => e.route === '/api/convert' && e.status === 200 && typeof e.ms === 'number' && e.job_id === jobId),
    'the submission\'s line names the job it created');
  assert.ok(requests.some((e) => e.route === '/api/download/:file' && e.status === 200));
  assert.ok(!server.logs.some((line) => line.includes(token)), 'a download token reached the logs');
});
