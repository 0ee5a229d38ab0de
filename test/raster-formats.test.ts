// The raster formats of issue #30 (ImageMagick's coders under the policy, OpenEXR through
// Debian's vips): every pair they add to the catalogue goes through the HTTP API, and its output
// is decoded by a tool that is not the engine that wrote it (Pillow, ffmpeg, Debian's vips, or a
// few lines of Python in helpers/compare_images.py) and compared with its source: same size,
// same picture (SSIM on luma), same colours. Comparisons are batched: one Python process for
// many pairs.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { convert, expectError, fetchCatalogue, submit, waitForJob, submitOk, type CatalogueEntry } from './helpers/client.ts';
import { IMAGE_HEIGHT, IMAGE_WIDTH, sampleImage, xcfFrom } from './helpers/fixtures.ts';
import { compareImages, type CompareJob, type Comparison } from './helpers/images.ts';
import { BILEVEL, GREY, luma, MEAN_TOLERANCE, SSIM_AT_LEAST, SSIM_BILEVEL } from './helpers/image-expectations.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

/** The image formats there were before (sharp, vips, ImageMagick): targets of every new source. */
const OLD_TARGETS = ['avif', 'gif', 'jpg', 'png', 'tiff', 'webp', 'heic', 'jxl', 'jp2', 'bmp', 'ico', 'tga', 'pcx', 'ppm', 'pgm', 'pbm', 'xpm'];
const OLD_SOURCES = [...OLD_TARGETS, 'psd', 'dds'];
/** Read and written through ImageMagick (wave 3: j2k, sixel, cals, vicar, pgx) and Debian's vips (its own format). */
const ADDED_WRITES = ['xbm', 'xwd', 'sgi', 'ras', 'pam', 'pfm', 'hdr', 'dpx', 'fits', 'mng', 'jng', 'cur', 'wbmp', 'otb', 'dcx', 'j2k', 'sixel', 'cals', 'vicar', 'pgx', 'vips'];
/** Only read: ImageMagick (PICT, TIM, Cineon, MIFF, VIFF, GIMP's XCF) and Debian's vips (OpenEXR). */
const ADDED_READS = ['pict', 'tim', 'cin', 'miff', 'viff', 'exr', 'xcf'];
const ADDED = [...ADDED_WRITES, ...ADDED_READS];

const MIME: Record<string, string> = {
  avif: 'image/avif', gif: 'image/gif', jpg: 'image/jpeg', png: 'image/png', tiff: 'image/tiff', webp: 'image/webp',
  heic: 'image/heic', jxl: 'image/jxl', jp2: 'image/jp2', bmp: 'image/bmp', ico: 'image/vnd.microsoft.icon', tga: 'image/x-tga',
  pcx: 'image/x-pcx', ppm: 'image/x-portable-pixmap', pgm: 'image/x-portable-graymap', pbm: 'image/x-portable-bitmap', xpm: 'image/x-xpixmap',
  xbm: 'image/x-xbitmap', xwd: 'image/x-xwindowdump', sgi: 'image/x-sgi', ras: 'image/x-sun-raster', pam: 'image/x-portable-arbitrarymap',
  pfm: 'image/x-portable-floatmap', hdr: 'image/vnd.radiance', dpx: 'image/x-dpx', fits: 'image/fits', mng: 'video/x-mng', jng: 'image/x-jng',
  cur: 'image/x-win-bitmap', wbmp: 'image/vnd.wap.wbmp', otb: 'image/x-otb', pict: 'image/x-pict', tim: 'image/x-tim', cin: 'image/x-cineon',
  miff: 'image/x-miff', viff: 'image/x-viff', exr: 'image/x-exr', dcx: 'image/x-dcx',
  j2k: 'image/x-jp2-codestream', sixel: 'image/x-sixel', cals: 'image/x-cals', vicar: 'image/x-vicar', pgx: 'image/x-pgx', vips: 'image/x-vips',
  xcf: 'image/x-xcf',
};

/**
 * What file(1) 5.44 says of each target (its own magic, not ours). PFM, WBMP, OTB, CALS, PGX and
 * the vips format it does not know ("data"), SIXEL it calls text with escape sequences: their
 * outputs are checked by the decoders alone, which read their headers.
 */
const FILE_SAYS: Record<string, RegExp> = {
  avif: /AVIF|ISO Media/, gif: /^GIF image/, jpg: /^JPEG image/, png: /^PNG image/, tiff: /^TIFF image/, webp: /Web\/P image/,
  heic: /HEIF|ISO Media/, jp2: /JPEG 2000/, bmp: /^PC bitmap/, ico: /icon resource/, tga: /Targa image/,
  pcx: /^PCX/, ppm: /Netpbm image data.*pixmap/, pgm: /Netpbm image data.*greymap/, pbm: /Netpbm image data.*bitmap/, xpm: /X pixmap/,
  xbm: /xbm image/, xwd: /X-Window screen dump/, sgi: /^SGI image/, ras: /^Sun raster image/, pam: /Netpbm PAM/, pfm: /./,
  hdr: /Radiance HDR/, dpx: /^DPX image/, fits: /^FITS image/, mng: /^MNG video/, jng: /^JNG video/, cur: /cursor resource/,
  wbmp: /./, otb: /./, dcx: /^DCX multi-page/,
  j2k: /^JPEG 2000 codestream/, sixel: /escape sequences/, cals: /./, vicar: /VICAR/, pgx: /./, vips: /./,
};

/**
 * A PlayStation TIM of 15-bit colour (5 bits a channel) against the 8-bit PNG it was made from:
 * the ramp comes in 32 steps.
 */
const SSIM_TIM = 0.95;
/** A source compared with the PNG it was made from (no decoder but ImageMagick reads it) may lose what its format loses. */
const SOURCE_SSIM: Record<string, number> = { tim: SSIM_TIM };

/**
 * Sources an independent decoder reads (Pillow, ffmpeg, vips, compare_images.py): compared with
 * themselves (an XCF by compare_images.py's reader, which composites its layers). The others
 * (PICT, TIM, Cineon, MIFF, VIFF: only ImageMagick reads them here; OpenEXR: only vips, its
 * engine, shows it in sRGB) are compared with the PNG they were made from.
 */
const DECODABLE = new Set([...ADDED_WRITES, 'xcf']);


/** Runs a program and resolves with its stdout. */
function run(program: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(program, args, { env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => error ? reject(new Error(`${program}: ${stderr || error.message}`)) : resolve(stdout));
  });
}

interface Sample { bytes: Buffer; file: string; reference: string }
const origin = (async () => writeTemp(await sampleImage('png'), 'origin.png'))();
const samples = new Map<string, Promise<Sample>>();
/** The sample in each source format, made once. */
function sample(format: string): Promise<Sample> {
  if (!samples.has(format)) {
    samples.set(format, (async () => {
      const bytes = await sampleImage(format);
      const file = await writeTemp(bytes, `in.${format}`);
      return { bytes, file, reference: OLD_SOURCES.includes(format) || DECODABLE.has(format) ? file : await origin };
    })());
  }
  return samples.get(format)!;
}

/** The expected image targets of each source: every pair here is one test. */
function targetsOf(source: string): string[] {
  // An added writer converts to itself too (a route of its own, for the options).
  if (ADDED.includes(source)) return [...OLD_TARGETS, ...ADDED_WRITES];
  return [...ADDED_WRITES];
}

/**
 * Comparisons collected from the concurrent tests and run in batches: one Python start (Pillow
 * and numpy take ~0.3 s to import) for many outputs.
 */
class Batch {
  private pending: Array<{ job: CompareJob; resolve: (r: { comparison: Comparison; says: string }) => void; reject: (e: Error) => void }> = [];
  private timer: NodeJS.Timeout | undefined;

  check(job: CompareJob): Promise<{ comparison: Comparison; says: string }> {
    return new Promise((resolve, reject) => {
      this.pending.push({ job, resolve, reject });
      if (this.pending.length >= 24) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), 300);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending.splice(0);
    if (batch.length === 0) return;
    const outputs = batch.map((entry) => entry.job.output);
    Promise.all([
      compareImages(batch.map((entry) => entry.job)),
      // One file(1) per output: its --brief descriptions of several files cannot be told apart
      // when one runs over several lines (a JPEG XL codestream's does).
      Promise.all(outputs.map((output) => run('file', ['--brief', output]))),
    ]).then(([comparisons, says]) => {
      batch.forEach((entry, index) => entry.resolve({ comparison: comparisons[index]!, says: says[index]!.trim() }));
    }, (error: Error) => {
      // One undecodable output fails the batch: each is checked alone to name it.
      for (const entry of batch) {
        Promise.all([compareImages([entry.job]), run('file', ['--brief', entry.job.output])])
          .then(([[comparison], says]) => entry.resolve({ comparison: comparison!, says: says.trim() }), (alone: Error) => entry.reject(alone ?? error));
      }
    });
  }
}
const batch = new Batch();

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server.stop();
});

const imageTargets = (entry: CatalogueEntry) => entry.targets.filter((id) => catalogue.find((f) => f.id === id)?.category === 'image');

test('the catalogue lists every added raster format, with exactly the image targets tested here', () => {
  for (const id of ADDED) {
    const entry = catalogue.find((f) => f.id === id);
    assert.ok(entry, `${id} missing from /api/formats`);
    assert.equal(entry.category, 'image');
    assert.equal(entry.media_type, MIME[id], `${id}: media type`);
    assert.deepEqual([...imageTargets(entry)].filter((t) => t !== id || ADDED_WRITES.includes(id)).sort(), targetsOf(id).filter((t) => t !== id || ADDED_WRITES.includes(id)).sort(), `${id}: image targets`);
  }
  for (const id of OLD_SOURCES) {
    const entry = catalogue.find((f) => f.id === id)!;
    assert.deepEqual(imageTargets(entry).filter((t) => ADDED.includes(t)).sort(), targetsOf(id).sort(), `${id}: added targets`);
  }
  // No document or video reaches the added writers: they are image conversions. (SVG and its
  // gzipped form svgz do, as they reach every raster writer through rsvg's PNG.)
  for (const entry of catalogue.filter((f) => f.category !== 'image' && f.id !== 'svg' && f.id !== 'svgz')) {
    assert.deepEqual(entry.targets.filter((t) => ADDED_WRITES.includes(t)), [], `${entry.id} reaches an added raster writer`);
  }
});

describe('every added raster pair converts and shows its source', { concurrency: 6 }, () => {
  for (const source of [...ADDED, ...OLD_SOURCES]) {
    for (const target of targetsOf(source)) {
      test(`${source} → ${target}`, async (t) => {
        const input = await sample(source);
        const { bytes, response, record } = await convert(server.url, input.bytes, `sample.${source}`, target);
        assert.equal(record.source, source, 'the sample is read as its own format');
        assert.equal(response.headers.get('content-type'), MIME[target]);
        const output = await writeTemp(bytes, `out.${target}`);
        const bilevel = BILEVEL.has(source) || BILEVEL.has(target);
        const { comparison, says } = await batch.check({ reference: input.reference, output, mode: bilevel ? 'bilevel' : 'colour' });
        if (target === 'jxl') {
          // file(1) 5.44 knows only the boxed JPEG XL container; a bare codestream (FF 0A) it
          // describes now as one, now as a FAT boot sector.
          const boxed = bytes.subarray(0, 12).equals(Buffer.from('0000000c4a584c200d0a870a', 'hex'));
          assert.ok(boxed || (bytes[0] === 0xff && bytes[1] === 0x0a), 'a JPEG XL signature');
        } else {
          assert.match(says, FILE_SAYS[target]!, `file(1) recognises the ${target} output`);
        }
        const ssim = Math.min(SSIM_AT_LEAST[target]!, SSIM_AT_LEAST[source] ?? 1, SOURCE_SSIM[source] ?? 1, bilevel ? SSIM_BILEVEL : 1);
        t.diagnostic(`SSIM ${comparison.ssim?.toFixed(4)} (at least ${ssim}), decoded by ${comparison.output.decoder} and ${comparison.reference!.decoder}`);
        assert.deepEqual([comparison.output.width, comparison.output.height], [IMAGE_WIDTH, IMAGE_HEIGHT], 'size');
        assert.deepEqual([comparison.reference!.width, comparison.reference!.height], [IMAGE_WIDTH, IMAGE_HEIGHT], 'size of the reference');
        assert.ok(comparison.ssim! >= ssim, `SSIM ${comparison.ssim!.toFixed(4)} below ${ssim}`);
        const { output: out, reference: ref } = comparison;
        if (GREY.has(source) || GREY.has(target)) {
          assert.ok(Math.abs(luma(out.means) - luma(ref!.means)) <= MEAN_TOLERANCE, `brightness ${luma(out.means)} far from ${luma(ref!.means)}`);
        } else {
          for (const band of [0, 1, 2]) assert.ok(Math.abs(out.means[band]! - ref!.means[band]!) <= MEAN_TOLERANCE, `band ${band} mean ${out.means[band]} far from ${ref!.means[band]}`);
        }
      });
    }
  }
});

describe('hostile: only the coder of the sniffed format ever decodes an upload', { concurrency: 4 }, () => {
  // ImageMagick scripting (MSL), vector drawing (MVG) and text files read other files and URLs;
  // the policy allows none of them, and the engine names the coder of the format the sniffer
  // found, so ImageMagick never guesses from the content.
  const MSL = '<?xml version="1.0"?><image><read filename="/etc/passwd"/><write filename="out.png"/></image>';
  const MVG = 'push graphic-context\nviewbox 0 0 8 8\nimage over 0,0 8,8 "text:/etc/passwd"\npop graphic-context\n';
  for (const [name, content] of [
    ['script.wbmp', MSL], ['script.otb', MSL], ['drawing.otb', MVG], ['drawing.wbmp', MVG], ['passwd.otb', 'text:/etc/passwd'],
    ['url.wbmp', 'url:https://example.com/a.png'], ['ephemeral.otb', 'ephemeral:/etc/hostname'],
  ] as const) {
    test(`${name}, really ${content.slice(0, 12)}…, is refused as a damaged ${path.extname(name).slice(1)}`, async () => {
      const jobId = await submitOk(server.url, Buffer.from(content), name, 'png');
      const { final } = await waitForJob(server.url, jobId);
      assert.equal(final.status, 'error');
      // A text read as a WBMP or OTB header may also declare a size past the limits.
      assert.ok(['corrupt_input', 'conversion_failed', 'input_too_complex'].includes(final.error!.code), `code ${final.error!.code}`);
      assert.doesNotMatch(JSON.stringify(final.error), /root:|localhost/, 'no file content leaks into the message');
    });
  }
  test('a file named .xbm that is really MSL is not taken as XBM', async () => {
    await expectError(await submit(server.url, Buffer.from(MSL), 'script.xbm', 'png'), 415, 'unsupported_format');
  });
  test('an SVG with an href to a local file named .hdr is not handed to ImageMagick', async () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="8" height="8"><image xlink:href="/etc/passwd" width="8" height="8"/></svg>';
    const response = await submit(server.url, Buffer.from(svg), 'picture.hdr', 'png');
    // Taken as what it is (an SVG, rendered by rsvg without external files) or refused: never Radiance.
    if (response.status === 200) {
      const { job_id } = (await response.json()) as { job_id: string };
      const { final } = await waitForJob(server.url, job_id);
      assert.equal(final.source, 'svg');
    } else {
      assert.equal(response.status, 415);
    }
  });
  test('a pixel flood in a Sun raster header is refused, not decoded', async () => {
    const header = Buffer.alloc(32);
    header.writeUInt32BE(0x59a66a95, 0);
    header.writeUInt32BE(60_000, 4);
    header.writeUInt32BE(60_000, 8);
    header.writeUInt32BE(24, 12);
    header.writeUInt32BE(0, 16); // the data length: 0 is allowed (old-style files)
    header.writeUInt32BE(1, 20);
    const jobId = await submitOk(server.url, Buffer.concat([header, Buffer.alloc(4096)]), 'flood.ras', 'png');
    const { final } = await waitForJob(server.url, jobId);
    assert.equal(final.status, 'error');
    assert.ok(['input_too_complex', 'corrupt_input'].includes(final.error!.code), `code ${final.error!.code}`);
  });
});

test('a cursor written here is a cursor (type 2), not an icon', async () => {
  const { bytes } = await convert(server.url, (await sample('png')).bytes, 'arrow.png', 'cur');
  assert.equal(bytes.readUInt16LE(2), 2);
  assert.match(execFileSync('file', ['--brief', await writeTemp(bytes, 'x.cur')]).toString(), /cursor resource/);
});

test('a DCX written by another program (Pillow\'s PCX pages in a hand-made directory) converts its first page', async () => {
  // A DCX is its magic number, up to 1,024 page offsets ending with 0, then the PCX pages: two
  // pages here, a red one and a blue one, written by Pillow, so that ImageMagick's reading is
  // checked on a file it did not write.
  const dir = path.dirname(await origin);
  const script = [
    'import sys, io, struct', 'from PIL import Image',
    'pages = []',
    'for colour in [(200, 30, 30), (30, 60, 200)]:',
    '    out = io.BytesIO(); Image.new("RGB", (40, 24), colour).save(out, "PCX"); pages.append(out.getvalue())',
    'offsets = [4 + 4 * 1024, 4 + 4 * 1024 + len(pages[0])]',
    'head = struct.pack("<I", 0x3ADE68B1) + b"".join(struct.pack("<I", o) for o in offsets) + b"\\0" * (4 * (1024 - len(offsets)))',
    'open(sys.argv[1], "wb").write(head + b"".join(pages))',
  ].join('\n');
  const file = path.join(dir, 'two-pages.dcx');
  execFileSync('/usr/bin/python3', ['-c', script, file]);
  const { bytes } = await convert(server.url, await fs.readFile(file), 'scan.dcx', 'png');
  const png = await writeTemp(bytes, 'page.png');
  const pixel = execFileSync('/usr/bin/python3', ['-c', 'import sys; from PIL import Image; im = Image.open(sys.argv[1]).convert("RGB"); print(im.size, im.getpixel((20, 12)))', png]).toString().trim();
  assert.equal(pixel, '(40, 24) (200, 30, 30)', 'the first page, red, at its size');
});

describe('hostile inputs of the third wave (j2k, sixel, cals, vicar, pgx, vips, xcf)', { concurrency: 4 }, () => {
  const u32be = (...values: number[]) => Buffer.concat(values.map((value) => { const b = Buffer.alloc(4); b.writeUInt32BE(value); return b; }));
  /** Headers that declare 60000 × 60000 pixels (3.6 gigapixels, past every limit), a little data after them. */
  const FLOODS: Record<string, () => Promise<Buffer>> = {
    j2k: async () => {
      // The SIZ marker segment's image size (Xsiz, Ysiz) at bytes 8 and 12 of a real codestream.
      const bytes = Buffer.from((await sample('j2k')).bytes);
      bytes.writeUInt32BE(60_000, 8);
      bytes.writeUInt32BE(60_000, 12);
      return bytes;
    },
    sixel: async () => Buffer.from(`\x1bP0;0;0q"1;1;60000;60000#0;2;100;0;0#0!60000~-!600~\x1b\\`, 'latin1'),
    cals: async () => {
      const records = ['srcdocid: NONE', 'rtype: 1', 'rorient: 000,270', 'rpelcnt: 060000,060000', 'rdensty: 0200', 'notes: NONE'];
      return Buffer.concat([Buffer.from(records.map((r) => r.padEnd(128)).join('').padEnd(2048), 'latin1'), Buffer.alloc(4096, 0x55)]);
    },
    vicar: async () => Buffer.concat([Buffer.from("LBLSIZE=256 FORMAT='BYTE' TYPE='IMAGE' ORG='BSQ' NL=60000 NS=60000 NB=1 RECSIZE=60000".padEnd(256), 'latin1'), Buffer.alloc(8192, 0x80)]),
    pgx: async () => Buffer.concat([Buffer.from('PG ML + 8 60000 60000\n', 'latin1'), Buffer.alloc(8192, 0x80)]),
    // The vips format's header: magic, width, height, bands, unused, band format (uchar), coding, interpretation (sRGB).
    vips: async () => Buffer.concat([u32be(0x08f2a6b6, 60_000, 60_000, 3, 0, 0, 0, 22), Buffer.alloc(32), Buffer.alloc(8192, 0x80)]),
    xcf: async () => {
      // The canvas declares 60000 × 60000; its one small layer is the sample's.
      const bytes = Buffer.from((await sample('xcf')).bytes);
      bytes.writeUInt32BE(60_000, 14);
      bytes.writeUInt32BE(60_000, 18);
      return bytes;
    },
  };
  for (const [format, make] of Object.entries(FLOODS)) {
    test(`a ${format} whose header declares 60000 × 60000 pixels is refused, not decoded`, async () => {
      const jobId = await submitOk(server.url, await make(), `flood.${format}`, 'png');
      const { final } = await waitForJob(server.url, jobId);
      assert.equal(final.status, 'error');
      assert.equal(final.error!.code, 'input_too_complex', `${format}: ${JSON.stringify(final.error)}`);
    });
  }

  for (const format of ['j2k', 'sixel', 'cals', 'vicar', 'pgx', 'vips', 'xcf']) {
    test(`a truncated ${format} (its first half) is refused as damaged`, async () => {
      const whole = (await sample(format)).bytes;
      const jobId = await submitOk(server.url, whole.subarray(0, Math.floor(whole.length / 2)), `half.${format}`, 'png');
      const { final } = await waitForJob(server.url, jobId);
      assert.equal(final.status, 'error', `${format}: a half file converted`);
      assert.equal(final.error!.code, 'corrupt_input', `${format}: ${JSON.stringify(final.error)}`);
    });
  }

  // A file that starts with one of these signatures but holds another coder's content (a PNG, an
  // ImageMagick script, a drawing that reads a local file): taken as the signature's format and
  // decoded by that coder alone, so it fails as a damaged file of it; nothing else runs.
  const MSL = '<?xml version="1.0"?><image><read filename="/etc/passwd"/><write filename="out.png"/></image>';
  const MVG = 'push graphic-context\nviewbox 0 0 8 8\nimage over 0,0 8,8 "text:/etc/passwd"\npop graphic-context\n';
  const DISGUISES: Array<[string, () => Promise<Buffer>]> = [
    ['j2k', async () => Buffer.concat([Buffer.from('ff4fff51', 'hex'), await sampleImage('png')])],
    ['sixel', async () => Buffer.from(`\x1bPq${MVG}`, 'latin1')],
    ['cals', async () => Buffer.concat([Buffer.from('srcdocid: NONE'.padEnd(128) + 'rpelcnt: 000096,000064'.padEnd(1920), 'latin1'), Buffer.from(MSL)])],
    ['vicar', async () => Buffer.from(`LBLSIZE=100 ${MVG}`, 'latin1')],
    ['vips', async () => Buffer.concat([u32be(0x08f2a6b6, 96, 64, 3, 0, 0, 0, 22), Buffer.alloc(32), await sampleImage('png')])],
    ['xcf', async () => Buffer.concat([Buffer.from('gimp xcf file\0', 'latin1'), u32be(96, 64, 0), Buffer.from(MSL)])],
  ];
  test('a PGX header followed by a script is read as 8 × 8 grey samples: the bytes themselves, nothing run', async () => {
    // PGX has no structure past its header: any bytes are samples. The picture is those bytes.
    const body = Buffer.from(`text:/etc/passwd\n${MSL}`, 'latin1');
    const { bytes } = await convert(server.url, Buffer.concat([Buffer.from('PG ML + 8 8 8\n', 'latin1'), body]), 'disguised.pgx', 'png');
    const png = await writeTemp(bytes, 'disguised.png');
    const values = execFileSync('/usr/bin/python3', ['-c', 'import sys; from PIL import Image; print(list(Image.open(sys.argv[1]).convert("L").getdata()))', png]).toString().trim();
    assert.equal(values, `[${[...body.subarray(0, 64)].join(', ')}]`);
  });
  for (const [format, make] of DISGUISES) {
    test(`a file with the ${format} signature that holds another coder's content fails as a damaged ${format}`, async () => {
      const jobId = await submitOk(server.url, await make(), `disguised.${format}`, 'png');
      const { final } = await waitForJob(server.url, jobId);
      assert.equal(final.source, format, 'taken as the format its signature says');
      assert.equal(final.status, 'error');
      assert.ok(['corrupt_input', 'conversion_failed', 'input_too_complex'].includes(final.error!.code), `code ${final.error!.code}`);
      assert.doesNotMatch(JSON.stringify(final.error), /root:|localhost/, 'no file content leaks into the message');
    });
  }
});

test('an XCF\'s hidden layer stays hidden, an opaque one covers what is below, as GIMP flattens them', async () => {
  // The sample's two layers side by side, then a third on top of all: a black square, hidden,
  // then (in another file) shown. compare_images.py's reader composites them as GIMP does;
  // ImageMagick's result must match it. (A layer's opacity ImageMagick 6 ignores: README.)
  const results = [];
  for (const [visible, opacity] of [[false, 255], [true, 255]] as const) {
    const bytes = await xcfFrom(await sampleImage('png'), { x: 10, y: 10, size: 24, visible, opacity });
    const file = await writeTemp(bytes, `layers-${visible}.xcf`);
    const { bytes: png } = await convert(server.url, bytes, 'layers.xcf', 'png');
    results.push((await compareImages([{ reference: file, output: await writeTemp(png, `layers-${visible}.png`), probes: [[20, 20]] }]))[0]!);
  }
  const [hidden, shown] = results;
  assert.ok(hidden!.ssim! >= SSIM_AT_LEAST.png!, `hidden layer: SSIM ${hidden!.ssim}`);
  assert.deepEqual(hidden!.probes[0]!.slice(0, 3), [255, 255, 255], 'the white disc shows through the hidden layer');
  assert.ok(shown!.ssim! >= SSIM_AT_LEAST.png!, `shown layer: SSIM ${shown!.ssim}`);
  assert.deepEqual(shown!.probes[0]!.slice(0, 3), [0, 0, 0], 'the black square covers the disc');
});
