// The OpenAPI document at /api/openapi.json against the service's real answers: every operation is
// called, every status it answered must be documented for it, and every JSON body must validate
// against the documented schema (Ajv, JSON Schema 2020-12, as OpenAPI 3.1 uses). So the document
// cannot drift from what the routes do. It passes `redocly lint` with the recommended rules, offline.
// Also: the reference page at /docs is served offline.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { JOB_ERROR_CODES } from '../src/errors.ts';
import { ERROR_CODES } from '../src/wire/shapes.ts';
import { submit, submitOk, waitForJob } from './helpers/client.ts';
import { sampleImage } from './helpers/fixtures.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>;
  components: { schemas: Record<string, { properties?: Record<string, { properties?: Record<string, { enum?: string[] }> }> }> };
}

let server: RunningServer;
let doc: OpenApiDocument;
const DOC_ID = 'https://convertd.invalid/openapi.json';

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: '2/minute', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_LIBREOFFICE_START: 'lazy', CONVERTD_LIBREOFFICE_POOL: '1' });
  const response = await fetch(`${server.url}/api/openapi.json`);
  assert.equal(response.status, 200);
  doc = await response.json() as OpenApiDocument;
});
after(async () => {
  await server?.stop();
});

/** A JSON pointer fragment to a place in the document. */
function pointer(...segments: string[]): string {
  return `${DOC_ID}#${segments.map((s) => `/${encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))}`).join('')}`;
}

test('the document is OpenAPI 3.1, names every endpoint as the spec does, and lists every error code', () => {
  assert.equal(doc.openapi, '3.1.0');
  for (const path of ['/api/convert', '/api/progress/{job_id}', '/api/progress/{job_id}/events', '/api/download/{file}', '/api/formats', '/api/formats/{source}/{target}', '/api/limits', '/healthz', '/readyz', '/metrics']) {
    assert.ok(doc.paths[path], `${path} is documented`);
  }
  // The convert form names the option parts beside file and target, as the engines declare them.
  const form = (doc.paths['/api/convert']!.post as unknown as { requestBody: { content: Record<string, { schema: { properties: Record<string, { description: string }> } }> } })
    .requestBody.content['multipart/form-data']!.schema.properties;
  for (const name of ['file', 'target', 'quality', 'width', 'height', 'fit', 'strip', 'background']) assert.ok(form[name], `the convert form documents "${name}"`);
  assert.match(form.quality!.description, /integer/);
  // The one list of src/errors.ts, which the service throws from: every code, and no other.
  assert.deepEqual(doc.components.schemas.Error!.properties!.error!.properties!.code!.enum, ERROR_CODES);
  const jobCodes = (doc.components.schemas.ProgressRecord!.properties!.error as { properties: { code: { enum: string[] } } }).properties.code.enum;
  assert.deepEqual(jobCodes, [...JOB_ERROR_CODES]);
});

test('real answers of every operation match the document', { timeout: 120_000 }, async () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ ...doc, $id: DOC_ID } as object);
  const exercised = new Set<string>();
  const check = async (method: string, path: string, response: Response) => {
    const operation = doc.paths[path]?.[method.toLowerCase()];
    assert.ok(operation, `${method} ${path} is documented`);
    const documented = operation.responses[String(response.status)];
    assert.ok(documented, `${method} ${path} answered ${response.status}, which the document does not list`);
    exercised.add(`${method} ${path}`);
    const type = (response.headers.get('content-type') ?? '').split(';')[0]!;
    if (type !== 'application/json') {
      await response.arrayBuffer();
      return;
    }
    assert.ok(documented.content?.['application/json'], `${method} ${path} ${response.status} answered JSON, documented as ${Object.keys(documented.content ?? {}).join(', ')}`);
    const body: unknown = await response.json();
    const valid = ajv.validate({ $ref: pointer('paths', path, method.toLowerCase(), 'responses', String(response.status), 'content', 'application/json', 'schema') }, body);
    assert.ok(valid, `${method} ${path} ${response.status}: ${ajv.errorsText()} in ${JSON.stringify(body).slice(0, 300)}`);
  };

  const png = await sampleImage('png');
  await check('POST', '/api/convert', await submit(server.url, png, 'a.png', 'webp').then((r) => r.clone()));
  const jobId = await submitOk(server.url, png, 'b.png', 'jpg');
  await check('POST', '/api/convert', await submit(server.url, png, 'c.png', 'jpg')); // 429: the limit is 2 a minute
  const { final } = await waitForJob(server.url, jobId);
  await check('GET', '/api/progress/{job_id}', await fetch(`${server.url}/api/progress/${jobId}`));
  await check('GET', '/api/progress/{job_id}', await fetch(`${server.url}/api/progress/nosuchjobnosuchjobnosuch`));
  await check('GET', '/api/progress/{job_id}/events', await fetch(`${server.url}/api/progress/${jobId}/events`));
  await check('GET', '/api/progress/{job_id}/events', await fetch(`${server.url}/api/progress/nosuchjobnosuchjobnosuch/events`));
  await check('GET', '/api/download/{file}', await fetch(`${server.url}${final.download_url}`));
  await check('HEAD', '/api/download/{file}', await fetch(`${server.url}${final.download_url}`, { method: 'HEAD' }));
  await check('GET', '/api/download/{file}', await fetch(`${server.url}${final.download_url}`, { headers: { range: 'bytes=0-9' } }));
  await check('GET', '/api/download/{file}', await fetch(`${server.url}${final.download_url}`, { headers: { range: 'bytes=99999999-' } }));
  await check('GET', '/api/download/{file}', await fetch(`${server.url}/api/download/nosuchtokennosuchtokennosuchtoken.jpg`));
  await check('GET', '/api/formats', await fetch(`${server.url}/api/formats`));
  await check('GET', '/api/formats/{source}/{target}', await fetch(`${server.url}/api/formats/png/jpg`));
  await check('GET', '/api/formats/{source}/{target}', await fetch(`${server.url}/api/formats/png/nonsense`));
  await check('DELETE', '/api/download/{file}', await fetch(`${server.url}${final.download_url}`, { method: 'DELETE' }));
  await check('DELETE', '/api/download/{file}', await fetch(`${server.url}${final.download_url}`, { method: 'DELETE' }));
  await check('DELETE', '/api/download/{file}', await fetch(`${server.url}/api/download/nosuchtokennosuchtokennosuchtoken.jpg`, { method: 'DELETE' }));
  await check('GET', '/api/limits', await fetch(`${server.url}/api/limits`));
  await check('GET', '/healthz', await fetch(`${server.url}/healthz`));
  await check('GET', '/readyz', await fetch(`${server.url}/readyz`));
  await check('GET', '/metrics', await fetch(`${server.url}/metrics`));

  // A fresh server for the submission errors (the limit above is spent).
  const errors = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_MAX_FILE_BYTES: '1000', CONVERTD_LIBREOFFICE_START: 'lazy', CONVERTD_LIBREOFFICE_POOL: '1' });
  try {
    const post = (body: string, headers: Record<string, string> = {}) => fetch(`${errors.url}/api/convert`, { method: 'POST', body, headers });
    await check('POST', '/api/convert', await post('not a form', { 'content-type': 'text/plain' }));
    await check('POST', '/api/convert', await submit(errors.url, png, 'big.png', 'webp'));
    await check('POST', '/api/convert', await submit(errors.url, Buffer.from('words'), 'a.png', 'webp'));
    await check('POST', '/api/convert', await submit(errors.url, png.subarray(0, 900), 'a.png', 'mp3'));
  } finally {
    await errors.stop();
  }
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const method of Object.keys(methods)) assert.ok(exercised.has(`${method.toUpperCase()} ${path}`), `${method.toUpperCase()} ${path} was never called`);
  }
});

/** Lints the document with redocly's recommended rules, offline; resolves with every problem found. */
async function redoclyLint(document: unknown): Promise<{ totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }> }> {
  // Its own directory: no redocly.yaml or ignore file of anyone's can change the rules.
  const dir = await tempDir('convertd-openapi-');
  await fs.writeFile(path.join(dir, 'openapi.json'), JSON.stringify(document));
  // Telemetry off (it is on by default) and no update check. And a trap: redocly sends its requests
  // through HTTP(S)_PROXY, so any it tried would reach this listener instead of the network.
  let connections = 0;
  const trap = net.createServer((socket) => { connections++; socket.destroy(); });
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
  const proxy = `http://127.0.0.1:${(trap.address() as net.AddressInfo).port}`;
  try {
    const redocly = path.resolve('node_modules', '.bin', 'redocly');
    const run = await promisify(execFile)(process.execPath, [redocly, 'lint', '--extends=recommended', '--format=json', 'openapi.json'], {
      cwd: dir,
      env: {
        ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
        HTTPS_PROXY: proxy, HTTP_PROXY: proxy, https_proxy: proxy, http_proxy: proxy, NO_PROXY: '', no_proxy: '',
      },
    }).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? '', stderr: error.stderr ?? '' })); // exit code 1: it found errors
    await new Promise((resolve) => setTimeout(resolve, 200)); // a connection made just before it exited is counted by now
    assert.equal(connections, 0, 'redocly tried to reach the network');
    try {
      return JSON.parse(run.stdout);
    } catch {
      assert.fail(`redocly gave no report: ${run.stderr}`);
    }
  } finally {
    trap.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

test('the document passes redocly lint with its recommended rules: no error, no warning', { timeout: 60_000 }, async () => {
  const { totals, problems } = await redoclyLint(doc);
  const list = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} (${p.location.map((l) => l.pointer).join(', ')})`).join('\n');
  assert.deepEqual({ errors: totals.errors, warnings: totals.warnings }, { errors: 0, warnings: 0 }, list);
});

test('the reference page at /docs is served by the service itself, with a CSP', async () => {
  const page = await fetch(`${server.url}/docs/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-security-policy') ?? '', /default-src/);
  const html = await page.text();
  for (const src of [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)) {
    assert.ok(!/^https?:/.test(src), `the page loads ${src} from elsewhere`);
    const asset = await fetch(new URL(src, `${server.url}/docs/`));
    assert.equal(asset.status, 200, `${src} is served`);
  }
});
