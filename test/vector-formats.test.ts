// Vector drawings (issue #31): every pair /api/formats lists whose route runs through Inkscape
// (svg and svgz → emf, wmf, dxf; svg → plain svg; dxf → svg, pdf, png, eps, ps, emf, wmf; pdf and
// ai → svg (ai), emf, wmf, dxf; eps and ps → emf, wmf, dxf through Ghostscript's PDF), and the
// vector pairs of the PDF family drawn by PDF tools (pdf, ai → eps, ps and ai → pdf by Ghostscript,
// ai → png by poppler; eps ↔ ps, and eps, ps → svg by Ghostscript then MuPDF), and emf, wmf →
// each other, eps, ps, dxf (Inkscape's metafile import), and cdr, vsd, vsdx → eps, ps, emf, wmf, dxf
// (its libcdr and libvisio imports; a VSDX written here, CorelDRAW and Visio 2003 files from the
// corpus alone), converts through the HTTP API, and each output is read by tools that are not Inkscape
// (helpers/vector_check.py): EMF and WMF records and DXF group codes parsed in Python, SVG drawn
// by rsvg-convert, PDF by pdftoppm (its text by pdftotext), EPS and PS by Ghostscript, PNG by
// Pillow. The samples are written here: an SVG of a red square and a blue circle side by side
// (with a word in the square), a DXF of a square, a circle and a word, and rsvg-convert's PDF,
// EPS and PostScript of the SVG (the PDF also named .ai, an Illustrator file), and LibreOffice's
// EMF and WMF of it, and a VSDX of the same layout (helpers/make_vsdx.py). Each output must hold the two shapes where
// the source has them: left and right halves of the drawing's extent, the circle's corner empty.
// Hostile inputs (docs/security.md#inkscape): images, XInclude, entities and CSS @import naming a secret file planted on disk and a URL; a billion laughs, a use-bomb,
// a huge canvas; a DXF with an IMAGEDEF naming the secret; a VSDX whose page declares an external
// entity naming the secret and a billion laughs. (EPS is never Inkscape's input here.)
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import sharp from 'sharp';
import { download, expectError, fetchCatalogue, mapInFlight, runWithOptions, submit, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { toolEnv } from './helpers/tools.ts';

const CHECK = path.join(import.meta.dirname, 'helpers', 'vector_check.py');
/** The pairs of this file: those through Inkscape, every pair of an Illustrator file, and the PDF family's vector pairs. */
const INKSCAPE_TARGETS: Record<string, readonly string[]> = {
  svg: ['dxf', 'emf', 'svg', 'wmf'],
  svgz: ['dxf', 'emf', 'wmf'],
  dxf: ['emf', 'eps', 'pdf', 'png', 'ps', 'svg', 'wmf'],
  ai: ['dxf', 'emf', 'eps', 'pdf', 'png', 'ps', 'svg', 'wmf'],
  pdf: ['dxf', 'emf', 'eps', 'ps', 'wmf'],
  eps: ['dxf', 'emf', 'ps', 'svg', 'wmf'],
  ps: ['dxf', 'emf', 'eps', 'svg', 'wmf'],
  emf: ['dxf', 'eps', 'ps', 'wmf'],
  wmf: ['dxf', 'emf', 'eps', 'ps'],
  vsdx: ['dxf', 'emf', 'eps', 'ps', 'wmf'],
};
/** CorelDRAW and Visio 2003-2010 drawings, which no tool here writes: converted from the corpus's files alone. */
const CORPUS_DRAWINGS: Record<string, readonly string[]> = { cdr: INKSCAPE_TARGETS.vsdx!, vsd: INKSCAPE_TARGETS.vsdx! };
/**
 * The engines of the PDF family's vector pairs. An Illustrator file's svg is Inkscape's import
 * (text as text); its pdf, eps, ps and png are drawn by PDF tools from the fonts it embeds
 * (Inkscape's import lost ligatures). An EPS or a PostScript file reaches Inkscape and MuPDF
 * through Ghostscript's PDF; no other engine's PDF does (a document would list emf).
 */
const ROUTES: Record<string, readonly string[]> = {
  'ai>svg': ['inkscape'], 'ai>pdf': ['ghostscript'], 'ai>eps': ['ghostscript'], 'ai>ps': ['ghostscript'], 'ai>png': ['poppler'],
  'ai>emf': ['inkscape'], 'pdf>wmf': ['inkscape'], 'pdf>dxf': ['inkscape'], 'pdf>eps': ['ghostscript'], 'pdf>ps': ['ghostscript'],
  'eps>emf': ['ghostscript', 'inkscape'], 'ps>dxf': ['ghostscript', 'inkscape'], 'eps>svg': ['ghostscript', 'mupdf'],
  'eps>ps': ['ghostscript', 'ghostscript'], 'ps>eps': ['ghostscript', 'ghostscript'], 'svg>svg': ['inkscape'],
  'emf>dxf': ['inkscape'], 'emf>wmf': ['inkscape'], 'wmf>eps': ['inkscape'], 'wmf>emf': ['inkscape'],
  'vsdx>eps': ['inkscape'], 'vsd>wmf': ['inkscape'], 'cdr>dxf': ['inkscape'], 'cdr>ps': ['inkscape'],
  'vsdx>pdf': ['libreoffice'], 'vsd>svg': ['libreoffice'], 'cdr>png': ['libreoffice'],
};
/** The routes whose SVG keeps text as text (Inkscape's); MuPDF's draws glyphs as outlines. */
const SVG_WITH_TEXT = new Set(['svg', 'svgz', 'dxf', 'ai']);
const WORD = 'Quokkabird';
/** Where the shapes are in the SVG sample's extent [10, 10]-[190, 90]: the square fills x 0-0.444, the circle 0.556-1. */
const SVG_SAMPLE = `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100" viewBox="0 0 200 100">
  <rect x="10" y="10" width="80" height="80" fill="#ff0000"/>
  <circle cx="150" cy="50" r="40" fill="#0000ff"/>
  <text x="16" y="56" font-size="12" font-family="DejaVu Sans" fill="#000000">${WORD}</text>
</svg>
`;
/** The DXF sample: a square (0,0)-(100,100), a circle at (200,50) of radius 50, a word in the square; extent x 0-250. */
const DXF_SAMPLE = ['0', 'SECTION', '2', 'ENTITIES',
  '0', 'LWPOLYLINE', '8', '0', '90', '4', '70', '1', '10', '0', '20', '0', '10', '100', '20', '0', '10', '100', '20', '100', '10', '0', '20', '100',
  '0', 'CIRCLE', '8', '0', '10', '200', '20', '50', '40', '50',
  '0', 'TEXT', '8', '0', '10', '10', '20', '70', '40', '10', '1', WORD,
  '0', 'ENDSEC', '0', 'EOF', ''].join('\n');

interface Shape { colour: [number, number, number] | null; bbox: [number, number, number, number] }
interface Raster { bbox: [number, number, number, number] | null; size: [number, number]; probes: string[] }

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let work: string;
const samples: Record<string, Buffer> = {};

function tool(program: string, args: string[], input?: Buffer): Buffer {
  return execFileSync(program, args, { cwd: work, env: toolEnv, input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
}

function python(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('/usr/bin/python3', args, { env: toolEnv, maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (error, stdout, stderr) => (error ? reject(new Error(`${args.join(' ')}: ${stderr || error.message}`)) : resolve(stdout)));
  });
}

/**
 * LibreOffice Draw's EMF or WMF of an SVG in the work directory (not Inkscape's): a profile of its
 * own per target, so that two run side by side.
 */
async function libreOfficeMetafile(svg: string, target: string): Promise<Buffer> {
  const outdir = path.join(work, `${path.basename(svg, '.svg')}-${target}`);
  await new Promise<void>((resolve, reject) => {
    execFile('/usr/bin/soffice', [`-env:UserInstallation=file://${work}/profile-${target}`, '--headless', '--convert-to', target, '--outdir', outdir, path.join(work, svg)], { env: toolEnv, timeout: 180_000 }, (error) => (error ? reject(error) : resolve()));
  });
  return fs.readFile(path.join(outdir, `${path.basename(svg, '.svg')}.${target}`));
}

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  catalogue = await fetchCatalogue(server.url);
  work = await tempDir('vector-');
  samples.svg = Buffer.from(SVG_SAMPLE);
  samples.svgz = gzipSync(samples.svg);
  samples.dxf = Buffer.from(DXF_SAMPLE);
  await fs.writeFile(path.join(work, 'sample.svg'), samples.svg);
  // An Illustrator file since version 9 is a PDF; this one is rsvg-convert's PDF of the SVG.
  samples.ai = tool('/usr/bin/rsvg-convert', ['-f', 'pdf', 'sample.svg']);
  samples.pdf = samples.ai;
  samples.eps = tool('/usr/bin/rsvg-convert', ['-f', 'eps', 'sample.svg']);
  samples.ps = tool('/usr/bin/rsvg-convert', ['-f', 'ps', 'sample.svg']);
  // EMF and WMF of the SVG written by LibreOffice (Draw's export), not by Inkscape: each soffice
  // with a profile of its own, so that the two run side by side.
  const [emf, wmf] = await Promise.all(['emf', 'wmf'].map((target) => libreOfficeMetafile('sample.svg', target)));
  samples.emf = emf!;
  samples.wmf = wmf!;
  // A Visio drawing of the same layout, written part by part (no tool here writes Visio files).
  await python([path.join(import.meta.dirname, 'helpers', 'make_vsdx.py'), path.join(work, 'sample.vsdx'), 'Quokka']);
  samples.vsdx = await fs.readFile(path.join(work, 'sample.vsdx'));
});
after(async () => {
  await server?.stop();
});

async function run(bytes: Uint8Array, filename: string, target: string): Promise<ProgressRecord> {
  return (await runWithOptions(server.url, bytes, filename, target, {}, { timeoutMs: 180_000 })).final;
}

async function converted(bytes: Uint8Array, filename: string, target: string): Promise<string> {
  const record = await run(bytes, filename, target);
  assert.equal(record.status, 'done', `${filename} → ${target}: ${JSON.stringify(record.error)}`);
  const { response, bytes: result } = await download(server.url, record.download_url!);
  assert.equal(response.status, 200);
  const file = path.join(work, `${path.basename(filename)}-${Math.random().toString(36).slice(2)}.${target}`);
  await fs.writeFile(file, result);
  return file;
}

async function shapes(kind: string, file: string): Promise<Shape[]> {
  return JSON.parse(await python([CHECK, 'shapes', kind, file])) as Shape[];
}

async function raster(kind: string, file: string, probes: Array<[number, number, number]>): Promise<Raster> {
  return JSON.parse(await python([CHECK, 'raster', kind, file, JSON.stringify(probes)])) as Raster;
}

const union = (boxes: Array<Shape['bbox']>): Shape['bbox'] => [Math.min(...boxes.map((b) => b[0])), Math.min(...boxes.map((b) => b[1])), Math.max(...boxes.map((b) => b[2])), Math.max(...boxes.map((b) => b[3]))];

/**
 * The shapes of a metafile or DXF checked against the source's two: within the extent of all
 * that is drawn, what lies left of the middle spans [0, left] and what lies right spans [right, 1]
 * across the full height (within 3 % of the extent, or a given tolerance); with colours, the left is red, the right blue.
 */
function assertTwoShapes(found: Shape[], left: number, right: number, coloured: boolean, label: string, tolerance = 0.03): void {
  const drawn = found.filter((s) => s.bbox[2] > s.bbox[0] || s.bbox[3] > s.bbox[1]);
  assert.ok(drawn.length >= 2, `${label}: two shapes at least, found ${JSON.stringify(found)}`);
  const all = union(drawn.map((s) => s.bbox));
  const [x0, y0, x1, y1] = all;
  const norm = (b: Shape['bbox']) => [(b[0] - x0) / (x1 - x0), (b[1] - y0) / (y1 - y0), (b[2] - x0) / (x1 - x0), (b[3] - y0) / (y1 - y0)];
  const middle = (s: Shape) => (norm(s.bbox)[0]! + norm(s.bbox)[2]!) / 2;
  const leftShapes = drawn.filter((s) => middle(s) < 0.5);
  const rightShapes = drawn.filter((s) => middle(s) >= 0.5);
  const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]!) < tolerance);
  assert.ok(near(norm(union(leftShapes.map((s) => s.bbox))), [0, 0, left, 1]), `${label}: the left shape spans ${JSON.stringify(norm(union(leftShapes.map((s) => s.bbox))))}`);
  assert.ok(near(norm(union(rightShapes.map((s) => s.bbox))), [right, 0, 1, 1]), `${label}: the right shape spans ${JSON.stringify(norm(union(rightShapes.map((s) => s.bbox))))}`);
  if (coloured) {
    assert.ok(leftShapes.some((s) => s.colour?.join() === '255,0,0'), `${label}: the square is red`);
    assert.ok(rightShapes.some((s) => s.colour?.join() === '0,0,255'), `${label}: the circle is blue`);
  }
}

/** Probes of the SVG (or AI) sample's rendering: square, circle, the gap, the circle's empty corner. */
const FILLED_PROBES: Array<[number, number, number]> = [[0.06, 0.12, 0.01], [0.78, 0.5, 0.01], [0.5, 0.5, 0.01], [0.585, 0.07, 0.005]];
const FILLED_EXPECTED = ['red', 'blue', 'white', 'white'];
/** Probes of the DXF sample's rendering (outlines): the square's left side, its empty middle, the circle's centre, its right side, its empty corner, the gap. */
const OUTLINE_PROBES: Array<[number, number, number]> = [[0, 0.5, 0.02], [0.2, 0.62, 0.01], [0.8, 0.5, 0.01], [1, 0.5, 0.02], [0.62, 0.04, 0.01], [0.5, 0.5, 0.01]];
const OUTLINE_EXPECTED = ['dark', 'white', 'white', 'dark', 'white', 'white'];

async function checkOutput(from: string, to: string, file: string): Promise<void> {
  const label = `${from} → ${to}`;
  if (to === 'emf' || to === 'wmf' || to === 'dxf') {
    const found = await shapes(to, file);
    if (from === 'dxf') assertTwoShapes(found, 0.4, 0.6, false, label);
    // A DXF's circle is SPLINEs whose control points lie off the curve: the extent read from
    // them is 4 % taller than the circle (measured 0.962 for the square's share of it). So is
    // the EMF of a Visio circle (its arcs become Bézier curves there).
    else assertTwoShapes(found, 0.444, 0.556, to !== 'dxf', label, to === 'dxf' || (from === 'vsdx' && to === 'emf') ? 0.05 : 0.03);
    return;
  }
  const drawn = await raster(to, file, from === 'dxf' ? OUTLINE_PROBES : FILLED_PROBES);
  assert.ok(drawn.bbox, `${label}: something is drawn`);
  const [x0, y0, x1, y1] = drawn.bbox;
  const aspect = (x1 - x0) / (y1 - y0);
  assert.ok(Math.abs(aspect - (from === 'dxf' ? 2.5 : 2.25)) < 0.12, `${label}: the drawing's extent is ${x1 - x0} × ${y1 - y0}`);
  assert.deepEqual(drawn.probes, from === 'dxf' ? OUTLINE_EXPECTED : FILLED_EXPECTED, `${label}: what the rendering shows where the source has its shapes`);
  if (to === 'pdf') assert.match(tool('/usr/bin/pdftotext', [file, '-']).toString(), new RegExp(WORD), `${label}: pdftotext finds the word`);
  if (to === 'svg' && SVG_WITH_TEXT.has(from)) assert.match(readFileSync(file, 'utf8'), new RegExp(`>${WORD}<`), `${label}: the word is text in the SVG`);
  if (to === 'svg') assert.doesNotMatch(readFileSync(file, 'utf8'), /xmlns:(inkscape|sodipodi)=/, `${label}: a plain SVG`);
}

test('the catalogue lists the vector pairs: svg and svgz to emf, wmf and dxf, svg to itself; dxf and ai to what the issue asks; pdf, eps and ps to the vector formats', () => {
  for (const [from, targets] of Object.entries({ ...INKSCAPE_TARGETS, ...CORPUS_DRAWINGS })) {
    const entry = catalogue.find((format) => format.id === from);
    assert.ok(entry, `${from} is in the catalogue`);
    for (const target of targets) assert.ok(entry.targets.includes(target), `${from} → ${target} is listed (has ${entry.targets.join(', ')})`);
  }
  // The unchainable edges add no pairs beyond these: dxf and ai lead nowhere else.
  assert.deepEqual([...catalogue.find((format) => format.id === 'dxf')!.targets].sort(), INKSCAPE_TARGETS.dxf);
  assert.deepEqual([...catalogue.find((format) => format.id === 'ai')!.targets].sort(), INKSCAPE_TARGETS.ai);
  assert.equal(catalogue.find((format) => format.id === 'ai')!.category, 'vector');
  // Inkscape's PDF import follows Ghostscript's PDF only: a document's PDF goes no further.
  for (const document of ['docx', 'html', 'md', 'odt']) {
    const targets = catalogue.find((format) => format.id === document)!.targets;
    for (const vector of ['emf', 'wmf', 'dxf']) assert.ok(!targets.includes(vector), `${document} → ${vector} is not listed`);
  }
});

test('an Illustrator file\'s svg is Inkscape\'s, its pdf, eps and ps Ghostscript\'s, its png poppler\'s; EPS and PostScript reach Inkscape and MuPDF through Ghostscript', async () => {
  for (const [pair, steps] of Object.entries(ROUTES)) {
    const response = await fetch(`${server.url}/api/formats/${pair.replace('>', '/')}`);
    assert.equal(response.status, 200, pair);
    assert.deepEqual(((await response.json()) as { steps: string[] }).steps, steps, pair);
  }
});

test('a page_range chooses the page of a PDF that becomes the drawing, the EPS or the PostScript', async () => {
  // Two pages: a red square, then a blue circle (rsvg-convert writes one page per SVG given).
  await fs.writeFile(path.join(work, 'red.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect x="10" y="10" width="80" height="80" fill="#ff0000"/></svg>');
  await fs.writeFile(path.join(work, 'blue.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><circle cx="50" cy="50" r="40" fill="#0000ff"/></svg>');
  const twoPages = tool('/usr/bin/rsvg-convert', ['-f', 'pdf', 'red.svg', 'blue.svg']);
  for (const target of ['emf', 'eps']) {
    const second = await runWithOptions(server.url, twoPages, 'pages.pdf', target, { page_range: '2' }, { timeoutMs: 180_000 });
    assert.equal(second.final.status, 'done', `${target}: ${JSON.stringify(second.final.error)}`);
    const file = path.join(work, `page-2.${target}`);
    await fs.writeFile(file, (await download(server.url, second.final.download_url!)).bytes);
    if (target === 'emf') {
      const found = await shapes('emf', file);
      assert.ok(found.some((shape) => shape.colour?.join() === '0,0,255') && !found.some((shape) => shape.colour?.join() === '255,0,0'), `pdf → emf page 2: the circle alone (${JSON.stringify(found)})`);
    } else {
      const drawn = await raster('eps', file, [[0.5, 0.5, 0.05]]);
      assert.deepEqual(drawn.probes, ['blue'], 'pdf → eps page 2: the circle');
    }
  }
  const ps = await runWithOptions(server.url, twoPages, 'pages.pdf', 'ps', { page_range: '2' }, { timeoutMs: 180_000 });
  assert.equal(ps.final.status, 'done', JSON.stringify(ps.final.error));
  const psFile = path.join(work, 'page-2.ps');
  await fs.writeFile(psFile, (await download(server.url, ps.final.download_url!)).bytes);
  const all = await runWithOptions(server.url, twoPages, 'pages.pdf', 'ps', {}, { timeoutMs: 180_000 });
  const allFile = path.join(work, 'pages.ps');
  await fs.writeFile(allFile, (await download(server.url, all.final.download_url!)).bytes);
  // The page comments of the DSC, which ps2write writes (and Ghostscript renders both pages: the raster check).
  const count = (file: string) => (readFileSync(file, 'latin1').match(/^%%Page: /gm) ?? []).length;
  assert.equal(count(allFile), 2, 'pdf → ps: both pages');
  assert.equal(count(psFile), 1, 'pdf → ps with page_range 2: one page');
});

test('svg → svg is plain and self-contained; text_to_path draws its text as outlines', async () => {
  const inkscapeSvg = SVG_SAMPLE.replace('<svg xmlns="http://www.w3.org/2000/svg"', '<svg xmlns="http://www.w3.org/2000/svg" xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape" xmlns:sodipodi="http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd" inkscape:version="1.2.2" sodipodi:docname="sample.svg"')
    .replace('<rect ', '<sodipodi:namedview id="view" inkscape:zoom="2"/><rect inkscape:label="square" ');
  const plain = readFileSync(await converted(Buffer.from(inkscapeSvg), 'inkscape.svg', 'svg'), 'utf8');
  assert.doesNotMatch(plain, /inkscape:|sodipodi:/, 'no Inkscape or Sodipodi markup left');
  assert.match(plain, new RegExp(`>${WORD}<`), 'the word is still text');
  const outlined = await runWithOptions(server.url, Buffer.from(inkscapeSvg), 'inkscape.svg', 'svg', { text_to_path: 'true' }, { timeoutMs: 180_000 });
  assert.equal(outlined.final.status, 'done', JSON.stringify(outlined.final.error));
  const file = path.join(work, 'outlined.svg');
  await fs.writeFile(file, (await download(server.url, outlined.final.download_url!)).bytes);
  assert.doesNotMatch(readFileSync(file, 'utf8'), /<text\b/, 'the word is outlines, not text');
  assert.deepEqual((await raster('svg', file, FILLED_PROBES)).probes, FILLED_EXPECTED, 'the outlined drawing still shows its shapes');
});

test('every Inkscape pair converts, and each output holds the source\'s shapes where it has them', async () => {
  const pairs = Object.entries(INKSCAPE_TARGETS).flatMap(([from, targets]) => targets.map((to) => ({ from, to })));
  const failures: string[] = [];
  await mapInFlight(pairs, 3, async ({ from, to }) => {
    try {
      await checkOutput(from, to, await converted(samples[from]!, `sample.${from}`, to));
    } catch (error) {
      failures.push(`${from} → ${to}: ${(error as Error).message}`);
    }
  });
  assert.deepEqual(failures, []);
});

test('a PDF named .pdf stays a PDF, an EPS stays an EPS: the ai format is taken by name only', async () => {
  const asPdf = await run(samples.ai!, 'drawing.pdf', 'svg');
  assert.equal(asPdf.source, 'pdf');
  const asAi = await run(samples.ai!, 'drawing.ai', 'svg');
  assert.equal(asAi.source, 'ai');
});

/** EMF records that carry a bitmap (BITBLT, STRETCHBLT, MASKBLT, PLGBLT, SETDIBITSTODEVICE, STRETCHDIBITS, ALPHABLEND, TRANSPARENTBLT). */
const EMF_BITMAP_RECORDS = new Set([76, 77, 78, 79, 80, 81, 114, 116]);

function emfRecordTypes(bytes: Buffer): number[] {
  const types: number[] = [];
  for (let at = 0; at + 8 <= bytes.length;) {
    const size = bytes.readUInt32LE(at + 4);
    types.push(bytes.readUInt32LE(at));
    if (size < 8) break;
    at += size;
  }
  return types;
}

test('an SVG reads nothing but itself: linked files, URLs, XInclude, entities, @import and style sheets are dropped or refused', async () => {
  // A secret on the service's disk: a green PNG and a text file with a marker, at known paths.
  const marker = `SECRET-${Math.random().toString(36).slice(2)}`;
  const secretPng = path.join(work, 'secret.png');
  const secretText = path.join(work, 'secret.txt');
  tool('/usr/bin/python3', ['-c', `from PIL import Image\nImage.new('RGB', (64, 64), (0, 200, 0)).save('${secretPng}')`]);
  await fs.writeFile(secretText, `${marker}\n`);
  // A web server that counts what it is asked for.
  const http = await import('node:http');
  let fetched = 0;
  const web = http.createServer((_request, response) => { fetched++; response.end('x'); });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(web.address() as { port: number }).port}`;
  const body = (inner: string, head = '') => `<?xml version="1.0"?>${head}\n<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:sodipodi="http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd" xmlns:xi="http://www.w3.org/2001/XInclude" width="200" height="100"><rect x="10" y="10" width="80" height="80" fill="#ff0000"/>${inner}</svg>`;
  const cases: Record<string, string> = {
    'image-path': body(`<image x="100" y="0" width="100" height="100" xlink:href="${secretPng}"/>`),
    'image-file-url': body(`<image x="100" y="0" width="100" height="100" href="file://${secretPng}"/>`),
    'image-char-refs': body(`<image x="100" y="0" width="100" height="100" xlink:href="&#102;ile://${secretPng}"/>`),
    'image-absref': body(`<image x="100" y="0" width="100" height="100" xlink:href="missing.png" sodipodi:absref="${secretPng}"/>`),
    'image-http': body(`<image x="100" y="0" width="100" height="100" xlink:href="${url}/image.png"/>`),
    'xinclude-text': body(`<text x="100" y="50"><xi:include href="${secretText}" parse="text"/></text>`),
    'css-import': body(`<style>@import url("${url}/style.css"); circle { fill: url(${url}/paint) }</style>`),
    'feimage': body(`<filter id="f"><feImage xlink:href="${secretPng}"/></filter><rect x="100" y="0" width="100" height="100" filter="url(#f)"/>`),
  };
  const external = body(`<text x="100" y="50">&secret;</text>`, `<!DOCTYPE svg [<!ENTITY secret SYSTEM "file://${secretText}">]>`);
  const parameter = body('', `<!DOCTYPE svg [<!ENTITY % remote SYSTEM "${url}/evil.dtd"> %remote;]>`);
  try {
    await mapInFlight(Object.entries(cases), 3, async ([name, svg]) => {
      for (const target of ['emf', 'dxf']) {
        const file = await converted(Buffer.from(svg), `${name}.svg`, target);
        const bytes = await fs.readFile(file);
        assert.ok(!bytes.includes(marker), `${name} → ${target}: the secret text is not in the output`);
        if (target === 'emf') {
          const types = emfRecordTypes(bytes);
          assert.ok(!types.some((type) => EMF_BITMAP_RECORDS.has(type)), `${name} → emf: no bitmap was embedded (records ${[...new Set(types)].join(',')})`);
          const found = await shapes('emf', file);
          assert.ok(found.some((shape) => shape.colour?.join() === '255,0,0'), `${name} → emf: the drawing's own square is still there`);
          assert.ok(!found.some((shape) => shape.colour?.join() === '0,200,0'), `${name} → emf: nothing green (the secret picture's colour)`);
        }
      }
    });
    for (const [name, svg] of [['external-entity', external], ['parameter-entity', parameter]] as const) {
      const record = await run(Buffer.from(svg), `${name}.svg`, 'emf');
      assert.equal(record.status, 'error', name);
      assert.equal(record.error?.code, 'corrupt_input', `${name}: ${JSON.stringify(record.error)}`);
    }
    // A style sheet processing instruction before the root: not taken as an SVG at all (the
    // sniffer's SVG starts with the root element after a declaration, comments and a doctype).
    const sheet = body('', `<?xml-stylesheet type="text/css" href="${url}/sheet.css"?>`);
    await expectError(await submit(server.url, Buffer.from(sheet), 'sheet.svg', 'emf'), 415, 'unsupported_format');
    assert.equal(fetched, 0, 'nothing was fetched from the web server');
  } finally {
    web.close();
  }
});

test('a billion laughs is refused, a use-bomb ends in a clean error or a result, a huge canvas stays vector', async () => {
  const laughs = `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><svg xmlns="http://www.w3.org/2000/svg"><text>&c;</text></svg>`;
  const laughed = await run(Buffer.from(laughs), 'laughs.svg', 'emf');
  assert.equal(laughed.error?.code, 'corrupt_input', JSON.stringify(laughed.error));
  // Ten levels of ten <use> each: 10^10 rectangles if expanded (here Inkscape ran out of its address space: input_too_complex).
  let defs = '<rect id="l0" width="1" height="1"/>';
  for (let level = 1; level <= 10; level++) defs += `<g id="l${level}">${Array.from({ length: 10 }, () => `<use xlink:href="#l${level - 1}"/>`).join('')}</g>`;
  const bomb = `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100"><defs>${defs}</defs><use xlink:href="#l10"/></svg>`;
  const bombed = await run(Buffer.from(bomb), 'bomb.svg', 'emf');
  assert.ok(bombed.status === 'done' || ['input_too_complex', 'timeout', 'output_too_large'].includes(bombed.error?.code ?? ''), `use-bomb: ${JSON.stringify(bombed.error)}`);
  // A canvas of 10^8 × 10^8 px: nothing is rasterised to EMF, so it converts, contained.
  const huge = '<svg xmlns="http://www.w3.org/2000/svg" width="100000000" height="100000000"><rect width="100000000" height="100000000" fill="#0000ff"/></svg>';
  const big = await run(Buffer.from(huge), 'huge.svg', 'wmf');
  // Inkscape 1.2 crashes on it (an exception in its signal handler): a clean corrupt_input, no output.
  assert.ok(big.status === 'done' || ['input_too_complex', 'corrupt_input'].includes(big.error?.code ?? ''), `huge canvas: ${JSON.stringify(big.error)}`);
  assert.ok(big.status !== 'done' || big.size! < 1_000_000, 'a huge canvas converted stays small');
});

test('a PNG of a huge DXF drawing is refused before it is drawn; a huge Illustrator page is drawn within the side limit', async () => {
  const line = ['0', 'SECTION', '2', 'ENTITIES', '0', 'LINE', '8', '0', '10', '0', '20', '0', '11', '10000000', '21', '10000000', '0', 'ENDSEC', '0', 'EOF', ''].join('\n');
  const wide = await run(Buffer.from(line), 'wide.dxf', 'png');
  assert.equal(wide.error?.code, 'input_too_complex', JSON.stringify(wide.error));
  await fs.writeFile(path.join(work, 'page.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="14000pt" height="14000pt"><rect width="100" height="100" fill="#ff0000"/></svg>');
  // poppler draws it as any PDF page: its longest side brought down to 5,000 px (README: pixel_density).
  const page = await converted(tool('/usr/bin/rsvg-convert', ['-f', 'pdf', 'page.svg']), 'page.ai', 'png');
  const { width, height } = await sharp(page).metadata();
  assert.ok(width === height && width! <= 5000 && width! >= 4900, `the huge page's PNG is ${width} × ${height}`);
});

test('a metafile\'s Cyrillic and Chinese text: an EMF\'s keeps its letters; a WMF font named in Shift-JIS converts; a WMF\'s text in those code pages is refused, saying so', async () => {
  await fs.writeFile(path.join(work, 'scripts.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="100"><text x="10" y="40" font-family="DejaVu Sans" font-size="24">Съешь мягких булок</text><text x="10" y="80" font-family="Noto Sans CJK JP" font-size="24">日本語の文章</text></svg>');
  const [emf, wmf] = await Promise.all(['emf', 'wmf'].map((target) => libreOfficeMetafile('scripts.svg', target)));
  const written = { emf: emf!, wmf: wmf! };
  // The EPS of the EMF, drawn by Ghostscript (at 100 dpi: Tesseract's Japanese model misreads the
  // line at 200) and read back by Tesseract: both lines' letters.
  const eps = await converted(written.emf!, 'scripts.emf', 'eps');
  const picture = tool('/usr/bin/gs', ['-dSAFER', '-dBATCH', '-dNOPAUSE', '-dQUIET', '-dEPSCrop', '-sDEVICE=png16m', '-r100', '-dTextAlphaBits=4', '-sOutputFile=-', eps]);
  const read = tool('/usr/bin/tesseract', ['-', '-', '-l', 'rus+jpn'], picture).toString();
  assert.match(read, /мягких/, `the Cyrillic words (Tesseract read: ${read})`);
  assert.match(read.replace(/\s+/g, ''), /日本語/, `the Japanese words (Tesseract read: ${read})`);
  // A WMF font named in Shift-JIS bytes ("ＭＳ Ｐゴシック") over ASCII text: Inkscape 1.2 looped on
  // such a name until the time limit; read with the name made ASCII, it converts at once.
  const named = Buffer.from(samples.wmf!);
  const sjisName = Buffer.from([0x82, 0x6c, 0x82, 0x72, 0x20, 0x82, 0x6f, 0x83, 0x53, 0x83, 0x56, 0x83, 0x62, 0x83, 0x4e, 0]);
  let fonts = 0;
  for (let at = named.readUInt32LE(0) === 0x9ac6cdd7 ? 22 + 18 : 18; at + 6 <= named.length;) {
    const words = named.readUInt32LE(at);
    if (words < 3 || named.readUInt16LE(at + 4) === 0) break;
    if (named.readUInt16LE(at + 4) === 0x02fb && words * 2 >= 6 + 18 + sjisName.length) {
      sjisName.copy(named, at + 6 + 18);
      fonts++;
    }
    at += words * 2;
  }
  assert.ok(fonts > 0, 'the sample WMF has a font record');
  // (A loop would end the job as timeout at the engine's limit: converted() wants it done.)
  await checkOutput('wmf', 'eps', await converted(named, 'named.wmf', 'eps'));
  const refused = await run(written.wmf!, 'scripts.wmf', 'eps');
  assert.equal(refused.error?.code, 'conversion_failed', JSON.stringify(refused.error ?? refused.status));
  assert.match(refused.error!.message, /Cyrillic|Chinese/);
});

test('a Visio drawing\'s XML entities are never expanded: one naming a file on disk converts without it, a billion laughs ends in a clean error', async () => {
  // libvisio (inside Inkscape, as inside LibreOffice) reads the page's XML without substituting
  // entities: measured, the text "A &xxe; B C" comes out "A  B  C" in both. A billion laughs
  // leaves the page unparsed: an empty drawing, refused rather than written as an empty file.
  const marker = `visio-secret-${Math.random().toString(36).slice(2)}`;
  const secret = path.join(work, 'visio-secret.txt');
  await fs.writeFile(secret, `${marker}\n`);
  const parts = unzipSync(new Uint8Array(samples.vsdx!));
  const withPage = (doctype: string, text: string) => {
    const page = strFromU8(parts['visio/pages/page1.xml']!).replace('?>', `?>${doctype}`).replace('<Text>Quokka</Text>', `<Text>${text}</Text>`);
    assert.match(page, /<!DOCTYPE/, 'the entities are in the page');
    return Buffer.from(zipSync({ ...parts, 'visio/pages/page1.xml': strToU8(page) }));
  };
  const external = withPage(`<!DOCTYPE PageContents [<!ENTITY xxe SYSTEM "file://${secret}">]>`, 'A &xxe; B C');
  for (const target of ['emf', 'eps']) {
    const file = await converted(external, 'external.vsdx', target);
    const output = readFileSync(file);
    for (const encoding of ['latin1', 'utf16le'] as const) assert.ok(!output.toString(encoding).includes(marker), `vsdx → ${target}: the file's text is not in the output`);
    if (target === 'emf') assertTwoShapes(await shapes('emf', file), 0.444, 0.556, true, 'vsdx → emf with an external entity', 0.05);
  }
  const laughs = Array.from({ length: 9 }, (_, i) => `<!ENTITY l${i + 1} "${`&l${i};`.repeat(10)}">`).join('');
  const bomb = withPage(`<!DOCTYPE PageContents [<!ENTITY l0 "lol">${laughs}]>`, 'A &l9; C');
  for (const target of ['emf', 'eps']) {
    const record = await run(bomb, 'laughs.vsdx', target);
    assert.equal(record.error?.code, 'conversion_failed', `vsdx → ${target}: ${JSON.stringify(record.error ?? record.status)}`);
    assert.match(record.error!.message, /nothing Inkscape could read/);
  }
});

test('a DXF naming a file on disk (IMAGEDEF) converts without it', async () => {
  const marker = `DXFSECRET-${Math.random().toString(36).slice(2)}`;
  const secret = path.join(work, 'dxf-secret.txt');
  await fs.writeFile(secret, marker);
  const withImage = DXF_SAMPLE.replace('0\nENDSEC\n0\nEOF', ['0', 'IMAGE', '8', '0', '10', '0', '20', '0', '340', '2A', '0', 'ENDSEC', '0', 'SECTION', '2', 'OBJECTS', '0', 'IMAGEDEF', '5', '2A', '1', secret, '0', 'ENDSEC', '0', 'EOF'].join('\n'));
  for (const target of ['svg', 'pdf']) {
    const file = await converted(Buffer.from(withImage), 'image.dxf', target);
    assert.ok(!(await fs.readFile(file)).includes(marker), `dxf → ${target}: the named file is not in the output`);
    if (target === 'pdf') assert.match(tool('/usr/bin/pdftotext', [file, '-']).toString(), new RegExp(WORD));
  }
});

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
test('real Illustrator, DXF, EMF, WMF, CorelDRAW and Visio files of the shared corpus convert (skipped when absent)', { skip: ['ai', 'dxf', 'emf', 'wmf', 'cdr', 'vsd', 'vsdx'].some((folder) => existsSync(path.join(CORPUS, folder))) ? false : 'no ../shared/corpus here' }, async () => {
  const inCorpus = (name: string) => (existsSync(path.join(CORPUS, name)) ? [path.join(CORPUS, name)] : []);
  for (const file of inCorpus('ai/transmute-sample.ai')) {
    // An Illustrator 9+ file (PDF inside): its words come back from its PDF and from its SVG.
    const pdf = await converted(await fs.readFile(file), path.basename(file), 'pdf');
    assert.match(tool('/usr/bin/pdftotext', [pdf, '-']).toString(), /Illustrator/);
    const svg = await converted(await fs.readFile(file), path.basename(file), 'svg');
    assert.ok(tool('/usr/bin/rsvg-convert', ['-f', 'png', svg]).length > 1000, 'its SVG draws (rsvg-convert)');
    // Its PDF, EPS and PNG draw the fonts it embeds (Myriad Pro without a Unicode map): read back
    // by Tesseract from their renderings, its eight "this file" keep the "fi" ligature that
    // Inkscape's import lost ("this f le"). Pixel comparisons cannot tell: two renderers of the
    // same page differ more than the lost ligatures do.
    const eps = await converted(await fs.readFile(file), path.basename(file), 'eps');
    const png = await converted(await fs.readFile(file), path.basename(file), 'png');
    const pictures = {
      pdf: tool('/usr/bin/pdftoppm', ['-png', '-r', '150', '-singlefile', pdf]),
      eps: tool('/usr/bin/gs', ['-dSAFER', '-dBATCH', '-dNOPAUSE', '-dQUIET', '-dEPSCrop', '-sDEVICE=png16m', '-r150', '-dTextAlphaBits=4', '-sOutputFile=-', eps]),
      png: await fs.readFile(png),
    };
    for (const [target, picture] of Object.entries(pictures)) {
      const words = tool('/usr/bin/tesseract', ['-', '-'], picture).toString();
      assert.ok((words.match(/this file/g) ?? []).length >= 6, `ai → ${target}: the ligatures are drawn (Tesseract read: ${words.slice(0, 200)})`);
    }
  }
  for (const file of inCorpus('ai/tika-ai-ps.ai')) {
    // FreeHand-written PostScript named .ai: read by its content as PostScript (README "Known limitations").
    const record = await run(await fs.readFile(file), path.basename(file), 'pdf');
    assert.ok(record.status === 'done' || record.error?.code === 'conversion_failed', `${path.basename(file)} → pdf: ${JSON.stringify(record.error)}`);
  }
  for (const file of inCorpus('dxf/assimp-linetest.dxf')) {
    // One LINE (and two 3D faces, skipped): the line is a path in the SVG, and ink on the PDF's page.
    const svg = await converted(await fs.readFile(file), path.basename(file), 'svg');
    const text = await fs.readFile(svg, 'utf8');
    assert.ok((text.match(/<path\b/g) ?? []).length >= 1, 'the line is a path');
    const pdf = await converted(await fs.readFile(file), path.basename(file), 'pdf');
    const page = await sharp(tool('/usr/bin/pdftoppm', ['-png', '-r', '72', '-singlefile', pdf])).greyscale().raw().toBuffer();
    assert.ok(page.some((value) => value < 128), 'the PDF page shows the line');
  }
  for (const file of inCorpus('dxf/assimp-pinkegg-from-lw.dxf')) {
    // 288 3DFACEs and nothing else: not an empty page, a clean refusal saying why.
    const record = await run(await fs.readFile(file), path.basename(file), 'svg');
    assert.equal(record.status, 'error');
    assert.equal(record.error?.code, 'conversion_failed');
    assert.match(record.error?.message ?? '', /3D/);
  }
  // The corpus's metafiles through Inkscape's import: each EPS draws ink (Ghostscript); poi-60677.wmf,
  // a Japanese table, is refused at once, saying why (its Shift-JIS font name made Inkscape loop
  // until the time limit, and its text would come out as other letters: wmf-fonts.ts).
  const metafiles = ['emf/poi-vector-image.emf', 'emf/poi-wrench.emf', 'emf/python-pptx-pic.emf', 'wmf/pillow-drawing.wmf', 'wmf/python-pptx-cvs-logo.wmf', 'wmf/poi-60677.wmf'];
  for (const file of metafiles.flatMap(inCorpus)) {
    if (file.endsWith('poi-60677.wmf')) {
      const record = await run(await fs.readFile(file), path.basename(file), 'eps');
      assert.equal(record.error?.code, 'conversion_failed', `${path.basename(file)}: ${JSON.stringify(record.error ?? record.status)}`);
      assert.match(record.error!.message, /Japanese code page/);
      continue;
    }
    assert.ok(await inkOf(await converted(await fs.readFile(file), path.basename(file), 'eps')) > 100, `${path.basename(file)} → eps draws ink`);
  }
  // The corpus's CorelDRAW and Visio drawings through Inkscape's libcdr and libvisio imports, to
  // every vector target: the EPS and the PostScript draw ink (Ghostscript), the metafiles and the
  // DXF hold shapes (parsed in Python). poi-44594-2.vsd is a blank page in LibreOffice too (office-formats).
  const drawings = ['cdr/transmute-sample.cdr', 'vsd/poi-v5-connection-types.vsd', 'vsd/poi-v6-non-utf16le.vsd', 'vsdx/poi-test-text-extraction.vsdx', 'vsdx/poi-github260.vsdx'];
  const drawingPairs = drawings.flatMap(inCorpus).flatMap((file) => INKSCAPE_TARGETS.vsdx!.map((to) => ({ file, to })));
  const failures: string[] = [];
  await mapInFlight(drawingPairs, 3, async ({ file, to }) => {
    try {
      const output = await converted(await fs.readFile(file), path.basename(file), to);
      if (to === 'eps' || to === 'ps') assert.ok(await inkOf(output) > 100, 'draws ink');
      else assert.ok((await shapes(to, output)).length >= 2, 'holds shapes');
    } catch (error) {
      failures.push(`${path.basename(file)} → ${to}: ${(error as Error).message}`);
    }
  });
  assert.deepEqual(failures, []);
});

/** The dark pixels of an EPS or PostScript file's first page drawn by Ghostscript at 30 dpi. */
async function inkOf(file: string): Promise<number> {
  const page = await sharp(tool('/usr/bin/gs', ['-dSAFER', '-dBATCH', '-dNOPAUSE', '-dQUIET', '-dEPSCrop', '-dFirstPage=1', '-dLastPage=1', '-sDEVICE=png16m', '-r30', '-sOutputFile=-', file])).greyscale().raw().toBuffer();
  return page.filter((value) => value < 200).length;
}

test('a DXF of nested blocks (10^8 lines if expanded) ends in a clean error or a result', async () => {
  const lines: string[] = [];
  const put = (...values: Array<string | number>) => lines.push(...values.map(String));
  put(0, 'SECTION', 2, 'BLOCKS', 0, 'BLOCK', 8, 0, 2, 'B0', 70, 0, 10, 0, 20, 0, 0, 'LINE', 8, 0, 10, 0, 20, 0, 11, 1, 21, 1, 0, 'ENDBLK');
  for (let level = 1; level <= 8; level++) {
    put(0, 'BLOCK', 8, 0, 2, `B${level}`, 70, 0, 10, 0, 20, 0);
    for (let copy = 0; copy < 10; copy++) put(0, 'INSERT', 8, 0, 2, `B${level - 1}`, 10, copy, 20, 0);
    put(0, 'ENDBLK');
  }
  put(0, 'ENDSEC', 0, 'SECTION', 2, 'ENTITIES', 0, 'INSERT', 8, 0, 2, 'B8', 10, 0, 20, 0, 0, 'ENDSEC', 0, 'EOF', '');
  // Inkscape's importer writes blocks as <use> of <defs>: the bomb reaches Inkscape as a use-bomb.
  const record = await run(Buffer.from(lines.join('\n')), 'blocks.dxf', 'pdf');
  assert.ok(record.status === 'done' || ['input_too_complex', 'timeout', 'output_too_large'].includes(record.error?.code ?? ''), `nested blocks: ${JSON.stringify(record.error)}`);
});
