// Every image pair the catalogue advertises goes through the whole client flow, and the output is
// checked with `file` and compared with its source, both decoded by Pillow (or Debian's vips CLI
// where Pillow lacks the format), never by the sharp that made it: same size, same picture (SSIM
// on luma, test/helpers/compare_images.py), same colours. Then the cases a photo library meets:
// a sideways photo with an EXIF orientation, and transparency.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { convert, fetchCatalogue, type CatalogueEntry } from './helpers/client.ts';
import { IMAGE_HEIGHT, IMAGE_WIDTH, sampleImage } from './helpers/fixtures.ts';
import { compareImage, compareImages, type Comparison } from './helpers/images.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { fileMime, writeTemp } from './helpers/tools.ts';

const SHARP_FORMATS = ['avif', 'gif', 'jpg', 'png', 'tiff', 'webp'];
/** Formats read and written (through ImageMagick, chained with sharp). */
const RARE = ['bmp', 'ico', 'tga', 'pcx', 'ppm', 'pgm', 'pbm', 'xpm'];
/** Formats only read. */
const READ_ONLY = ['psd', 'dds'];
const IMAGE_FORMATS = [...SHARP_FORMATS, 'heic', 'jxl', 'jp2', ...RARE];
const MIME: Record<string, string> = {
  avif: 'image/avif', gif: 'image/gif', jpg: 'image/jpeg', png: 'image/png', tiff: 'image/tiff', webp: 'image/webp',
  heic: 'image/heic', jxl: 'image/jxl', jp2: 'image/jp2',
  bmp: 'image/bmp', ico: 'image/vnd.microsoft.icon', tga: 'image/x-tga', pcx: 'image/x-pcx', ppm: 'image/x-portable-pixmap',
  pgm: 'image/x-portable-graymap', pbm: 'image/x-portable-bitmap', xpm: 'image/x-xpixmap', psd: 'image/vnd.adobe.photoshop', dds: 'image/vnd-ms.dds',
};

/*
 * How close each target must be to its source: mean SSIM of the luma (7x7 windows; 1 = the same
 * picture, a mirrored sample scores below 0). Measured values on the sample are in the comments.
 */
/** Lossless targets keep every pixel; 0.99 leaves room only for decoders' rounding. */
const SSIM_LOSSLESS = 0.99;
/**
 * Lossy encoders at the engines' settings (JPEG q85, WebP q82, AVIF q55, HEIC q60, vips' JPEG XL
 * and JPEG 2000 defaults): 0.96 to 0.999 measured on the sample, so a fall in quality fails too.
 */
const SSIM_LOSSY = 0.93;
/** A palette of at most 256 colours (GIF, XPM): the ramp is quantised. */
const SSIM_PALETTE = 0.95;
/** Grey (PGM) against the source's grey: ImageMagick weighs the channels a little differently from BT.601. */
const SSIM_GREY = 0.97;
/**
 * Black and white (PBM) is dithered: compared over 4x4 block averages, where a dither pattern
 * counts as the grey it stands for (0.989 measured; the sample mirrored scores -0.34). The PBM
 * coder's own thresholding, before the engine dithered, scored 0.89 on the sample and 0.73 on
 * the transparency picture, with a third of its brightness gone.
 */
const SSIM_BILEVEL = 0.95;
const SSIM_AT_LEAST: Record<string, number> = {
  png: SSIM_LOSSLESS, tiff: SSIM_LOSSLESS, bmp: SSIM_LOSSLESS, ico: SSIM_LOSSLESS, tga: SSIM_LOSSLESS, pcx: SSIM_LOSSLESS, ppm: SSIM_LOSSLESS,
  jpg: SSIM_LOSSY, webp: SSIM_LOSSY, avif: SSIM_LOSSY, heic: SSIM_LOSSY, jxl: SSIM_LOSSY, jp2: SSIM_LOSSY,
  gif: SSIM_PALETTE, xpm: SSIM_PALETTE, pgm: SSIM_GREY, pbm: SSIM_BILEVEL,
  // Issue #30's writers (their pairs are in raster-formats.test.ts; here the transparency test).
  sgi: SSIM_LOSSLESS, pam: SSIM_LOSSLESS, mng: SSIM_LOSSLESS, cur: SSIM_LOSSLESS, xwd: SSIM_LOSSLESS, ras: SSIM_LOSSLESS,
  pfm: SSIM_LOSSLESS, dpx: SSIM_LOSSLESS, hdr: 0.98, jng: SSIM_LOSSY, fits: SSIM_GREY, xbm: SSIM_BILEVEL, wbmp: SSIM_BILEVEL, otb: SSIM_BILEVEL,
  dcx: SSIM_LOSSLESS, j2k: SSIM_LOSSLESS, vips: SSIM_LOSSLESS, sixel: SSIM_PALETTE, vicar: SSIM_GREY, pgx: SSIM_GREY, cals: SSIM_BILEVEL,
};
/** Each colour band's mean (0-255) may move this much: a swapped or shifted colour moves it by far more. */
const MEAN_TOLERANCE = 8;
/** Targets whose colours are reduced to grey or to black and white: their luma is compared instead. */
const GREY_TARGETS = new Set(['pgm', 'pbm', 'fits', 'xbm', 'wbmp', 'otb', 'vicar', 'pgx', 'cals']);
/** Black-and-white targets: dithered, compared over 4x4 blocks. */
const BILEVEL_TARGETS = new Set(['pbm', 'xbm', 'wbmp', 'otb', 'cals']);

const luma = ([r, g, b]: readonly number[]) => 0.299 * r! + 0.587 * g! + 0.114 * b!;

/** The sample in each source format, made once and written where the comparison can read it. */
const inputs = new Map<string, Promise<{ bytes: Buffer; file: string }>>();
function input(format: string) {
  if (!inputs.has(format)) {
    inputs.set(format, sampleImage(format).then(async (bytes) => ({ bytes, file: await writeTemp(bytes, `in.${format}`) })));
  }
  return inputs.get(format)!;
}

/** The thresholds for one pair: a dithered (PBM) source is compared as the greys it stands for. */
function expectation(source: string, target: string): { mode: 'colour' | 'bilevel'; ssim: number } {
  if (target === 'pbm' || source === 'pbm') return { mode: 'bilevel', ssim: SSIM_BILEVEL };
  return { mode: 'colour', ssim: SSIM_AT_LEAST[target]! };
}

/** Asserts that `result` shows the reference's picture at `ssim` or better, with its colours. */
function assertSamePicture(result: Comparison, target: string, ssim: number, label: string) {
  const { output, reference } = result;
  assert.deepEqual([output.width, output.height], [reference!.width, reference!.height], `${label}: size`);
  assert.ok(result.ssim! >= ssim, `${label}: SSIM ${result.ssim!.toFixed(4)} below ${ssim}`);
  if (GREY_TARGETS.has(target)) {
    assert.ok(Math.abs(luma(output.means) - luma(reference!.means)) <= MEAN_TOLERANCE, `${label}: brightness ${luma(output.means)} far from ${luma(reference!.means)}`);
  } else {
    for (const band of [0, 1, 2]) {
      assert.ok(Math.abs(output.means[band]! - reference!.means[band]!) <= MEAN_TOLERANCE, `${label}: band ${band} mean ${output.means[band]} far from ${reference!.means[band]}`);
    }
  }
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

test('the catalogue lists every raster format with every other as a target', () => {
  for (const id of [...IMAGE_FORMATS, ...READ_ONLY]) {
    const entry = catalogue.find((f) => f.id === id);
    assert.ok(entry, `${id} missing from /api/formats`);
    assert.equal(entry.category, 'image');
    assert.equal(entry.media_type, MIME[id]);
    for (const target of IMAGE_FORMATS.filter((t) => t !== id)) assert.ok(entry.targets.includes(target), `${id} → ${target}`);
  }
  assert.deepEqual(catalogue.map((f) => f.id), [...catalogue.map((f) => f.id)].sort(), 'sorted by id');
});

describe('every advertised image pair converts', { concurrency: 4 }, () => {
  for (const source of [...IMAGE_FORMATS, ...READ_ONLY]) {
    // Every image target the catalogue offers (checked complete above), directly or chained; a
    // format to itself too (a route of its own, for the options).
    for (const target of IMAGE_FORMATS) {
      test(`${source} → ${target}`, async (t) => {
        const { bytes: original } = await input(source);
        const { bytes, response } = await convert(server.url, original, `sample.${source}`, target);
        assert.equal(response.headers.get('content-type'), MIME[target]);
        const file = await writeTemp(bytes, `out.${target}`);
        if (target === 'jxl') {
          // file(1) 5.44 knows only the boxed JPEG XL container, not the bare codestream (FF 0A).
          const boxed = bytes.subarray(0, 12).equals(Buffer.from('0000000c4a584c200d0a870a', 'hex'));
          assert.ok(boxed || (bytes[0] === 0xff && bytes[1] === 0x0a), 'a JPEG XL signature');
        } else {
          // file(1) spells the Netpbm greyscale type its own way.
          assert.equal(fileMime(file), target === 'pgm' ? 'image/x-portable-greymap' : MIME[target], 'file(1) recognises the output type');
        }
        const { mode, ssim } = expectation(source, target);
        const result = await compareImage({ reference: (await input(source)).file, output: file, mode });
        t.diagnostic(`SSIM ${result.ssim?.toFixed(4)} (at least ${ssim})`);
        assert.deepEqual([result.output.width, result.output.height], [IMAGE_WIDTH, IMAGE_HEIGHT]);
        assertSamePicture(result, target, ssim, `${source} → ${target}`);
      });
    }
  }
});

test('the source format comes from the content, not the name', async () => {
  const png = await sampleImage('png');
  const { record, bytes } = await convert(server.url, png, 'holiday.jpg', 'webp');
  assert.equal(record.source, 'png');
  assert.equal(fileMime(await writeTemp(bytes, 'x.webp')), 'image/webp');
});

test('target names are case-insensitive, tolerate a leading dot, and accept aliases', async () => {
  const png = await sampleImage('png');
  for (const [target, id] of [['.WEBP', 'webp'], ['JPEG', 'jpg'], ['tif', 'tiff']] as const) {
    const form = new FormData();
    form.append('file', new Blob([png]), 'a.png');
    form.append('target', target);
    const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body: form });
    assert.equal(response.status, 200, `${target} refused`);
    const { job_id } = (await response.json()) as { job_id: string };
    const record = (await (await fetch(`${server.url}/api/progress/${job_id}`)).json()) as { target: string };
    assert.equal(record.target, id);
  }
});

test('the download is named after the upload with the target extension', async () => {
  const { response } = await convert(server.url, await sampleImage('png'), 'Ferien am Meer.png', 'jpg');
  const disposition = response.headers.get('content-disposition') ?? '';
  assert.match(disposition, /^attachment;/);
  assert.match(disposition, /filename="Ferien am Meer\.jpg"/);
});

/** Runs a short Pillow script (Debian's python3-pil) that writes a test's input. */
function pillow(script: string, ...args: string[]): void {
  execFileSync('/usr/bin/python3', ['-c', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('a photo stored sideways with an EXIF orientation comes out upright, without the tag', { concurrency: 4 }, () => {
  /** Targets from a JPEG, through sharp, Debian's vips and ImageMagick (bmp through png). */
  const FROM_JPEG = ['png', 'webp', 'avif', 'tiff', 'heic', 'jxl', 'jp2', 'bmp'];
  /** A PNG with an eXIf orientation, through sharp and through vips' own rotation. */
  const FROM_PNG = ['webp', 'heic'];
  // The sample, stored turned a quarter to the left with Orientation 6 ("rotate 90° clockwise to
  // view"): a viewer shows it as the upright 96 x 64 sample.
  const sideways = (async () => {
    const dir = await tempDir();
    const upright = (await input('png')).file;
    pillow([
      'import sys', 'from PIL import Image',
      'im = Image.open(sys.argv[1]).convert("RGB").transpose(Image.Transpose.ROTATE_90)',
      'exif = Image.Exif(); exif[0x0112] = 6',
      'im.save(sys.argv[2], quality=95, exif=exif.tobytes())',
      'im.save(sys.argv[3], exif=exif.tobytes())',
    ].join('\n'), upright, path.join(dir, 'sideways.jpg'), path.join(dir, 'sideways.png'));
    return { jpg: path.join(dir, 'sideways.jpg'), png: path.join(dir, 'sideways.png') };
  })();

  for (const [source, targets] of [['jpg', FROM_JPEG], ['png', FROM_PNG]] as const) {
    for (const target of targets) {
      test(`${source} → ${target}`, async (t) => {
        const file = (await sideways)[source];
        const { bytes } = await convert(server.url, await readFile(file), `sideways.${source}`, target);
        const result = await compareImage({ reference: file, output: await writeTemp(bytes, `out.${target}`) });
        t.diagnostic(`SSIM ${result.ssim?.toFixed(4)}, orientation ${result.output.orientation}`);
        assert.deepEqual([result.reference!.width, result.reference!.height], [IMAGE_WIDTH, IMAGE_HEIGHT], 'the reference is shown upright');
        assert.deepEqual([result.output.width, result.output.height], [IMAGE_WIDTH, IMAGE_HEIGHT], 'upright: width and height swapped back');
        assert.ok([null, 1].includes(result.output.orientation), `an orientation tag ${result.output.orientation} would turn it again`);
        assertSamePicture(result, target, Math.min(SSIM_AT_LEAST[target]!, SSIM_LOSSY), `${source} → ${target}`);
      });
    }
  }
});

describe('transparency: kept where the target has it, flattened onto white where it has not', { concurrency: 4 }, () => {
  /** Targets that keep an 8-bit alpha channel. */
  const KEEP_ALPHA = ['png', 'webp', 'avif', 'tiff', 'heic', 'jxl', 'jp2', 'bmp', 'ico', 'tga', 'pcx', 'sgi', 'pam', 'mng', 'cur', 'j2k', 'vips'];
  /** Targets with on/off transparency only: half-transparent pixels become one or the other. */
  const ONE_BIT = ['gif', 'xpm'];
  /** Targets without transparency: flattened onto white, whichever engine writes them. */
  const FLATTENED = ['jpg', 'ppm', 'pgm', 'pbm', 'pdf', 'xwd', 'ras', 'pfm', 'hdr', 'dpx', 'fits', 'jng', 'xbm', 'wbmp', 'otb', 'dcx', 'sixel', 'cals', 'vicar', 'pgx'];
  /** Lossy encoders may move alpha a little (measured: 3 for JPEG XL). */
  const ALPHA_TOLERANCE = 8;
  /** A band value at least this high is white. */
  const WHITE = 245;
  // 64 x 48: clear everywhere (over black, which a target that merely dropped the alpha would
  // show), an opaque red block top right, a half-transparent blue band along the bottom.
  const CLEAR: [number, number] = [8, 8];
  const OPAQUE: [number, number] = [48, 16];
  const HALF: [number, number] = [16, 40];
  const transparent = (async () => {
    const file = path.join(await tempDir(), 'alpha.png');
    pillow([
      'import sys', 'from PIL import Image, ImageDraw',
      'im = Image.new("RGBA", (64, 48), (0, 0, 0, 0))',
      'draw = ImageDraw.Draw(im)',
      'draw.rectangle([32, 0, 63, 31], fill=(200, 30, 30, 255))',
      'draw.rectangle([0, 32, 63, 47], fill=(30, 60, 200, 128))',
      'im.save(sys.argv[1])',
    ].join('\n'), file);
    return file;
  })();

  test('every image target of PNG is in one of the three lists', () => {
    const targets = catalogue.find((f) => f.id === 'png')!.targets.filter((id) => catalogue.find((f) => f.id === id)?.category === 'image' || id === 'pdf');
    assert.deepEqual([...targets].sort(), [...KEEP_ALPHA, ...ONE_BIT, ...FLATTENED].sort());
  });

  for (const target of [...KEEP_ALPHA, ...ONE_BIT, ...FLATTENED]) {
    test(`png with alpha → ${target}`, async (t) => {
      const source = await transparent;
      const { bytes } = await convert(server.url, await readFile(source), 'alpha.png', target);
      let output = await writeTemp(bytes, `out.${target}`);
      if (target === 'pdf') {
        // The page's image, as poppler extracts it (a rendering would blur its edges).
        execFileSync('pdfimages', ['-png', output, output.replace(/\.pdf$/, '')]);
        assert.deepEqual((await readdir(path.dirname(output))).sort(), ['out-000.png', 'out.pdf'], 'one image in the PDF');
        output = output.replace(/\.pdf$/, '-000.png');
      }
      const mode = BILEVEL_TARGETS.has(target) ? 'bilevel' : 'colour';
      const [result] = await compareImages([{ reference: source, output, mode, probes: [CLEAR, OPAQUE, HALF] }]);
      const [clear, opaque, half] = result!.probes;
      t.diagnostic(`alpha ${result!.output.has_alpha}, clear ${clear}, opaque ${opaque}, half ${half}, SSIM on white ${result!.ssim?.toFixed(4)}`);
      const label = `png with alpha → ${target}`;
      if (KEEP_ALPHA.includes(target)) {
        assert.ok(result!.output.has_alpha, `${label}: the output has an alpha channel`);
        assert.ok(result!.alpha_max_difference! <= ALPHA_TOLERANCE, `${label}: alpha moved by ${result!.alpha_max_difference}`);
      } else if (ONE_BIT.includes(target)) {
        assert.ok(result!.output.has_alpha, `${label}: the output has transparency`);
        assert.equal(clear![3], 0, `${label}: clear stays clear`);
        assert.equal(opaque![3], 255, `${label}: opaque stays opaque`);
        assert.ok([0, 255].includes(half![3]!), `${label}: half-transparent becomes clear or opaque`);
      } else {
        assert.ok(!result!.output.has_alpha, `${label}: no alpha channel`);
        assert.ok(clear!.slice(0, 3).every((v) => v >= WHITE), `${label}: clear pixels are white, not ${clear}`);
      }
      // Flattened onto white, output and source show the same picture (for one-bit targets the
      // half-transparent band differs, so only the size and the probes above are asserted).
      if (!ONE_BIT.includes(target)) {
        const ssim = BILEVEL_TARGETS.has(target) ? SSIM_BILEVEL : target === 'pdf' ? SSIM_LOSSLESS : SSIM_AT_LEAST[target]!;
        assertSamePicture(result!, target === 'pdf' ? 'png' : target, ssim, label);
      } else {
        assert.deepEqual([result!.output.width, result!.output.height], [64, 48]);
      }
    });
  }
});

test('an icon with several sizes converts its largest image, as viewers show it', async () => {
  // Pillow lists the sizes smallest first: ImageMagick's first image would be the 16 x 16 one.
  const icon = path.join(await tempDir(), 'sizes.ico');
  pillow([
    'import sys', 'from PIL import Image',
    'im = Image.open(sys.argv[1]).convert("RGBA").resize((64, 64))',
    'im.save(sys.argv[2], sizes=[(16, 16), (32, 32), (64, 64)])',
  ].join('\n'), (await input('png')).file, icon);
  const { bytes } = await convert(server.url, await readFile(icon), 'sizes.ico', 'png');
  const result = await compareImage({ reference: icon, output: await writeTemp(bytes, 'out.png') });
  assert.deepEqual([result.reference!.width, result.reference!.height], [64, 64], 'Pillow shows the largest');
  assertSamePicture(result, 'png', SSIM_LOSSLESS, 'ico → png');
});
