// OCR through Tesseract (issue #31): png, jpg, webp, gif, bmp and (multi-page) tiff → txt and hocr, and
// the searchable PDF (target pdf with ocr=true), through the HTTP API with the real engines. The
// samples are drawn here by Pillow (DejaVu Sans, large and clean) with known words; each output is
// checked by tools that are not Tesseract: the words' recall in the txt; the hOCR parsed as XML by
// Python (ocr_page and ocrx_word elements, each word's bbox inside the picture); the PDF's text
// layer by pdftotext, its picture by pdfimages, its pages by pdfinfo. Without ocr, png → pdf stays
// img2pdf's picture PDF (no text). `language`: Russian and Greek read in their scripts; unknown,
// hostile or too many languages refused with 422. Hostile uploads: a TIFF of 2,001 pages, a TIFF
// whose second page declares a billion pixels, a PNG declaring a huge size, noise. Uploaded PDFs:
// a scan (pages that are pictures, made by Pillow) and a mixed PDF (a scanned page, then a page of
// real text rsvg-convert set) → txt and pdf with ocr=true (pages with text kept unless
// skip_text=false), → hocr, a page_range, progress by page, 301 pages refused, a poster page;
// a TIFF's page_range.
// Real scans of the shared corpus's OCR folder with their ground truth (skipped when absent).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { download, fetchCatalogue, runWithOptions, submitWithOptions, waitForJob, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { flatPng } from './helpers/fixtures.ts';
import { toolEnv } from './helpers/tools.ts';

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus', 'ocr');
/** The sources the OCR targets are listed for (each an upload of its own). */
const SOURCES = ['png', 'jpg', 'webp', 'gif', 'tiff', 'bmp'];
/** The words drawn on the picture, one line each. */
const LINES = ['The quick brown fox jumps', 'over the lazy dog near', 'seven golden bridges'];
/** The pages of the multi-page TIFF. */
const TIFF_PAGES = [LINES, ['Hello second page words', 'marble window garden'], ['third page zebra crossing']];
/** The words of the mixed PDF's second page, real text. */
const TEXT_PAGE = 'Velvet lanterns hum quietly';
/** The most pages of a PDF read in one job (src/engines/tesseract/pdf-pages.ts). */
const MAX_OCR_PAGES = 300;
/** Share of the drawn words that must come back (case-insensitive). */
const MIN_RECALL = 0.9;
/**
 * The corpus's real scans against their ground truth: measured 0.99 (linn.png, a 300 dpi page) and
 * 0.97 (phototest.tif); the floor leaves room for another tesseract build.
 */
const MIN_CORPUS_RECALL = 0.85;
/** The test service's pixel cap: the corpus's 2550 × 3300 scan passes it. */
const PIXEL_CAP = 10_000_000;
const SIZE = { width: 900, height: 270 };

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let work: string;
const samples: Record<string, Buffer> = {};

function run(program: string, args: string[], cwd: string, input?: string): string {
  return execFileSync(program, args, { cwd, env: toolEnv, input, encoding: 'utf8', stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
}

const DRAW = `
import random
from PIL import Image, ImageDraw, ImageFont
font = ImageFont.truetype('/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', 40)
def page(lines, w=${SIZE.width}, mode='L'):
    im = Image.new(mode, (w, 70 * len(lines) + 60), 'white')
    d = ImageDraw.Draw(im)
    for i, line in enumerate(lines):
        d.text((40, 30 + 70 * i), line, font=font, fill='black')
    return im
words = page(${JSON.stringify(LINES)}, mode='RGB')
words.save('words.png'); words.save('words.jpg', quality=90); words.save('words.webp', quality=90); words.save('words.gif'); words.save('words.bmp')
# Black text on a transparent background: read only once flattened onto white.
clear = page(${JSON.stringify(LINES)}, mode='LA')
clear.putalpha(clear.getchannel('L').point(lambda v: 255 - v))
clear.save('clear.png')
pages = [page(lines) for lines in ${JSON.stringify(TIFF_PAGES)}]
pages[0].save('pages.tiff', save_all=True, append_images=pages[1:], compression='tiff_lzw')
# PDFs of pictures only (a scan): two pages, six pages, and one poster-sized page.
pages[0].save('scan.pdf', save_all=True, append_images=pages[1:2], resolution=150)
pages[0].save('scan6.pdf', save_all=True, append_images=(pages * 2)[1:], resolution=150)
pages[0].save('poster.pdf', resolution=5)
pages[0].save('scan1.pdf', resolution=150)
pages[0].save('ten.tiff', save_all=True, append_images=pages[1:] + pages * 2 + pages[:1], compression='tiff_lzw')
page(['Съешь же ещё этих мягких', 'французских булок']).save('russian.png')
page(['Καλημέρα κόσμε γράμματα']).save('greek.png')
random.seed(7)
noise = Image.new('L', (800, 600))
noise.putdata([random.randrange(256) for _ in range(800 * 600)])
noise.save('noise.png')
`;

/**
 * An uncompressed 1-bit TIFF whose pages declare the given sizes (little-endian): each directory
 * has width, height, bits, compression, photometric, strip offset, rows per strip and strip byte
 * count, all pages sharing one byte of strip data (the size is only declared: nothing is decoded).
 */
function craftTiff(pages: ReadonlyArray<{ width: number; height: number }>): Buffer {
  const entries = 8;
  const ifdBytes = 2 + entries * 12 + 4;
  const dataAt = 8;
  const first = dataAt + 2;
  const out = Buffer.alloc(first + pages.length * ifdBytes);
  out.write('II', 0, 'latin1');
  out.writeUInt16LE(42, 2);
  out.writeUInt32LE(first, 4);
  for (const [index, page] of pages.entries()) {
    const at = first + index * ifdBytes;
    out.writeUInt16LE(entries, at);
    const tags: Array<[number, number, number]> = [[256, 4, page.width], [257, 4, page.height], [258, 3, 1], [259, 3, 1], [262, 3, 0], [273, 4, dataAt], [278, 4, page.height], [279, 4, 1]];
    for (const [n, [tag, type, value]] of tags.entries()) {
      const entry = at + 2 + n * 12;
      out.writeUInt16LE(tag, entry);
      out.writeUInt16LE(type, entry + 2);
      out.writeUInt32LE(1, entry + 4);
      if (type === 3) out.writeUInt16LE(value, entry + 8);
      else out.writeUInt32LE(value, entry + 8);
    }
    out.writeUInt32LE(index === pages.length - 1 ? 0 : at + ifdBytes, at + 2 + entries * 12);
  }
  return out;
}


before(async () => {
  work = await tempDir('convertd-ocr-');
  run('/usr/bin/python3', ['-c', DRAW], work);
  // A page of real text (rsvg-convert sets it in DejaVu Sans) after the scanned page: mixed.pdf.
  await fs.writeFile(path.join(work, 'text.svg'), `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="200"><text x="20" y="80" font-family="DejaVu Sans" font-size="28">${TEXT_PAGE}</text></svg>`);
  run('/usr/bin/rsvg-convert', ['-f', 'pdf', '-o', 'text.pdf', 'text.svg'], work);
  run('/usr/bin/pdfunite', ['scan1.pdf', 'text.pdf', 'mixed.pdf'], work);
  run('/usr/bin/pdfunite', [...Array<string>(MAX_OCR_PAGES + 1).fill('scan1.pdf'), 'many.pdf'], work);
  for (const name of ['words.png', 'words.jpg', 'words.webp', 'words.gif', 'words.bmp', 'clear.png', 'pages.tiff', 'ten.tiff', 'russian.png', 'greek.png', 'noise.png', 'scan.pdf', 'scan6.pdf', 'poster.pdf', 'mixed.pdf', 'many.pdf']) {
    samples[name] = await fs.readFile(path.join(work, name));
  }
  samples['words.tiff'] = samples['pages.tiff']!;
  samples['flood.tiff'] = craftTiff(Array.from({ length: 2001 }, () => ({ width: 1, height: 1 })));
  samples['tall-second.tiff'] = craftTiff([{ width: 10, height: 10 }, { width: 40_000, height: 40_000 }]);
  samples['huge.png'] = flatPng(100_000, 100_000, 0);
  server = await startServer({
    CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '2', CONVERTD_MAX_ATTEMPTS: '1',
    CONVERTD_MAX_IMAGE_PIXELS: String(PIXEL_CAP),
  });
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  await server?.stop();
});

interface JobEnd { final: ProgressRecord; seen: ProgressRecord[]; file?: string }
let outputs = 0;

/** Sends a job with options: the raw answer. */
const submitJob = (upload: Buffer, name: string, target: string, options: Record<string, string>) => submitWithOptions(server.url, upload, name, target, options);

/** One job through the API; the result is written into the work directory. */
async function job(name: string, target: string, options: Record<string, string> = {}, upload = samples[name]!): Promise<JobEnd> {
  const { final, seen } = await runWithOptions(server.url, upload, name, target, options);
  if (final.status !== 'done') return { final, seen };
  const { bytes } = await download(server.url, final.download_url!);
  const file = path.join(work, `out-${++outputs}.${target}`);
  await fs.writeFile(file, bytes);
  return { final, seen, file };
}

async function converted(name: string, target: string, options: Record<string, string> = {}, upload?: Buffer): Promise<string> {
  const { final, file } = await job(name, target, options, upload);
  assert.equal(final.status, 'done', `${name} → ${target} ${JSON.stringify(options)}: ${JSON.stringify(final.error)}`);
  return file!;
}

/** Words, compatibility-normalised: tesseract's Greek model writes µ (the micro sign) for μ. */
const wordsOf = (text: string) => text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/** Share of `expected`'s words (each occurrence) found in `text`, case-insensitive. */
function recall(expected: string, text: string): number {
  const found = new Map<string, number>();
  for (const word of wordsOf(text)) found.set(word, (found.get(word) ?? 0) + 1);
  const wanted = wordsOf(expected);
  let hits = 0;
  for (const word of wanted) {
    const left = found.get(word) ?? 0;
    if (left > 0) {
      hits++;
      found.set(word, left - 1);
    }
  }
  return wanted.length === 0 ? 0 : hits / wanted.length;
}

/** The hOCR parsed as XML (strict: an XHTML error fails), by Python: each page's bbox and its words with theirs. */
function parseHocr(file: string): Array<{ bbox: number[]; words: Array<{ text: string; bbox: number[] }> }> {
  const script = `
import json, re, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
bbox = lambda el: [int(v) for v in re.search(r'bbox (\\d+) (\\d+) (\\d+) (\\d+)', el.get('title', '')).groups()]
pages = []
for el in root.iter():
    cls = (el.get('class') or '').split()
    if 'ocr_page' in cls:
        pages.append({'bbox': bbox(el), 'words': []})
    elif 'ocrx_word' in cls:
        pages[-1]['words'].append({'text': ''.join(el.itertext()), 'bbox': bbox(el)})
print(json.dumps(pages))
`;
  return JSON.parse(run('/usr/bin/python3', ['-c', script, file], work)) as ReturnType<typeof parseHocr>;
}

test('the catalogue lists txt and hocr for the OCR sources, and png → pdf keeps img2pdf unless ocr is sent', async () => {
  for (const source of SOURCES) {
    const entry = catalogue.find((format) => format.id === source);
    assert.ok(entry, source);
    for (const target of ['txt', 'hocr', 'pdf']) assert.ok(entry.targets.includes(target), `${source} → ${target}`);
  }
  assert.equal(catalogue.find((format) => format.id === 'pcx')?.targets.includes('hocr'), false, 'pcx is not OCR\'d (not among the sources read)');
  const response = await fetch(`${server.url}/api/formats/png/pdf`);
  const pair = await response.json() as { steps: string[]; options: Array<{ name: string; type: string; default?: unknown; pattern?: string }> };
  assert.deepEqual(pair.steps, ['img2pdf']);
  const ocr = pair.options.find((option) => option.name === 'ocr');
  assert.equal(ocr?.type, 'boolean');
  assert.equal(ocr?.default, false);
  const language = pair.options.find((option) => option.name === 'language');
  assert.equal(language?.type, 'string');
  assert.equal(language?.default, 'eng');
  for (const code of ['eng', 'rus', 'ell']) assert.ok(language?.pattern?.includes(code), `the pattern lists ${code}: ${language?.pattern}`);
  assert.ok(!language?.pattern?.includes('osd'), 'osd is not a language');
});

test('each source → txt and hocr holds the drawn words; hocr words have their boxes inside the picture', async () => {
  const expected = LINES.join(' ');
  await Promise.all(SOURCES.flatMap((source) => [
    (async () => {
      const text = await fs.readFile(await converted(`words.${source}`, 'txt'), 'utf8');
      assert.ok(recall(expected, text) >= MIN_RECALL, `${source} → txt read ${JSON.stringify(text)}`);
    })(),
    (async () => {
      const pages = parseHocr(await converted(`words.${source}`, 'hocr'));
      // A TIFF's pages are all read: the first holds the words.
      assert.equal(pages.length, source === 'tiff' ? TIFF_PAGES.length : 1);
      const [first] = pages;
      assert.deepEqual(first!.bbox, [0, 0, SIZE.width, SIZE.height]);
      assert.ok(recall(expected, first!.words.map((word) => word.text).join(' ')) >= MIN_RECALL, `${source} → hocr words ${JSON.stringify(first!.words.map((w) => w.text))}`);
      for (const { text, bbox: [x0, y0, x1, y1] } of first!.words) {
        assert.ok(x0! >= 0 && y0! >= 0 && x1! <= SIZE.width && y1! <= SIZE.height && x0! < x1! && y0! < y1!, `"${text}" at ${[x0, y0, x1, y1]}`);
      }
    })(),
  ]));
});

test('a transparent PNG is read once flattened onto white', async () => {
  const text = await fs.readFile(await converted('clear.png', 'txt'), 'utf8');
  assert.ok(recall(LINES.join(' '), text) >= MIN_RECALL, JSON.stringify(text));
});

test('pdf with ocr=true is the picture with a text layer; without it, png → pdf has none', async () => {
  const checks = ['png', 'jpg', 'tiff'].map(async (source) => {
    const { final, file } = await job(`words.${source}`, 'pdf', { ocr: 'true' });
    assert.equal(final.status, 'done', `${source}: ${JSON.stringify(final.error)}`);
    const pages = source === 'tiff' ? TIFF_PAGES : [LINES];
    assert.match(run('pdfinfo', [file!], work), new RegExp(`^Pages:\\s+${pages.length}$`, 'm'));
    for (const [index, lines] of pages.entries()) {
      const text = run('pdftotext', ['-f', String(index + 1), '-l', String(index + 1), file!, '-'], work);
      assert.ok(recall(lines.join(' '), text) >= MIN_RECALL, `${source} page ${index + 1}: ${JSON.stringify(text)}`);
    }
    // One picture per page, at the upload's size in pixels.
    const images = run('pdfimages', ['-list', file!], work).split('\n').slice(2).filter(Boolean).map((line) => line.trim().split(/\s+/));
    assert.equal(images.length, pages.length, `${source}: ${JSON.stringify(images)}`);
    assert.deepEqual(images[0]!.slice(3, 5).map(Number), [SIZE.width, SIZE.height]);
  });
  const plain = (async () => {
    const { final, file } = await job('words.png', 'pdf');
    assert.equal(final.status, 'done');
    assert.equal(run('pdftotext', [file!, '-'], work).trim(), '', 'no text layer without ocr');
    assert.equal(run('pdfimages', ['-list', file!], work).split('\n').slice(2).filter(Boolean).length, 1);
  })();
  await Promise.all([...checks, plain]);
  // ocr=false is the route without the option: refused, saying so, rather than OCR'd.
  const refused = await submitJob(samples['words.png']!, 'words.png', 'pdf', { ocr: 'false' });
  const body = await refused.json() as { error: { code: string; option?: string } };
  assert.equal(refused.status, 422);
  assert.equal(body.error.code, 'invalid_option');
  assert.equal(body.error.option, 'ocr');
});

test('progress rises page by page through a ten-page TIFF', async () => {
  // tesseract says "Page n" as it starts each page: 5 %, then 5 + 95 (n - 1) / 10. Pages take a
  // quarter of a second or more, polled every 50 ms: several figures between start and end are seen.
  const response = await submitJob(samples['ten.tiff']!, 'ten.tiff', 'txt', {});
  const { job_id: jobId } = await response.json() as { job_id: string };
  const { final, seen } = await waitForJob(server.url, jobId, { intervalMs: 50, timeoutMs: 180_000 });
  assert.equal(final.status, 'done', JSON.stringify(final.error));
  const between = new Set(seen.filter((record) => record.status === 'running' && (record.progress ?? 0) > 5 && (record.progress ?? 0) < 100).map((record) => record.progress));
  assert.ok(between.size >= 2, `progress seen: ${seen.map((record) => record.progress).join(' ')}`);
  const text = (await download(server.url, final.download_url!)).bytes.toString('utf8');
  assert.equal(text.split('\f').filter((page) => page.trim()).length, 10, 'ten pages of text');
});

test('a TIFF\'s page_range chooses the pages read into txt, hocr and the searchable PDF', async () => {
  const pageText = (index: number) => TIFF_PAGES[index]!.join(' ');
  const [text, hocr, pdf, past] = await Promise.all([
    converted('pages.tiff', 'txt', { page_range: '2-' }),
    converted('pages.tiff', 'hocr', { page_range: '3' }),
    converted('pages.tiff', 'pdf', { ocr: 'true', page_range: '3,1' }),
    job('pages.tiff', 'txt', { page_range: '9' }),
  ]);
  const pages = (await fs.readFile(text, 'utf8')).split('\f').filter((page) => page.trim());
  assert.equal(pages.length, 2, `two pages of text: ${JSON.stringify(pages)}`);
  assert.ok(recall(pageText(1), pages[0]!) >= MIN_RECALL && recall(pageText(2), pages[1]!) >= MIN_RECALL, JSON.stringify(pages));
  assert.ok(recall(pageText(0), pages.join(' ')) < 0.5, 'the first page is not read');
  const read = parseHocr(hocr);
  assert.equal(read.length, 1, 'one page in the hOCR');
  assert.ok(recall(pageText(2), read[0]!.words.map((word) => word.text).join(' ')) >= MIN_RECALL, JSON.stringify(read[0]!.words));
  // Pages in the document's order, whatever the range's.
  assert.match(run('pdfinfo', [pdf], work), /^Pages:\s+2$/m);
  for (const [index, page] of [[1, 0], [2, 2]] as const) {
    const layer = run('pdftotext', ['-f', String(index), '-l', String(index), pdf, '-'], work);
    assert.ok(recall(pageText(page), layer) >= MIN_RECALL, `pdf page ${index}: ${JSON.stringify(layer)}`);
  }
  assert.equal(past.final.status, 'error');
  assert.equal(past.final.error?.code, 'invalid_option', JSON.stringify(past.final.error));
  // Without ocr=true, tiff → pdf is the picture PDF, which chooses no page: the range is refused, saying so.
  const refused = await submitJob(samples['pages.tiff']!, 'pages.tiff', 'pdf', { page_range: '2' });
  const body = await refused.json() as { error: { code: string; option?: string; message: string } };
  assert.equal(refused.status, 422, JSON.stringify(body));
  assert.equal(body.error.option, 'page_range');
  assert.match(body.error.message, /ocr=true/);
});

test('language: Russian and Greek come back in their scripts with rus and ell, not with eng', async () => {
  const [russian, russianAsEnglish, greek] = await Promise.all([
    converted('russian.png', 'txt', { language: 'rus' }),
    converted('russian.png', 'txt'),
    converted('greek.png', 'hocr', { language: 'eng+ell' }),
  ]).then((files) => Promise.all(files.map((file) => fs.readFile(file, 'utf8'))));
  assert.ok(recall('Съешь же ещё этих мягких французских булок', russian!) >= 0.8, russian);
  assert.doesNotMatch(russianAsEnglish!, /\p{Script=Cyrillic}/u, 'eng reads no Cyrillic');
  assert.ok(recall('Καλημέρα κόσμε γράμματα', greek!.replace(/<[^>]+>/g, ' ')) >= 0.6, greek);
});

test('an unknown language, a hostile value, or five languages: 422 invalid_option at submission', async () => {
  for (const language of ['xx', 'eng;rm -rf /', 'eng+rus+ell+ara+heb', 'eng+eng', '../eng', 'osd']) {
    const response = await submitJob(samples['words.png']!, 'words.png', 'txt', { language });
    const body = await response.json() as { error: { code: string; option?: string } };
    assert.equal(response.status, 422, `${language}: ${JSON.stringify(body)}`);
    assert.equal(body.error.code, 'invalid_option');
    assert.equal(body.error.option, 'language');
  }
});

test('hostile: a page flood, a huge second page, a huge declared size, and noise', async () => {
  const [flood, tall, huge, noise] = await Promise.all([
    job('flood.tiff', 'txt'),
    job('tall-second.tiff', 'hocr'),
    job('huge.png', 'txt'),
    job('noise.png', 'txt'),
  ]);
  assert.equal(flood.final.status, 'error');
  assert.equal(flood.final.error?.code, 'input_too_complex', JSON.stringify(flood.final.error));
  assert.match(flood.final.error!.message, /pages/);
  assert.equal(tall.final.status, 'error');
  assert.equal(tall.final.error?.code, 'input_too_complex', JSON.stringify(tall.final.error));
  assert.equal(huge.final.status, 'error');
  assert.equal(huge.final.error?.code, 'input_too_complex', JSON.stringify(huge.final.error));
  // Noise has no text to find: done (with little or none), or a clean error, within the wait.
  if (noise.final.status === 'error') assert.ok(['conversion_failed', 'corrupt_input'].includes(noise.final.error!.code), JSON.stringify(noise.final.error));
});

test('the shared corpus\'s real scans are read with their ground truth', { skip: !existsSync(CORPUS) && 'no shared corpus' }, async () => {
  const scans = [['ocrmypdf-linn.png', 'ocrmypdf-linn.gt.txt'], ['tesseract-phototest.tif', 'tesseract-phototest.gt.txt']] as const;
  await Promise.all(scans.map(async ([scan, truth]) => {
    const upload = await fs.readFile(path.join(CORPUS, scan));
    const text = await fs.readFile(await converted(scan, 'txt', {}, upload), 'utf8');
    const score = recall(await fs.readFile(path.join(CORPUS, truth), 'utf8'), text);
    assert.ok(score >= MIN_CORPUS_RECALL, `${scan}: recall ${score.toFixed(3)}`);
  }));
});

/** The pictures of a PDF, by page (pdfimages -list's page column). */
function picturesByPage(file: string): number[] {
  return run('pdfimages', ['-list', file], work).split('\n').slice(2).filter(Boolean).map((line) => Number(line.trim().split(/\s+/)[0]));
}

test('an uploaded PDF: without ocr its text layer (poppler); with ocr=true its pages without text are read, those with text kept', async () => {
  const pair = async (target: string) => await (await fetch(`${server.url}/api/formats/pdf/${target}`)).json() as { steps: string[]; options: Array<{ name: string }> };
  const [txt, pdf, hocr] = await Promise.all(['txt', 'pdf', 'hocr'].map(pair));
  assert.deepEqual(txt!.steps, ['poppler']);
  for (const name of ['ocr', 'language', 'skip_text', 'page_range']) assert.ok(txt!.options.some((option) => option.name === name), `pdf → txt takes ${name}`);
  assert.deepEqual(pdf!.steps, ['ghostscript']);
  assert.deepEqual(hocr!.steps, ['tesseract']);
  const original = run('pdftotext', ['-f', '2', '-l', '2', path.join(work, 'mixed.pdf'), '-'], work);
  assert.match(original, new RegExp(TEXT_PAGE));

  const [plain, read, searchable, redone] = await Promise.all([
    job('mixed.pdf', 'txt'),
    job('mixed.pdf', 'txt', { ocr: 'true' }),
    job('mixed.pdf', 'pdf', { ocr: 'true' }),
    job('mixed.pdf', 'pdf', { ocr: 'true', skip_text: 'false' }),
  ]);
  // Without ocr: the text layer only, the scanned page empty.
  const plainPages = (await fs.readFile(plain.file!, 'utf8')).split('\f');
  assert.equal(plainPages[0]!.trim(), '');
  assert.match(plainPages[1]!, new RegExp(TEXT_PAGE));
  // With ocr: the scanned page read, the text page's own text.
  const readPages = (await fs.readFile(read.file!, 'utf8')).split('\f');
  assert.ok(recall(LINES.join(' '), readPages[0]!) >= MIN_RECALL, `page 1 read: ${JSON.stringify(readPages[0])}`);
  assert.equal(readPages[1], original.split('\f')[0], 'page 2 keeps its own text, as pdftotext reads it');
  // The searchable PDF: page 1 a picture with its text over it, page 2 the page it was (no picture).
  assert.match(run('pdfinfo', [searchable.file!], work), /^Pages:\s+2$/m);
  assert.ok(recall(LINES.join(' '), run('pdftotext', ['-f', '1', '-l', '1', searchable.file!, '-'], work)) >= MIN_RECALL, 'page 1 is searchable');
  assert.equal(run('pdftotext', ['-f', '2', '-l', '2', searchable.file!, '-'], work), original, 'page 2 keeps its text');
  assert.deepEqual(picturesByPage(searchable.file!), [1], 'a picture on page 1 only');
  // skip_text=false: both pages drawn and read again.
  assert.deepEqual(picturesByPage(redone.file!), [1, 2], 'both pages are pictures');
  assert.ok(recall(TEXT_PAGE, run('pdftotext', ['-f', '2', '-l', '2', redone.file!, '-'], work)) >= 0.75, 'page 2 read again');
  // ocr=false is the route without the option: refused.
  const refused = await submitJob(samples['mixed.pdf']!, 'mixed.pdf', 'txt', { ocr: 'false' });
  assert.equal(refused.status, 422);
  assert.equal((await refused.json() as { error: { option?: string } }).error.option, 'ocr');
});

test('a scanned PDF → hocr reads every page; a page_range chooses the pages read; progress rises page by page', async () => {
  const [hocr, second] = await Promise.all([job('scan.pdf', 'hocr'), job('scan.pdf', 'txt', { ocr: 'true', page_range: '2' })]);
  const pages = parseHocr(hocr.file!);
  assert.equal(pages.length, 2);
  assert.ok(recall(LINES.join(' '), pages[0]!.words.map((word) => word.text).join(' ')) >= MIN_RECALL, 'page 1 words');
  assert.ok(recall(TIFF_PAGES[1]!.join(' '), pages[1]!.words.map((word) => word.text).join(' ')) >= MIN_RECALL, 'page 2 words');
  const text = await fs.readFile(second.file!, 'utf8');
  assert.ok(recall(TIFF_PAGES[1]!.join(' '), text) >= MIN_RECALL, `page 2 only: ${JSON.stringify(text)}`);
  assert.ok(recall(LINES.join(' '), text) < 0.2, 'not page 1');
  const response = await submitJob(samples['scan6.pdf']!, 'scan6.pdf', 'txt', { ocr: 'true' });
  const { job_id: jobId } = await response.json() as { job_id: string };
  const { final, seen } = await waitForJob(server.url, jobId, { intervalMs: 50, timeoutMs: 300_000 });
  assert.equal(final.status, 'done', JSON.stringify(final.error));
  const between = new Set(seen.filter((record) => record.status === 'running' && (record.progress ?? 0) > 0 && (record.progress ?? 0) < 100).map((record) => record.progress));
  assert.ok(between.size >= 3, `progress seen: ${seen.map((record) => record.progress).join(' ')}`);
  assert.equal((await download(server.url, final.download_url!)).bytes.toString('utf8').split('\f').filter((page) => page.trim()).length, 6, 'six pages of text');
});

test(`a PDF of more than ${MAX_OCR_PAGES} pages is refused for OCR unless a page_range chooses fewer; a poster-sized page is read at a lower resolution`, async () => {
  const [many, chosen, poster] = await Promise.all([
    job('many.pdf', 'txt', { ocr: 'true' }),
    job('many.pdf', 'txt', { ocr: 'true', page_range: '301' }),
    job('poster.pdf', 'txt', { ocr: 'true' }),
  ]);
  assert.equal(many.final.error?.code, 'input_too_complex', JSON.stringify(many.final.error));
  assert.match(many.final.error!.message, /page_range/);
  assert.equal(chosen.final.status, 'done', JSON.stringify(chosen.final.error));
  assert.ok(recall(LINES.join(' '), await fs.readFile(chosen.file!, 'utf8')) >= MIN_RECALL, 'page 301 read');
  // 180 × 54 inches (a picture at 5 dpi): drawn at 32 dpi to stay within the pixel cap, its (huge) letters read.
  assert.equal(poster.final.status, 'done', JSON.stringify(poster.final.error));
  assert.ok(recall(LINES.join(' '), await fs.readFile(poster.file!, 'utf8')) >= 0.6, 'the poster is read');
});

test('the shared corpus\'s scanned PDF is read with its ground truth', { skip: !existsSync(path.join(CORPUS, 'ocrmypdf-linn-scan.pdf')) && 'no shared corpus' }, async () => {
  const upload = await fs.readFile(path.join(CORPUS, 'ocrmypdf-linn-scan.pdf'));
  const text = await fs.readFile(await converted('ocrmypdf-linn-scan.pdf', 'txt', { ocr: 'true' }, upload), 'utf8');
  const score = recall(await fs.readFile(path.join(CORPUS, 'ocrmypdf-linn-scan.gt.txt'), 'utf8'), text);
  assert.ok(score >= MIN_CORPUS_RECALL, `recall ${score.toFixed(3)}`);
});
