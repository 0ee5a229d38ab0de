// Image options through HTTP (api-contract.md, "Conversion options"): width/height/fit, quality,
// strip, background, pixel_density, and same-format targets, for every engine that writes raster
// images (sharp, Debian's vips, ImageMagick, rsvg) and every family of target. Each output is
// checked by other libraries than the engine's: Pillow (Debian's python3-pil, with littleCMS) and
// Debian's vips command line only where Pillow lacks the format (HEIC, JPEG XL), through
// test/helpers/compare_images.py and test/helpers/option_image_facts.py. Then hostile values.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { download, expectError, waitForJob, type ProgressRecord } from './helpers/client.ts';
import { sampleImage } from './helpers/fixtures.ts';
import { compareImages } from './helpers/images.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const FACTS = path.join(import.meta.dirname, 'helpers', 'option_image_facts.py');
const { VIPSHOME: _vipsHome, ...toolEnv } = process.env;

/** Runs option_image_facts.py over some jobs in one Python start; rejects when any failed. */
function facts<T = Record<string, unknown>>(jobs: ReadonlyArray<Record<string, unknown>>): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const child = execFile('/usr/bin/python3', [FACTS], { env: toolEnv, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`option_image_facts.py failed: ${stderr || error.message}`));
      const results = JSON.parse(stdout) as Array<T & { error?: string }>;
      const failed = results.find((r) => r.error);
      if (failed) return reject(new Error(failed.error));
      resolve(results);
    });
    child.stdin!.end(JSON.stringify(jobs));
  });
}

function form(bytes: Uint8Array, filename: string, target: string, options: Record<string, string>): FormData {
  const body = new FormData();
  body.append('file', new Blob([bytes]), filename);
  body.append('target', target);
  for (const [name, value] of Object.entries(options)) body.append(name, value);
  return body;
}

/** Submits with options and waits for the job's end. */
async function run(bytes: Uint8Array, filename: string, target: string, options: Record<string, string>): Promise<ProgressRecord> {
  const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body: form(bytes, filename, target, options) });
  const body = await response.json() as { ok: boolean; job_id: string };
  assert.equal(response.status, 200, `submission refused: ${JSON.stringify(body)}`);
  return (await waitForJob(server.url, body.job_id)).final;
}

/** The whole flow with options: the result written to a file, and the record. */
async function convertWith(bytes: Uint8Array, filename: string, target: string, options: Record<string, string>): Promise<{ file: string; bytes: Buffer; record: ProgressRecord }> {
  const record = await run(bytes, filename, target, options);
  assert.equal(record.status, 'done', `job failed: ${JSON.stringify(record.error)}`);
  const { response, bytes: result } = await download(server.url, record.download_url!);
  assert.equal(response.status, 200);
  return { file: await writeTemp(result, `out.${target}`), bytes: result, record };
}

async function pairOptions(source: string, target: string): Promise<Array<{ name: string; default?: unknown; maximum?: number }>> {
  const response = await fetch(`${server.url}/api/formats/${source}/${target}`);
  assert.equal(response.status, 200);
  return (await response.json() as { options: Array<{ name: string; default?: unknown; maximum?: number }> }).options;
}

let server: RunningServer;
let dir: string;
/** The sample (96 x 64) in each format, and its PNG as the reference picture. */
const samples = new Map<string, Promise<Buffer>>();
const sample = (format: string) => {
  if (!samples.has(format)) samples.set(format, sampleImage(format));
  return samples.get(format)!;
};
/** The sample as PNG: the picture every resized output is compared with. */
let samplePng: string;
/** A 640 x 480 photo with fine detail and EXIF (a camera make and a GPS position). */
let photo: Buffer;
let photoFile: string;
/** A flat colour tagged with a Display P3 profile. */
let p3: Buffer;
let p3File: string;
/** The photo as HEIC (made with Debian's vips), for vips as the source. */
let photoHeic: Buffer;

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  dir = await tempDir();
  samplePng = path.join(dir, 'sample.png');
  await writeFile(samplePng, await sample('png'));
  photoFile = path.join(dir, 'photo.jpg');
  p3File = path.join(dir, 'p3.jpg');
  await facts([{ op: 'make', jpg: photoFile, p3: p3File }]);
  photo = await readFile(photoFile);
  p3 = await readFile(p3File);
  execFileSync('vips', ['copy', photoFile, path.join(dir, 'photo.heic[Q=90]')], { env: toolEnv });
  photoHeic = await readFile(path.join(dir, 'photo.heic'));
});
after(async () => {
  await server.stop();
});

/*
 * A resized output against the sample resized by Pillow (Lanczos): SSIM of the luma. Measured
 * 0.93-0.99 on the cases below (engines resample with other kernels, and lossy targets add their
 * own error); a stretched, mirrored or wrongly cropped picture scores below 0.6.
 */
const SSIM_RESIZED = 0.8;

describe('width, height and fit give the size asked for, of the same picture', { concurrency: 4 }, () => {
  // [source, target, options, expected size, the engine that resizes]
  const CASES: Array<[string, string, Record<string, string>, [number, number], string]> = [
    ['png', 'webp', { width: '48' }, [48, 32], 'sharp, width alone keeps the aspect ratio'],
    ['png', 'heic', { width: '48' }, [48, 32], 'vips'],
    ['heic', 'png', { height: '32' }, [48, 32], 'vips, height alone'],
    ['jp2', 'tiff', { width: '30', height: '30' }, [30, 20], 'vips, fit max by default'],
    ['jxl', 'jxl', { width: '40', height: '40', fit: 'crop' }, [40, 40], 'vips, same format, crop'],
    ['heic', 'heic', { width: '50', height: '20', fit: 'scale' }, [50, 20], 'vips, same format, scale'],
    ['png', 'bmp', { width: '48' }, [48, 32], 'ImageMagick'],
    ['png', 'pcx', { width: '40', height: '40', fit: 'crop' }, [40, 40], 'ImageMagick, crop'],
    ['bmp', 'bmp', { height: '32' }, [48, 32], 'ImageMagick, same format'],
    ['tga', 'png', { width: '60', height: '20', fit: 'scale' }, [60, 20], 'ImageMagick to png, scale'],
    ['png', 'png', { width: '50' }, [50, 33], 'sharp, same format'],
    ['tga', 'tga', { width: '24', height: '24', fit: 'max' }, [24, 16], 'ImageMagick, same format, max'],
  ];
  for (const [source, target, options, [width, height], label] of CASES) {
    test(`${source} → ${target} ${new URLSearchParams(options)} (${label})`, async (t) => {
      const { file, record } = await convertWith(await sample(source), `sample.${source}`, target, options);
      assert.deepEqual(record.options, options, 'the record echoes the options');
      const scratch = await tempDir();
      const reference = path.join(scratch, 'reference.png');
      const original = path.join(scratch, `sample.${source}`);
      await writeFile(original, await sample(source));
      await facts([{ op: 'reference', source: original, fallback: samplePng, out: reference, width, height, fit: options.fit ?? 'max' }]);
      const [result] = await compareImages([{ reference, output: file }]);
      t.diagnostic(`${result!.output.width} x ${result!.output.height}, SSIM ${result!.ssim?.toFixed(4)}`);
      assert.deepEqual([result!.output.width, result!.output.height], [width, height]);
      assert.ok(result!.ssim! >= SSIM_RESIZED, `SSIM ${result!.ssim} below ${SSIM_RESIZED}: not the same picture`);
    });
  }
});

describe('quality: 20 gives a smaller file and a worse picture than 90', { concurrency: 4 }, () => {
  // [source, target, engine]: every lossy target of vips, and sharp's JPEG to itself.
  const CASES: Array<[string, string, string]> = [
    ['jpg', 'jpg', 'sharp'], ['jpg', 'heic', 'vips'], ['jpg', 'jxl', 'vips'], ['jpg', 'jp2', 'vips'], ['heic', 'webp', 'vips'], ['heic', 'heic', 'vips'],
  ];
  for (const [source, target, engine] of CASES) {
    test(`${source} → ${target} (${engine})`, async (t) => {
      const input = source === 'heic' ? photoHeic : photo;
      const [low, high] = await Promise.all(['20', '90'].map((quality) => convertWith(input, `photo.${source}`, target, { quality })));
      const [lowResult, highResult] = await compareImages([{ reference: photoFile, output: low!.file }, { reference: photoFile, output: high!.file }]);
      t.diagnostic(`q20: ${low!.bytes.length} bytes, SSIM ${lowResult!.ssim?.toFixed(4)}; q90: ${high!.bytes.length} bytes, SSIM ${highResult!.ssim?.toFixed(4)}`);
      assert.deepEqual([lowResult!.output.width, lowResult!.output.height], [640, 480]);
      assert.ok(low!.bytes.length < high!.bytes.length, 'quality 20 is smaller');
      assert.ok(lowResult!.ssim! < highResult!.ssim!, 'quality 20 looks worse');
    });
  }
  test('each lossy target offers quality with the default it used before, a lossless one none', async () => {
    const defaults: Record<string, unknown> = {};
    for (const target of ['heic', 'jxl', 'jp2', 'webp']) {
      defaults[target] = (await pairOptions('heic', target)).find((o) => o.name === 'quality')?.default;
    }
    assert.deepEqual(defaults, { heic: 60, jxl: 90, jp2: 48, webp: 82 });
    // png → bmp has one route (ImageMagick): no lossy step on the way.
    assert.ok(!(await pairOptions('png', 'bmp')).some((o) => o.name === 'quality'));
  });
});

describe('strip: metadata is removed by default, kept with strip=false', { concurrency: 4 }, () => {
  // [source, target, engine]: the HEIC photo was made by Debian's vips, which kept the JPEG's EXIF.
  for (const [source, target, engine] of [['jpg', 'jpg', 'sharp'], ['jpg', 'heic', 'vips'], ['heic', 'webp', 'vips'], ['heic', 'heic', 'vips'], ['jpg', 'webp', 'sharp']] as const) {
    test(`${source} with EXIF and GPS → ${target} (${engine})`, async () => {
      const input = source === 'heic' ? photoHeic : photo;
      const [stripped, kept] = await Promise.all([
        convertWith(input, `photo.${source}`, target, {}),
        convertWith(input, `photo.${source}`, target, { strip: 'false' }),
      ]);
      const [before, without, withMeta] = await facts<{ exif: boolean; gps: boolean; make: string | null }>([
        { op: 'metadata', file: source === 'heic' ? path.join(dir, 'photo.heic') : photoFile }, { op: 'metadata', file: stripped.file }, { op: 'metadata', file: kept.file },
      ]);
      assert.ok(before!.gps, 'the source has a GPS position');
      assert.equal(without!.gps, false, 'no GPS position by default');
      assert.equal(without!.make ?? null, null, 'no camera make by default');
      assert.ok(!stripped.bytes.includes('ConvertdTestCamera'), 'not even as bytes');
      assert.equal(withMeta!.gps, true, 'strip=false keeps the GPS position');
      assert.equal(withMeta!.make, 'ConvertdTestCamera');
    });
  }
  test('a picture with a colour profile keeps its colours when the profile is stripped (vips)', async () => {
    const { file } = await convertWith(p3, 'p3.jpg', 'heic', {});
    const [expected, output] = await facts<{ pixel: number[] }>([
      { op: 'srgb', file: p3File, x: 20, y: 20 },
      { op: 'srgb', file: (await compareAsPng(file)), x: 20, y: 20 },
    ]);
    // Display P3 (200, 120, 60) is about (213, 115, 45) in sRGB; read without its profile, it would stay (200, 120, 60).
    const COLOUR_TOLERANCE = 5;
    for (const band of [0, 1, 2]) {
      assert.ok(Math.abs(output!.pixel[band]! - expected!.pixel[band]!) <= COLOUR_TOLERANCE, `band ${band}: ${output!.pixel} against ${expected!.pixel}`);
    }
  });
  test('strip is offered where the engine can keep metadata, not for targets that hold none', async () => {
    assert.ok((await pairOptions('jpg', 'heic')).some((o) => o.name === 'strip' && o.default === true));
    assert.ok((await pairOptions('psd', 'png')).some((o) => o.name === 'strip'));
    assert.ok(!(await pairOptions('svg', 'png')).some((o) => o.name === 'strip'), 'rsvg writes no metadata');
    assert.ok(!(await pairOptions('bmp', 'bmp')).some((o) => o.name === 'strip'), 'a BMP holds no EXIF');
    assert.ok(!(await pairOptions('jxl', 'jxl')).some((o) => o.name === 'strip'), 'vips writes no EXIF into JPEG XL');
  });
});

/** A HEIC decoded by Debian's vips to a PNG that keeps the file's profile, for Pillow. */
async function compareAsPng(file: string): Promise<string> {
  const png = `${file}.png`;
  execFileSync('vips', ['copy', file, png], { env: toolEnv });
  return png;
}

describe('background: transparent areas take the colour asked for where the target has no alpha', { concurrency: 4 }, () => {
  const CLEAR: [number, number] = [8, 8];
  const OPAQUE: [number, number] = [48, 16];
  const transparent = (async () => {
    const file = path.join(await tempDir(), 'alpha.png');
    execFileSync('/usr/bin/python3', ['-c', [
      'import sys', 'from PIL import Image, ImageDraw',
      'im = Image.new("RGBA", (64, 48), (0, 0, 0, 0))',
      'ImageDraw.Draw(im).rectangle([32, 0, 63, 31], fill=(200, 30, 30, 255))',
      'im.save(sys.argv[1])',
    ].join('\n'), file]);
    return file;
  })();
  /** A band within this of the colour asked for (JPEG moves flat colours a little). */
  const BAND_TOLERANCE = 12;
  // [target, engine, the clear pixel expected, the opaque one]: ImageMagick's grey is the Rec. 709
  // luma, 0.7152 × 255 for the green, 0.2126 × 200 + 0.7874 × 30 for the red.
  const CASES: Array<[string, string, number[], number[]]> = [
    ['jpg', 'sharp', [0, 255, 0], [200, 30, 30]],
    ['ppm', 'ImageMagick', [0, 255, 0], [200, 30, 30]],
    ['pgm', 'ImageMagick', [182, 182, 182], [66, 66, 66]],
  ];
  for (const [target, engine, clear, opaque] of CASES) {
    test(`png with alpha → ${target} background=#00ff00 (${engine})`, async () => {
      const source = await transparent;
      const { file } = await convertWith(await readFile(source), 'alpha.png', target, { background: '#00ff00' });
      const [result] = await compareImages([{ output: file, probes: [CLEAR, OPAQUE] }]);
      assert.equal(result!.output.has_alpha, false);
      const [clearPixel, opaquePixel] = result!.probes;
      for (const band of [0, 1, 2]) {
        assert.ok(Math.abs(clearPixel![band]! - clear[band]!) <= BAND_TOLERANCE, `clear: ${clearPixel} instead of ${clear}`);
        assert.ok(Math.abs(opaquePixel![band]! - opaque[band]!) <= BAND_TOLERANCE, `opaque: ${opaquePixel} instead of ${opaque}`);
      }
    });
  }
  test('background is offered for targets without alpha only', async () => {
    for (const [source, target, offered] of [['png', 'jpg', true], ['png', 'ppm', true], ['png', 'pbm', true], ['png', 'bmp', false], ['heic', 'heic', false], ['tga', 'tga', false]] as const) {
      assert.equal((await pairOptions(source, target)).some((o) => o.name === 'background'), offered, `${source} → ${target}`);
    }
  });
});

describe('vector to raster: drawn at the size asked for', { concurrency: 4 }, () => {
  // 100 x 50 CSS pixels: a black bar on white, its edges at x = 20 and 80.
  const DRAWING = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><rect width="100" height="50" fill="#fff"/><rect x="20" y="10" width="60" height="30" fill="#000"/></svg>');
  /**
   * Pixels along a row through the bar that are neither black nor white: a vector drawn at its size
   * has two edges, each at most a pixel of antialiasing (2 measured); the 100 px bitmap scaled up 8x
   * smears each edge over several pixels (12 or more).
   */
  const SHARP_EDGE_PIXELS = 4;
  test('svg → png width=800: 800 x 400 with sharp edges', async () => {
    const { file } = await convertWith(DRAWING, 'drawing.svg', 'png', { width: '800' });
    const [edge] = await facts<{ blurred: number; width: number }>([{ op: 'edge', file, row: 200 }]);
    assert.equal(edge!.width, 800);
    assert.ok(edge!.blurred <= SHARP_EDGE_PIXELS, `${edge!.blurred} grey pixels across the edges: scaled, not drawn`);
    const [result] = await compareImages([{ output: file }]);
    assert.deepEqual([result!.output.width, result!.output.height], [800, 400]);
  });
  test('svg → png pixel_density=192: twice the size, default 96', async () => {
    const [doubled, plain] = await Promise.all([convertWith(DRAWING, 'drawing.svg', 'png', { pixel_density: '192' }), convertWith(DRAWING, 'drawing.svg', 'png', {})]);
    const [big, normal] = await compareImages([{ output: doubled.file }, { output: plain.file }]);
    assert.deepEqual([big!.output.width, big!.output.height], [200, 100]);
    assert.deepEqual([normal!.output.width, normal!.output.height], [100, 50]);
    assert.equal((await pairOptions('svg', 'png')).find((o) => o.name === 'pixel_density')?.default, 96);
  });
  test('svg → png width=40 height=40 fit=crop: the middle of the drawing', async () => {
    const { file } = await convertWith(DRAWING, 'drawing.svg', 'png', { width: '40', height: '40', fit: 'crop' });
    // Covering 40 x 40 draws it 80 x 40; the middle 40 px (20-60) are all bar except a 4 px white band top and bottom.
    const [result] = await compareImages([{ output: file, probes: [[20, 20], [2, 20], [37, 20], [20, 1]] }]);
    assert.deepEqual([result!.output.width, result!.output.height], [40, 40]);
    const [middle, left, right, top] = result!.probes;
    assert.ok([middle, left, right].every((p) => p![0]! < 32), `the bar fills the width: ${middle} ${left} ${right}`);
    assert.ok(top![0]! > 224, `white above the bar: ${top}`);
  });
  test('svg → jpg width=300 (rsvg draws, sharp encodes)', async () => {
    const { file } = await convertWith(DRAWING, 'drawing.svg', 'jpg', { width: '300', quality: '90' });
    const [result] = await compareImages([{ output: file }]);
    assert.deepEqual([result!.output.width, result!.output.height], [300, 150]);
  });
});

describe('same-format targets', () => {
  test('the formats of vips and ImageMagick list themselves as targets', async () => {
    const catalogue = (await (await fetch(`${server.url}/api/formats`)).json() as { formats: Array<{ id: string; targets: string[] }> }).formats;
    for (const id of ['heic', 'jxl', 'jp2', 'bmp', 'ico', 'tga', 'pcx', 'ppm', 'pgm', 'pbm', 'xpm', 'png', 'jpg']) {
      assert.ok(catalogue.find((f) => f.id === id)?.targets.includes(id), `${id} → ${id}`);
    }
    // svg → svg is Inkscape's plain SVG (vector-formats.test.ts), not a raster engine's: it takes
    // no raster option. A DXF lists no such target (Inkscape would write outlines only).
    const plain = await (await fetch(`${server.url}/api/formats/svg/svg`)).json() as { steps: string[]; options: Array<{ name: string }> };
    assert.deepEqual(plain.steps, ['inkscape']);
    assert.deepEqual(plain.options.map((o) => o.name), ['text_to_path']);
    assert.ok(!catalogue.find((f) => f.id === 'dxf')?.targets.includes('dxf'), 'no dxf → dxf');
  });
  test('an icon is at most 256 px: a larger width is refused at submission', async () => {
    const options = await pairOptions('ico', 'ico');
    assert.equal(options.find((o) => o.name === 'width')?.maximum, 256);
    const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body: form(await sample('ico'), 'a.ico', 'ico', { width: '512' }) });
    const body = await expectError(response, 422, 'invalid_option');
    assert.equal(body.error.option, 'width');
  });
});

describe('a chained pair offers what its steps apply, and nothing by a detour', () => {
  test('heic → jpg (vips, then sharp): the size by vips, quality and background by sharp', async () => {
    const names = (await pairOptions('heic', 'jpg')).map((o) => o.name);
    for (const name of ['width', 'height', 'fit', 'quality', 'background', 'strip']) assert.ok(names.includes(name), `heic → jpg lists ${name}`);
    const { file, record } = await convertWith(await sample('heic'), 'sample.heic', 'jpg', { width: '48', quality: '50', background: '#000000' });
    assert.deepEqual(record.ignored_options ?? [], []);
    const [result] = await compareImages([{ output: file }]);
    assert.deepEqual([result!.output.width, result!.output.height], [48, 32]);
  });
  test('png → webp keeps transparency: background is not offered, and ignored when given', async () => {
    assert.ok(!(await pairOptions('png', 'webp')).some((o) => o.name === 'background'));
    const { record } = await convertWith(await sample('png'), 'sample.png', 'webp', { background: '#00ff00', width: '48' });
    assert.deepEqual(record.ignored_options, ['background']);
    assert.deepEqual(record.options, { width: '48' });
  });
});

describe('hostile values: 422 invalid_option naming the option, before any work', { concurrency: 4 }, () => {
  const CASES: Array<[string, string, Record<string, string>, string]> = [
    ['png', 'heic', { width: '0' }, 'width'],
    ['png', 'bmp', { width: '1000000' }, 'width'],
    ['png', 'heic', { width: 'abc' }, 'width'],
    ['png', 'heic', { width: '-5' }, 'width'],
    ['png', 'heic', { width: '1e3' }, 'width'],
    ['png', 'heic', { width: '40\u0000; rm -rf /' }, 'width'],
    ['png', 'heic', { quality: '101' }, 'quality'],
    ['png', 'jxl', { quality: '-q 0' }, 'quality'],
    ['png', 'bmp', { fit: 'zoom', width: '10', height: '10' }, 'fit'],
    ['png', 'ppm', { background: 'red' }, 'background'],
    ['png', 'ppm', { background: '#00ff00 -fill' }, 'background'],
    ['png', 'heic', { strip: 'maybe' }, 'strip'],
    ['svg', 'png', { pixel_density: '100000' }, 'pixel_density'],
    ['png', 'heic', { width: '16384', height: '16384' }, 'width'],
  ];
  for (const [source, target, options, option] of CASES) {
    test(`${source} → ${target} ${JSON.stringify(options)}`, async () => {
      const bytes = source === 'svg' ? Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>') : await sample(source);
      const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body: form(bytes, `a.${source}`, target, options) });
      const body = await expectError(response, 422, 'invalid_option');
      assert.equal(body.error.option, option);
    });
  }
});

describe('a size past the pixel limit found once the job reads the image ends it with invalid_option', { concurrency: 4 }, () => {
  // 4 x 4000: width=16384 alone asks for 16384 x 16384000 pixels.
  const tall = (async () => {
    const file = path.join(await tempDir(), 'tall.png');
    execFileSync('/usr/bin/python3', ['-c', 'import sys\nfrom PIL import Image\nImage.new("RGB", (4, 4000), (9, 99, 199)).save(sys.argv[1])', file]);
    return readFile(file);
  })();
  for (const [source, target, engine] of [['png', 'heic', 'vips'], ['png', 'bmp', 'ImageMagick'], ['png', 'webp', 'sharp'], ['svg', 'png', 'rsvg']] as const) {
    test(`${source} → ${target} (${engine})`, async () => {
      const bytes = source === 'svg' ? Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4000"/>') : await tall;
      const record = await run(bytes, `tall.${source}`, target, { width: '16384' });
      assert.equal(record.status, 'error');
      assert.equal(record.error?.code, 'invalid_option', JSON.stringify(record.error));
    });
  }
});
