// XPS and OpenXPS through MuPDF (issue #31): every pair /api/formats lists for xps and oxps (the
// mupdf engine's pdf, png, svg and txt, and on from its PDF: PDF/A, JPEG, WebP and TIFF pages, a
// ZIP of pages), and an uploaded PDF's page as SVG and as PNG, convert through the HTTP API; each output is
// checked by tools that are not MuPDF: pdfinfo and pdftotext for the PDFs, Pillow for the pictures
// (the fill of each page where the page drew it), rsvg-convert drawing the SVGs, read_document.py
// for the chained formats. The samples are written here: packages of a FixedDocumentSequence, a
// FixedDocument and three FixedPages, each with a coloured rectangle (a different colour per
// page), a PNG picture part, and a line of Glyphs text in an embedded font part (DejaVu Sans).
// Hostile packages (docs/security.md#xps-and-mupdf): parts naming /etc/passwd, a font file of the
// system, a host on the network or a part above the package as ImageSource or FontUri; 2,001 pages;
// a page 2,000,000 units wide; a pixel_density past the pixel cap; a damaged package. Real XPS
// files of the shared corpus too (skipped when absent).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { strToU8, unzipSync, zipSync } from 'fflate';
import { download, fetchCatalogue, finalsForTargets, mapInFlight, runWithOptions, submitWithOptions, waitForJob, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { DocumentReader } from './helpers/document-reader.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { toolEnv } from './helpers/tools.ts';

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus', 'xps');
const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';

/** Every target /api/formats lists for xps and oxps: MuPDF's, and on from its PDF. */
const TARGETS = ['jpg', 'pdf', 'pdfa', 'png', 'svg', 'tiff', 'txt', 'webp', 'zip'];
/** The words and the rectangle's colour of each page of the sample. */
const PAGES = [
  { words: ['Quokkabird', 'swims', 'across'], colour: [30, 60, 200] },
  { words: ['Lyrebird', 'dances', 'quietly'], colour: [30, 160, 60] },
  { words: ['Pangolin', 'sleeps', 'soundly'], colour: [200, 40, 40] },
] as const;
/** The picture part: 40 × 40 orange, drawn at the same place on every page. */
const ORANGE = [250, 170, 20];
/** A page is 816 × 1056 (1/96 inch: US Letter, 612 × 792 points); where the rectangle and the picture are, as fractions. */
const PAGE = { width: 816, height: 1056 };
const RECTANGLE_AT: [number, number] = [288 / 816, 640 / 1056];
const PICTURE_AT: [number, number] = [640 / 816, 560 / 1056];
const BLANK_AT: [number, number] = [0.9, 0.95];
/** The test service's pixel cap: a page at 150 dpi (1275 × 1650) passes it, at 600 dpi (5100 × 6600) not. */
const PIXEL_CAP = 10_000_000;
const XPS_NS = 'http://schemas.microsoft.com/xps/2005/06';
const OXPS_NS = 'http://schemas.openxps.org/oxps/v1.0';

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let work: string;
let reader: DocumentReader;
const samples: Record<string, Buffer> = {};

function run(program: string, args: string[], input?: Buffer): Buffer {
  return execFileSync(program, args, { cwd: work, env: toolEnv, input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
}

/** A 40 × 40 PNG of one colour, by Pillow. */
function picturePng(): Buffer {
  return run('/usr/bin/python3', ['-c', `import io, sys\nfrom PIL import Image\nb = io.BytesIO()\nImage.new('RGB', (40, 40), (${ORANGE.join(', ')})).save(b, 'PNG')\nsys.stdout.buffer.write(b.getvalue())`]);
}

const hex = (rgb: readonly number[]) => `#FF${rgb.map((c) => c.toString(16).padStart(2, '0')).join('').toUpperCase()}`;

interface PageSpec { words: readonly string[]; colour: readonly number[]; width?: number; extra?: string }

/**
 * An XPS (or, `open`, an OpenXPS) package: the package relationship naming the sequence, the
 * content types, the sequence, one FixedDocument of `pages` FixedPages (all the same part when
 * `samePart`: a long document costs one page's bytes), the font and the picture parts.
 */
function xpsPackage(pages: readonly PageSpec[], { open = false }: { open?: boolean } = {}): Buffer {
  const ns = open ? OXPS_NS : XPS_NS;
  const kind = open ? 'oxps' : 'ms-package.xps';
  const parts: Record<string, Uint8Array> = {
    '[Content_Types].xml': strToU8(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="fdseq" ContentType="application/vnd.${kind}-fixeddocumentsequence+xml"/><Default Extension="fdoc" ContentType="application/vnd.${kind}-fixeddocument+xml"/><Default Extension="fpage" ContentType="application/vnd.${kind}-fixedpage+xml"/><Default Extension="ttf" ContentType="application/vnd.ms-opentype"/><Default Extension="png" ContentType="image/png"/></Types>`),
    '_rels/.rels': strToU8(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="R0" Type="${ns}/fixedrepresentation" Target="/FixedDocumentSequence.fdseq"/></Relationships>`),
    'FixedDocumentSequence.fdseq': strToU8(`<FixedDocumentSequence xmlns="${ns}"><DocumentReference Source="/Documents/1/FixedDocument.fdoc"/></FixedDocumentSequence>`),
    'Documents/1/FixedDocument.fdoc': strToU8(`<FixedDocument xmlns="${ns}">${pages.map((_, i) => `<PageContent Source="/Documents/1/Pages/${i + 1}.fpage"/>`).join('')}</FixedDocument>`),
    'Resources/DejaVuSans.ttf': new Uint8Array(readFileSync(FONT)),
    'Resources/picture.png': new Uint8Array(picturePng()),
  };
  for (const [i, page] of pages.entries()) {
    parts[`Documents/1/Pages/${i + 1}.fpage`] = strToU8(`<FixedPage xmlns="${ns}" Width="${page.width ?? PAGE.width}" Height="${PAGE.height}" xml:lang="en">`
      + `<Path Data="M 96,480 L 480,480 480,800 96,800 Z" Fill="${hex(page.colour)}"/>`
      + '<Path Data="M 560,480 L 720,480 720,640 560,640 Z"><Path.Fill><ImageBrush ImageSource="/Resources/picture.png" Viewbox="0,0,40,40" ViewboxUnits="Absolute" Viewport="560,480,160,160" ViewportUnits="Absolute"/></Path.Fill></Path>'
      + `<Glyphs FontUri="/Resources/DejaVuSans.ttf" FontRenderingEmSize="40" OriginX="96" OriginY="160" UnicodeString="${page.words.join(' ')}" Fill="#FF000000"/>`
      + `${page.extra ?? ''}</FixedPage>`);
  }
  return Buffer.from(zipSync(parts));
}

before(async () => {
  work = await tempDir('convertd-mupdf-');
  samples['book.xps'] = xpsPackage(PAGES);
  samples['book.oxps'] = xpsPackage(PAGES, { open: true });
  server = await startServer({
    CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '2', CONVERTD_MAX_ATTEMPTS: '1',
    CONVERTD_MAX_IMAGE_PIXELS: String(PIXEL_CAP),
  });
  catalogue = await fetchCatalogue(server.url);
  reader = new DocumentReader();
});

after(async () => {
  reader?.close();
  await server?.stop();
});

interface JobEnd { final: ProgressRecord; file?: string; refused?: { status: number; code: string } }
let outputs = 0;
/**
 * One job through the API, with options; the result is written into the work directory. With
 * `refusable`, a submission refused (a damaged package is no XPS to the sniffer) is returned as
 * such rather than failing the test.
 */
async function job(upload: Buffer, name: string, target: string, options: Record<string, string> = {}, refusable = false): Promise<JobEnd> {
  let final: ProgressRecord;
  if (refusable) {
    const response = await submitWithOptions(server.url, upload, name, target, options);
    const body = await response.json() as { job_id: string; error?: { code: string } };
    if (response.status !== 200) return { final: { status: 'error' } as ProgressRecord, refused: { status: response.status, code: body.error?.code ?? '' } };
    ({ final } = await waitForJob(server.url, body.job_id, { timeoutMs: 180_000 }));
  } else {
    ({ final } = await runWithOptions(server.url, upload, name, target, options));
  }
  if (final.status !== 'done') return { final };
  const { bytes } = await download(server.url, final.download_url!);
  const file = path.join(work, `out-${++outputs}.${target}`);
  await fs.writeFile(file, bytes);
  return { final, file };
}

/** A job that must succeed: its output's path. */
async function converted(upload: Buffer, name: string, target: string, options: Record<string, string> = {}): Promise<string> {
  const { final, file } = await job(upload, name, target, options);
  assert.equal(final.status, 'done', `${name} → ${target} ${JSON.stringify(options)}: ${JSON.stringify(final.error)}`);
  return file!;
}

interface Pixels { width: number; height: number; format: string; pixels: number[][] }
/** The pixels of an image (or of each image in a ZIP) at the points, read by Pillow. */
function pixelsOf(file: string, points: Array<[number, number]>): Pixels[] {
  return JSON.parse(run('/usr/bin/python3', [path.join(import.meta.dirname, 'helpers', 'sample_pixels.py'), file, JSON.stringify(points)]).toString('utf8')) as Pixels[];
}

/** Whether a pixel is within `tolerance` of a colour in every channel (JPEG and WebP move them a little). */
function near(pixel: readonly number[], colour: readonly number[], tolerance = 24): boolean {
  return colour.every((channel, i) => Math.abs(pixel[i]! - channel) <= tolerance);
}

/** Asserts that a picture is page `page` of the sample: its rectangle's colour, the picture's orange, white where nothing was drawn. */
function assertPage(image: Pixels, page: number, what: string): void {
  const [rectangle, picture, blank] = image.pixels;
  assert.ok(near(rectangle!, PAGES[page - 1]!.colour), `${what}: the rectangle is ${rectangle}, page ${page}'s is ${PAGES[page - 1]!.colour}`);
  assert.ok(near(picture!, ORANGE), `${what}: the picture part is ${picture}, not orange`);
  assert.ok(near(blank!, [255, 255, 255]), `${what}: the blank corner is ${blank}`);
}
const POINTS: Array<[number, number]> = [RECTANGLE_AT, PICTURE_AT, BLANK_AT];

/** pdftotext of one page of a PDF. */
const pdfPageText = (file: string, page: number) => run('pdftotext', ['-f', String(page), '-l', String(page), file, '-']).toString('utf8');
const pdfPages = (file: string) => Number(/^Pages:\s+(\d+)/m.exec(run('pdfinfo', [file]).toString('utf8'))?.[1]);

/** An SVG parsed as XML (Python's ElementTree, its root an svg element), then drawn by rsvg-convert at `width` pixels: the PNG's path. */
function drawSvg(file: string, width: number): string {
  run('/usr/bin/python3', ['-c', 'import sys, xml.etree.ElementTree as E\nassert E.parse(sys.argv[1]).getroot().tag == "{http://www.w3.org/2000/svg}svg"', file]);
  const png = `${file}.png`;
  run('rsvg-convert', ['-w', String(width), '-b', 'white', '-o', png, file]);
  return png;
}

test('the catalogue lists XPS and OpenXPS as documents with MuPDF\'s targets and those of its PDF; PDF lists svg', () => {
  for (const id of ['xps', 'oxps']) {
    const entry = catalogue.find((format) => format.id === id);
    assert.ok(entry, `${id} is listed`);
    assert.equal(entry.category, 'document');
    assert.deepEqual([...entry.targets].sort(), TARGETS, `${id}'s targets`);
  }
  assert.ok(catalogue.find((format) => format.id === 'pdf')?.targets.includes('svg'), 'pdf → svg is listed');
});

test('XPS and OpenXPS are told from other ZIP packages by their content, whatever their name', async () => {
  const cases: Array<[Buffer, string, string]> = [
    [samples['book.xps']!, 'upload.zip', 'xps'],
    [samples['book.oxps']!, 'upload.zip', 'oxps'],
    [samples['book.oxps']!, 'book.xps', 'oxps'],
    // A ZIP holding the same parts but no package relationship is a ZIP.
    [Buffer.from(zipSync(Object.fromEntries(Object.entries(unzipSync(new Uint8Array(samples['book.xps']!))).filter(([name]) => name !== '_rels/.rels')))), 'upload.zip', 'zip'],
  ];
  for (const [bytes, name, expected] of cases) {
    const { final } = await job(bytes, name, expected === 'zip' ? 'tar' : 'txt');
    assert.equal(final.source, expected, `${name} sniffed as ${final.source}, expected ${expected}`);
  }
});

/**
 * The package with its end record marked ZIP64, as XPS printers write it whatever the size: the
 * real count, size and offset of the directory in a ZIP64 end record, found through its locator.
 */
function withZip64End(zip: Buffer): Buffer {
  const end = zip.length - 22;
  assert.equal(zip.readUInt32LE(end), 0x06054b50, 'fflate writes no archive comment');
  const record = Buffer.alloc(56);
  record.writeUInt32LE(0x06064b50, 0);
  record.writeBigUInt64LE(44n, 4); // the size of the rest of the record
  record.writeUInt16LE(45, 12);
  record.writeUInt16LE(45, 14);
  record.writeBigUInt64LE(BigInt(zip.readUInt16LE(end + 8)), 24);
  record.writeBigUInt64LE(BigInt(zip.readUInt16LE(end + 10)), 32);
  record.writeBigUInt64LE(BigInt(zip.readUInt32LE(end + 12)), 40);
  record.writeBigUInt64LE(BigInt(zip.readUInt32LE(end + 16)), 48);
  const locator = Buffer.alloc(20);
  locator.writeUInt32LE(0x07064b50, 0);
  locator.writeBigUInt64LE(BigInt(end), 8);
  locator.writeUInt32LE(1, 16);
  const marked = Buffer.from(zip.subarray(end));
  marked.writeUInt16LE(0xffff, 8);
  marked.writeUInt16LE(0xffff, 10);
  marked.writeUInt32LE(0xffffffff, 12);
  marked.writeUInt32LE(0xffffffff, 16);
  return Buffer.concat([zip.subarray(0, end), record, locator, marked]);
}

test('a package whose end record is marked ZIP64 is an XPS too, held to the archive caps by its real count', async () => {
  const zip64 = withZip64End(samples['book.xps']!);
  // A valid archive to another reader: Python's zipfile follows the ZIP64 record.
  run('/usr/bin/python3', ['-c', 'import io, sys, zipfile\nassert zipfile.ZipFile(io.BytesIO(sys.stdin.buffer.read())).testzip() is None'], zip64);
  const { final, file } = await job(zip64, 'upload.zip', 'pdf');
  assert.equal(final.source, 'xps');
  assert.equal(final.status, 'done', JSON.stringify(final.error));
  assert.equal(pdfPages(file!), 3);
});

test('xps → every listed target (and oxps), each output read by its own reader', { timeout: 10 * 60_000 }, async () => {
  for (const name of ['book.xps', 'book.oxps']) {
    const ends = await finalsForTargets(server.url, samples[name]!, name, TARGETS, { inFlight: 3, timeoutMs: 180_000 });
    for (const { target, final } of ends) {
      assert.equal(final.status, 'done', `${name} → ${target}: ${JSON.stringify(final.error)}`);
      const { bytes } = await download(server.url, final.download_url!);
      const file = path.join(work, `every-${++outputs}.${target}`);
      await fs.writeFile(file, bytes);
      if (target === 'txt') {
        assert.match(bytes.toString('utf8'), /Quokkabird swims across[\s\S]*Lyrebird dances quietly[\s\S]*Pangolin sleeps soundly/, `${name} → txt`);
        continue;
      }
      const reading = await reader.readValid(file, target);
      if (target === 'pdf' || target === 'pdfa') {
        assert.equal(reading.pages, 3, `${name} → ${target}: pages`);
        for (const page of PAGES) for (const word of page.words) assert.ok(reading.text.includes(word), `${name} → ${target}: "${word}" missing`);
      }
      if (['png', 'jpg', 'webp', 'tiff'].includes(target)) assertPage(pixelsOf(file, POINTS)[0]!, 1, `${name} → ${target}`);
      if (target === 'zip') {
        const images = pixelsOf(file, POINTS);
        assert.equal(images.length, 3, `${name} → zip: a picture per page`);
        images.forEach((image, i) => assertPage(image, i + 1, `${name} → zip, page ${i + 1}`));
      }
      if (target === 'svg') assertPage(pixelsOf(drawSvg(file, 816), POINTS)[0]!, 1, `${name} → svg drawn by rsvg`);
    }
  }
});

test('xps → pdf: a page per FixedPage at its size, the words of each page on it; page_range keeps its pages in order', async () => {
  const pdf = await converted(samples['book.xps']!, 'book.xps', 'pdf');
  assert.equal(pdfPages(pdf), 3);
  assert.match(run('pdfinfo', [pdf]).toString('utf8'), /Page size:\s+612 x 792 pts/);
  PAGES.forEach((page, i) => assert.match(pdfPageText(pdf, i + 1), new RegExp(page.words.join('\\s+')), `page ${i + 1}`));
  const picked = await converted(samples['book.xps']!, 'book.xps', 'pdf', { page_range: '2-' });
  assert.equal(pdfPages(picked), 2);
  assert.match(pdfPageText(picked, 1), /Lyrebird/);
  assert.match(pdfPageText(picked, 2), /Pangolin/);
  // Its pages as pictures, drawn by poppler: the fills where they were drawn.
  const png = path.join(work, 'xps-pdf-page');
  run('pdftoppm', ['-png', '-r', '50', '-f', '1', '-l', '1', '-singlefile', pdf, png]);
  assertPage(pixelsOf(`${png}.png`, POINTS)[0]!, 1, 'xps → pdf drawn by pdftoppm');
});

test('xps → png: the first page, or the first of a page_range, at 150 dpi or a pixel_density; past the pixel cap refused naming the option', async () => {
  const first = pixelsOf(await converted(samples['book.xps']!, 'book.xps', 'png'), POINTS)[0]!;
  assert.deepEqual([first.width, first.height, first.format], [1275, 1650, 'PNG']);
  assertPage(first, 1, 'png of page 1');
  const third = pixelsOf(await converted(samples['book.oxps']!, 'book.oxps', 'png', { page_range: '3-', pixel_density: '48' }), POINTS)[0]!;
  assert.deepEqual([third.width, third.height], [408, 528]);
  assertPage(third, 3, 'png of page 3 at 48 dpi');
  const { final } = await job(samples['book.xps']!, 'book.xps', 'png', { pixel_density: '600' });
  assert.equal(final.status, 'error');
  assert.equal(final.error?.code, 'invalid_option');
  assert.match(final.error?.message ?? '', /pixel_density.*5100 × 6600/);
  const beyond = await job(samples['book.xps']!, 'book.xps', 'png', { page_range: '4' });
  assert.equal(beyond.final.error?.code, 'invalid_option', JSON.stringify(beyond.final.error));
});

test('an uploaded PDF → png is MuPDF\'s (a document made a PDF on the way stays poppler\'s): the page of a page_range, at 150 dpi or a pixel_density', async () => {
  const route = async (source: string) => ((await (await fetch(`${server.url}/api/formats/${source}/png`)).json()) as { steps: string[] }).steps;
  assert.deepEqual(await route('pdf'), ['mupdf']);
  assert.deepEqual(await route('docx'), ['libreoffice', 'poppler']);
  // The PDF is MuPDF's own of the XPS sample, its pages read back by poppler above.
  const pdf = await fs.readFile(await converted(samples['book.xps']!, 'book.xps', 'pdf'));
  const first = pixelsOf(await converted(pdf, 'book.pdf', 'png'), POINTS)[0]!;
  assert.deepEqual([first.width, first.height, first.format], [1275, 1650, 'PNG']);
  assertPage(first, 1, 'pdf → png of page 1');
  const second = pixelsOf(await converted(pdf, 'book.pdf', 'png', { page_range: '2', pixel_density: '48' }), POINTS)[0]!;
  assert.deepEqual([second.width, second.height], [408, 528]);
  assertPage(second, 2, 'pdf → png of page 2 at 48 dpi');
  const dense = await job(pdf, 'book.pdf', 'png', { pixel_density: '600' });
  assert.equal(dense.final.error?.code, 'invalid_option', JSON.stringify(dense.final.error));
  assert.match(dense.final.error?.message ?? '', /pixel_density/);
});

test('xps → svg and pdf → svg: a page as well-formed SVG that rsvg-convert draws like the page; page_range picks it', async () => {
  const svg = await converted(samples['book.xps']!, 'book.xps', 'svg', { page_range: '2' });
  assertPage(pixelsOf(drawSvg(svg, 816), POINTS)[0]!, 2, 'svg of page 2');
  // The text is drawn as outlines: the SVG needs no font, and shows no text to a reader.
  assert.doesNotMatch(await fs.readFile(svg, 'utf8'), /Lyrebird/);
  const pdf = await fs.readFile(await converted(samples['book.xps']!, 'book.xps', 'pdf'));
  const first = await converted(pdf, 'book.pdf', 'svg');
  assertPage(pixelsOf(drawSvg(first, 612), POINTS)[0]!, 1, 'svg of the PDF\'s page 1');
  const third = await converted(pdf, 'book.pdf', 'svg', { page_range: '3' });
  assertPage(pixelsOf(drawSvg(third, 612), POINTS)[0]!, 3, 'svg of the PDF\'s page 3');
  const beyond = await job(pdf, 'book.pdf', 'svg', { page_range: '9' });
  assert.equal(beyond.final.error?.code, 'invalid_option', JSON.stringify(beyond.final.error));
});

test('xps → txt: the words page by page in order; page_range keeps its pages; a package without text fails saying so', async () => {
  const text = await fs.readFile(await converted(samples['book.oxps']!, 'book.oxps', 'txt'), 'utf8');
  const at = PAGES.map((page) => text.indexOf(page.words.join(' ')));
  assert.ok(at.every((position, i) => position >= 0 && (i === 0 || position > at[i - 1]!)), `pages out of order: ${JSON.stringify(text)}`);
  const picked = await fs.readFile(await converted(samples['book.xps']!, 'book.xps', 'txt', { page_range: '3,1' }), 'utf8');
  assert.match(picked, /Quokkabird[\s\S]*Pangolin/);
  assert.doesNotMatch(picked, /Lyrebird/);
  const wordless = xpsPackage([{ words: [], colour: [0, 0, 0] }]);
  const { final } = await job(wordless, 'blank.xps', 'txt');
  assert.equal(final.status, 'error');
  assert.equal(final.error?.code, 'conversion_failed');
  assert.match(final.error?.message ?? '', /no text/);
});

test('parts naming files or hosts outside the package draw nothing from outside it', async () => {
  const outside = [
    '<Path Data="M 0,0 L 96,0 96,96 0,96 Z"><Path.Fill><ImageBrush ImageSource="file:///etc/passwd" Viewbox="0,0,10,10" ViewboxUnits="Absolute" Viewport="0,0,96,96" ViewportUnits="Absolute"/></Path.Fill></Path>',
    '<Path Data="M 100,0 L 196,0 196,96 100,96 Z"><Path.Fill><ImageBrush ImageSource="../../../../../../etc/passwd" Viewbox="0,0,10,10" ViewboxUnits="Absolute" Viewport="100,0,96,96" ViewportUnits="Absolute"/></Path.Fill></Path>',
    '<Path Data="M 200,0 L 296,0 296,96 200,96 Z"><Path.Fill><ImageBrush ImageSource="http://192.0.2.1/picture.png" Viewbox="0,0,10,10" ViewboxUnits="Absolute" Viewport="200,0,96,96" ViewportUnits="Absolute"/></Path.Fill></Path>',
    `<Glyphs FontUri="file://${FONT}" FontRenderingEmSize="40" OriginX="96" OriginY="960" UnicodeString="Outside font" Fill="#FF000000"/>`,
    '<Glyphs FontUri="/../../../../etc/passwd" FontRenderingEmSize="40" OriginX="96" OriginY="1010" UnicodeString="Passwd font" Fill="#FF000000"/>',
  ].join('');
  const hostile = xpsPackage([{ words: PAGES[0].words, colour: PAGES[0].colour, extra: outside }]);
  const passwd = await fs.readFile('/etc/passwd', 'utf8');
  const firstLine = passwd.split('\n')[0]!;
  for (const target of ['pdf', 'png', 'svg', 'txt']) {
    const { final, file } = await job(hostile, 'outside.xps', target);
    // A contained output, or a clean refusal: never an internal error, never the file's content.
    if (final.status !== 'done') {
      assert.match(final.error?.code ?? '', /^(corrupt_input|conversion_failed)$/, `outside.xps → ${target}: ${JSON.stringify(final.error)}`);
      continue;
    }
    const bytes = await fs.readFile(file!);
    assert.ok(!bytes.includes(firstLine), `outside.xps → ${target} holds /etc/passwd`);
    if (target === 'pdf') {
      assert.ok(!run('pdftotext', [file!, '-']).toString('utf8').includes(firstLine));
      // No picture came from anywhere: the only image in the PDF is the package's own.
      const images = run('pdfimages', ['-list', file!]).toString('utf8').trim().split('\n').slice(2);
      assert.equal(images.length, 1, `images in the PDF: ${images.join('\n')}`);
      // The font named by a path of the system was not read: the PDF embeds the package's font only (and MuPDF's own substitute).
      assert.doesNotMatch(run('pdffonts', [file!]).toString('utf8'), /DejaVuSans\b.*\n.*DejaVuSans\b/);
    }
    if (target === 'png') {
      // Where the outside pictures would be, the page is white: nothing was drawn.
      const corner = pixelsOf(file!, [[48 / 816, 48 / 1056], [148 / 816, 48 / 1056], [248 / 816, 48 / 1056]])[0]!;
      for (const pixel of corner.pixels) assert.ok(near(pixel, [255, 255, 255]), `outside picture drawn: ${pixel}`);
    }
    if (target === 'txt') assert.match(bytes.toString('utf8'), /Quokkabird/);
  }
});

test('2,001 pages, a page 2,000,000 units wide: refused before rendering; a damaged package ends in corrupt_input', async () => {
  const long = xpsPackage(Array.from({ length: 2001 }, () => PAGES[0]));
  for (const target of ['pdf', 'txt']) {
    const { final } = await job(long, 'long.xps', target);
    assert.equal(final.error?.code, 'input_too_complex', `long.xps → ${target}: ${JSON.stringify(final.error)}`);
    assert.match(final.error?.message ?? '', /2001 pages/);
  }
  // One page of it is a thumbnail like any other.
  assertPage(pixelsOf(await converted(long, 'long.xps', 'png', { pixel_density: '20' }), POINTS)[0]!, 1, 'page 1 of 2,001');
  const wide = xpsPackage([{ ...PAGES[0], width: 2_000_000 }]);
  for (const target of ['png', 'svg']) {
    const { final } = await job(wide, 'wide.xps', target);
    assert.equal(final.error?.code, 'input_too_complex', `wide.xps → ${target}: ${JSON.stringify(final.error)}`);
    assert.match(final.error?.message ?? '', /1500000 x 792 points/);
  }
  const book = samples['book.xps']!;
  const damaged: Record<string, Buffer> = {
    'half.xps': book.subarray(0, Math.floor(book.length / 2)),
    'overwritten.xps': Buffer.concat([book.subarray(0, 200), Buffer.alloc(4000, 0x41), book.subarray(4200)]),
  };
  for (const [name, bytes] of Object.entries(damaged)) {
    for (const target of ['pdf', 'png']) {
      const { final, refused } = await job(bytes, name, target, {}, true);
      if (refused) {
        assert.ok(refused.status >= 400 && refused.status < 500, `${name} → ${target}: ${JSON.stringify(refused)}`);
        continue;
      }
      if (final.status === 'done') continue;
      assert.notEqual(final.error?.code, 'internal_error', `${name} → ${target}: ${JSON.stringify(final.error)}`);
    }
  }
});

const corpusFiles = existsSync(CORPUS) ? readdirSync(CORPUS).filter((name) => /\.o?xps$/.test(name)).sort() : [];

test('corpus: real XPS files to pdf, png and txt', { skip: corpusFiles.length === 0 && 'no ../shared/corpus/xps' }, async () => {
  const ends = await mapInFlight(corpusFiles, 2, async (name) => {
    const bytes = await fs.readFile(path.join(CORPUS, name));
    return { name, pdf: await job(bytes, name, 'pdf'), png: await job(bytes, name, 'png'), txt: await job(bytes, name, 'txt') };
  });
  for (const { name, pdf, png, txt } of ends) {
    assert.equal(pdf.final.status, 'done', `${name} → pdf: ${JSON.stringify(pdf.final.error)}`);
    assert.ok(pdfPages(pdf.file!) >= 1);
    assert.equal(png.final.status, 'done', `${name} → png: ${JSON.stringify(png.final.error)}`);
    assert.ok(pixelsOf(png.file!, [[0.5, 0.5]])[0]!.width > 100);
    // Some printouts hold no text (drawn glyphs only): then the job says so.
    if (txt.final.status !== 'done') assert.equal(txt.final.error?.code, 'conversion_failed', `${name} → txt: ${JSON.stringify(txt.final.error)}`);
  }
});
