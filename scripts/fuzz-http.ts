// A fuzz run of the HTTP layer and the format sniffer: malformed multipart requests (missing or
// odd boundaries, duplicate and nameless parts, huge headers, file names with ../, NUL, 4000
// characters or bytes that are not UTF-8, truncated bodies, random content behind real magic
// bytes) and odd paths, sent over raw sockets. The service must answer each with a documented
// status (never 500) and stay up.
//
//   node scripts/fuzz-http.ts [--seconds 60] [--seed 1] [--url http://127.0.0.1:8080]
// Without --url it starts its own service (rate limits off) and stops it afterwards.
import net from 'node:net';
import { parseArgs } from 'node:util';

/** Statuses the contract documents, plus Node's own answers to broken HTTP (400, 431). */
export const ACCEPTABLE = new Set([200, 206, 400, 404, 405, 408, 410, 413, 415, 416, 422, 429, 431, 503, 507]);

/** A small deterministic generator (mulberry32), so that a failing run can be replayed by seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MAGIC = [
  Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from('GIF89a'), Buffer.from('PK\x03\x04'), Buffer.from('%PDF-1.7\n'),
  Buffer.from('%!PS-Adobe-3.0\n'), Buffer.from('#EXTM3U\n'), Buffer.from('\xff\xd8\xff\xe0', 'latin1'), Buffer.from('RIFF\0\0\0\0WEBP'),
  Buffer.from('<svg xmlns="http://www.w3.org/2000/svg">'), Buffer.from('7z\xbc\xaf\x27\x1c', 'latin1'), Buffer.from('OTTO'), Buffer.alloc(0),
];
const NAMES = ['file', 'target', 'file', 'x', '', '../file', 'FILE', 'file\0', 'target'];
const FILENAMES = [
  'a.png', '../../etc/passwd', 'a\0b.png', 'x'.repeat(4000) + '.png', Buffer.from([0xff, 0xfe, 0x41, 0x2e, 0x70, 0x6e, 0x67]).toString('latin1'),
  'con.png', '.png', '', 'a"b.png', 'ümlaut.jpg', 'a\r\nX-Injected: 1.png', 'dir\\..\\win.png',
];
const TARGETS = ['webp', 'PNG', '.jpg', '', 'x'.repeat(2000), '../../bin/sh', 'mp3', 'tar.gz', '\0', 'pdf'];

function pick<T>(next: () => number, list: readonly T[]): T {
  return list[Math.floor(next() * list.length)]!;
}

/** One malformed (or occasionally well-formed) request, as raw bytes. */
export function makeRequest(next: () => number): Buffer {
  const kind = next();
  if (kind < 0.15) {
    const path = pick(next, ['/api/progress/', '/api/download/', '/api/', '/api/formats/', '/', '/api/convert/']) +
      encodeURIComponent(Buffer.from(Array.from({ length: Math.floor(next() * 60) }, () => Math.floor(next() * 256))).toString('latin1'));
    const method = pick(next, ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS', 'PUT']);
    return Buffer.from(`${method} ${path} HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n`, 'latin1');
  }
  const boundary = pick(next, ['XB', 'x'.repeat(70), '--', 'a b', 'ünicode', '"quoted"', 'B'.repeat(200)]);
  const parts: Buffer[] = [];
  const count = Math.floor(next() * 5);
  for (let i = 0; i < count; i++) {
    const name = pick(next, NAMES);
    const isFile = next() < 0.6;
    const headers = [
      isFile ? `Content-Disposition: form-data; name="${name}"; filename="${pick(next, FILENAMES)}"` : `Content-Disposition: form-data; name="${name}"`,
    ];
    if (next() < 0.2) headers.push(`X-Big: ${'h'.repeat(Math.floor(next() * 100_000))}`);
    if (next() < 0.1) headers.length = 0;
    if (next() < 0.2) headers.push(headers[0] ?? 'Content-Disposition: form-data');
    const body = isFile
      ? Buffer.concat([pick(next, MAGIC), Buffer.from(Array.from({ length: Math.floor(next() * 3000) }, () => Math.floor(next() * 256)))])
      : Buffer.from(pick(next, TARGETS), 'latin1');
    const eol = next() < 0.1 ? '\n' : '\r\n';
    parts.push(Buffer.from(`--${boundary}${eol}${headers.join(eol)}${eol}${eol}`, 'latin1'), body, Buffer.from(eol));
  }
  if (next() < 0.8) parts.push(Buffer.from(`--${boundary}--\r\n`));
  let body = Buffer.concat(parts);
  if (next() < 0.2) body = body.subarray(0, Math.floor(next() * body.length));
  const contentType = pick(next, [
    `multipart/form-data; boundary=${boundary}`, 'multipart/form-data', `multipart/form-data; boundary="${boundary}"`,
    'application/json', '', `multipart/mixed; boundary=${boundary}`, `multipart/form-data; boundary=${boundary}; boundary=other`,
  ]);
  const length = next() < 0.1 ? body.length + Math.floor(next() * 100) - 50 : body.length;
  const head = `POST /api/convert HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n${contentType ? `Content-Type: ${contentType}\r\n` : ''}Content-Length: ${Math.max(0, length)}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** Sends raw bytes and resolves with the status code (0 when the connection ended without an answer). */
function send(port: number, request: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    let data = '';
    socket.setTimeout(3000, () => socket.destroy());
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      if (data.includes('\r\n')) socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0)));
  });
}

export interface FuzzReport {
  requests: number;
  byStatus: Record<number, number>;
  unacceptable: Array<{ status: number; request: string }>;
}

export async function fuzzHttp(port: number, options: { seed: number; iterations?: number; seconds?: number }): Promise<FuzzReport> {
  const next = random(options.seed);
  const deadline = Date.now() + (options.seconds ?? Infinity) * 1000;
  const report: FuzzReport = { requests: 0, byStatus: {}, unacceptable: [] };
  while (report.requests < (options.iterations ?? Infinity) && Date.now() < deadline) {
    const request = makeRequest(next);
    const status = await send(port, request);
    report.requests += 1;
    report.byStatus[status] = (report.byStatus[status] ?? 0) + 1;
    // 0: the connection closed without an answer, which Node does for requests too broken to parse.
    if (status !== 0 && !ACCEPTABLE.has(status)) {
      report.unacceptable.push({ status, request: request.subarray(0, 300).toString('latin1') });
    }
  }
  return report;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' }, seed: { type: 'string', default: '1' }, url: { type: 'string' } } });
  let stop = async () => undefined as unknown;
  let port: number;
  if (values.url) {
    port = Number(new URL(values.url).port);
  } else {
    const { startServer } = await import('../test/helpers/server.ts');
    const server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off' });
    port = server.port;
    stop = () => server.stop();
  }
  const report = await fuzzHttp(port, { seed: Number(values.seed), seconds: Number(values.seconds) });
  await stop();
  const statuses = Object.entries(report.byStatus).map(([status, n]) => `${status}:${n}`).join(' ');
  for (const bad of report.unacceptable.slice(0, 5)) console.log(`status ${bad.status} for:\n${JSON.stringify(bad.request)}`);
  console.log(`fuzz: ${report.requests} requests, statuses ${statuses}, ${report.unacceptable.length} unacceptable (seed ${values.seed})`);
  process.exitCode = report.unacceptable.length > 0 ? 1 : 0;
}

if (import.meta.main) await main();
