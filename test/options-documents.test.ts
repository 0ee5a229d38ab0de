// Options of documents and PDF (issue #29): page_range and pdf_a on the way to PDF (LibreOffice),
// page_range and pixel_density on the way to a page image (poppler), page_range, pdf_a and
// compress on PDF → PDF (Ghostscript), and every page in a ZIP (target zip, option each). Every
// output is checked with tools other than the engine that wrote it: pdfinfo for page counts,
// pdftotext for which page's words came through, qpdf's uncompressed rewrite for PDF/A's marks,
// Pillow for the images' size and colour, unzip for the ZIP's members. The samples are made here by
// soffice run directly (test/helpers/paged_documents.py): page N of each says WORDS[N], and the
// pages of the text document hold pictures of three clear colours.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { download, expectError, fetchCatalogue, sendAgainIfClosed, waitForJob, type ProgressRecord } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const WORDS = ['alphaword', 'bravoword', 'charlieword'];
/** The mean colour of each page's picture (paged_documents.py): red, green, blue. */
const PAGE_COLOUR = ['red', 'green', 'blue'] as const;
/** Rows of the long workbook of the timing test: 302 printed pages. */
const LONG_ROWS = 16_000;
/**
 * The first page of the long workbook as a PNG (LibreOffice asked for page 1 only) must take at
 * most this share of the time of the same job exporting every page first (page_range=1-, what
 * every xlsx → png did before options): about 2 s against 19 s measured on a 2-core machine.
 */
const FIRST_PAGE_TIME_SHARE = 0.5;
/** compress=high brings the picture-heavy sample (0.68 MB; its pictures at 190 dpi) below this share of its size (0.06 measured). */
const COMPRESSED_SHARE = 0.5;

const { VIPSHOME: _vipsHome, ...toolEnv } = process.env;
function tool(program: string, args: string[], cwd?: string): string {
  return execFileSync(program, args, { cwd, encoding: 'utf8', env: toolEnv, stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });
}

let server: RunningServer;
let work: string;
const samples: Record<string, Buffer> = {};

async function submitWith(file: string, target: string, options: Record<string, string>): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([samples[file]!]), file);
  form.append('target', target);
  for (const [name, value] of Object.entries(options)) form.append(name, value);
  return sendAgainIfClosed(() => fetch(`${server.url}/api/convert`, { method: 'POST', body: form }));
}

/** Submits with options and waits; returns the final record (done or error) and every record seen. */
async function run(file: string, target: string, options: Record<string, string>): Promise<{ final: ProgressRecord; seen: ProgressRecord[] }> {
  const response = await submitWith(file, target, options);
  const body = await response.json() as { ok: boolean; job_id: string };
  assert.equal(response.status, 200, `submission refused: ${JSON.stringify(body)}`);
  return waitForJob(server.url, body.job_id, { timeoutMs: 240_000 });
}

/** The whole flow; the result is written into the work directory, whose path is returned. */
async function convertTo(file: string, target: string, options: Record<string, string>, name: string): Promise<string> {
  const { final } = await run(file, target, options);
  assert.equal(final.status, 'done', `${file} → ${target} ${JSON.stringify(options)} failed: ${JSON.stringify(final.error)}`);
  if (Object.keys(options).length > 0) assert.deepEqual(final.options, options, 'the progress record echoes the options');
  const { response, bytes } = await download(server.url, final.download_url!);
  assert.equal(response.status, 200);
  const out = path.join(work, name);
  await fs.writeFile(out, bytes);
  return out;
}

function pageCount(pdf: string): number {
  return Number(/^Pages:\s+(\d+)/m.exec(tool('pdfinfo', [pdf]))![1]);
}

/** The sample's words found in a PDF's text (or a text file), in the order they appear. */
function wordsIn(file: string): string[] {
  const text = (file.endsWith('.txt') ? execFileSync('cat', [file], { encoding: 'utf8' }) : tool('pdftotext', [file, '-'])).toLowerCase();
  return WORDS.filter((word) => text.includes(word)).sort((a, b) => text.indexOf(a) - text.indexOf(b));
}

/** PDF/A marks, read from qpdf's uncompressed rewrite: XMP pdfaid part and conformance, an output intent. */
function pdfaMarks(pdf: string): { part?: string; conformance?: string; outputIntent: boolean } {
  const plain = `${pdf}.qdf`;
  tool('qpdf', ['--qdf', '--object-streams=disable', pdf, plain]);
  const text = execFileSync('cat', [plain], { encoding: 'latin1', maxBuffer: 256 * 1024 * 1024 });
  // As an attribute (pdfaid:part="2" or '2', LibreOffice and Ghostscript) or an element (<pdfaid:part>2<).
  const xmp = (name: string) => new RegExp(`pdfaid:${name}(?:=["']|>)([^"'<]+)`).exec(text)?.[1];
  return { part: xmp('part'), conformance: xmp('conformance'), outputIntent: /\/OutputIntents\s*\[/.test(text) && /\/DestOutputProfile/.test(text) };
}

/** Size and dominant colour of an image, read by Pillow. */
function imageOf(file: string): { width: number; height: number; colour: string; format: string } {
  const script = [
    'import sys', 'from PIL import Image, ImageStat',
    'im = Image.open(sys.argv[1]); im.load()',
    'r, g, b = ImageStat.Stat(im.convert("RGB")).mean',
    'print(im.format, im.width, im.height, r, g, b)',
  ].join('\n');
  const [format, width, height, r, g, b] = tool('/usr/bin/python3', ['-c', script, file]).trim().split(' ');
  const [red, green, blue] = [Number(r), Number(g), Number(b)];
  // The picture fills half the page and the rest is white: the picture's channel stands out.
  const colour = red > green + 30 && red > blue + 30 ? 'red' : green > red + 30 && green > blue + 30 ? 'green' : blue > red + 30 && blue > green + 30 ? 'blue' : 'none';
  return { format: format!, width: Number(width), height: Number(height), colour };
}

/** The members of a ZIP, in the archive's order, as unzip lists them. */
function zipMembers(zip: string): string[] {
  return tool('unzip', ['-Z1', zip]).trim().split('\n');
}

async function unzipTo(zip: string): Promise<string> {
  const dir = `${zip}.d`;
  await fs.mkdir(dir);
  tool('unzip', ['-q', zip, '-d', dir]);
  return dir;
}

describe('document and PDF options', { timeout: 900_000 }, () => {
  before(async () => {
    work = await tempDir('convertd-options-docs-');
    const made = path.join(work, 'samples');
    await fs.mkdir(made);
    tool('/usr/bin/python3', [path.join(import.meta.dirname, 'helpers', 'paged_documents.py'), made, String(LONG_ROWS)]);
    const soffice = (target: string, ...sources: string[]) => tool('soffice', [`-env:UserInstallation=file://${path.join(work, 'lo-profile')}`, '--headless', '--convert-to', target, '--outdir', made, ...sources], made);
    soffice('docx', 'pages.fodt');
    soffice('odt', 'pages.fodt');
    soffice('pdf', 'pages.fodt');
    soffice('pptx', 'slides.fodp');
    soffice('xlsx', 'sheets.fods', 'long.fods');
    // One page of 100 × 100 inches: fine at the default (scaled to 5000 pixels), too many pixels at 600 dpi.
    tool('/usr/bin/python3', ['-c', 'import sys\nfrom PIL import Image\nImage.new("RGB", (100, 100), (200, 30, 30)).save(sys.argv[1], resolution=1.0)', path.join(made, 'huge-page.pdf')]);
    for (const name of ['huge-page.pdf', 'pages.docx', 'pages.odt', 'pages.pdf', 'slides.pptx', 'sheets.xlsx', 'long.xlsx']) samples[name] = await fs.readFile(path.join(made, name));
    assert.equal(pageCount(path.join(made, 'pages.pdf')), 3, 'the sample PDF has three pages');
    server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '2' });
  });

  after(async () => {
    await server?.stop();
    if (work) await fs.rm(work, { recursive: true, force: true });
  });

  test('the catalogue and the discovery endpoint list the options and the zip targets', async () => {
    const catalogue = await fetchCatalogue(server.url);
    const targets = (id: string) => catalogue.find((entry) => entry.id === id)?.targets ?? [];
    for (const source of ['pdf', 'docx', 'xlsx', 'pptx', 'odt']) assert.ok(targets(source).includes('zip'), `${source} lists zip`);
    assert.ok(targets('pdf').includes('pdf'), 'pdf lists itself (pages cut, PDF/A, compress)');
    const options = async (source: string, target: string) => {
      const response = await fetch(`${server.url}/api/formats/${source}/${target}`);
      assert.equal(response.status, 200);
      const body = await response.json() as { options: Array<{ name: string; values?: string[]; default?: unknown; maximum?: number }> };
      return new Map(body.options.map((option) => [option.name, option]));
    };
    const pdfToPdf = await options('pdf', 'pdf');
    // pdf → pdf is Ghostscript's (pages, PDF/A, compress) or, with ocr=true, Tesseract's searchable PDF (#31).
    assert.deepEqual([...pdfToPdf.keys()].sort(), ['compress', 'language', 'ocr', 'page_range', 'pdf_a', 'skip_text']);
    assert.deepEqual(pdfToPdf.get('compress')!.values, ['low', 'medium', 'high']);
    const docxToPdf = await options('docx', 'pdf');
    assert.ok(docxToPdf.has('page_range') && docxToPdf.has('pdf_a'));
    const docxToPng = await options('docx', 'png');
    assert.ok(docxToPng.has('page_range') && docxToPng.has('pixel_density'));
    assert.equal(docxToPng.get('pixel_density')!.default, 150);
    const pptxToZip = await options('pptx', 'zip');
    assert.deepEqual(pptxToZip.get('each')!.values, ['png', 'jpg', 'tiff', 'webp', 'txt', 'pdf']);
    assert.ok(pptxToZip.has('page_range') && pptxToZip.has('pixel_density'));
    assert.ok((await options('pdf', 'pdfa')).has('page_range'));
  });

  test('documents, spreadsheets and presentations → pdf keep the pages of page_range', async () => {
    const cases: Array<[string, string, number, string[]]> = [
      ['pages.docx', '2-3', 2, ['bravoword', 'charlieword']],
      ['pages.odt', '3,1', 2, ['alphaword', 'charlieword']],
      ['sheets.xlsx', '3', 1, ['charlieword']],
      ['slides.pptx', '2-', 2, ['bravoword', 'charlieword']],
      ['slides.pptx', '2-99', 2, ['bravoword', 'charlieword']],
    ];
    await Promise.all(cases.map(async ([file, range, pages, words], index) => {
      const pdf = await convertTo(file, 'pdf', { page_range: range }, `range-${index}.pdf`);
      assert.equal(pageCount(pdf), pages, `${file} page_range=${range}: pages`);
      assert.deepEqual(wordsIn(pdf), words, `${file} page_range=${range}: the right pages`);
    }));
  });

  test('pdf_a=true makes a PDF/A-2b; without it the PDF is plain', async () => {
    const [archived, plain, slides] = await Promise.all([
      convertTo('pages.odt', 'pdf', { pdf_a: 'true' }, 'pdfa.pdf'),
      convertTo('pages.odt', 'pdf', { pdf_a: 'false' }, 'plain.pdf'),
      convertTo('slides.pptx', 'pdf', { pdf_a: 'yes', page_range: '1' }, 'slides-pdfa.pdf'),
    ]);
    assert.deepEqual(pdfaMarks(archived), { part: '2', conformance: 'B', outputIntent: true });
    assert.equal(pdfaMarks(plain).part, undefined, 'no PDF/A claim without the option');
    assert.deepEqual(pdfaMarks(slides), { part: '2', conformance: 'B', outputIntent: true });
    assert.equal(pageCount(slides), 1);
    assert.deepEqual(wordsIn(archived), WORDS, 'the PDF/A keeps the text');
  });

  test('→ image: page_range picks the page, pixel_density its resolution', async () => {
    const width = Number(/^Page size:\s+([\d.]+)/m.exec(tool('pdfinfo', [path.join(work, 'samples', 'pages.pdf')]))![1]);
    const [plain, second, third, dense] = await Promise.all([
      convertTo('pages.docx', 'png', {}, 'page.png'),
      convertTo('pages.docx', 'png', { page_range: '2' }, 'page2.png'),
      convertTo('pages.pdf', 'jpg', { page_range: '3-', pixel_density: '72' }, 'page3.jpg'),
      convertTo('pages.pdf', 'png', { pixel_density: '300' }, 'dense.png'),
    ]);
    assert.equal(imageOf(plain).colour, 'red', 'without options: the first page');
    assert.equal(imageOf(second).colour, 'green', 'page_range=2: the second page');
    const small = imageOf(third);
    assert.equal(small.colour, 'blue', 'page_range=3-: the third page');
    assert.equal(small.format, 'JPEG');
    // pdftoppm rounds a page's pixel size up or down: one pixel either way.
    assert.ok(Math.abs(small.width - width) <= 1, `72 dpi: ${small.width} px wide for a page of ${width} pt`);
    assert.ok(Math.abs(imageOf(plain).width - width * 150 / 72) <= 1, 'the default stays 150 dpi');
    assert.ok(Math.abs(imageOf(dense).width - width * 300 / 72) <= 1, '300 dpi');
  });

  test('the first page of a long workbook as an image exports one page, not all', async () => {
    const timed = async (options: Record<string, string>) => {
      const started = performance.now();
      const png = await convertTo('long.xlsx', 'png', options, `long-${Object.keys(options).length}.png`);
      return { seconds: (performance.now() - started) / 1000, png };
    };
    // Once to warm the pool's processes, then each way in turn.
    await timed({});
    const firstOnly = await timed({});
    const everyPage = await timed({ page_range: '1-' });
    console.log(`${LONG_ROWS}-row (302-page) xlsx → png: ${firstOnly.seconds.toFixed(2)} s (page 1 exported), ${everyPage.seconds.toFixed(2)} s (every page exported, as before)`);
    assert.ok(firstOnly.seconds < everyPage.seconds * FIRST_PAGE_TIME_SHARE, `${firstOnly.seconds} s against ${everyPage.seconds} s`);
    const [one, all] = [imageOf(firstOnly.png), imageOf(everyPage.png)];
    assert.deepEqual([one.width, one.height], [all.width, all.height], 'the same first page either way');
  });

  test('pdf → pdf: page_range, compress, pdf_a; pdf → pdfa: page_range', async () => {
    const source = path.join(work, 'samples', 'pages.pdf');
    const [cut, small, archived, pdfa] = await Promise.all([
      convertTo('pages.pdf', 'pdf', { page_range: '3,1' }, 'cut.pdf'),
      convertTo('pages.pdf', 'pdf', { compress: 'high' }, 'small.pdf'),
      convertTo('pages.pdf', 'pdf', { pdf_a: 'true', page_range: '2' }, 'archived.pdf'),
      convertTo('pages.pdf', 'pdfa', { page_range: '2-3' }, 'pdfa.pdfa'),
    ]);
    assert.equal(pageCount(cut), 2);
    assert.deepEqual(wordsIn(cut), ['alphaword', 'charlieword'], 'pages kept in document order');
    const before = (await fs.stat(source)).size;
    const after = (await fs.stat(small)).size;
    assert.ok(after < before * COMPRESSED_SHARE, `compress=high: ${after} bytes from ${before}`);
    assert.equal(pageCount(small), 3);
    assert.deepEqual(wordsIn(small), WORDS, 'compress keeps the text');
    assert.equal(pageCount(archived), 1);
    assert.deepEqual(wordsIn(archived), ['bravoword']);
    assert.deepEqual(pdfaMarks(archived), { part: '2', conformance: 'B', outputIntent: true });
    assert.equal(pageCount(pdfa), 2);
    assert.deepEqual(pdfaMarks(pdfa), { part: '2', conformance: 'B', outputIntent: true });
    // The medium and low presets keep pictures finer (the sample's are at 190 dpi, under what
    // they resample): readable, whole, and larger than high's.
    const [medium, low] = await Promise.all([
      convertTo('pages.pdf', 'pdf', { compress: 'medium' }, 'medium.pdf'),
      convertTo('pages.pdf', 'pdf', { compress: 'low' }, 'low.pdf'),
    ]);
    for (const file of [medium, low]) {
      assert.equal(pageCount(file), 3);
      assert.deepEqual(wordsIn(file), WORDS);
      assert.ok((await fs.stat(file)).size > after, 'high is the smallest');
    }
  });

  test('every page in a ZIP: pdf, docx, pptx, xlsx', async () => {
    const width = Number(/^Page size:\s+([\d.]+)/m.exec(tool('pdfinfo', [path.join(work, 'samples', 'pages.pdf')]))![1]);
    const { final, seen } = await run('pages.pdf', 'zip', { each: 'png', pixel_density: '50' });
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    const zip = path.join(work, 'pages.zip');
    await fs.writeFile(zip, (await download(server.url, final.download_url!)).bytes);
    assert.deepEqual(zipMembers(zip), ['page-001.png', 'page-002.png', 'page-003.png']);
    const dir = await unzipTo(zip);
    for (const [index, name] of zipMembers(zip).entries()) {
      const image = imageOf(path.join(dir, name));
      assert.equal(image.format, 'PNG');
      assert.equal(image.colour, PAGE_COLOUR[index], `${name} is page ${index + 1}`);
      assert.ok(Math.abs(image.width - width * 50 / 72) <= 1, `${name} at 50 dpi`);
    }
    assert.ok(seen.every((record, i) => i === 0 || (record.progress ?? 0) >= (seen[i - 1]!.progress ?? 0)));

    const [slides, sheets, docx, texts, pdfs] = await Promise.all([
      convertTo('slides.pptx', 'zip', { each: 'jpg', page_range: '2-3' }, 'slides.zip'),
      convertTo('sheets.xlsx', 'zip', { each: 'webp' }, 'sheets.zip'),
      convertTo('pages.docx', 'zip', { each: 'tiff', page_range: '2', pixel_density: '30' }, 'docx.zip'),
      convertTo('pages.pdf', 'zip', { each: 'txt' }, 'texts.zip'),
      convertTo('pages.pdf', 'zip', { each: 'pdf', page_range: '1,3' }, 'pdfs.zip'),
    ]);
    assert.deepEqual(zipMembers(slides), ['page-001.jpg', 'page-002.jpg']);
    const slideDir = await unzipTo(slides);
    for (const name of zipMembers(slides)) assert.equal(imageOf(path.join(slideDir, name)).format, 'JPEG');
    assert.deepEqual(zipMembers(sheets), ['page-001.webp', 'page-002.webp', 'page-003.webp']);
    const sheetDir = await unzipTo(sheets);
    for (const name of zipMembers(sheets)) assert.equal(imageOf(path.join(sheetDir, name)).format, 'WEBP');
    assert.deepEqual(zipMembers(docx), ['page-001.tiff']);
    const docxDir = await unzipTo(docx);
    assert.equal(imageOf(path.join(docxDir, 'page-001.tiff')).colour, 'green', 'page_range=2 of the docx');
    assert.deepEqual(zipMembers(texts), ['page-001.txt', 'page-002.txt', 'page-003.txt']);
    const textDir = await unzipTo(texts);
    for (const [index, name] of zipMembers(texts).entries()) assert.deepEqual(wordsIn(path.join(textDir, name)), [WORDS[index]]);
    assert.deepEqual(zipMembers(pdfs), ['page-001.pdf', 'page-002.pdf']);
    const pdfDir = await unzipTo(pdfs);
    assert.deepEqual(zipMembers(pdfs).map((name) => [pageCount(path.join(pdfDir, name)), wordsIn(path.join(pdfDir, name))]), [[1, ['alphaword']], [1, ['charlieword']]]);
  });

  test('hostile values are refused at submission with 422 invalid_option', async () => {
    const hostile: Array<[string, string, string, string]> = [
      ['pages.docx', 'pdf', 'page_range', '0'],
      ['pages.docx', 'pdf', 'page_range', '5-2'],
      ['pages.docx', 'png', 'page_range', '1-99999999'],
      ['pages.pdf', 'pdf', 'page_range', 'abc'],
      ['pages.pdf', 'zip', 'page_range', '1;rm -rf /'],
      ['pages.pdf', 'zip', 'page_range', Array.from({ length: 1000 }, () => '1').join(',')],
      ['pages.pdf', 'pdf', 'page_range', '-1'],
      ['pages.pdf', 'png', 'page_range', '1\n2'],
      ['pages.pdf', 'zip', 'pixel_density', '100000'],
      ['pages.docx', 'png', 'pixel_density', '-72'],
      ['pages.pdf', 'pdf', 'compress', '/prepress'],
      ['pages.pdf', 'pdf', 'pdf_a', 'maybe'],
      ['slides.pptx', 'zip', 'each', '../../etc/passwd'],
      ['pages.pdf', 'zip', 'each', 'png -r 9999'],
    ];
    await Promise.all(hostile.map(async ([file, target, name, value]) => {
      const body = await expectError(await submitWith(file, target, { [name]: value }), 422, 'invalid_option');
      assert.equal((body.error as Record<string, unknown>).option, name, `${file} → ${target} ${name}=${JSON.stringify(value).slice(0, 40)}`);
    }));
  });

  test('a pixel_density that would pass the pixel limit ends the job with invalid_option', async () => {
    const { final } = await run('huge-page.pdf', 'png', { pixel_density: '600' });
    assert.equal(final.status, 'error');
    assert.equal(final.error?.code, 'invalid_option', JSON.stringify(final.error));
    assert.match(final.error!.message, /pixel_density.*60000 × 60000 pixels/);
    const fine = await convertTo('huge-page.pdf', 'png', {}, 'huge.png');
    assert.equal(imageOf(fine).width, 5000, 'without the option: scaled to 5000 pixels, as before');
  });

  test('a page_range past the end ends the job with invalid_option', async () => {
    const cases: Array<[string, string]> = [['pages.docx', 'pdf'], ['slides.pptx', 'png'], ['pages.pdf', 'pdf'], ['pages.pdf', 'png'], ['pages.pdf', 'zip'], ['sheets.xlsx', 'zip']];
    await Promise.all(cases.map(async ([file, target]) => {
      const { final } = await run(file, target, { page_range: '50' });
      assert.equal(final.status, 'error', `${file} → ${target}`);
      assert.equal(final.error?.code, 'invalid_option', `${file} → ${target}: ${JSON.stringify(final.error)}`);
      assert.match(final.error!.message, /3 pages/);
    }));
  });
});
