// Documents, spreadsheets, presentations, markup, ebooks and PDF: every pair /api/formats lists
// for these sources is converted through the HTTP API from a sample the test made itself, and the
// output is read back with independent tools (test/helpers/read_document.py: zipfile and XML
// parsing for OOXML/ODF/EPUB, poppler and qpdf for PDF, Pillow for images, a MOBI reader): the
// right format, not empty, and the sample's word present wherever text survives.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { strToU8, zipSync } from 'fflate';
import { convert, fetchCatalogue, progress, submitOk, type CatalogueEntry } from './helpers/client.ts';
import { documentSamples, handmadeDocx, MARKER } from './helpers/documents.ts';
import { noisePng, sampleImage } from './helpers/fixtures.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { fileMime, writeTemp } from './helpers/tools.ts';


/** Data sources reach documents through a workbook: their data-to-data pairs are data-formats.test.ts's. */
const DATA_SAMPLES: Record<string, string> = {
  csv: `name,count\n${MARKER},2\ntrout,5\n`,
  tsv: `name\tcount\n${MARKER}\t2\ntrout\t5\n`,
  json: JSON.stringify([{ name: MARKER, count: 2 }, { name: 'trout', count: 5 }]),
  ndjson: `${JSON.stringify({ name: MARKER, count: 2 })}\n${JSON.stringify({ name: 'trout', count: 5 })}\n`,
  yaml: `- name: ${MARKER}\n  count: 2\n- name: trout\n  count: 5\n`,
  toml: `[[fish]]\nname = "${MARKER}"\ncount = 2\n\n[[fish]]\nname = "trout"\ncount = 5\n`,
  xml: `<?xml version="1.0"?>\n<fish><row><name>${MARKER}</name><count>2</count></row><row><name>trout</name><count>5</count></row></fish>\n`,
};
const DATA_FORMATS = new Set([...Object.keys(DATA_SAMPLES), 'xlsx', 'ods']);

/** Targets that are pictures of the document: no text to look for. */
const PICTURES = new Set(['png', 'jpg', 'tiff', 'webp', 'svg', 'eps', 'ps']);

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

function readDocument(file: string, format: string): string {
  const script = path.resolve('test/helpers/read_document.py');
  try {
    const output = execFileSync('/usr/bin/python3', [script, file, format], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
    return (JSON.parse(output) as { text: string }).text;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    assert.fail(`${path.basename(file)} is not a valid ${format}: ${stderr.trim()}`);
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

test('every listed pair of a document source converts, checked by independent tools', { timeout: 60 * 60_000 }, async (t) => {
  const pairs: Array<{ from: string; to: string; data: Buffer; text: boolean }> = [];
  for (const [from, data] of Object.entries(samples)) {
    for (const to of targetsOf(from)) pairs.push({ from, to, data, text: !PICTURES.has(to) });
  }
  for (const [from, text] of Object.entries(DATA_SAMPLES)) {
    for (const to of targetsOf(from).filter((target) => !DATA_FORMATS.has(target))) pairs.push({ from, to, data: Buffer.from(text), text: !PICTURES.has(to) });
  }
  const images = catalogue.filter((f) => f.category === 'image' && f.targets.includes('pdf'));
  for (const image of images) {
    for (const to of ['pdf', 'pdfa'].filter((target) => image.targets.includes(target))) pairs.push({ from: image.id, to, data: await sampleImage(image.id), text: false });
  }
  assert.ok(pairs.length > 300, `only ${pairs.length} pairs found`);
  t.diagnostic(`${pairs.length} pairs`);

  const failures: string[] = [];
  let next = 0;
  // Three jobs in flight, as the service runs three at once here.
  await Promise.all(Array.from({ length: 3 }, async () => {
    while (next < pairs.length) {
      const { from, to, data, text } = pairs[next++]!;
      try {
        const { bytes, response } = await convert(server.url, data, `sample.${from}`, to);
        assert.match(response.headers.get('content-disposition') ?? '', new RegExp(`filename="?sample\\.${to === 'pdfa' ? 'pdf' : to}"?(;|$)`));
        const file = await writeTemp(bytes, `out.${to}`);
        const mime = FILE_MIME[to];
        if (mime) assert.match(fileMime(file), mime, `file(1) on ${from} → ${to}`);
        const content = readDocument(file, to);
        if (text) assert.ok(content.toLowerCase().includes(MARKER.toLowerCase()), `${from} → ${to}: the sample's word is missing from the output`);
      } catch (error) {
        failures.push(`${from} → ${to}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
      }
    }
  }));
  assert.deepEqual(failures, [], `${failures.length} of ${pairs.length} pairs failed:\n${failures.join('\n')}`);
});
