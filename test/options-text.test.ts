// Options of the text families (#29): `sheet` and `delimiter` for workbooks and tables, `indent`
// for json, yaml and xml, `toc` through pandoc, and the PDF options of ebooks through calibre.
// Every job goes through HTTP with the real engines; each output is checked with a tool the
// engine did not use: Python's csv, json and yaml modules, zipfile for docx, odt and epub, and
// poppler's pdfinfo/pdftotext for calibre's PDFs. Hostile values end as a clean 422 (or, for a
// sheet the workbook lacks, known only once the job reads the file, a job error invalid_option).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import ExcelJS from 'exceljs';
import { strToU8, zipSync } from 'fflate';
import { download, expectError, waitForJob, type ProgressRecord } from './helpers/client.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const run = promisify(execFile);
const PYTHON = '/usr/bin/python3';

let server: RunningServer;
let base: string;

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  base = server.url;
});

after(async () => {
  await server.stop();
});

function form(data: Uint8Array, filename: string, target: string, options: Record<string, string>): FormData {
  const body = new FormData();
  body.append('file', new Blob([data]), filename);
  body.append('target', target);
  for (const [name, value] of Object.entries(options)) body.append(name, value);
  return body;
}

/** Submits with options; resolves with the final progress record and, when done, the result. */
async function convertWith(data: Uint8Array, filename: string, target: string, options: Record<string, string>, timeoutMs = 120_000): Promise<{ record: ProgressRecord; bytes: Buffer }> {
  const response = await fetch(`${base}/api/convert`, { method: 'POST', body: form(data, filename, target, options) });
  const answer = await response.json() as { ok: boolean; job_id: string };
  assert.equal(response.status, 200, `submission refused: ${JSON.stringify(answer)}`);
  const { final } = await waitForJob(base, answer.job_id, { timeoutMs });
  if (final.status !== 'done') return { record: final, bytes: Buffer.alloc(0) };
  const { bytes } = await download(base, final.download_url!);
  return { record: final, bytes };
}

async function converted(data: Uint8Array, filename: string, target: string, options: Record<string, string>, timeoutMs?: number): Promise<Buffer> {
  const { record, bytes } = await convertWith(data, filename, target, options, timeoutMs);
  assert.equal(record.status, 'done', `${filename} → ${target} ${JSON.stringify(options)} failed: ${JSON.stringify(record.error)}`);
  return bytes;
}

/** Runs a Python snippet over a file (sys.argv[1]) and parses what it prints as JSON. */
async function python<T>(code: string, bytes: Uint8Array, name: string, ...args: string[]): Promise<T> {
  const file = await writeTemp(bytes, name);
  const { stdout } = await run(PYTHON, ['-c', code, file, ...args], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as T;
}

/** The rows of a CSV file as Python's csv module reads them with the given separator. */
const csvRows = (bytes: Uint8Array, delimiter: string) => python<string[][]>(
  'import csv, json, sys\nwith open(sys.argv[1], newline="", encoding="utf-8") as f: print(json.dumps(list(csv.reader(f, delimiter=sys.argv[2]))))',
  bytes, 'table.csv', delimiter,
);

// ---------------------------------------------------------------------------------------------
// Workbooks: three sheets with different cells, and names with a space and mixed case.

const SHEETS: Record<string, Array<Array<string | number>>> = {
  Summary: [['region', 'total'], ['north', 120], ['south', 80]],
  'Q2 Sales': [['product', 'units', 'note'], ['kettle', 14, 'blue; large'], ['toaster', 9, 'red, small']],
  Notes: [['author', 'text'], ['Zoë', 'checked twice']],
};
const SHEET_NAMES = Object.keys(SHEETS);
const PEOPLE_CSV = Buffer.from('name,city\n"Ada, Countess",London\nZoë,Córdoba\n');
/** A cell as text, as CSV holds it. */
const asText = (rows: Array<Array<string | number>>) => rows.map((row) => row.map(String));

async function workbookXlsx(): Promise<Buffer> {
  const book = new ExcelJS.Workbook();
  for (const [name, rows] of Object.entries(SHEETS)) {
    const sheet = book.addWorksheet(name);
    for (const row of rows) sheet.addRow(row);
  }
  return Buffer.from(await book.xlsx.writeBuffer());
}

/** The same workbook as OpenDocument, written by hand (the data engine reads it, LibreOffice does not take part). */
function workbookOds(): Buffer {
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
  const cell = (value: string | number) => typeof value === 'number'
    ? `<table:table-cell office:value-type="float" office:value="${value}"><text:p>${value}</text:p></table:table-cell>`
    : `<table:table-cell office:value-type="string"><text:p>${escape(value)}</text:p></table:table-cell>`;
  const tables = Object.entries(SHEETS).map(([name, rows]) => `<table:table table:name="${escape(name)}">${rows.map((row) => `<table:table-row>${row.map(cell).join('')}</table:table-row>`).join('')}</table:table>`).join('');
  const content = '<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3">'
    + `<office:body><office:spreadsheet>${tables}</office:spreadsheet></office:body></office:document-content>`;
  const manifest = '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>';
  return Buffer.from(zipSync({
    mimetype: [strToU8('application/vnd.oasis.opendocument.spreadsheet'), { level: 0 }],
    'META-INF/manifest.xml': strToU8(manifest),
    'content.xml': strToU8(content),
  }));
}

describe('sheet and delimiter', () => {
  test('a workbook becomes the table of the sheet named or numbered, in the delimiter asked for', async () => {
    const xlsx = await workbookXlsx();
    const ods = workbookOds();
    const [first, named, folded, numbered, semicolon, fromOds, tsv] = await Promise.all([
      converted(xlsx, 'book.xlsx', 'csv', {}),
      converted(xlsx, 'book.xlsx', 'csv', { sheet: 'Q2 Sales' }),
      converted(xlsx, 'book.xlsx', 'csv', { sheet: 'q2 sales' }),
      converted(xlsx, 'book.xlsx', 'csv', { sheet: '3' }),
      converted(xlsx, 'book.xlsx', 'csv', { sheet: 'Q2 Sales', delimiter: ';' }),
      converted(ods, 'book.ods', 'csv', { sheet: '2', delimiter: '|' }),
      converted(xlsx, 'book.xlsx', 'tsv', { sheet: 'Notes' }),
    ]);
    // Without options: the first sheet, as before.
    assert.deepEqual(await csvRows(first, ','), asText(SHEETS.Summary!));
    assert.deepEqual(await csvRows(named, ','), asText(SHEETS['Q2 Sales']!));
    assert.deepEqual(await csvRows(folded, ','), asText(SHEETS['Q2 Sales']!), 'sheet names are matched regardless of case');
    assert.deepEqual(await csvRows(numbered, ','), asText(SHEETS.Notes!), 'sheet=3 is the third sheet');
    // The separator is really ";": read with ";", the cells come back whole, the comma inside a
    // value is plain text and the semicolon inside one is quoted.
    assert.deepEqual(await csvRows(semicolon, ';'), asText(SHEETS['Q2 Sales']!));
    assert.notDeepEqual(await csvRows(semicolon, ','), asText(SHEETS['Q2 Sales']!), 'read with commas, the semicolon file does not give the cells');
    assert.match(semicolon.toString('utf8'), /^product;units;note\r?\n/);
    assert.deepEqual(await csvRows(fromOds, '|'), asText(SHEETS['Q2 Sales']!), 'an ods workbook: the second sheet, "|"-separated');
    assert.deepEqual(tsv.toString('utf8').trim().split('\n').map((line) => line.split('\t')), asText(SHEETS.Notes!));
  });

  test('a sheet the workbook does not have ends the job with invalid_option naming its sheets', async () => {
    const xlsx = await workbookXlsx();
    const results = await Promise.all([
      convertWith(xlsx, 'book.xlsx', 'csv', { sheet: '999' }),
      convertWith(xlsx, 'book.xlsx', 'json', { sheet: 'Q3 Sales' }),
      convertWith(workbookOds(), 'book.ods', 'csv', { sheet: '0' }),
    ]);
    for (const { record } of results) {
      assert.equal(record.status, 'error');
      assert.equal(record.error?.code, 'invalid_option');
      for (const name of SHEET_NAMES) assert.ok(record.error!.message.includes(`"${name}"`), `the message names sheet ${name}: ${record.error!.message}`);
    }
  });

  test('an xls workbook (LibreOffice, then the data engine) takes sheet and delimiter too', async () => {
    const xls = await converted(await workbookXlsx(), 'book.xlsx', 'xls', {});
    const route = await (await fetch(`${base}/api/formats/xls/csv`)).json() as { options: Array<{ name: string }> };
    // The pair's own route is LibreOffice's; a sheet moves it through xlsx to the data engine, which
    // then also takes a delimiter given with it (a delimiter alone does not move it: planner.ts).
    assert.ok(route.options.some((o) => o.name === 'sheet'));
    const csv = await converted(xls, 'book.xls', 'csv', { sheet: 'Q2 Sales', delimiter: ';' });
    assert.deepEqual(await csvRows(csv, ';'), asText(SHEETS['Q2 Sales']!));
  });

  test('csv → csv changes the separator', async () => {
    const { record, bytes } = await convertWith(PEOPLE_CSV, 'people.csv', 'csv', { delimiter: '~' });
    assert.equal(record.status, 'done');
    assert.deepEqual(record.options, { delimiter: '~' }, 'the options in force are echoed');
    assert.deepEqual(await csvRows(bytes, '~'), [['name', 'city'], ['Ada, Countess', 'London'], ['Zoë', 'Córdoba']]);
  });

  // An output option counts only where the last step writes it, an input option not after a step
  // that makes its subject anew (planner.ts): csv → json is not sent through a one-sheet xlsx
  // for a sheet, nor json → tsv through a ";" csv that the tsv step would misread.
  test('options that only an intermediate step would take are ignored', async () => {
    const [sheet, delimiter] = await Promise.all([
      convertWith(PEOPLE_CSV, 'people.csv', 'json', { sheet: '2' }),
      convertWith(Buffer.from(JSON.stringify([{ a: 'x;y', b: 1 }])), 'rows.json', 'tsv', { delimiter: ';' }),
    ]);
    assert.equal(sheet.record.status, 'done');
    assert.deepEqual(sheet.record.ignored_options, ['sheet']);
    assert.equal(delimiter.record.status, 'done');
    assert.deepEqual(delimiter.record.ignored_options, ['delimiter']);
    assert.equal(delimiter.bytes.toString('utf8'), 'a\tb\nx;y\t1\n');
  });

  test('hostile values are refused with 422 invalid_option', async () => {
    const xlsx = await workbookXlsx();
    const cases: Array<[string, Record<string, string>, string]> = [
      ['csv', { sheet: 'Sum\u0000mary' }, 'sheet'],
      ['csv', { sheet: 'Summary\nNotes' }, 'sheet'],
      ['csv', { sheet: 'x'.repeat(101) }, 'sheet'],
      ['csv', { delimiter: ',,' }, 'delimiter'],
      ['csv', { delimiter: 'a' }, 'delimiter'],
      ['csv', { delimiter: '\t' }, 'delimiter'],
      ['json', { indent: '-1' }, 'indent'],
      ['json', { indent: '99' }, 'indent'],
      ['json', { indent: '2.5' }, 'indent'],
      ['yaml', { indent: '0' }, 'indent'],
    ];
    for (const [target, options, option] of cases) {
      const response = await fetch(`${base}/api/convert`, { method: 'POST', body: form(xlsx, 'book.xlsx', target, options) });
      const body = await expectError(response, 422, 'invalid_option');
      assert.equal(body.error.option, option, JSON.stringify(options));
    }
  });
});

// ---------------------------------------------------------------------------------------------
// indent

const TREE = { shop: { name: 'Quokka Tools', open: true, items: [{ sku: 'k-1', price: 12.5 }, { sku: 't-2', price: 30 }] } };

/** The indentation (in spaces) of the first indented line of a text. */
function firstIndent(text: string): number {
  const line = text.split('\n').find((l) => /^ +\S/.test(l));
  return line === undefined ? 0 : line.length - line.trimStart().length;
}

describe('indent', () => {
  test('json, yaml and xml outputs are indented as asked, or compact with 0', async () => {
    const json = Buffer.from(JSON.stringify(TREE));
    const [byDefault, four, compact, yaml4, xml0, xml3, xlsxJson] = await Promise.all([
      converted(json, 'shop.json', 'yaml', {}).then((yaml) => converted(yaml, 'shop.yaml', 'json', {})),
      converted(json, 'shop.json', 'json', { indent: '4' }),
      converted(json, 'shop.json', 'json', { indent: '0' }),
      converted(json, 'shop.json', 'yaml', { indent: '4' }),
      converted(json, 'shop.json', 'xml', { indent: '0' }),
      converted(json, 'shop.json', 'xml', { indent: '3' }),
      workbookXlsx().then((xlsx) => converted(xlsx, 'book.xlsx', 'json', { sheet: 'Summary', indent: '1' })),
    ]);
    // Python's json reads each the same tree; the text's shape is what indent changes.
    const parse = (bytes: Uint8Array) => python<unknown>('import json, sys\nprint(json.dumps(json.load(open(sys.argv[1], encoding="utf-8"))))', bytes, 'tree.json');
    for (const bytes of [byDefault, four, compact]) assert.deepEqual(await parse(bytes), TREE);
    assert.equal(firstIndent(byDefault.toString('utf8')), 2, 'the default indentation stays 2 spaces');
    assert.equal(firstIndent(four.toString('utf8')), 4);
    assert.equal(compact.toString('utf8').trimEnd().split('\n').length, 1, 'indent=0: one line');
    assert.deepEqual(await python<unknown>('import json, sys, yaml\nprint(json.dumps(yaml.safe_load(open(sys.argv[1], encoding="utf-8"))))', yaml4, 'tree.yaml'), TREE);
    assert.equal(firstIndent(yaml4.toString('utf8')), 4);
    // XML: the same elements (ElementTree), on one line after the declaration with 0, 3 spaces a level with 3.
    const xmlTree = (bytes: Uint8Array) => python<unknown>('import json, sys, xml.etree.ElementTree as ET\nr = ET.parse(sys.argv[1]).getroot()\nprint(json.dumps([(e.tag, (e.text or "").strip()) for e in r.iter()]))', bytes, 'tree.xml');
    assert.deepEqual(await xmlTree(xml0), await xmlTree(xml3));
    assert.equal(xml0.toString('utf8').trimEnd().split('\n').length, 2, 'indent=0: the declaration, then the document on one line');
    assert.equal(firstIndent(xml3.toString('utf8')), 3);
    assert.equal(firstIndent(xlsxJson.toString('utf8')), 1);
    assert.deepEqual(JSON.parse(xlsxJson.toString('utf8')), [{ region: 'north', total: 120 }, { region: 'south', total: 80 }]);
  });

  test('discovery lists indent with each format\'s bounds', async () => {
    const describe = async (pair: string) => (await (await fetch(`${base}/api/formats/${pair}`)).json() as { options: Array<{ name: string; minimum?: number; maximum?: number; default?: unknown }> }).options;
    const json = (await describe('yaml/json')).find((o) => o.name === 'indent');
    const yaml = (await describe('json/yaml')).find((o) => o.name === 'indent');
    assert.deepEqual([json?.minimum, json?.maximum, json?.default], [0, 8, 2]);
    assert.deepEqual([yaml?.minimum, yaml?.maximum, yaml?.default], [1, 8, 2]);
  });

  test('TOML takes no indent', async () => {
    const options = (await (await fetch(`${base}/api/formats/json/toml`)).json() as { options: Array<{ name: string }> }).options;
    assert.ok(!options.some((o) => o.name === 'indent'));
  });
});

// ---------------------------------------------------------------------------------------------
// toc through pandoc

const MARKDOWN = Buffer.from([
  '---', 'title: Quokka field guide', '---', '',
  '# Habitat', '', 'Quokkas live on Rottnest Island.', '',
  '## Burrows', '', 'They shelter in dense scrub.', '',
  '# Diet', '', 'Grasses, leaves and stems.', '',
].join('\n'));

/** Reads parts of a zip (docx, odt, epub) with Python's zipfile. */
const zipPart = (bytes: Uint8Array, name: string, part: string) => python<string>('import json, sys, zipfile\nprint(json.dumps(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode("utf-8")))', bytes, name, part);

describe('toc', () => {
  test('html, docx, odt, epub, latex, rst and md get a table of contents with toc=true, none by default', async () => {
    const targets = ['html', 'docx', 'odt', 'epub', 'latex', 'rst', 'gfm'];
    const [withToc, without] = await Promise.all([
      Promise.all(targets.map((to) => converted(MARKDOWN, 'guide.md', to, { toc: 'true' }))),
      Promise.all(targets.map((to) => converted(MARKDOWN, 'guide.md', to, {}))),
    ]);
    const checks: Record<string, (bytes: Buffer) => Promise<boolean>> = {
      // A nav of links to each heading's anchor.
      html: async (bytes) => /<nav[^>]*id="TOC"[\s\S]*href="#habitat"[\s\S]*href="#burrows"[\s\S]*href="#diet"[\s\S]*<\/nav>/.test(bytes.toString('utf8')),
      // A TOC field over heading levels 1-3, which Word fills in on opening.
      docx: async (bytes) => /TOC \\o &quot;1-3&quot;|TOC \\o "1-3"/.test(await zipPart(bytes, 'guide.docx', 'word/document.xml')),
      odt: async (bytes) => /<text:table-of-content\b/.test(await zipPart(bytes, 'guide.odt', 'content.xml')),
      // The navigation document is in the reading order (the spine), not only in the manifest.
      epub: async (bytes) => /<itemref idref="nav"/.test(await zipPart(bytes, 'guide.epub', 'EPUB/content.opf')),
      latex: async (bytes) => bytes.toString('utf8').includes('\\tableofcontents'),
      rst: async (bytes) => /^\.\. contents::/m.test(bytes.toString('utf8')),
      gfm: async (bytes) => /\[Habitat\]\(#habitat\)[\s\S]*\[Burrows\]\(#burrows\)[\s\S]*\[Diet\]\(#diet\)/.test(bytes.toString('utf8')),
    };
    for (const [index, to] of targets.entries()) {
      assert.equal(await checks[to]!(withToc[index]!), true, `${to}: a table of contents with toc=true`);
      assert.equal(await checks[to]!(without[index]!), false, `${to}: no table of contents by default`);
    }
    // The title is kept where the table of contents makes the document standalone.
    for (const to of ['rst', 'gfm']) assert.ok(withToc[targets.indexOf(to)]!.toString('utf8').includes('Quokka field guide'), `${to} keeps the title`);
    assert.equal((withToc[targets.indexOf('gfm')]!.toString('utf8').match(/Quokka field guide/g) ?? []).length, 1, 'the title once, not twice');
  });

  test('toc=maybe is refused', async () => {
    const response = await fetch(`${base}/api/convert`, { method: 'POST', body: form(MARKDOWN, 'guide.md', 'html', { toc: 'maybe' }) });
    assert.equal((await expectError(response, 422, 'invalid_option')).error.option, 'toc');
  });

  // Today md → org with toc goes md → docx (toc) → org: two pandoc runs, and the toc is lost.
  test('toc on a target without one is ignored', async () => {
    const { record } = await convertWith(MARKDOWN, 'guide.md', 'org', { toc: 'true' });
    assert.equal(record.status, 'done');
    assert.deepEqual(record.ignored_options, ['toc']);
  });
});

// ---------------------------------------------------------------------------------------------
// Ebooks to PDF through calibre

/** A book long enough to fill several pages, with three chapters. */
const BOOK = Buffer.from(['---', 'title: The quokka year', '---', '', ...['Spring', 'Summer', 'Autumn'].flatMap((season) => [
  `# ${season} chapter`, '', ...Array.from({ length: 12 }, (_, i) => `In ${season.toLowerCase()} the quokkas of paragraph ${i + 1} forage among the low shrubs near the lakes, resting in the shade at noon and moving again at dusk.`).join('\n\n').split('\n'), '',
])].join('\n'));

/** pdfinfo's page count and page size in points. */
async function pdfFacts(bytes: Uint8Array): Promise<{ pages: number; width: number; height: number }> {
  const file = await writeTemp(bytes, 'book.pdf');
  const { stdout } = await run('pdfinfo', [file]);
  const size = /Page size:\s+([\d.]+) x ([\d.]+) pts/.exec(stdout)!;
  return { pages: Number(/Pages:\s+(\d+)/.exec(stdout)![1]), width: Math.round(Number(size[1])), height: Math.round(Number(size[2])) };
}

async function pdfText(bytes: Uint8Array, page?: number): Promise<string> {
  const file = await writeTemp(bytes, 'book.pdf');
  const range = page === undefined ? [] : ['-f', String(page), '-l', String(page)];
  return (await run('pdftotext', ['-layout', ...range, file, '-'])).stdout;
}

/** Points: ISO A5 is 148 × 210 mm, US letter 8.5 × 11 in. */
const A5 = { width: 420, height: 595 };
const LETTER = { width: 612, height: 792 };
/** A 24 pt body instead of calibre's ~12 pt takes at least half as many pages again. */
const LARGE_TYPE_PAGE_RATIO = 1.5;

describe('calibre PDF options', () => {
  test('toc, page_numbers, paper_size and base_font_size shape the PDF', { timeout: 600_000 }, async () => {
    const epub = await converted(BOOK, 'book.md', 'epub', {});
    const [plain, printed, large] = await Promise.all([
      converted(epub, 'book.epub', 'pdf', {}, 300_000),
      converted(epub, 'book.epub', 'pdf', { toc: 'true', page_numbers: 'true', paper_size: 'a5' }, 300_000),
      converted(epub, 'book.epub', 'pdf', { base_font_size: '24' }, 300_000),
    ]);
    const [plainFacts, printedFacts, largeFacts] = await Promise.all([pdfFacts(plain), pdfFacts(printed), pdfFacts(large)]);
    assert.deepEqual({ width: plainFacts.width, height: plainFacts.height }, LETTER, 'calibre\'s default paper, as before');
    assert.deepEqual({ width: printedFacts.width, height: printedFacts.height }, A5);
    assert.deepEqual({ width: largeFacts.width, height: largeFacts.height }, LETTER);
    assert.ok(largeFacts.pages >= plainFacts.pages * LARGE_TYPE_PAGE_RATIO, `24 pt type: ${largeFacts.pages} pages against ${plainFacts.pages}`);

    // The table of contents: its title and the chapters on the last page, none without the option.
    assert.doesNotMatch(await pdfText(plain), /Table of Contents/i);
    const last = await pdfText(printed, printedFacts.pages);
    assert.match(last, /Table of Contents/i);
    for (const season of ['Spring', 'Summer', 'Autumn']) assert.match(last, new RegExp(`${season} chapter`));
    // Page numbers: page 3 of the printed PDF ends with its number; the plain one's page 3 does not.
    const lastLine = (text: string) => text.trim().split('\n').at(-1)!.trim();
    assert.equal(lastLine(await pdfText(printed, 3)), '3');
    assert.notEqual(lastLine(await pdfText(plain, 3)), '3');
  });

  test('paper_size outside calibre\'s list and base_font_size out of bounds are refused', async () => {
    const fake = Buffer.from('<?xml version="1.0"?><FictionBook xmlns="http://www.gribuser.ru/xml/fictionbook/2.0"><body><section><p>x</p></section></body></FictionBook>'); // never converted: the options are refused first
    for (const [options, option] of [[{ paper_size: 'a7' }, 'paper_size'], [{ base_font_size: '1000' }, 'base_font_size'], [{ page_numbers: '--yes' }, 'page_numbers']] as const) {
      const response = await fetch(`${base}/api/convert`, { method: 'POST', body: form(fake, 'book.fb2', 'pdf', options) });
      assert.equal((await expectError(response, 422, 'invalid_option')).error.option, option);
    }
  });
});
