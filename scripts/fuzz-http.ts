// A fuzz run of the HTTP layer and the format sniffer: malformed multipart requests (missing or
// odd boundaries, duplicate and nameless parts, huge headers, file names with ../, NUL, 4000
// characters or bytes that are not UTF-8, truncated bodies, random content behind real magic
// bytes), odd paths, and well-formed submissions of a real image whose conversion options are
// hostile (absurd sizes and ranges, wrong types, NUL bytes and newlines, 5 kB values, values shaped
// like engine arguments or paths, repeated names), sent over raw sockets. The service must answer
// each with a documented status (never 500) and stay up.
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

/** A real 4 × 3 PNG with transparency: a submission the service accepts, so that its options are what is tried. */
const TINY_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAYAAAC09K7GAAAAFUlEQVR4nGPkOiHXwIAEmBjQAIYAAEYoAXbi9YKDAAAAAElFTkSuQmCC', 'base64');
const OPTION_NAMES = [
  'quality', 'width', 'height', 'fit', 'strip', 'background', 'pixel_density', 'page_range', 'pdf_a', 'video_codec', 'crf', 'fps',
  'trim_start', 'trim_end', 'audio_codec', 'audio_bitrate', 'audio_frequency', 'audio_channels', 'sheet', 'delimiter', 'each',
  'compress', 'indent', 'toc', '__proto__', 'constructor', 'x'.repeat(90), 'wídth', '',
];
const OPTION_VALUES = [
  '1', '80', '0', '-1', '1000000', '16384', '99999999999999999999', '1e9', '0x10', 'NaN', 'Infinity', 'abc', 'true', 'max', 'crop', '#00ff00', 'red',
  '1-3', '1-999999999', '2-', '5-2', '1,'.repeat(2000), '00:00:01', '00:00:99', '999:00:00', 'h264', 'libx264', '-vf', '-i /etc/passwd',
  '../../etc/passwd', 'file:///etc/passwd', '; rm -rf /', '$(id)', '${HOME}', '%s%n', '\\0', '\u0000', 'a\nb', '\r\n--help', 'x'.repeat(5000), '', ' ',
  ',', ';', 'tab', 'png', 'pdf', 'zip', 'Sheet1',
];

/** A well-formed submission of a real image, with hostile conversion options. */
function optionsRequest(next: () => number): Buffer {
  const boundary = 'OptionsFuzz';
  const parts = [
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`),
    TINY_PNG,
    Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="target"\r\n\r\n${pick(next, ['png', 'jpg', 'webp', 'avif', 'gif', 'tiff', 'pdf', 'zip', 'bmp', 'ico'])}\r\n`),
  ];
  const count = 1 + Math.floor(next() * (next() < 0.05 ? 60 : 5));
  for (let i = 0; i < count; i++) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${pick(next, OPTION_NAMES)}"\r\n\r\n`, 'utf8'), Buffer.from(pick(next, OPTION_VALUES), 'utf8'), Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  const body = Buffer.concat(parts);
  const head = `POST /api/convert HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

function pick<T>(next: () => number, list: readonly T[]): T {
  return list[Math.floor(next() * list.length)]!;
}

/** One malformed (or occasionally well-formed) request, as raw bytes. */
export function makeRequest(next: () => number): Buffer {
  const kind = next();
  if (kind > 0.75) return optionsRequest(next);
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
