// Raster → vector tracing through potrace (issue #31): every svg, eps, dxf and geojson target
// /api/formats lists for a raster format is converted through the HTTP API, and each outline is
// read by tools that are not potrace (helpers/trace_check.py): the SVG parsed as XML and drawn by
// rsvg-convert, the EPS drawn by Ghostscript, the DXF's polylines read from its group codes and
// the GeoJSON's rings from its JSON, both filled by Pillow; the drawing is compared with the
// black/white shape of the source (its luminance thresholded by Pillow). The options do what
// they say (threshold takes lighter greys in, invert traces the background, turdsize drops
// specks, color fills the outline); png → pdf stays img2pdf's unless trace=true asks for the
// traced outline as a PDF (drawn by pdftoppm, no picture in it by pdfimages). Hostile: a noise picture ends in
// a result or a clean error, a header declaring 60000 × 60000 pixels is refused before any
// engine, and option values that are not numbers, out of range or not colours are refused (422).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { download, expectError, fetchCatalogue, mapInFlight, runWithOptions, submitOk, submitWithOptions, waitForJob, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { IMAGE_HEIGHT, IMAGE_WIDTH, noisePng, sampleImage } from './helpers/fixtures.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const CHECK = path.join(import.meta.dirname, 'helpers', 'trace_check.py');
const TARGETS = ['svg', 'eps', 'dxf', 'geojson'] as const;
const MIME: Record<string, string> = { svg: 'image/svg+xml', eps: 'application/postscript', dxf: 'image/vnd.dxf', geojson: 'application/geo+json', pdf: 'application/pdf' };
/** The sources traced into a PDF with trace=true (potrace's own edges: the formats sharp reads). */
const PDF_SOURCES = ['png', 'jpg', 'webp', 'gif', 'tiff', 'avif'];
/**
 * Share of pixels where a drawn outline agrees with its source's shape. A traced shape smooths
 * its corners and stairs into curves: on the drawings here the agreement was 0.97-0.99 measured;
 * on the samples of every raster format (with lossy and bilevel ones among them) see below.
 */
const MIN_SHARE = 0.95;
/**
 * The same for the sample of each raster format (a ramp thresholded at 50 %, lossy encodings,
 * bilevel formats that ImageMagick dithers): measured 0.93-0.99.
 */
const MIN_SAMPLE_SHARE = 0.9;
/**
 * Bilevel formats: ImageMagick dithers the sample's blue half and ramp into dots, which the trace
 * follows (measured 0.70-0.82 against the thresholded PNG).
 */
const BILEVEL = new Set(['pbm', 'xbm', 'wbmp', 'otb', 'cals']);
const MIN_BILEVEL_SHARE = 0.65;

interface TraceFacts {
  share: number; dark: number; bbox: [number, number, number, number] | null; colour?: string; images?: number; pages?: number;
  paths?: number; fills?: string[]; bounding_box?: number[]; sections?: string[]; entities?: Record<string, number>;
  within?: boolean; type?: string; geometries?: string[];
}

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server.stop();
});

function python(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('/usr/bin/python3', args, { maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (error, stdout, stderr) => error ? reject(new Error(`${args[0]}: ${stderr || error.message}`)) : resolve(stdout));
  });
}

/** The outline read back and compared with the reference's shape (threshold in percent, as the option). */
async function check(kind: string, output: string, reference: string, { threshold = 50, invert = false, width = IMAGE_WIDTH, height = IMAGE_HEIGHT } = {}): Promise<TraceFacts> {
  return JSON.parse(await python([CHECK, kind, output, reference, String(threshold), invert ? '1' : '0', String(width), String(height)])) as TraceFacts;
}

/** Submits with options (form parts beside file and target) and waits for the job's end. */
async function run(bytes: Uint8Array, filename: string, target: string, options: Record<string, string> = {}): Promise<ProgressRecord> {
  return (await runWithOptions(server.url, bytes, filename, target, options, { timeoutMs: 120_000 })).final;
}

/** Converts and writes the result to a file; checks the media type the download is served with. */
async function traced(bytes: Uint8Array, filename: string, target: string, options: Record<string, string> = {}): Promise<string> {
  const record = await run(bytes, filename, target, options);
  assert.equal(record.status, 'done', `job failed: ${JSON.stringify(record.error)}`);
  const { response, bytes: result } = await download(server.url, record.download_url!);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type')?.split(';')[0], MIME[target]);
  return writeTemp(result, `out.${target}`);
}

/** A black disc (centre 48,40, radius 24) and a black bar on white, 128 × 96, drawn by sharp from an SVG. */
const DISC = { width: 128, height: 96 };
const discPng = () => sharp(Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="128" height="96"><rect width="128" height="96" fill="#fff"/><circle cx="48" cy="40" r="24" fill="#000"/><rect x="90" y="20" width="14" height="60" fill="#000"/></svg>`)).png().toBuffer();

test('every raster format lists the four traced targets; svg does not trace its own rendering; png and jpg → pdf stay img2pdf\'s', async () => {
  const images = catalogue.filter((entry) => entry.category === 'image');
  const traced = images.filter((entry) => TARGETS.every((target) => entry.targets.includes(target)));
  // Every image format that reaches png (all of them here but those no engine reads to png).
  assert.ok(traced.length >= 45, `${traced.length} raster formats trace`);
  for (const entry of images) {
    const some = TARGETS.filter((target) => entry.targets.includes(target));
    assert.ok(some.length === 0 || some.length === 4, `${entry.id}: ${some.join(', ')}`);
  }
  // A drawing is never traced: svg and svgz reach no geojson, and their dxf is Inkscape's export
  // of the drawing's own curves (vector-formats.test.ts), not a trace of its rendering.
  for (const id of ['svg', 'svgz']) {
    const entry = catalogue.find((f) => f.id === id)!;
    assert.ok(!entry.targets.includes('geojson'), `${id} reaches a traced target`);
    const discovery = await (await fetch(`${server.url}/api/formats/${id}/dxf`)).json() as { steps: string[] };
    assert.deepEqual(discovery.steps, ['inkscape'], `${id} → dxf is Inkscape's, never potrace's`);
  }
  for (const source of ['png', 'jpg']) {
    const discovery = await (await fetch(`${server.url}/api/formats/${source}/pdf`)).json() as { steps: string[] };
    assert.deepEqual(discovery.steps, ['img2pdf'], `${source} → pdf`);
  }
  const discovery = await (await fetch(`${server.url}/api/formats/png/svg`)).json() as { steps: string[]; options: Array<{ name: string }> };
  assert.deepEqual(discovery.steps, ['potrace']);
  assert.deepEqual(discovery.options.map((o) => o.name).sort(), ['color', 'invert', 'threshold', 'turdsize']);
  const dxf = await (await fetch(`${server.url}/api/formats/png/dxf`)).json() as { options: Array<{ name: string }> };
  assert.deepEqual(dxf.options.map((o) => o.name).sort(), ['invert', 'threshold', 'turdsize'], 'no fill colour in a DXF');
});

describe('a black disc and bar trace to each target, read back by other tools', { concurrency: 4 }, () => {
  for (const target of TARGETS) {
    test(`png → ${target}`, async () => {
      const png = await discPng();
      const reference = await writeTemp(png, 'disc.png');
      const output = await traced(png, 'disc.png', target);
      const facts = await check(target, output, reference, DISC);
      assert.ok(facts.share >= MIN_SHARE, `share ${facts.share}`);
      // The disc spans x 24-72, y 16-64; the bar x 90-104, y 20-80.
      const [x0, y0, x1, y1] = facts.bbox!;
      for (const [got, want] of [[x0, 24], [y0, 16], [x1, 104], [y1, 80]] as const) assert.ok(Math.abs(got - want) <= 2, `bounding box ${facts.bbox}`);
      if (target === 'svg') {
        assert.equal(facts.paths, 2, 'one path for the disc, one for the bar');
        assert.deepEqual(facts.fills, ['#000000']);
      }
      if (target === 'eps') assert.deepEqual(facts.bounding_box, [0, 0, DISC.width, DISC.height]);
      if (target === 'dxf') {
        assert.ok(facts.sections!.includes('ENTITIES'));
        assert.ok((facts.entities!.POLYLINE ?? 0) + (facts.entities!.LWPOLYLINE ?? 0) + (facts.entities!.LINE ?? 0) >= 2, JSON.stringify(facts.entities));
        assert.equal(facts.within, true, 'every vertex within the image');
      }
      if (target === 'geojson') {
        assert.equal(facts.type, 'FeatureCollection');
        assert.ok(facts.geometries!.every((g) => g === 'Polygon' || g === 'MultiPolygon'), String(facts.geometries));
        assert.equal(facts.within, true, 'every vertex within the image');
      }
    });
  }
});

test('pdf with trace=true is the outline, not the picture, from every format sharp reads; without trace the picture PDF stays', async () => {
  const failures: string[] = [];
  const origin = await writeTemp(await sampleImage('png'), 'origin.png');
  await mapInFlight(PDF_SOURCES, 3, async (source) => {
    try {
      const output = await traced(await sampleImage(source), `sample.${source}`, 'pdf', { trace: 'true', color: '#aa0000' });
      const facts = await check('pdf', output, origin);
      if (facts.images !== 0) failures.push(`${source}: ${facts.images} pictures in the traced PDF`);
      if (facts.pages !== 1) failures.push(`${source}: ${facts.pages} pages`);
      if (!(facts.share >= MIN_SAMPLE_SHARE)) failures.push(`${source}: share ${facts.share}`);
      if (facts.colour !== '#aa0000') failures.push(`${source}: filled with ${facts.colour}`);
    } catch (error) {
      failures.push(`${source}: ${(error as Error).message.split('\n')[0]}`);
    }
  });
  assert.deepEqual(failures, []);
  const discovery = await (await fetch(`${server.url}/api/formats/png/pdf`)).json() as { steps: string[]; options: Array<{ name: string }> };
  assert.deepEqual(discovery.steps, ['img2pdf'], 'a client sending only file and target keeps the picture PDF');
  assert.ok(discovery.options.some((option) => option.name === 'trace'), 'trace is listed for png → pdf');
  // A picture PDF without the option: one picture, as before.
  const plain = await traced(await sampleImage('png'), 'sample.png', 'pdf');
  assert.equal((await check('pdf', plain, origin)).images, 1, 'without trace: the picture');
  // trace=false, and a tracing option without trace=true, are refused rather than guessed at.
  for (const options of [{ trace: 'false' }, { threshold: '60' }] as Array<Record<string, string>>) {
    const response = await submitWithOptions(server.url, await sampleImage('png'), 'sample.png', 'pdf', options);
    const body = await response.json() as { error: { code: string; option?: string } };
    assert.equal(response.status, 422, `${JSON.stringify(options)}: ${JSON.stringify(body)}`);
    assert.equal(body.error.option, 'trace');
  }
});

describe('the options do what they say', { concurrency: 4 }, () => {
  test('invert traces the background: the drawing is the negative of the shape', async () => {
    const png = await discPng();
    const reference = await writeTemp(png, 'disc.png');
    const plain = await check('svg', await traced(png, 'disc.png', 'svg'), reference, DISC);
    const inverted = await check('svg', await traced(png, 'disc.png', 'svg', { invert: 'true' }), reference, { ...DISC, invert: true });
    assert.ok(inverted.share >= MIN_SHARE, `share against the negative ${inverted.share}`);
    assert.ok(Math.abs(inverted.dark - (1 - plain.dark)) < 0.05, `dark ${inverted.dark} against ${plain.dark}`);
  });

  test('threshold: a mid-grey square is background at 50 %, shape at 70 %', async () => {
    // Grey 150 (59 % of full brightness) on white.
    const png = await sharp(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><rect width="64" height="64" fill="#fff"/><rect x="16" y="16" width="32" height="32" fill="rgb(150,150,150)"/></svg>')).png().toBuffer();
    const reference = await writeTemp(png, 'grey.png');
    const size = { width: 64, height: 64 };
    const at50 = await check('geojson', await traced(png, 'grey.png', 'geojson', { threshold: '50' }), reference, { ...size, threshold: 50 });
    assert.equal(at50.bbox, null, 'nothing traced at 50 %');
    const at70 = await check('geojson', await traced(png, 'grey.png', 'geojson', { threshold: '70' }), reference, { ...size, threshold: 70 });
    // Pillow fills a polygon's edges inclusively: a pixel more on the right and bottom.
    [16, 16, 48, 48].forEach((want, i) => assert.ok(Math.abs(at70.bbox![i]! - want) <= 1, `bounding box ${at70.bbox}`));
    assert.ok(at70.share >= MIN_SHARE, `share ${at70.share}`);
  });

  test('turdsize: a 3 × 3 speck is kept by default and dropped at 20', async () => {
    const png = await sharp(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><rect width="64" height="64" fill="#fff"/><rect x="8" y="8" width="24" height="24" fill="#000"/><rect x="50" y="50" width="3" height="3" fill="#000"/></svg>')).png().toBuffer();
    const reference = await writeTemp(png, 'speck.png');
    const size = { width: 64, height: 64 };
    const kept = await check('svg', await traced(png, 'speck.png', 'svg'), reference, size);
    assert.equal(kept.paths, 2);
    const dropped = await check('svg', await traced(png, 'speck.png', 'svg', { turdsize: '20' }), reference, size);
    assert.equal(dropped.paths, 1);
    [8, 8, 32, 32].forEach((want, i) => assert.ok(Math.abs(dropped.bbox![i]! - want) <= 1, `bounding box ${dropped.bbox}`));
  });

  for (const target of ['svg', 'eps'] as const) {
    test(`color fills the ${target} outline`, async () => {
      const png = await discPng();
      const reference = await writeTemp(png, 'disc.png');
      const facts = await check(target, await traced(png, 'disc.png', target, { color: '#c81e1e' }), reference, DISC);
      if (target === 'svg') assert.deepEqual(facts.fills, ['#c81e1e']);
      assert.equal(facts.colour, '#c81e1e', 'the drawn shape\'s colour');
      assert.ok(facts.share >= MIN_SHARE, `share ${facts.share}`);
    });
  }

  test('wrong option values are refused with 422 invalid_option before any job exists', async () => {
    const png = await discPng();
    for (const [name, value] of [
      ['threshold', 'abc'], ['threshold', '101'], ['threshold', '-1'], ['threshold', '0.5e2'], ['turdsize', '-1'], ['turdsize', '2.5'],
      ['turdsize', '99999999999'], ['invert', 'maybe'], ['color', 'red'], ['color', '#12345g'], ['color', '#ff0000; rm -rf /'], ['color', '--help'],
    ]) {
      const form = new FormData();
      form.append('file', new Blob([png]), 'disc.png');
      form.append('target', 'svg');
      form.append(name!, value!);
      const body = await expectError(await fetch(`${server.url}/api/convert`, { method: 'POST', body: form }), 422, 'invalid_option');
      assert.equal((body.error as { option?: string }).option, name, `${name}=${value}`);
    }
  });
});

describe('every raster format\'s sample traces to each target', { concurrency: 6 }, () => {
  // The sample (helpers/fixtures.ts): a dark blue half with a white disc, an orange half with
  // black bars, a black-to-white ramp. The reference is its PNG: formats Pillow cannot read were
  // made from it.
  const origin = (async () => writeTemp(await sampleImage('png'), 'origin.png'))();
  test('all of them', async () => {
    const sources = catalogue.filter((entry) => entry.category === 'image' && TARGETS.every((target) => entry.targets.includes(target))).map((entry) => entry.id);
    const pairs = sources.flatMap((source) => TARGETS.map((target) => ({ source, target })));
    const failures: string[] = [];
    const samples = new Map<string, Promise<Buffer>>();
    await mapInFlight(pairs, 6, async ({ source, target }) => {
      try {
        if (!samples.has(source)) samples.set(source, sampleImage(source));
        const output = await traced(await samples.get(source)!, `sample.${source}`, target);
        const facts = await check(target, output, await origin);
        const least = BILEVEL.has(source) ? MIN_BILEVEL_SHARE : MIN_SAMPLE_SHARE;
        if (!(facts.share >= least)) failures.push(`${source} → ${target}: share ${facts.share.toFixed(3)}`);
        if ((target === 'dxf' || target === 'geojson') && !facts.within) failures.push(`${source} → ${target}: a vertex outside the image`);
      } catch (error) {
        failures.push(`${source} → ${target}: ${(error as Error).message.split('\n')[0]}`);
      }
    });
    assert.deepEqual(failures, [], `${failures.length} of ${pairs.length} pairs`);
  });
});

describe('hostile', { concurrency: 2 }, () => {
  test('a noise picture ends in an outline or a clean error, not a hang', async () => {
    const noise = await noisePng(800, 800);
    for (const target of ['svg', 'dxf'] as const) {
      const started = Date.now();
      const record = await run(noise, 'noise.png', target);
      const seconds = (Date.now() - started) / 1000;
      if (record.status === 'error') assert.ok(['output_too_large', 'input_too_complex', 'conversion_failed', 'timeout'].includes(record.error!.code), JSON.stringify(record.error));
      else assert.equal(record.status, 'done');
      assert.ok(seconds < 100, `${seconds} s`);
    }
  });

  test('a noise picture past the output cap ends in output_too_large', async () => {
    // 1200 × 1200 of noise: its greymap (1.4 MB) fits the 2 MB cap, its SVG (tens of megabytes) does not.
    const capped = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_MAX_OUTPUT_BYTES: String(2 * 1024 * 1024) });
    try {
      const jobId = await submitOk(capped.url, await noisePng(1200, 1200), 'noise.png', 'svg');
      const { final } = await waitForJob(capped.url, jobId, { timeoutMs: 120_000 });
      assert.equal(final.status, 'error');
      assert.equal(final.error!.code, 'output_too_large', JSON.stringify(final.error));
    } finally {
      await capped.stop();
    }
  });

  test('a PNG whose header declares 60000 × 60000 pixels is refused before any engine', async () => {
    const png = Buffer.from(await sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } }).png().toBuffer());
    // IHDR's width and height, at bytes 16 and 20; its CRC no longer matches, as a forger's would not bother.
    png.writeUInt32BE(60_000, 16);
    png.writeUInt32BE(60_000, 20);
    const record = await run(png, 'flood.png', 'svg');
    assert.equal(record.status, 'error');
    assert.equal(record.error!.code, 'input_too_complex', JSON.stringify(record.error));
  });
});
