// HTML through headless Chromium (issue #31): every pair whose route /api/formats gives through the
// chromium engine (html → pdf, png, jpg, webp, and on from its PDF; the e-mail engine's pages)
// converts through the HTTP API, and each output is checked by tools that are not Chromium:
// pdfinfo (page size, orientation, count), pdftotext (the words, Japanese, Chinese and Arabic in
// the text layer), pdffonts (the fonts embedded), pdftoppm and Pillow (pixels where the HTML put
// coloured boxes: a CSS grid and a flexbox only a browser places, backgrounds, margins; glyphs
// that are not the "missing glyph" box). Options: page_size, landscape, margin, print_background,
// page_range, the page's own @page size, width, height, full_page, quality, javascript.
// Hostile pages (docs/security.md#chromium): file:// through iframe, object, embed, FILE:, a
// \\localhost path and a meta refresh; http:// images, style sheets, fonts, frames; with JavaScript
// on, fetch, XHR, a WebSocket and navigations; a script that never ends (a clean timeout, and the
// next job converts), a print of thousands of pages (the page cap). A local HTTP server counts
// every request: it must get none, and no output may hold /etc/passwd's first line. The same
// pages go to the engine's helper run outside the sandbox too, so that the browser's own
// interception is shown to hold without bubblewrap's help. And the node pools' options the engine
// relies on (recycling after maxJobsPerProcess, a module's own health check) against a fake module.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { unzipSync } from 'fflate';
import { pino } from 'pino';
import { createNodePool } from '../src/process/pool/node-program.ts';
import { convert, download, fetchCatalogue, mapInFlight, runWithOptions, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { DocumentReader } from './helpers/document-reader.ts';
import { BODY, recall, wordsOf } from './helpers/documents.ts';
import { outlookMessage } from './helpers/outlook-message.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { toolEnv } from './helpers/tools.ts';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORDS = wordsOf(BODY);
const JAPANESE = '会議の議事録';
const CHINESE = '我们的河流很安静';
const ARABIC = 'النهر هادئ';
/** The engine's time limit in this service: a script that never ends is stopped within it. */
const CHROMIUM_SECONDS = 30;
/**
 * The limit in a second service, for the pages that run into it (a script that never ends, a print
 * of 10,000 pages): each keeps a core busy until it ends, 27 s of CPU a page under the main
 * service's limit. The main one keeps 30 s for every other page on a busy machine.
 */
const SHORT_CHROMIUM_SECONDS = 10;
const PIXEL_CAP = 10_000_000;
const PICTURES = new Set(['png', 'jpg', 'webp', 'tiff']);
const PASSWD = 'root:x:0:0';

let server: RunningServer;
/** The service with the short Chromium limit (SHORT_CHROMIUM_SECONDS). */
let limited: RunningServer;
let catalogue: readonly CatalogueEntry[];
let work: string;
let beacon: http.Server;
let remote: string;
const requests: string[] = [];
const reader = new DocumentReader();

/** The page most tests render: a grid of three boxes, a flexbox pushing one to the right edge, text in four scripts. */
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Quokkabird</title><style>
  html, body { margin: 0; padding: 0; }
  body { font: 16px 'DejaVu Sans', sans-serif; }
  .grid { display: grid; grid-template-columns: repeat(3, 100px); grid-auto-rows: 100px; }
  .red { background: #ff0000; } .green { background: #00c000; } .blue { background: #0000ff; }
  .flex { display: flex; justify-content: flex-end; height: 100px; }
  .flex div { width: 100px; background: #ff00ff; }
</style></head><body>
<div class="grid"><div class="red"></div><div class="green"></div><div class="blue"></div></div>
<div class="flex"><div></div></div>
<p>${BODY}</p>
<p lang="ja">${JAPANESE}</p><p lang="zh-Hans">${CHINESE}</p><p lang="ar" dir="rtl">${ARABIC}</p>
</body></html>`;

/** Reads pixels at absolute positions (and the image's size) with Pillow. */
async function pixels(file: string, points: ReadonlyArray<readonly [number, number]>): Promise<{ width: number; height: number; format: string; pixels: number[][] }> {
  const { stdout } = await execFileAsync('/usr/bin/python3', ['-c', `
import json, sys
from PIL import Image
image = Image.open(sys.argv[1])
rgb = image.convert('RGB')
points = json.loads(sys.argv[2])
print(json.dumps({'width': image.width, 'height': image.height, 'format': image.format,
  'pixels': [list(rgb.getpixel((min(x, image.width - 1), min(y, image.height - 1)))) for x, y in points]}))`, file, JSON.stringify(points)], { env: toolEnv });
  return JSON.parse(stdout) as { width: number; height: number; format: string; pixels: number[][] };
}

/** Whether an RGB pixel is near a colour (JPEG and WebP shift colours a little). */
function near(pixel: readonly number[] | undefined, colour: readonly number[], tolerance = 40): boolean {
  return pixel !== undefined && pixel.every((value, index) => Math.abs(value - colour[index]!) <= tolerance);
}

const RED = [255, 0, 0];
const GREEN = [0, 192, 0];
const BLUE = [0, 0, 255];
const MAGENTA = [255, 0, 255];
const WHITE = [255, 255, 255];

/** The PDF's first page rendered by poppler at 96 dpi: one pixel per CSS pixel. */
async function pageImage(pdf: string, page = 1): Promise<string> {
  const prefix = pdf.replace(/\.pdf$/, `-page${page}`);
  await execFileAsync('pdftoppm', ['-r', '96', '-f', String(page), '-l', String(page), '-singlefile', '-png', pdf, prefix], { env: toolEnv });
  return `${prefix}.png`;
}

async function pdfInfo(file: string): Promise<{ pages: number; width: number; height: number }> {
  const { stdout } = await execFileAsync('pdfinfo', [file], { env: toolEnv });
  const size = /Page size:\s*([\d.]+) x ([\d.]+) pts/.exec(stdout)!;
  return { pages: Number(/Pages:\s*(\d+)/.exec(stdout)![1]), width: Number(size[1]), height: Number(size[2]) };
}

async function pdfText(file: string): Promise<string> {
  return (await execFileAsync('pdftotext', ['-enc', 'UTF-8', file, '-'], { env: toolEnv })).stdout;
}

/** Converts `html` with options and writes the result; fails the test unless the job is done. */
async function render(html: string, target: string, options: Record<string, string> = {}, name = 'page', on: RunningServer = server): Promise<string> {
  const { final } = await runWithOptions(on.url, Buffer.from(html), `${name}.html`, target, options, { timeoutMs: 180_000 });
  assert.equal(final.status, 'done', `${name} → ${target} ${JSON.stringify(options)}: ${JSON.stringify(final.error)}`);
  const { bytes } = await download(on.url, final.download_url!);
  const file = path.join(work, `${name}-${Object.entries(options).map(([k, v]) => `${k}=${v}`).join('-') || 'default'}.${target}`);
  await fs.writeFile(file, bytes);
  return file;
}

function emlSample(): Buffer {
  const html = `<html><body><p>${BODY}</p><p>${JAPANESE}</p></body></html>`;
  return Buffer.from([
    'From: Quokka Sender <sender@example.org>', 'To: reader@example.org', 'Subject: Quokkabird report',
    'Date: Tue, 03 Nov 2026 10:00:00 +0000', 'MIME-Version: 1.0', 'Content-Type: multipart/alternative; boundary="alt"', '',
    '--alt', 'Content-Type: text/plain; charset=utf-8', '', `${BODY} ${JAPANESE}`,
    '--alt', 'Content-Type: text/html; charset=utf-8', '', html, '--alt--', '',
  ].join('\r\n'));
}

function mboxSample(): Buffer {
  return Buffer.from([
    'From sender@example.org Tue Nov  3 10:00:00 2026', 'From: Quokka Sender <sender@example.org>', 'To: reader@example.org',
    'Subject: Quokkabird report', 'Date: Tue, 03 Nov 2026 10:00:00 +0000', 'Content-Type: text/plain; charset=utf-8', '', BODY, '',
  ].join('\n'));
}

const SAMPLES: Record<string, () => Buffer> = {
  html: () => Buffer.from(PAGE),
  eml: emlSample,
  mbox: mboxSample,
  msg: () => outlookMessage({
    subject: 'Quokkabird report', senderName: 'Quokka Sender', senderAddress: 'sender@example.org',
    to: [{ name: 'Reader', address: 'reader@example.org' }], date: new Date('2026-11-03T10:00:00Z'),
    body: BODY, html: `<html><body><p>${BODY}</p></body></html>`,
  }),
};

/** A data directory of a path of 72 bytes or more, in a directory the engines' user may pass through. */
async function longDataDirectory(): Promise<string> {
  const parent = await tempDir();
  await fs.chmod(parent, 0o711);
  return path.join(parent, 'a-data-directory-of-a-service-whose-path-is-long');
}

before(async () => {
  beacon = http.createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    response.setHeader('Content-Type', 'text/plain');
    response.end(PASSWD);
  });
  beacon.on('upgrade', (request, socket) => {
    requests.push(`UPGRADE ${request.url}`);
    socket.destroy();
  });
  await new Promise<void>((resolve) => beacon.listen(0, '127.0.0.1', resolve));
  remote = `http://127.0.0.1:${(beacon.address() as AddressInfo).port}`;
  [server, work] = await Promise.all([
    startServer({
      CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '2',
      CONVERTD_ENGINE_TIMEOUTS: `chromium=${CHROMIUM_SECONDS}`, CONVERTD_MAX_IMAGE_PIXELS: String(PIXEL_CAP),
      // Browsers recycled often here, so that the run goes through several.
      CONVERTD_CHROMIUM_MAX_JOBS: '12',
    // A data directory deeper than a Unix socket's path allows below it (107 bytes): Chromium's
    // singleton socket once went there, and the engine failed its probe under such a directory.
    }, await longDataDirectory()),
    tempDir('convertd-chromium-'),
  ]);
  // Started once the first is up (both probing at once would only slow each).
  limited = await startServer({
    CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_ENGINE_TIMEOUTS: `chromium=${SHORT_CHROMIUM_SECONDS}`,
  });
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  reader.close();
  await Promise.all([server?.stop(), limited?.stop()]);
  await new Promise((resolve) => beacon?.close(resolve));
});

interface RouteAnswer {
  readonly steps: string[];
  readonly options: Array<{ name: string; default?: unknown; values?: string[]; minimum?: number; maximum?: number }>;
}

async function routeOf(source: string, target: string): Promise<RouteAnswer> {
  const response = await fetch(`${server.url}/api/formats/${source}/${target}`);
  assert.equal(response.status, 200, `${source} → ${target}`);
  return await response.json() as RouteAnswer;
}

/** Every pair whose route runs through chromium, found in the catalogue (filled by the first test). */
const chromiumPairs: Array<{ source: string; target: string; steps: string[] }> = [];

test('html → pdf and the pictures go through Chromium; the catalogue lists every pair whose route does, each from a source with a sample here', async () => {
  for (const target of ['pdf', 'png', 'jpg', 'webp']) {
    const { steps, options } = await routeOf('html', target);
    assert.deepEqual(steps, ['chromium'], `html → ${target}`);
    assert.ok(options.some((option) => option.name === 'javascript' && option.default === false), `html → ${target}: javascript, off by default`);
  }
  const pdfOptions = (await routeOf('html', 'pdf')).options;
  for (const name of ['page_size', 'landscape', 'margin', 'print_background', 'page_range']) assert.ok(pdfOptions.some((option) => option.name === name), `html → pdf takes ${name}`);
  assert.deepEqual(pdfOptions.find((option) => option.name === 'page_size')?.values, ['a3', 'a4', 'a5', 'letter', 'legal', 'tabloid']);
  for (const name of ['width', 'height', 'full_page', 'quality']) assert.ok((await routeOf('html', 'jpg')).options.some((option) => option.name === name), `html → jpg takes ${name}`);
  // md keeps its route through LibreOffice (docs/architecture.md: the costs).
  assert.deepEqual((await routeOf('md', 'pdf')).steps, ['pandoc', 'libreoffice']);
  const sources = catalogue.filter((entry) => entry.id === 'html' || entry.targets.includes('html'));
  const pairs = sources.flatMap((entry) => entry.targets.map((target) => ({ source: entry.id, target })));
  await mapInFlight(pairs, 16, async ({ source, target }) => {
    const { steps } = await routeOf(source, target);
    if (steps.includes('chromium')) chromiumPairs.push({ source, target, steps });
  });
  chromiumPairs.sort((a, b) => `${a.source} ${a.target}`.localeCompare(`${b.source} ${b.target}`));
  assert.ok(chromiumPairs.length >= 20, `${chromiumPairs.length} pairs through chromium`);
  const unsampled = [...new Set(chromiumPairs.map((pair) => pair.source))].filter((source) => !SAMPLES[source]);
  assert.deepEqual(unsampled, [], 'every source whose route runs through chromium has a sample in this file');
});

test('every pair whose route runs through Chromium converts, and each output is valid and holds the page (read by other tools)', async () => {
  assert.ok(chromiumPairs.length > 0);
  const failures: string[] = [];
  await mapInFlight(chromiumPairs, 3, async ({ source, target, steps }) => {
    const { record, bytes } = await convert(server.url, SAMPLES[source]!(), `sample.${source}`, target, { timeoutMs: 180_000 });
    assert.equal(record.source, source);
    const file = path.join(work, `pair-${source}-to-${target}.${target}`);
    await fs.writeFile(file, bytes);
    if (target === 'zip') {
      const members = Object.keys(unzipSync(bytes));
      if (members.length < 1) failures.push(`${source} → zip: empty`);
      return;
    }
    const reading = await reader.read(file, target).catch((error: Error) => ({ error: error.message, text: '' }));
    if ('error' in reading) {
      failures.push(`${source} → ${target} (${steps.join(' → ')}): not a valid ${target}: ${reading.error}`);
      return;
    }
    if (PICTURES.has(target)) {
      if (source === 'html' && target !== 'tiff') {
        // The grid's red box at the top left, in the browser's own picture.
        const { pixels: [top] } = await pixels(file, [[50, 50]]);
        if (!near(top, RED)) failures.push(`${source} → ${target}: the grid's red box is ${JSON.stringify(top)}`);
      }
      return;
    }
    const { missing } = recall(WORDS, reading.text);
    if (missing.length > 0) failures.push(`${source} → ${target}: missing ${missing.join(', ')}`);
  });
  assert.deepEqual(failures, []);
});

test('html → pdf: the words, Japanese, Chinese and Arabic in the text layer, embedded fonts, A4 by default, the grid and the flexbox where a browser puts them', async () => {
  const file = await render(PAGE, 'pdf', { margin: '0' }, 'layout');
  const info = await pdfInfo(file);
  assert.equal(info.pages, 1);
  assert.ok(Math.abs(info.width - 595.3) < 2 && Math.abs(info.height - 841.9) < 2, `A4: ${info.width} × ${info.height}`);
  const text = await pdfText(file);
  assert.deepEqual(recall(WORDS, text).missing, []);
  for (const words of [JAPANESE, CHINESE]) assert.ok(text.includes(words), `the text layer holds ${words}`);
  // Arabic is written right to left: pdftotext gives its words, in either order.
  for (const word of ARABIC.split(' ')) assert.ok(text.includes(word) || text.includes([...word].reverse().join('')), `the text layer holds ${word}`);
  const { stdout: fonts } = await execFileAsync('pdffonts', [file], { env: toolEnv });
  const rows = fonts.split('\n').slice(2).filter((line) => line.trim() !== '');
  assert.ok(rows.length >= 2, fonts);
  assert.ok(rows.every((row) => / yes +(yes|no) +yes /.test(row)), `every font embedded with a Unicode map:\n${fonts}`);
  // A4 is 794 CSS pixels wide: the flexbox's box ends at the right edge, the grid's three at the left.
  const { pixels: found } = await pixels(await pageImage(file), [[50, 50], [150, 50], [250, 50], [350, 50], [744, 150], [600, 150]]);
  assert.ok(near(found[0], RED) && near(found[1], GREEN) && near(found[2], BLUE), `the grid: ${JSON.stringify(found.slice(0, 3))}`);
  assert.ok(near(found[3], WHITE), `beside the grid: ${JSON.stringify(found[3])}`);
  assert.ok(near(found[4], MAGENTA) && near(found[5], WHITE), `the flexbox: ${JSON.stringify(found.slice(4))}`);
});

/** Four large glyphs in boxes 150 px apart: Japanese, Chinese, Arabic, and a code point no font has (the "missing glyph" box). */
const GLYPHS = ['語', '河', 'ع', '\u0378'];
const GLYPH_PAGE = `<!doctype html><meta charset="utf-8"><style>html,body{margin:0}span{position:absolute;top:0;width:150px;height:150px;font-size:110px;line-height:150px;text-align:center}</style>
${GLYPHS.map((glyph, index) => `<span style="left:${index * 150}px">${glyph}</span>`).join('')}`;

/** The ink of each 150 × 150 box of `file`, compared: how many dark pixels each has, and how many differ from the missing-glyph box's. */
async function glyphInk(file: string): Promise<{ ink: number[]; differentFromMissing: number[] }> {
  const { stdout } = await execFileAsync('/usr/bin/python3', ['-c', `
import json, sys
from PIL import Image
image = Image.open(sys.argv[1]).convert('L')
masks = [[image.getpixel((x + 150 * i, y)) < 128 for y in range(150) for x in range(150)] for i in range(4)]
print(json.dumps({'ink': [sum(m) for m in masks], 'differentFromMissing': [sum(a != b for a, b in zip(m, masks[3])) for m in masks[:3]]}))`, file], { env: toolEnv });
  return JSON.parse(stdout) as { ink: number[]; differentFromMissing: number[] };
}

test('Japanese, Chinese and Arabic are drawn with real glyphs, not the missing-glyph box, in the PNG and in the PDF', async () => {
  const png = await render(GLYPH_PAGE, 'png', { width: '600', height: '150', full_page: 'false' }, 'glyphs');
  const pdf = await render(GLYPH_PAGE, 'pdf', { margin: '0' }, 'glyphs');
  for (const [name, image] of [['png', png], ['pdf', await pageImage(pdf)]] as const) {
    const { ink, differentFromMissing } = await glyphInk(image);
    for (const [index, glyph] of GLYPHS.slice(0, 3).entries()) {
      assert.ok(ink[index]! > 300, `${name}: ${glyph} has ink (${ink[index]} dark pixels)`);
      assert.ok(differentFromMissing[index]! > 300, `${name}: ${glyph} is not the missing-glyph box (${differentFromMissing[index]} pixels differ)`);
    }
  }
});

test('pdf options: page_size, landscape, margin, print_background, page_range, and the page\'s own @page size', async () => {
  const letter = await pdfInfo(await render(PAGE, 'pdf', { page_size: 'letter' }, 'letter'));
  assert.deepEqual([Math.round(letter.width), Math.round(letter.height)], [612, 792]);
  const landscape = await pdfInfo(await render(PAGE, 'pdf', { page_size: 'a4', landscape: 'true' }, 'landscape'));
  assert.ok(landscape.width > landscape.height && Math.abs(landscape.width - 841.9) < 2, `landscape A4: ${landscape.width} × ${landscape.height}`);
  const a5 = await pdfInfo(await render(PAGE, 'pdf', { page_size: 'a5' }, 'a5'));
  assert.ok(Math.abs(a5.width - 419.5) < 2 && Math.abs(a5.height - 595.3) < 2, `A5: ${a5.width} × ${a5.height}`);
  // The page's own size wins without page_size; page_size wins over it.
  const sized = '<!doctype html><style>@page { size: 100mm 150mm }</style><p>sized page</p>';
  const own = await pdfInfo(await render(sized, 'pdf', {}, 'own-size'));
  assert.ok(Math.abs(own.width - 283.5) < 2 && Math.abs(own.height - 425.2) < 2, `@page size: ${own.width} × ${own.height}`);
  const overridden = await pdfInfo(await render(sized, 'pdf', { page_size: 'letter' }, 'own-size'));
  assert.deepEqual([Math.round(overridden.width), Math.round(overridden.height)], [612, 792]);

  // A blue page background and a red bar: margin 0 puts the bar at the paper's top left, 40 mm (151 px) moves it in.
  const bar = '<!doctype html><style>html,body{margin:0;background:#0000ff}div{height:60px;background:#ff0000}</style><div></div><p style="color:white">bar</p>';
  const { pixels: tight } = await pixels(await pageImage(await render(bar, 'pdf', { margin: '0' }, 'bar')), [[5, 5], [400, 500]]);
  assert.ok(near(tight[0], RED) && near(tight[1], BLUE), `margin 0: ${JSON.stringify(tight)}`);
  const { pixels: wide } = await pixels(await pageImage(await render(bar, 'pdf', { margin: '40' }, 'bar')), [[5, 5], [100, 100], [160, 160], [400, 500]]);
  // Chromium paints the root background over the whole paper, margins included; the bar starts at the margin.
  assert.ok(!near(wide[0], RED) && !near(wide[1], RED), `margin 40 mm: nothing red before 151 px (${JSON.stringify(wide.slice(0, 2))})`);
  assert.ok(near(wide[2], RED) && near(wide[3], BLUE), `margin 40 mm: the bar inside (${JSON.stringify(wide.slice(2))})`);
  const { pixels: plain } = await pixels(await pageImage(await render(bar, 'pdf', { margin: '0', print_background: 'false' }, 'bar')), [[5, 5], [400, 500]]);
  assert.ok(near(plain[0], WHITE) && near(plain[1], WHITE), `print_background false: no colours (${JSON.stringify(plain)})`);

  // Three pages, one word each: page_range picks the second, or the second on.
  const pages = `<!doctype html><style>div{page-break-after:always}</style>${['Albatross', 'Bittern', 'Cormorant'].map((word) => `<div>${word}</div>`).join('')}`;
  const all = await render(pages, 'pdf', {}, 'pages');
  assert.equal((await pdfInfo(all)).pages, 3);
  const second = await render(pages, 'pdf', { page_range: '2' }, 'pages');
  assert.equal((await pdfInfo(second)).pages, 1);
  assert.match(await pdfText(second), /Bittern/);
  assert.doesNotMatch(await pdfText(second), /Albatross|Cormorant/);
  const rest = await render(pages, 'pdf', { page_range: '2-' }, 'pages');
  assert.equal((await pdfInfo(rest)).pages, 2);
  const { final: beyond } = await runWithOptions(server.url, Buffer.from(pages), 'pages.html', 'pdf', { page_range: '7' });
  assert.equal(beyond.status, 'error');
  assert.equal(beyond.error?.code, 'invalid_option', JSON.stringify(beyond.error));
  // A value outside an option's bounds is refused before the job exists.
  const refused = await fetch(`${server.url}/api/convert`, { method: 'POST', body: (() => { const form = new FormData(); form.append('file', new Blob([PAGE]), 'p.html'); form.append('target', 'pdf'); form.append('margin', '80'); return form; })() });
  assert.equal(refused.status, 422);
  assert.equal((await refused.json() as { error: { code: string } }).error.code, 'invalid_option');
});

test('picture options: width, height, full_page, quality; a page taller than the pixel cap is cut there', async () => {
  const window = await pixels(await render(PAGE, 'png', { width: '400', height: '300', full_page: 'false' }, 'window'), [[50, 50], [350, 150]]);
  assert.deepEqual([window.width, window.height, window.format], [400, 300, 'PNG']);
  assert.ok(near(window.pixels[0], RED) && near(window.pixels[1], MAGENTA), `the grid and the flexbox at 400 px: ${JSON.stringify(window.pixels)}`);
  const tall = '<!doctype html><style>html,body{margin:0}div{height:2500px;background:linear-gradient(#ff0000 0 50%, #0000ff 50% 100%)}</style><div></div>';
  const whole = await pixels(await render(tall, 'png', { width: '300', height: '200' }, 'tall'), [[10, 10], [10, 2400]]);
  assert.deepEqual([whole.width, whole.height], [300, 2500], 'full_page (the default): the whole page');
  assert.ok(near(whole.pixels[0], RED) && near(whole.pixels[1], BLUE), JSON.stringify(whole.pixels));
  const part = await pixels(await render(tall, 'png', { width: '300', height: '200', full_page: 'false' }, 'tall'), [[10, 10]]);
  assert.deepEqual([part.width, part.height], [300, 200]);
  // 5,000 px wide: the cap of 10 million pixels holds 2,000 rows.
  const cut = await pixels(await render(tall, 'jpg', { width: '5000', height: '200' }, 'cut'), [[10, 10]]);
  assert.deepEqual([cut.width, cut.height, cut.format], [5000, 2000, 'JPEG']);
  for (const target of ['jpg', 'webp']) {
    const low = await render(PAGE, target, { quality: '5' }, `quality-${target}`);
    const high = await render(PAGE, target, { quality: '100' }, `quality-${target}`);
    const [small, large] = [(await fs.stat(low)).size, (await fs.stat(high)).size];
    assert.ok(small < large, `${target}: quality 5 is ${small} bytes, quality 100 ${large}`);
    assert.equal((await pixels(high, [[0, 0]])).format, target === 'jpg' ? 'JPEG' : 'WEBP');
  }
});

test('javascript: off by default (the page as written), on when asked (the page as its script made it)', async () => {
  const scripted = '<!doctype html><p id="p">written quokkabird</p><script>document.getElementById("p").textContent = "scripted pangolin"</script>';
  assert.match(await pdfText(await render(scripted, 'pdf', {}, 'scripted')), /written quokkabird/);
  const on = await pdfText(await render(scripted, 'pdf', { javascript: 'true' }, 'scripted'));
  assert.match(on, /scripted pangolin/);
  assert.doesNotMatch(on, /written quokkabird/);
});

/** Pages that try to read local files or reach a server, by every way test/helpers know of. */
function hostilePages(base: string): Record<string, string> {
  return {
    frames: `<!doctype html><p>frames</p>
      <iframe src="file:///etc/passwd" width="600" height="200"></iframe>
      <iframe src="FILE:///etc/passwd" width="600" height="200"></iframe>
      <iframe src="\\\\localhost\\etc\\passwd" width="600" height="200"></iframe>
      <iframe src="file://localhost/etc/passwd" width="600" height="200"></iframe>
      <object data="file:///etc/passwd" type="text/plain" width="600" height="200"></object>
      <embed src="file:///etc/passwd" type="text/plain" width="600" height="200">
      <iframe src="${base}/frame" width="600" height="200"></iframe>
      <iframe srcdoc="<iframe src='file:///etc/passwd'></iframe>"></iframe>`,
    resources: `<!doctype html><html><head>
      <link rel="stylesheet" href="${base}/style.css"><link rel="preload" href="${base}/preload" as="fetch"><link rel="prefetch" href="${base}/prefetch">
      <style>@import url("${base}/import.css"); @font-face { font-family: x; src: url("${base}/font.woff2"); } body { background: url("${base}/background.png"); font-family: x; }</style>
      </head><body><p>resources</p><img src="${base}/beacon.png"><img srcset="${base}/srcset.png 2x"><video poster="${base}/poster.png"></video>
      <audio src="${base}/audio.mp3" autoplay></audio><svg><image href="${base}/svg-image.png" width="10" height="10"/></svg>
      <form action="${base}/form" method="post"><input name="a" value="b"></form><a ping="${base}/ping" href="${base}/link">link</a></body></html>`,
    refresh: '<!doctype html><meta http-equiv="refresh" content="0;url=file:///etc/passwd"><p>refresh</p>',
    refreshHttp: `<!doctype html><meta http-equiv="refresh" content="0;url=${base}/refresh"><p>refresh http</p>`,
    base: `<!doctype html><base href="${base}/"><p>base</p><img src="relative.png"><link rel="stylesheet" href="relative.css">`,
  };
}

/** The same attempts from a script (with javascript on). */
function scriptedPages(base: string): Record<string, string> {
  return {
    fetches: `<!doctype html><p id="out">scripted</p><script>
      const out = document.getElementById('out');
      const show = (text) => { out.textContent += ' ' + text; };
      fetch('${base}/fetch').then((r) => r.text()).then(show, (e) => show('fetch refused'));
      fetch('file:///etc/passwd').then((r) => r.text()).then(show, () => show('file refused'));
      const xhr = new XMLHttpRequest(); xhr.open('GET', '${base}/xhr', false); try { xhr.send(); show(xhr.responseText); } catch (e) { show('xhr refused'); }
      const local = new XMLHttpRequest(); local.open('GET', 'file:///etc/passwd', false); try { local.send(); show(local.responseText); } catch (e) { show('xhr file refused'); }
      try { const socket = new WebSocket('${base.replace('http', 'ws')}/socket'); socket.onmessage = (m) => show(m.data); } catch (e) { show('socket refused'); }
      new Image().src = '${base}/image';
      navigator.sendBeacon && navigator.sendBeacon('${base}/beacon');
      const frame = document.createElement('iframe'); frame.src = 'file:///etc/passwd'; document.body.append(frame);
      window.open('${base}/popup');
    </script>`,
    navigateFile: '<!doctype html><p>navigate file</p><script>location = "file:///etc/passwd"</script>',
    navigateHttp: `<!doctype html><p>navigate http</p><script>location.href = "${base}/navigate"</script>`,
  };
}

test('hostile pages read no local file and reach no server: file:// frames, objects, embeds, FILE:, \\\\localhost, refreshes, http resources; with JavaScript, fetch, XHR, WebSocket, navigations', async () => {
  const cases = [
    ...Object.entries(hostilePages(remote)).flatMap(([name, html]) => ['pdf', 'png'].map((target) => ({ name, html, target, options: {} }))),
    ...Object.entries(scriptedPages(remote)).map(([name, html]) => ({ name, html, target: 'pdf', options: { javascript: 'true' } })),
    // The resources once more with scripts on: a script changes nothing of what the browser may load.
    { name: 'resources-js', html: hostilePages(remote).resources!, target: 'pdf', options: { javascript: 'true' } },
  ];
  const outcomes: string[] = [];
  await mapInFlight(cases, 2, async ({ name, html, target, options }) => {
    const { final } = await runWithOptions(server.url, Buffer.from(html), `${name}.html`, target, options, { timeoutMs: 180_000 });
    // A page that navigated away may end as an error page or a failed job; never with a file's content.
    outcomes.push(`${name} → ${target}: ${final.status}${final.error ? ` ${final.error.code}` : ''}`);
    if (final.status !== 'done') return;
    const { bytes } = await download(server.url, final.download_url!);
    const file = path.join(work, `hostile-${name}.${target}`);
    await fs.writeFile(file, bytes);
    if (target === 'pdf') assert.ok(!(await pdfText(file)).includes(PASSWD), `${name}: /etc/passwd in the PDF`);
    assert.ok(!bytes.includes(PASSWD), `${name}: /etc/passwd in the output`);
  });
  assert.ok(outcomes.filter((outcome) => outcome.endsWith('done')).length >= cases.length - 3, outcomes.join('\n'));
  assert.deepEqual(requests, [], 'the local server got no request');
});

test('a script that never ends stops at the time limit with a clean timeout, and the next page converts (the pool recovered)', async () => {
  const started = Date.now();
  const { final } = await runWithOptions(limited.url, Buffer.from('<!doctype html><p>loop</p><script>while (true) {}</script>'), 'loop.html', 'pdf', { javascript: 'true' }, { timeoutMs: 180_000 });
  const seconds = (Date.now() - started) / 1000;
  assert.equal(final.status, 'error');
  assert.equal(final.error?.code, 'timeout', JSON.stringify(final.error));
  assert.ok((final.error?.message ?? '').length > 20);
  assert.ok(seconds < SHORT_CHROMIUM_SECONDS + 20, `ended after ${seconds} s`);
  // With scripts off the same page renders at once.
  assert.match(await pdfText(await render('<!doctype html><p>loop</p><script>while (true) {}</script>', 'pdf', {}, 'loop-off', limited)), /loop/);
  assert.match(await pdfText(await render(PAGE, 'pdf', { javascript: 'true' }, 'after-loop', limited)), /quokkabird/);
});

test('a print of thousands of pages is held by the page cap (or the time limit): a clean error, then the next page converts', async () => {
  const outcomes: string[] = [];
  // 2,100 pages under the main service's limit, where the page cap refuses them; 10,000 pages under
  // the short one, whose time limit ends their layout first.
  for (const [count, on] of [[2100, server], [10_000, limited]] as const) {
    const html = `<!doctype html><style>div{page-break-after:always}</style>${'<div>page</div>'.repeat(count)}`;
    const { final } = await runWithOptions(on.url, Buffer.from(html), `pages-${count}.html`, 'pdf', {}, { timeoutMs: 180_000 });
    assert.equal(final.status, 'error', `${count} pages: ${final.status}`);
    // 10,000 pages: the time limit in a plain run; once, in a full service beside other jobs, the
    // browser died under it (conversion_failed, "crashed"): a clean error either way.
    const codes = count === 2100 ? ['input_too_complex', 'timeout'] : ['input_too_complex', 'timeout', 'conversion_failed'];
    assert.ok(codes.includes(final.error?.code ?? ''), `${count} pages: ${JSON.stringify(final.error)}`);
    assert.ok((final.error?.message ?? '').length > 20);
    outcomes.push(`${count}: ${final.error?.code}`);
  }
  process.stdout.write(`# the long prints: ${outcomes.join(', ')}\n`);
  // Printed within the limit, 2,100 pages are the cap's to refuse (measured: 18 s on a busy machine).
  if (outcomes[0] !== '2100: input_too_complex') process.stdout.write(`# 2,100 pages ended as ${outcomes[0]}, not at the page cap: a slow machine\n`);
  for (const on of [server, limited]) assert.match(await pdfText(await render(PAGE, 'pdf', {}, 'after-pages', on)), /quokkabird/);
});

test('the browsers were recycled (CONVERTD_CHROMIUM_MAX_JOBS=12) and replaced after the timeout, through the pool: /metrics counts them', async () => {
  const started = async (on: RunningServer) => {
    const metrics = await (await fetch(`${on.url}/metrics`)).text();
    return Number(/convertd_pool_started_total\{pool="chromium"\} (\d+)/.exec(metrics)?.[1]);
  };
  // Dozens of pages, a fresh process every 12.
  assert.ok(await started(server) >= 3, `chromium processes started: ${await started(server)}`);
  // Five pages, far below the 100 a process serves by default: a second process came only
  // because the first was retired after the page that ran out of time.
  assert.ok(await started(limited) >= 2, `chromium processes started under the short limit: ${await started(limited)}`);
  const ready = await (await fetch(`${server.url}/readyz`)).json() as Record<string, unknown>;
  assert.match(JSON.stringify(ready), /chromium/);
});

test("the engine's helper alone, outside the sandbox (where /etc/passwd exists and the server is reachable): its interception holds by itself", async () => {
  const dir = await tempDir('convertd-chromium-bare-');
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', path.join(ROOT, 'src/process/pool/node-host.ts'), path.join(ROOT, 'src/engines/chromium/render.ts')], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: dir, HOME: dir } });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const lines = readline.createInterface({ input: child.stdout });
  const replies: Array<(reply: Record<string, unknown>) => void> = [];
  let ready: () => void = () => undefined;
  const isReady = new Promise<void>((resolve) => { ready = resolve; });
  lines.on('line', (line) => {
    const reply = JSON.parse(line) as Record<string, unknown>;
    if (reply.ready) ready();
    else replies.shift()?.(reply);
  });
  const ask = (message: Record<string, unknown>) => new Promise<Record<string, unknown>>((resolve) => {
    replies.push(resolve);
    child.stdin.write(`${JSON.stringify({ id: replies.length, ...message })}\n`);
  });
  try {
    await Promise.race([isReady, new Promise((_, reject) => setTimeout(() => reject(new Error(`no browser within 90 s: ${stderr}`)), 90_000))]);
    assert.ok(readFileSync('/etc/passwd', 'utf8').includes(PASSWD), 'this machine has the file the pages try to read');
    const pages = { ...hostilePages(remote), ...scriptedPages(remote) };
    for (const [name, html] of Object.entries(pages)) {
      const input = path.join(dir, `${name}.html`);
      const output = path.join(dir, `${name}.pdf`);
      await fs.writeFile(input, html);
      const reply = await ask({ op: 'convert', input, output, to: 'pdf', javascript: name in scriptedPages(remote), pageTimeoutMs: 30_000, pdf: { landscape: false, marginMm: 10, printBackground: true, pageRanges: '1-20' } });
      if (reply.ok !== true) continue; // a page that navigated away
      const { blocked, blockedByBrowser } = reply.result as { blocked: number; blockedByBrowser: number };
      // The interceptions saw the requests (the resolver rule behind them would have stopped them too).
      if (name === 'resources') {
        assert.ok(blocked >= 8, `resources: ${blocked} requests blocked by the page's routing`);
        assert.ok(blockedByBrowser >= 1, `resources: the prefetch blocked by the browser's own interception (${blockedByBrowser})`);
      }
      if (name === 'frames') assert.ok(blocked >= 1, `frames: the http frame blocked (${blocked})`);
      const text = (await execFileAsync('pdftotext', [output, '-'], { env: toolEnv })).stdout;
      assert.ok(!text.includes(PASSWD), `${name}: /etc/passwd in the PDF`);
    }
    assert.deepEqual(requests, [], 'the local server got no request');
  } finally {
    child.stdin.end();
    await new Promise((resolve) => { child.once('exit', resolve); setTimeout(() => child.kill('SIGKILL'), 10_000); });
  }
});

test('node pools: a process is replaced after maxJobsPerProcess jobs, and when its module\'s own health check fails', async () => {
  const stateDir = await tempDir('convertd-node-pool-');
  const pool = createNodePool({ label: 'the fake module', logName: 'fake', module: fileURLToPath(new URL('./helpers/fake-node-module.ts', import.meta.url)), heapMb: 64, tooComplex: 'too complex' },
    { size: 1, start: 'lazy', stateDir, maxOutputBytes: 1_000_000, maxJobsPerProcess: 2 }, pino({ level: 'silent' }));
  const jobs = await tempDir('convertd-node-pool-jobs-');
  const input = path.join(jobs, 'input.txt');
  await fs.writeFile(input, 'x');
  const pidOfJob = async (index: number) => {
    const output = path.join(jobs, `output-${index}.txt`);
    await pool.convert(input, output, {}, 20_000, AbortSignal.timeout(60_000));
    return fs.readFile(output, 'utf8');
  };
  try {
    await pool.init();
    const pids: string[] = [];
    for (let index = 0; index < 5; index++) pids.push(await pidOfJob(index));
    assert.equal(pids[0], pids[1], 'two jobs on the first process');
    assert.notEqual(pids[2], pids[1], 'the third on a fresh one');
    assert.equal(pids[2], pids[3]);
    assert.notEqual(pids[4], pids[3]);
    await pool.ask({ op: 'sicken' }, 20_000, AbortSignal.timeout(60_000));
    const restarts = pool.stats().restarts;
    const after = await pidOfJob(5);
    assert.notEqual(after, pids[4], 'a process whose own ping fails is replaced before the job');
    assert.equal(pool.stats().restarts, restarts + 1);
  } finally {
    await pool.close();
  }
});

test('what the service does with a progress record of a chromium job: the route\'s steps are named, the options ignored where a step takes none', async () => {
  const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body: (() => { const form = new FormData(); form.append('file', new Blob([PAGE]), 'p.html'); form.append('target', 'png'); form.append('landscape', 'true'); return form; })() });
  const { job_id: id } = await response.json() as { job_id: string };
  let record: ProgressRecord | undefined;
  for (let i = 0; i < 600 && record?.status !== 'done' && record?.status !== 'error'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    record = await (await fetch(`${server.url}/api/progress/${id}`)).json() as ProgressRecord;
  }
  assert.equal(record?.status, 'done', JSON.stringify(record));
  assert.deepEqual((record as unknown as { ignored_options?: string[] }).ignored_options, ['landscape']);
});
