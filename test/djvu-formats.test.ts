// DjVu through DjVuLibre (issue #31): every pair /api/formats lists for djvu that the djvulibre
// engine starts (its pages as PDF, TIFF and PNG, its text layer as txt, and on from its PDF:
// PDF/A, JPEG and WebP pages, a ZIP of pages) converts through the HTTP API, and each output is
// checked by tools that are not DjVuLibre: pdfinfo, pdfimages and qpdf for the PDFs, poppler's
// pdftoppm to draw their pages, Pillow for the TIFF's pages and the images, SSIM against the
// pictures the pages were made from (compare_images.py). The ebooks calibre makes of a DjVu's text
// are ebook-formats.test.ts's. The sample is made here: three pages drawn by Pillow (a colour page
// at 100 dpi, a black-and-white one at 300 dpi, a colour one at 150 dpi without text), encoded by
// c44 and cjb2, text layers set by djvused, bundled by djvm.
// Hostile uploads (docs/security.md#djvu): indirect documents whose directory names files beside
// it, a planted file, /etc/passwd; a page including a file by name; the obsolete DIR0 layout; a
// document of 2,001 pages; pages declaring more pixels than the cap: each refused to every target
// before any engine runs. Real DjVu files of the shared corpus too (skipped when absent).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { unzipSync } from 'fflate';
import { download, fetchCatalogue, mapInFlight, runWithOptions, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { compareImages, type CompareJob } from './helpers/images.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { toolEnv } from './helpers/tools.ts';

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus', 'djvu');

/** Every target /api/formats lists for djvu: calibre's ebooks, djvulibre's, and on from its PDF. */
const TARGETS = ['azw3', 'docx', 'epub', 'fb2', 'jpg', 'mobi', 'pdf', 'pdfa', 'png', 'tiff', 'txt', 'webp', 'zip'];
/** The pages of the sample: the picture each was made from, its size in pixels and its resolution. */
const PAGES = [
  { width: 600, height: 800, dpi: 100 },
  { width: 1200, height: 1500, dpi: 300 },
  { width: 900, height: 600, dpi: 150 },
] as const;
/** The text layers of pages 1 and 2; page 3 has none. */
const PAGE_WORDS = [['Quokkabird', 'swims', 'across', 'the', 'river'], ['Lyrebird', 'dances', 'quietly', 'at', 'dawn']];
/**
 * SSIM of a page drawn at its own resolution against its picture: measured 0.99-1.0 for the TIFF
 * pages, 0.97-0.99 for the PDF's (JPEG at 85 for the colour pages, pdftoppm's smoothing of the
 * black-and-white one).
 */
const MIN_SSIM = 0.95;
/** The same for a page drawn at another resolution (poppler's), against its picture resized by Pillow: 0.93-0.99 measured. */
const MIN_RESAMPLED_SSIM = 0.9;
/** The test service's pixel cap: the sample's pages (at most 1.8 megapixels) pass it; 600 dpi of page 1 does not. */
const PIXEL_CAP = 10_000_000;

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let work: string;
/** The uploads, by name. */
const samples: Record<string, Buffer> = {};

function run(program: string, args: string[], cwd: string, input?: Buffer | string): Buffer {
  return execFileSync(program, args, { cwd, env: toolEnv, input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
}

/** The pictures of the sample's pages, and each resized to 100 dpi (the pages poppler draws at pixel_density=100). */
const DRAW_PAGES = `
from PIL import Image, ImageDraw, ImageFont
font = lambda size: ImageFont.truetype('/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', size)
p1 = Image.new('RGB', (600, 800), 'white')
d = ImageDraw.Draw(p1)
for y in range(800):
    d.line([(0, y), (599, y)], fill=(255, 240 - y // 8, 200 + y // 16))
d.rectangle([60, 300, 300, 520], fill=(30, 60, 200))
d.ellipse([320, 330, 540, 550], fill=(210, 40, 40))
d.polygon([(0, 800), (600, 620), (600, 700)], fill=(40, 160, 60))
d.text((40, 80), 'Quokkabird swims', font=font(44), fill='black')
d.text((40, 160), 'across the river', font=font(44), fill='black')
p1.save('page1.png'); p1.save('page1.ppm')
p2 = Image.new('1', (1200, 1500), 1)
d = ImageDraw.Draw(p2)
d.rectangle([60, 60, 1140, 1440], outline=0, width=12)
d.text((140, 200), 'Lyrebird dances', font=font(110), fill=0)
d.text((140, 400), 'quietly at dawn', font=font(110), fill=0)
d.rectangle([140, 700, 1060, 1300], fill=0)
d.ellipse([400, 800, 800, 1200], fill=1)
p2.save('page2.png'); p2.save('page2.pbm')
p3 = Image.new('RGB', (900, 600), 'white')
d = ImageDraw.Draw(p3)
for x in range(900):
    d.line([(x, 0), (x, 599)], fill=(x * 255 // 899, 120, 255 - x * 255 // 899))
d.pieslice([250, 100, 650, 500], 30, 300, fill=(250, 170, 20))
p3.save('page3.png'); p3.save('page3.ppm')
for n, (im, dpi) in enumerate(((p1, 100), (p2, 300), (p3, 150)), 1):
    im.convert('RGB').resize((im.width * 100 // dpi, im.height * 100 // dpi), Image.LANCZOS).save('page%d-100dpi.png' % n)
`;

/** A text layer for djvused's set-txt: one line of words across the page, 60 pixels high. */
function textLayer(words: readonly string[], width: number, height: number): string {
  const step = Math.floor((width - 80) / words.length);
  const boxes = words.map((word, n) => `(word ${40 + n * step} ${height / 2} ${40 + (n + 1) * step - 10} ${height / 2 + 60} "${word}")`).join(' ');
  return `select 1\nset-txt\n(page 0 0 ${width} ${height} (line 40 ${height / 2} ${width - 40} ${height / 2 + 60} ${boxes}))\n.\n`;
}

// IFF: a chunk is its id, its size (big-endian) and its data, padded to an even length; a FORM's data starts with its type.
function chunk(id: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(id, 0, 'latin1');
  head.writeUInt32BE(data.length, 4);
  return Buffer.concat([head, data, Buffer.alloc(data.length % 2)]);
}
const djvuFile = (type: string, chunks: Buffer[]) => Buffer.concat([Buffer.from('AT&T'), chunk('FORM', Buffer.concat([Buffer.from(type, 'latin1'), ...chunks]))]);
/** An INFO chunk: width, height (big-endian), version 24, resolution (little-endian), gamma 2.2, no rotation. */
function info(width: number, height: number, dpi: number): Buffer {
  const data = Buffer.alloc(10);
  data.writeUInt16BE(width, 0);
  data.writeUInt16BE(height, 2);
  data[4] = 24;
  data.writeUInt16LE(dpi, 6);
  data[8] = 22;
  return chunk('INFO', data);
}

/**
 * An indirect document's index, as DjVuLibre writes one (DjVmDir::encode): the DIRM chunk without
 * the "bundled" bit, the number of files, then BZZ-compressed (DjVuLibre's own bzz) sizes, flags
 * (a page; 0x80: a name follows the id) and the NUL-ended ids and names. No component is in it:
 * DjVuLibre reads each from beside the index.
 */
function indirectIndex(entries: ReadonlyArray<{ id: string; name?: string }>): Buffer {
  const raw = Buffer.concat([
    Buffer.alloc(3 * entries.length),
    Buffer.from(entries.map((entry) => 1 | (entry.name ? 0x80 : 0))),
    ...entries.map((entry) => Buffer.from(`${entry.id}\0${entry.name ? `${entry.name}\0` : ''}`, 'utf8')),
  ]);
  const count = Buffer.alloc(2);
  count.writeUInt16BE(entries.length);
  const packed = execFileSync('bzz', ['-e', '-', '-'], { input: raw, env: toolEnv });
  return djvuFile('DJVM', [chunk('DIRM', Buffer.concat([Buffer.from([1]), count, packed]))]);
}

/** The obsolete bundled layout (DjVmDir0::encode): a DIR0 directory of named files, here one naming a file outside. */
function oldBundled(name: string): Buffer {
  const entry = Buffer.concat([Buffer.from(`${name}\0`, 'utf8'), Buffer.from([1]), Buffer.alloc(8)]);
  const count = Buffer.alloc(2);
  count.writeUInt16BE(1);
  return djvuFile('DJVM', [chunk('DIR0', Buffer.concat([count, entry]))]);
}

/** A single page whose content is included from another file by name (an INCL chunk). */
const includingPage = (name: string) => djvuFile('DJVU', [info(1200, 1500, 300), chunk('INCL', Buffer.from(name, 'utf8'))]);

before(async () => {
  work = await tempDir('convertd-djvu-');
  run('/usr/bin/python3', ['-c', DRAW_PAGES], work);
  run('c44', ['-dpi', '100', 'page1.ppm', 'page1.djvu'], work);
  run('cjb2', ['-dpi', '300', 'page2.pbm', 'page2.djvu'], work);
  run('c44', ['-dpi', '150', 'page3.ppm', 'page3.djvu'], work);
  run('djvused', ['page1.djvu', '-s'], work, textLayer(PAGE_WORDS[0]!, 600, 800));
  run('djvused', ['page2.djvu', '-s'], work, textLayer(PAGE_WORDS[1]!, 1200, 1500));
  run('djvm', ['-c', 'book.djvu', 'page1.djvu', 'page2.djvu', 'page3.djvu'], work);
  samples['book.djvu'] = await fs.readFile(path.join(work, 'book.djvu'));
  // Pictures only: page 3 alone.
  samples['scan.djvu'] = await fs.readFile(path.join(work, 'page3.djvu'));
  server = await startServer({
    CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '2', CONVERTD_MAX_ATTEMPTS: '1',
    CONVERTD_MAX_IMAGE_PIXELS: String(PIXEL_CAP),
  });
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  await server?.stop();
});

interface JobEnd { final: ProgressRecord; file?: string }
let outputs = 0;
/** One job through the API, with options; the result is written into the work directory. */
async function job(upload: Buffer, name: string, target: string, options: Record<string, string> = {}): Promise<JobEnd> {
  const { final } = await runWithOptions(server.url, upload, name, target, options);
  if (final.status !== 'done') return { final };
  const { bytes } = await download(server.url, final.download_url!);
  const file = path.join(work, `out-${++outputs}.${target}`);
  await fs.writeFile(file, bytes);
  return { final, file };
}

/** A job that must succeed: its output's path. */
async function converted(upload: string, target: string, options: Record<string, string> = {}): Promise<string> {
  const { final, file } = await job(samples[upload]!, upload, target, options);
  assert.equal(final.status, 'done', `${upload} → ${target} ${JSON.stringify(options)}: ${JSON.stringify(final.error)}`);
  assert.equal(final.source, 'djvu');
  return file!;
}

const picture = (page: number) => path.join(work, `page${page}.png`);
const picture100 = (page: number) => path.join(work, `page${page}-100dpi.png`);

/** A page of W pixels at D dpi is W / D inches: 72 W / D points. */
const pointSizes = (pages: ReadonlyArray<{ width: number; height: number; dpi: number }>) => pages.map((page) => ({ width: page.width * 72 / page.dpi, height: page.height * 72 / page.dpi }));

/** pdfinfo's page count and each page's size in points. */
function pdfPages(pdf: string): Array<{ width: number; height: number }> {
  const text = run('pdfinfo', ['-f', '1', '-l', '100000', pdf], work).toString('utf8');
  const count = Number(/^Pages:\s+(\d+)/m.exec(text)![1]);
  const sizes = [...text.matchAll(/^Page\s+\d+ size:\s+([\d.]+) x ([\d.]+) pts/gm)].map((m) => ({ width: Number(m[1]), height: Number(m[2]) }));
  assert.equal(sizes.length, count);
  return sizes;
}

/** pdfimages' list of the PDF's pictures: page, size, encoding. */
function pdfImages(pdf: string): Array<{ page: number; width: number; height: number; encoding: string }> {
  return run('pdfimages', ['-list', pdf], work).toString('utf8').split('\n').slice(2).filter(Boolean).map((line) => {
    const fields = line.trim().split(/\s+/);
    return { page: Number(fields[0]), width: Number(fields[3]), height: Number(fields[4]), encoding: fields[8]! };
  });
}

/** Page `page` of a PDF drawn by poppler's pdftoppm at `dpi`, as a PNG. */
function drawPdfPage(pdf: string, page: number, dpi: number): string {
  const root = `${pdf}-page${page}-${dpi}`;
  run('pdftoppm', ['-r', String(dpi), '-f', String(page), '-l', String(page), '-singlefile', '-png', pdf, root], work);
  return `${root}.png`;
}

/** Every page of a TIFF as a PNG, read by Pillow: their paths, sizes and resolutions. */
function tiffPages(tiff: string): Array<{ file: string; width: number; height: number; dpi: number }> {
  const script = `
import json, sys
from PIL import Image, ImageSequence
pages = []
for n, frame in enumerate(ImageSequence.Iterator(Image.open(sys.argv[1]))):
    out = '%s-%d.png' % (sys.argv[1], n + 1)
    frame.save(out)
    pages.append({'file': out, 'width': frame.width, 'height': frame.height, 'dpi': round(frame.info.get('dpi', (0, 0))[0])})
print(json.dumps(pages))
`;
  return JSON.parse(run('/usr/bin/python3', ['-c', script, tiff], work).toString('utf8')) as Array<{ file: string; width: number; height: number; dpi: number }>;
}

/** SSIMs of outputs against pictures, asserting each is at least `minimum`. */
async function assertAlike(pairs: ReadonlyArray<[output: string, reference: string, what: string]>, minimum: number): Promise<void> {
  const jobs: CompareJob[] = pairs.map(([output, reference]) => ({ output, reference }));
  const results = await compareImages(jobs);
  results.forEach((result, n) => {
    const [, , what] = pairs[n]!;
    assert.ok(result.ssim !== null && result.ssim !== undefined, `${what}: ${result.output.width} × ${result.output.height}, not the size of its picture (${result.reference?.width} × ${result.reference?.height})`);
    assert.ok(result.ssim >= minimum, `${what}: SSIM ${result.ssim.toFixed(3)} < ${minimum}`);
  });
}

/** The words of a text, in order. */
const wordsIn = (text: string) => text.split(/\s+/).filter(Boolean);

test('the catalogue lists DjVu as a document: its pages and text (djvulibre), on from its PDF, and the ebooks calibre makes of its text', async () => {
  const entry = catalogue.find((format) => format.id === 'djvu');
  assert.equal(entry?.category, 'document');
  assert.equal(entry?.name, 'DjVu document');
  assert.deepEqual([...entry!.targets].sort(), TARGETS);
  const steps = async (target: string) => ((await (await fetch(`${server.url}/api/formats/djvu/${target}`)).json()) as { steps: string[] }).steps;
  assert.deepEqual(await steps('pdf'), ['djvulibre']);
  assert.deepEqual(await steps('txt'), ['djvulibre']);
  assert.deepEqual(await steps('jpg'), ['djvulibre', 'poppler']);
  assert.deepEqual(await steps('pdfa'), ['djvulibre', 'ghostscript']);
  assert.deepEqual(await steps('epub'), ['calibre']);
});

test('djvu → pdf: every page, at its own size, looking like its picture (pdfinfo, pdfimages, qpdf, pdftoppm)', async () => {
  const pdf = await converted('book.djvu', 'pdf');
  run('qpdf', ['--check', pdf], work);
  assert.deepEqual(pdfPages(pdf), pointSizes(PAGES));
  // The colour pages as JPEG, the black-and-white one losslessly (CCITT), each at its own resolution.
  assert.deepEqual(pdfImages(pdf), PAGES.map((page, n) => ({ page: n + 1, width: page.width, height: page.height, encoding: n === 1 ? 'ccitt' : 'jpeg' })));
  await assertAlike(PAGES.map((page, n) => [drawPdfPage(pdf, n + 1, page.dpi), picture(n + 1), `page ${n + 1}`]), MIN_SSIM);
});

test('djvu → pdf with options: page_range picks pages in order, pixel_density the resolution of the pictures, quality their JPEG quality', async () => {
  const picked = await converted('book.djvu', 'pdf', { page_range: '3,1' });
  assert.deepEqual(pdfPages(picked), pointSizes([PAGES[0], PAGES[2]]));
  await assertAlike([[drawPdfPage(picked, 1, 100), picture(1), 'page 1 first'], [drawPdfPage(picked, 2, 150), picture(3), 'page 3 second']], MIN_SSIM);
  // At 50 dpi the pictures shrink, the pages keep their size in inches.
  const low = await converted('book.djvu', 'pdf', { pixel_density: '50' });
  assert.deepEqual(pdfImages(low).map(({ width, height }) => [width, height]), PAGES.map((page) => [Math.ceil(page.width * 50 / page.dpi), Math.ceil(page.height * 50 / page.dpi)]));
  assert.deepEqual(pdfPages(low), pointSizes(PAGES));
  const rough = await converted('book.djvu', 'pdf', { quality: '30', page_range: '1' });
  const fine = await converted('book.djvu', 'pdf', { quality: '100', page_range: '1' });
  const [roughBytes, fineBytes] = await Promise.all([fs.stat(rough), fs.stat(fine)]).then((stats) => stats.map((stat) => stat.size));
  assert.ok(roughBytes! * 3 < fineBytes!, `quality 30: ${roughBytes} bytes, 100: ${fineBytes}`);
  await assertAlike([[drawPdfPage(rough, 1, 100), picture(1), 'page 1 at quality 30']], 0.8);
});

test('djvu → tiff: every page at its own size and resolution, looking like its picture (Pillow)', async () => {
  const pages = tiffPages(await converted('book.djvu', 'tiff'));
  assert.deepEqual(pages.map(({ width, height, dpi }) => ({ width, height, dpi })), PAGES);
  await assertAlike(pages.map((page, n) => [page.file, picture(n + 1), `page ${n + 1}`]), MIN_SSIM);
  const picked = tiffPages(await converted('book.djvu', 'tiff', { page_range: '2-', pixel_density: '50' }));
  assert.deepEqual(picked.map(({ width, height }) => [width, height]), PAGES.slice(1).map((page) => [Math.ceil(page.width * 50 / page.dpi), Math.ceil(page.height * 50 / page.dpi)]));
});

test('djvu → png: the first page, or the first of a page_range, at its own resolution or a pixel_density', async () => {
  await assertAlike([
    [await converted('book.djvu', 'png'), picture(1), 'page 1'],
    [await converted('book.djvu', 'png', { page_range: '2-3' }), picture(2), 'page 2'],
    [await converted('book.djvu', 'png', { page_range: '3', pixel_density: '100' }), picture100(3), 'page 3 at 100 dpi'],
  ], MIN_SSIM);
  // 600 dpi would make page 1 3600 × 4800 pixels, past the test service's cap: refused, naming the option.
  const { final } = await job(samples['book.djvu']!, 'book.djvu', 'png', { pixel_density: '600' });
  assert.equal(final.error?.code, 'invalid_option', JSON.stringify(final));
  assert.match(final.error.message, /pixel_density.*3600 × 4800/);
  const past = await job(samples['book.djvu']!, 'book.djvu', 'png', { page_range: '4' });
  assert.equal(past.final.error?.code, 'invalid_option', JSON.stringify(past.final));
});

test('djvu → txt: the text layer, page by page in order; a page_range keeps its pages; no text layer fails saying so', async () => {
  const all = wordsIn(await fs.readFile(await converted('book.djvu', 'txt'), 'utf8'));
  assert.deepEqual(all, PAGE_WORDS.flat());
  assert.deepEqual(wordsIn(await fs.readFile(await converted('book.djvu', 'txt', { page_range: '2' }), 'utf8')), PAGE_WORDS[1]);
  for (const [upload, options] of [['scan.djvu', {}], ['book.djvu', { page_range: '3' }]] as const) {
    const { final } = await job(samples[upload]!, upload, 'txt', options);
    assert.equal(final.error?.code, 'conversion_failed', `${upload} ${JSON.stringify(options)}: ${JSON.stringify(final)}`);
    assert.match(final.error.message, /no text layer/);
  }
});

test('on from the PDF: jpg and webp of a page, a ZIP of every page, PDF/A (poppler and Ghostscript after djvulibre)', async () => {
  // The first page, at poppler's 150 dpi by default (its width rounded either way).
  const [jpg] = await compareImages([{ output: await converted('book.djvu', 'jpg') }]);
  assert.equal(jpg!.output.height, 1200);
  assert.ok(Math.abs(jpg!.output.width - 900) <= 1, `${jpg!.output.width} wide`);
  // At 100 dpi: the size of the 100-dpi pictures.
  await assertAlike([
    [await converted('book.djvu', 'jpg', { pixel_density: '100' }), picture(1), 'jpg of page 1'],
    [await converted('book.djvu', 'webp', { pixel_density: '100', page_range: '3' }), picture100(3), 'webp of page 3'],
  ], MIN_RESAMPLED_SSIM);
  const zip = unzipSync(new Uint8Array(await fs.readFile(await converted('book.djvu', 'zip', { pixel_density: '100' }))));
  assert.deepEqual(Object.keys(zip), ['page-001.png', 'page-002.png', 'page-003.png']);
  const members = await Promise.all(Object.entries(zip).map(async ([name, bytes]) => {
    const file = path.join(work, `zip-${name}`);
    await fs.writeFile(file, bytes);
    return file;
  }));
  await assertAlike(members.map((file, n) => [file, picture100(n + 1), `zip page ${n + 1}`]), MIN_RESAMPLED_SSIM);
  const pdfa = await converted('book.djvu', 'pdfa');
  assert.equal(pdfPages(pdfa).length, 3);
  const plain = `${pdfa}.qdf`;
  run('qpdf', ['--qdf', '--object-streams=disable', pdfa, plain], work);
  assert.match(await fs.readFile(plain, 'latin1'), /pdfaid:part(?:=["']|>)2/);
  await assertAlike([[drawPdfPage(pdfa, 2, 300), picture(2), 'PDF/A page 2']], MIN_SSIM);
});

/** Sends `upload` to every target djvu lists; returns each job's end. */
function toEveryTarget(upload: Buffer, name: string): Promise<Array<{ target: string; final: ProgressRecord }>> {
  return mapInFlight(TARGETS, 4, async (target) => ({ target, final: (await job(upload, name, target)).final }));
}

test('an indirect document, a page including a file by name, the obsolete DIR0 layout: refused to every target before any engine runs', async () => {
  // Files an upload could name: one planted in the service's data directory, and /etc/passwd.
  const planted = path.join(server.dataDir, 'planted.djvu');
  await fs.copyFile(path.join(work, 'page2.djvu'), planted);
  await fs.mkdir(path.join(work, 'indirect'), { recursive: true });
  run('djvmcvt', ['-i', 'book.djvu', 'indirect', 'index.djvu'], work);
  const hostile: Record<string, Buffer> = {
    // As DjVuLibre writes one: the index of page files beside it.
    'index.djvu': await fs.readFile(path.join(work, 'indirect', 'index.djvu')),
    'planted-relative.djvu': indirectIndex([{ id: 'planted.djvu', name: '../../planted.djvu' }]),
    'planted-absolute.djvu': indirectIndex([{ id: 'planted.djvu', name: planted }]),
    'passwd.djvu': indirectIndex([{ id: 'passwd', name: '/etc/passwd' }]),
    'beside.djvu': indirectIndex([{ id: 'page2.djvu' }]),
    'include.djvu': includingPage('page2.djvu'),
    'include-relative.djvu': includingPage('../../planted.djvu'),
    'dir0.djvu': oldBundled('../../planted.djvu'),
  };
  // The samples are what DjVuLibre follows: run directly beside the file they name, it draws that page.
  await fs.mkdir(path.join(work, 'beside'), { recursive: true });
  await fs.copyFile(path.join(work, 'page2.djvu'), path.join(work, 'beside', 'page2.djvu'));
  await fs.writeFile(path.join(work, 'beside', 'beside.djvu'), hostile['beside.djvu']!);
  run('ddjvu', ['-format=pnm', 'beside.djvu', 'drawn.pbm'], path.join(work, 'beside'));
  assert.match(run('head', ['-c', '16', 'drawn.pbm'], path.join(work, 'beside')).toString('latin1'), /^P4\s+1200 1500/);

  const ends = await mapInFlight(Object.entries(hostile), 2, async ([name, upload]) => ({ name, ends: await toEveryTarget(upload, name) }));
  for (const { name, ends: results } of ends) {
    assert.equal(results.length, TARGETS.length);
    for (const { target, final } of results) {
      assert.equal(final.source, 'djvu', `${name}: taken as ${final.source}`);
      assert.equal(final.error?.code, 'unsafe_input', `${name} → ${target}: ${JSON.stringify(final.error ?? final.status)}`);
      // The input check's words, before any engine ran.
      assert.match(final.error.message, /^The DjVu document is refused: .*never (opens|follows)/, `${name} → ${target}`);
    }
  }
});

test('a document of 2,001 pages, or a page declaring more pixels than the cap, is refused to every target before any engine runs', async () => {
  // 2,001 pages: one small page under 2,001 names, bundled by djvm.
  const dir = path.join(work, 'many');
  await fs.mkdir(dir, { recursive: true });
  const names = Array.from({ length: 2001 }, (_, n) => `p${String(n + 1).padStart(4, '0')}.djvu`);
  await Promise.all(names.map((name) => fs.link(path.join(work, 'page2.djvu'), path.join(dir, name))));
  run('djvm', ['-c', 'many.djvu', ...names], dir);
  // Page 1 declaring 4000 × 3000 pixels (12 megapixels), and 40000 × 40000 (1.6 gigapixels: ddjvu
  // drew such a blank page in 37 s and 1.7 GB of memory, from 48 bytes).
  const large = (width: number, height: number) => {
    const page = Buffer.from(samples['scan.djvu']!);
    const at = page.indexOf('INFO');
    page.writeUInt16BE(width, at + 8);
    page.writeUInt16BE(height, at + 10);
    return page;
  };
  const cases: Array<[string, Buffer, RegExp]> = [
    ['many.djvu', await fs.readFile(path.join(dir, 'many.djvu')), /^The DjVu document has 2001 pages; this service converts documents of up to 2000 pages/],
    ['large.djvu', large(4000, 3000), new RegExp(`^The DjVu page declares 4000 × 3000 pixels, more than this service processes \\(${PIXEL_CAP}\\)`)],
    ['huge.djvu', large(40000, 40000), /^The DjVu page declares 40000 × 40000 pixels/],
  ];
  for (const [name, upload, words] of cases) {
    for (const { target, final } of await toEveryTarget(upload, name)) {
      assert.equal(final.error?.code, 'input_too_complex', `${name} → ${target}: ${JSON.stringify(final.error ?? final.status)}`);
      assert.match(final.error.message, words, `${name} → ${target}`);
    }
  }
});

test('a damaged DjVu (cut in half, cut to 16 bytes, overwritten in the middle) ends done or in corrupt_input or conversion_failed, never internal_error', async () => {
  const book = samples['book.djvu']!;
  const middle = Buffer.from(book);
  middle.fill(0xff, book.length >> 1, (book.length >> 1) + 64);
  const damaged: Record<string, Buffer> = { 'half.djvu': book.subarray(0, book.length >> 1), 'head.djvu': book.subarray(0, 16), 'middle.djvu': middle };
  for (const [name, upload] of Object.entries(damaged)) {
    const ends = await mapInFlight(['pdf', 'tiff', 'png', 'txt'], 4, async (target) => ({ target, final: (await job(upload, name, target)).final }));
    for (const { target, final } of ends) {
      if (final.status === 'done') continue;
      assert.ok(['corrupt_input', 'conversion_failed'].includes(final.error?.code ?? ''), `${name} → ${target}: ${JSON.stringify(final.error)}`);
    }
  }
});

const corpusFiles = existsSync(CORPUS) ? readdirSync(CORPUS).filter((name) => name.endsWith('.djvu')).sort() : [];

test('corpus: real DjVu files to pdf, png and txt', { skip: corpusFiles.length === 0 && 'no ../shared/corpus/djvu' }, async () => {
  for (const name of corpusFiles) {
    samples[name] = await fs.readFile(path.join(CORPUS, name));
    const pages = Number(run('djvused', [path.join(CORPUS, name), '-e', 'n'], work).toString().trim());
    assert.equal(pdfPages(await converted(name, 'pdf')).length, pages, name);
    const [png] = await compareImages([{ output: await converted(name, 'png') }]);
    assert.ok(png!.output.width > 0, name);
    const { final, file } = await job(samples[name]!, name, 'txt');
    // pywikibot's myfile.djvu has a text layer; its "wo-text" twin has none, and must say so.
    if (/wo-text/.test(name)) {
      assert.equal(final.error?.code, 'conversion_failed', `${name}: ${JSON.stringify(final)}`);
    } else {
      assert.equal(final.status, 'done', `${name}: ${JSON.stringify(final.error)}`);
      assert.match(await fs.readFile(file!, 'utf8'), /[\p{L}\p{N}]/u, name);
    }
  }
});
