// Vector drawings through Inkscape (issue #31): every pair /api/formats lists for its edges (svg
// and svgz → emf, wmf, dxf; dxf → svg, pdf, png, eps, ps, emf, wmf; ai → svg, pdf, png, eps)
// converts through the HTTP API, and each output is read by tools that are not Inkscape
// (helpers/vector_check.py): EMF and WMF records and DXF group codes parsed in Python, SVG drawn
// by rsvg-convert, PDF by pdftoppm (its text by pdftotext), EPS and PS by Ghostscript, PNG by
// Pillow. The samples are written here: an SVG of a red square and a blue circle side by side
// (with a word in the square), a DXF of a square, a circle and a word, and an Illustrator file
// (a PDF rsvg-convert makes of the SVG, named .ai). Each output must hold the two shapes where
// the source has them: left and right halves of the drawing's extent, the circle's corner empty.
// Hostile inputs (docs/security.md#inkscape): images, XInclude, entities, CSS @import and
// xml-stylesheet naming a secret file planted on disk and a URL; a billion laughs, a use-bomb,
// a huge canvas; a DXF with an IMAGEDEF naming the secret; an EMF whose records name it.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { download, fetchCatalogue, mapInFlight, runWithOptions, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { toolEnv } from './helpers/tools.ts';

const CHECK = path.join(import.meta.dirname, 'helpers', 'vector_check.py');
/** The pairs that are Inkscape's: what the catalogue must list for these sources, and no engine else gives. */
const INKSCAPE_TARGETS: Record<string, readonly string[]> = {
  svg: ['dxf', 'emf', 'wmf'],
  svgz: ['dxf', 'emf', 'wmf'],
  dxf: ['emf', 'eps', 'pdf', 'png', 'ps', 'svg', 'wmf'],
  ai: ['eps', 'pdf', 'png', 'svg'],
};
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
 * across the full height (within 3 % of the extent); with colours, the left is red, the right blue.
 */
function assertTwoShapes(found: Shape[], left: number, right: number, coloured: boolean, label: string): void {
  const drawn = found.filter((s) => s.bbox[2] > s.bbox[0] || s.bbox[3] > s.bbox[1]);
  assert.ok(drawn.length >= 2, `${label}: two shapes at least, found ${JSON.stringify(found)}`);
  const all = union(drawn.map((s) => s.bbox));
  const [x0, y0, x1, y1] = all;
  const norm = (b: Shape['bbox']) => [(b[0] - x0) / (x1 - x0), (b[1] - y0) / (y1 - y0), (b[2] - x0) / (x1 - x0), (b[3] - y0) / (y1 - y0)];
  const middle = (s: Shape) => (norm(s.bbox)[0]! + norm(s.bbox)[2]!) / 2;
  const leftShapes = drawn.filter((s) => middle(s) < 0.5);
  const rightShapes = drawn.filter((s) => middle(s) >= 0.5);
  const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]!) < 0.03);
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
    else assertTwoShapes(found, 0.444, 0.556, to !== 'dxf', label);
    return;
  }
  const drawn = await raster(to, file, from === 'dxf' ? OUTLINE_PROBES : FILLED_PROBES);
  assert.ok(drawn.bbox, `${label}: something is drawn`);
  const [x0, y0, x1, y1] = drawn.bbox;
  const aspect = (x1 - x0) / (y1 - y0);
  assert.ok(Math.abs(aspect - (from === 'dxf' ? 2.5 : 2.25)) < 0.12, `${label}: the drawing's extent is ${x1 - x0} × ${y1 - y0}`);
  assert.deepEqual(drawn.probes, from === 'dxf' ? OUTLINE_EXPECTED : FILLED_EXPECTED, `${label}: what the rendering shows where the source has its shapes`);
  if (to === 'pdf') assert.match(tool('/usr/bin/pdftotext', [file, '-']).toString(), new RegExp(WORD), `${label}: pdftotext finds the word`);
  if (to === 'svg') assert.match(readFileSync(file, 'utf8'), new RegExp(`>${WORD}<`), `${label}: the word is text in the SVG`);
}

test('the catalogue lists Inkscape\'s pairs: svg and svgz to emf, wmf and dxf; dxf and ai to what the issue asks', () => {
  for (const [from, targets] of Object.entries(INKSCAPE_TARGETS)) {
    const entry = catalogue.find((format) => format.id === from);
    assert.ok(entry, `${from} is in the catalogue`);
    for (const target of targets) assert.ok(entry.targets.includes(target), `${from} → ${target} is listed (has ${entry.targets.join(', ')})`);
  }
  // The unchainable edges add no pairs beyond these: dxf and ai lead nowhere else.
  assert.deepEqual([...catalogue.find((format) => format.id === 'dxf')!.targets].sort(), INKSCAPE_TARGETS.dxf);
  assert.deepEqual([...catalogue.find((format) => format.id === 'ai')!.targets].sort(), INKSCAPE_TARGETS.ai);
  assert.equal(catalogue.find((format) => format.id === 'ai')!.category, 'vector');
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
