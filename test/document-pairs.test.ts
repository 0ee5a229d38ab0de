// Documents, spreadsheets, presentations, markup, ebooks and PDF: every pair /api/formats lists
// for these sources is converted through the HTTP API from a sample the test made itself, and the
// output is read back with independent tools (test/helpers/read_document.py: zipfile and XML
// parsing for OOXML/ODF/EPUB, poppler and qpdf for PDF, Pillow for images, a MOBI reader): the
// right format, not empty, the sample's words there wherever text survives (recall of the
// sample's own word list), a PDF's page count that of its source where the source declares one,
// and a picture that is not blank.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { strToU8, zipSync } from 'fflate';
import { convert, fetchCatalogue, progress, submitOk, waitForJob, type CatalogueEntry } from './helpers/client.ts';
import { declaredPages, documentSamples, handmadeDocx, MARKER, recall, sampleWords, scannedPdf, wordsOf, type ChartSample } from './helpers/documents.ts';
import { noisePng, sampleImage } from './helpers/fixtures.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { DocumentReader, type Reading } from './helpers/document-reader.ts';
import { fileMimeOf, writeTemp } from './helpers/tools.ts';


/** Data sources reach documents through a workbook: their data-to-data pairs are data-formats.test.ts's. */
const DATA_ROWS = [{ name: MARKER, count: 2, note: 'swims across the quiet river' }, { name: 'trout', count: 5, note: 'seven herons watch at dawn' }];
const DATA_SAMPLES: Record<string, string> = {
  csv: `name,count,note\n${DATA_ROWS.map((r) => `${r.name},${r.count},${r.note}`).join('\n')}\n`,
  tsv: `name\tcount\tnote\n${DATA_ROWS.map((r) => `${r.name}\t${r.count}\t${r.note}`).join('\n')}\n`,
  json: JSON.stringify(DATA_ROWS),
  ndjson: `${DATA_ROWS.map((r) => JSON.stringify(r)).join('\n')}\n`,
  yaml: DATA_ROWS.map((r) => `- name: ${r.name}\n  count: ${r.count}\n  note: ${r.note}\n`).join(''),
  toml: DATA_ROWS.map((r) => `[[fish]]\nname = "${r.name}"\ncount = ${r.count}\nnote = "${r.note}"\n`).join('\n'),
  xml: `<?xml version="1.0"?>\n<fish>${DATA_ROWS.map((r) => `<row><name>${r.name}</name><count>${r.count}</count><note>${r.note}</note></row>`).join('')}</fish>\n`,
};
/** The words of the data samples: the column names (the header row) and the text values. */
const DATA_WORDS = wordsOf(`name count note ${DATA_ROWS.map((r) => `${r.name} ${r.note}`).join(' ')}`);
/**
 * The tree formats xlsx and ods (and the data formats) also convert to: data-formats-more.test.ts
 * converts those pairs and compares them record by record with their own readers.
 */
const MORE_DATA_TARGETS = new Set(['plist', 'json5', 'ini', 'properties', 'msgpack', 'cbor']);
const DATA_FORMATS = new Set([...Object.keys(DATA_SAMPLES), 'xlsx', 'ods', ...MORE_DATA_TARGETS]);

/**
 * The older ebook formats calibre writes from epub, mobi, azw3 and fb2 (htmlz, lrf, rb...):
 * ebook-formats.test.ts converts those pairs and reads them with readers of their own.
 */
const OLDER_EBOOK_TARGETS = new Set(['htmlz', 'txtz', 'pmlz', 'lrf', 'pdb', 'rb', 'snb', 'tcr']);

/**
 * A PDF's targets proven by the suites of their engines, with readers of their own: its emf, wmf
 * and dxf (Inkscape's import of one page, shapes read in vector-formats.test.ts) and its hOCR
 * (Tesseract's, parsed in ocr-formats.test.ts).
 */
const PDF_TARGETS_ELSEWHERE = new Set(['emf', 'wmf', 'dxf', 'hocr']);

/** Targets that are pictures of the document: no text to look for (zip: every page as a PNG, option each's default). */
const PICTURES = new Set(['png', 'jpg', 'tiff', 'webp', 'svg', 'eps', 'ps', 'zip']);

/** The download's extension where it is not the target's id (a PDF/A is a .pdf, reveal.js slides an .html page). */
const FILE_EXTENSIONS: Readonly<Record<string, string>> = {
  pdfa: 'pdf', beamer: 'tex', context: 'tex', revealjs: 'html', slidy: 'html', dzslides: 'html', jats: 'xml', tei: 'xml',
  commonmark: 'md', mdstrict: 'md', mdextra: 'md',
};

/** The `file` command's verdict for each target, an independent check of the type. */
const FILE_MIME: Readonly<Record<string, RegExp>> = {
  pdf: /^application\/pdf$/, pdfa: /^application\/pdf$/,
  docx: /wordprocessingml|zip/, xlsx: /spreadsheetml|zip/, pptx: /presentationml|zip/,
  odt: /opendocument\.text$/, ods: /opendocument\.spreadsheet$/, odp: /opendocument\.presentation$/,
  doc: /msword|CDFV2|ole/i, xls: /ms-excel|CDFV2|ole/i, ppt: /ms-powerpoint|CDFV2|ole/i,
  epub: /epub/, mobi: /mobipocket/, azw3: /mobipocket/, rtf: /rtf/,
  png: /^image\/png$/, jpg: /^image\/jpeg$/, tiff: /^image\/tiff$/, webp: /^image\/webp$/,
  svg: /svg/, eps: /postscript/, ps: /postscript/,
};

/**
 * The least share of a sample's words an output that carries text must hold. The samples are
 * short and plain, so every pair keeps them all today; 0.95 leaves room for one word of twenty
 * to come out differently (a reader that splits a word at a line end) without hiding a lost
 * sentence or table. A loss that is known and documented is named below, and only the words it
 * names are let go.
 */
const MIN_RECALL = 0.95;

/** Losses that are known and documented (README, known limitations): the pairs, and the words let go. */
const DOCUMENTED_LOSSES: ReadonlyArray<{ sources: ReadonlySet<string>; targets: ReadonlySet<string>; words: readonly string[] }> = [
  // LibreOffice's EPUB export leaves out a table's header row when the row is marked to repeat on
  // every page (as pandoc's docx and odt writers mark it, and Word's "Repeat as header row"):
  // docx and odt → epub lose the Markdown sample's table header ("kind count"), and so do the
  // ebooks calibre makes from that epub.
  { sources: new Set(['docx', 'odt']), targets: new Set(['epub', 'mobi', 'azw3', 'fb2']), words: ['kind', 'count'] },
];
/** The words a pair must keep: the sample's, less a documented loss. */
function wordsKept(from: string, to: string, words: readonly string[]): readonly string[] {
  const lost = DOCUMENTED_LOSSES.filter((loss) => loss.sources.has(from) && loss.targets.has(to)).flatMap((loss) => loss.words);
  return words.filter((word) => !lost.includes(word));
}

const reader = new DocumentReader();

/** The text and pages of an output, read by read_document.py; fails the test when it is not a valid `format`. */
async function readDocument(file: string, format: string): Promise<Reading> {
  try {
    return await reader.read(file, format);
  } catch (error) {
    assert.fail(`${path.basename(file)} is not a valid ${format}: ${error instanceof Error ? error.message.trim() : String(error)}`);
  }
}

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let samples: Record<string, Buffer>;

before(async () => {
  [server, samples] = await Promise.all([
    startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '3' }),
    documentSamples(),
  ]);
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  reader.close();
  await server?.stop();
});

const targetsOf = (id: string) => catalogue.find((f) => f.id === id)?.targets ?? [];

test('the catalogue lists the pairs the issue asks for', () => {
  const expect = (from: string, targets: string[]) => {
    for (const to of targets) assert.ok(targetsOf(from).includes(to), `${from} → ${to} missing from /api/formats`);
  };
  for (const from of ['doc', 'docx', 'odt', 'rtf', 'txt', 'html', 'wpd', 'fodt']) expect(from, ['pdf', 'docx', 'odt', 'rtf', 'txt', 'html', 'epub'].filter((t) => t !== from));
  for (const from of ['xls', 'xlsx', 'ods', 'csv', 'fods']) expect(from, ['pdf', 'xlsx', 'ods', 'csv', 'html'].filter((t) => t !== from));
  for (const from of ['ppt', 'pptx', 'odp', 'fodp']) expect(from, ['pdf', 'pptx', 'odp', 'png'].filter((t) => t !== from));
  for (const from of ['md', 'gfm', 'rst', 'org', 'textile', 'mediawiki', 'html', 'docx', 'odt', 'epub', 'latex', 'ipynb', 'docbook', 'opml', 'jira']) {
    expect(from, ['md', 'gfm', 'rst', 'org', 'html', 'docx', 'odt', 'epub', 'latex', 'txt', 'asciidoc'].filter((t) => t !== from));
  }
  expect('pdf', ['png', 'jpg', 'webp', 'txt', 'html', 'pdfa']);
  for (const from of ['epub', 'mobi', 'azw3', 'fb2']) expect(from, ['epub', 'mobi', 'azw3', 'fb2', 'docx', 'txt', 'pdf'].filter((t) => t !== from));
  for (const from of ['png', 'jpg', 'heic', 'webp', 'tiff']) expect(from, ['pdf']);
  expect('md', ['pdf']);
});

test('office packages are told apart by their content, wherever their [Content_Types].xml sits', async () => {
  // LibreOffice writes [Content_Types].xml as the last entry of a docx, xlsx or pptx (the sniffer
  // finds it through the archive's central directory); other producers write it first. An
  // OpenDocument file that also holds one stays OpenDocument: its mimetype entry, first, decides.
  const wordMain = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml';
  const contentTypes = strToU8(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="${wordMain}"/></Types>`);
  const document = strToU8(`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>${MARKER}</w:t></w:r></w:p></w:body></w:document>`);
  const cases: Array<[string, Uint8Array, string]> = [
    ['xlsx written by LibreOffice', samples.xlsx!, 'xlsx'],
    ['pptx written by LibreOffice', samples.pptx!, 'pptx'],
    ['docx written by pandoc', samples.docx!, 'docx'],
    ['docx, content types first', zipSync({ '[Content_Types].xml': contentTypes, 'word/document.xml': document }), 'docx'],
    ['docx, content types last', zipSync({ 'word/document.xml': document, '[Content_Types].xml': contentTypes }), 'docx'],
    ['odt holding OOXML content types', zipSync({ mimetype: [strToU8('application/vnd.oasis.opendocument.text'), { level: 0 }], 'content.xml': strToU8('<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"/>'), '[Content_Types].xml': contentTypes }), 'odt'],
  ];
  // Over 1 MiB, the sniffer reads the file in place rather than whole: a docx that LibreOffice
  // writes around a noise picture (stored, not compressible), through the service, which checks
  // that result by its content too.
  const odt = (await convert(server.url, handmadeDocx({ text: MARKER, picture: await noisePng(700, 700) }), 'picture.docx', 'odt')).bytes;
  const large = (await convert(server.url, odt, 'picture.odt', 'docx')).bytes;
  assert.ok(large.length > 1024 * 1024, `the docx is ${large.length} bytes`);
  cases.push(['large docx written by LibreOffice', large, 'docx']);
  for (const [name, bytes, expected] of cases) {
    const jobId = await submitOk(server.url, bytes, 'upload.zip', 'pdf');
    assert.equal((await progress(server.url, jobId)).body.source, expected, name);
  }
});

/**
 * How far a PDF's page count may be from the one its source declares. A docx's <Pages> is what
 * the program that saved it counted with its own fonts and layout: another renderer may break a
 * page one line sooner or later. Slides are pages one for one, and PDF/A keeps a PDF's pages.
 */
const PAGE_TOLERANCE: Readonly<Record<string, number>> = { docx: 1 };

test('every listed pair of a document source converts, checked by independent tools', { timeout: 60 * 60_000 }, async (t) => {
  /** `words`: what the output must hold (none for pictures); `pages`: what the source declares. */
  interface Pair { from: string; to: string; data: Buffer; words: readonly string[]; pages: number | undefined }
  const pairs: Pair[] = [];
  for (const [from, data] of Object.entries(samples)) {
    const words = sampleWords(from);
    const pages = declaredPages(from, data);
    for (const to of targetsOf(from).filter((target) => !OLDER_EBOOK_TARGETS.has(target) && !MORE_DATA_TARGETS.has(target) && !(from === 'pdf' && PDF_TARGETS_ELSEWHERE.has(target)))) pairs.push({ from, to, data, words: PICTURES.has(to) ? [] : wordsKept(from, to, words), pages });
  }
  for (const [from, text] of Object.entries(DATA_SAMPLES)) {
    for (const to of targetsOf(from).filter((target) => !DATA_FORMATS.has(target))) pairs.push({ from, to, data: Buffer.from(text), words: PICTURES.has(to) ? [] : wordsKept(from, to, DATA_WORDS), pages: undefined });
  }
  const images = catalogue.filter((f) => f.category === 'image' && f.targets.includes('pdf'));
  for (const image of images) {
    for (const to of ['pdf', 'pdfa'].filter((target) => image.targets.includes(target))) pairs.push({ from: image.id, to, data: await sampleImage(image.id), words: [], pages: 1 });
  }
  assert.ok(pairs.length > 300, `only ${pairs.length} pairs found`);
  assert.equal(declaredPages('pptx', samples.pptx!), 2, 'the presentation sample has two slides');
  t.diagnostic(`${pairs.length} pairs`);

  const failures: string[] = [];
  const partial: string[] = [];
  let next = 0;
  // Three jobs in flight, as the service runs three at once here.
  await Promise.all(Array.from({ length: 3 }, async () => {
    while (next < pairs.length) {
      const { from, to, data, words, pages } = pairs[next++]!;
      try {
        const { bytes, response } = await convert(server.url, data, `sample.${from}`, to);
        assert.match(response.headers.get('content-disposition') ?? '', new RegExp(`filename="?sample\\.${FILE_EXTENSIONS[to] ?? to}"?(;|$)`));
        const file = await writeTemp(bytes, `out.${to}`);
        const mime = FILE_MIME[to];
        if (mime) assert.match(await fileMimeOf(file), mime, `file(1) on ${from} → ${to}`);
        const content = await readDocument(file, to);
        if (words.length > 0) {
          const found = recall(words, content.text);
          if (found.recall < 1) partial.push(`${from} → ${to}: ${found.recall.toFixed(2)} (missing ${found.missing.join(' ')})`);
          assert.ok(found.recall >= MIN_RECALL, `${from} → ${to}: recall ${found.recall.toFixed(2)} < ${MIN_RECALL}, missing: ${found.missing.join(' ')}`);
        }
        if (pages !== undefined && content.pages !== null) {
          const tolerance = PAGE_TOLERANCE[from] ?? 0;
          assert.ok(Math.abs(content.pages - pages) <= tolerance, `${from} → ${to}: ${content.pages} pages, the source declares ${pages}`);
        }
      } catch (error) {
        failures.push(`${from} → ${to}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
      }
    }
  }));
  if (partial.length > 0) t.diagnostic(`pairs that lost words:\n${partial.join('\n')}`);
  assert.deepEqual(failures, [], `${failures.length} of ${pairs.length} pairs failed:\n${failures.join('\n')}`);
});

test('a PDF without a text layer fails to text and HTML, saying why and what to do', async () => {
  const pdf = scannedPdf();
  assert.equal(declaredPages('pdf', pdf), 1);
  await Promise.all(['txt', 'html'].map(async (target) => {
    const { final } = await waitForJob(server.url, await submitOk(server.url, pdf, 'scan.pdf', target), { timeoutMs: 120_000 });
    assert.equal(final.status, 'error', `scan.pdf → ${target} must not end as an empty file presented as done`);
    assert.equal(final.error?.code, 'conversion_failed');
    assert.match(final.error?.message ?? '', /no text layer \(it is scanned or made of images\): send ocr=true to read its pages \(OCR\), or convert it to an image format/);
  }));
  // The same file is a fine source of a picture.
  const { bytes } = await convert(server.url, pdf, 'scan.pdf', 'png');
  await readDocument(await writeTemp(bytes, 'scan.png'), 'png');
});

/** The chart of the charts test: its title, series name, categories and values must reach text targets. */
const CHART: ChartSample = { title: 'Herring catch by season', series: 'Tonnes', categories: ['Spring', 'Summer', 'Autumn'], values: [417, 523, 389] };

test('the data of a chart in a docx reaches the markup targets as a table', async () => {
  const docx = handmadeDocx({ text: `${MARKER} before the chart.`, chart: CHART });
  const chartWords = wordsOf(`${CHART.title} ${CHART.series} ${CHART.categories.join(' ')}`);
  await Promise.all(['md', 'mediawiki', 'asciidoc', 'jira', 'rst', 'org'].map(async (target) => {
    const { bytes } = await convert(server.url, docx, 'chart.docx', target);
    const { text } = await readDocument(await writeTemp(bytes, `chart.${target}`), target);
    assert.equal(recall([MARKER.toLowerCase(), ...chartWords], text).recall, 1, `${target}: the chart's title, series or categories are missing:\n${text}`);
    for (const value of CHART.values) assert.match(text, new RegExp(`\\b${value}\\b`), `${target}: the value ${value} is missing:\n${text}`);
    // The values sit in rows with their categories, in order.
    assert.ok(text.indexOf('Spring') < text.indexOf('417') && text.indexOf('417') < text.indexOf('Summer') && text.indexOf('523') < text.indexOf('Autumn'), `${target}: the table is out of order:\n${text}`);
  }));
  // docx → txt is LibreOffice's, whose text export leaves charts out (README, known limitations):
  // the document's text is there, the chart's figures are not. Should this change, the README must.
  const { bytes } = await convert(server.url, docx, 'chart.docx', 'txt');
  const { text } = await readDocument(await writeTemp(bytes, 'chart.txt'), 'txt');
  assert.ok(text.includes(MARKER));
  assert.ok(!text.includes(CHART.title) && !/\b417\b/.test(text), `docx → txt now carries the chart: update README's known limitations and this test:\n${text}`);
});
