// Data formats: every advertised pair among csv, tsv, json, ndjson, yaml, toml, xml and xlsx,
// from samples written by the test, each output read back by test/helpers/read_data.py (Python's
// standard library and PyYAML, not the engine's npm libraries) and compared record by record.
// Then the documented mapping: nested JSON to dotted columns, formula injection defused, broken
// input refused, XML entities never expanded or fetched.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import ExcelJS from 'exceljs';
import { convert, submitOk, waitForJob } from './helpers/client.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const FORMATS = ['csv', 'tsv', 'json', 'ndjson', 'yaml', 'toml', 'xml', 'xlsx', 'ods'];
const RECORDS = [
  { name: 'Ada', age: '36', city: 'London' },
  { name: 'Linus', age: '54', city: 'Helsinki' },
  { name: 'Zoë', age: '7', city: 'Córdoba, Spain' },
];

function readRecords(file: string, format: string): Array<Record<string, string>> {
  return JSON.parse(execFileSync('/usr/bin/python3', [path.resolve('test/helpers/read_data.py'), file, format], { encoding: 'utf8' })) as Array<Record<string, string>>;
}

async function samples(): Promise<Record<string, Buffer>> {
  const keys = Object.keys(RECORDS[0]!);
  const line = (sep: string, quote: (v: string) => string) => (r: Record<string, string>) => keys.map((k) => quote(r[k]!)).join(sep);
  const csvQuote = (v: string) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const book = new ExcelJS.Workbook();
  const sheet = book.addWorksheet('People');
  sheet.addRow(keys);
  for (const record of RECORDS) sheet.addRow(keys.map((k) => record[k as keyof typeof record]));
  const tomlRecord = (r: Record<string, string>) => `[[people]]\n${keys.map((k) => `${k} = ${JSON.stringify(r[k])}`).join('\n')}\n`;
  const xmlRecord = (r: Record<string, string>) => `  <person>${keys.map((k) => `<${k}>${r[k]}</${k}>`).join('')}</person>`;
  return {
    csv: Buffer.from(`${keys.join(',')}\n${RECORDS.map(line(',', csvQuote)).join('\n')}\n`),
    tsv: Buffer.from(`${keys.join('\t')}\n${RECORDS.map(line('\t', (v) => v)).join('\n')}\n`),
    json: Buffer.from(JSON.stringify(RECORDS, null, 2)),
    ndjson: Buffer.from(RECORDS.map((r) => JSON.stringify(r)).join('\n')),
    yaml: Buffer.from(RECORDS.map((r) => `- ${keys.map((k, i) => `${i ? '  ' : ''}${k}: "${r[k as keyof typeof r]}"`).join('\n')}`).join('\n')),
    toml: Buffer.from(RECORDS.map(tomlRecord).join('\n')),
    xml: Buffer.from(`<?xml version="1.0"?>\n<people>\n${RECORDS.map(xmlRecord).join('\n')}\n</people>\n`),
    xlsx: Buffer.from(await book.xlsx.writeBuffer()),
    ods: odsSample(keys),
  };
}

/** An ODS written with Python's zipfile, with the repeated empty cells and rows real sheets have. */
function odsSample(keys: string[]): Buffer {
  const cell = (v: string) => `<table:table-cell office:value-type="string"><text:p>${v}</text:p></table:table-cell>`;
  const row = (values: string[]) => `<table:table-row>${values.map(cell).join('')}<table:table-cell table:number-columns-repeated="1020"/></table:table-row>`;
  const content = '<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    + 'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
    + `<office:body><office:spreadsheet><table:table table:name="People">${row(keys)}${RECORDS.map((r) => row(keys.map((k) => r[k as keyof typeof r]))).join('')}`
    + '<table:table-row table:number-rows-repeated="1048570"><table:table-cell table:number-columns-repeated="1024"/></table:table-row>'
    + '</table:table></office:spreadsheet></office:body></office:document-content>';
  const script = 'import sys, zipfile\nz = zipfile.ZipFile(sys.stdout.buffer, "w")\nz.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")\nz.writestr("content.xml", sys.stdin.read(), zipfile.ZIP_DEFLATED)\nz.close()';
  return execFileSync('/usr/bin/python3', ['-c', script], { input: content });
}

let server: RunningServer;
let sample: Record<string, Buffer>;
before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  sample = await samples();
  for (const format of FORMATS) {
    assert.deepEqual(readRecords(await writeTemp(sample[format]!, `sample.${format}`), format), RECORDS, `the ${format} sample itself`);
  }
});
after(async () => { await server.stop(); });

describe('every advertised data pair keeps every record', { concurrency: 4 }, () => {
  for (const from of FORMATS) {
    for (const to of FORMATS.filter((t) => t !== from)) {
      test(`${from} → ${to}`, async () => {
        const { bytes } = await convert(server.url, sample[from]!, `people.${from}`, to);
        assert.deepEqual(readRecords(await writeTemp(bytes, `out.${to}`), to), RECORDS);
      });
    }
  }
});

test('nested JSON becomes dotted columns in a table', async () => {
  const nested = [{ id: 1, address: { city: 'Paris', zip: '75001' }, tags: ['a', 'b'] }, { id: 2, address: { city: 'Rome' } }];
  const { bytes } = await convert(server.url, Buffer.from(JSON.stringify(nested)), 'nested.json', 'csv');
  assert.deepEqual(readRecords(await writeTemp(bytes, 'out.csv'), 'csv'), [
    { id: '1', 'address.city': 'Paris', 'address.zip': '75001', 'tags.0': 'a', 'tags.1': 'b' },
    { id: '2', 'address.city': 'Rome', 'address.zip': '', 'tags.0': '', 'tags.1': '' },
  ]);
});

test('cells that a spreadsheet would run as formulas are defused in csv and never formulas in xlsx', async () => {
  const risky = [{ cell: '=HYPERLINK("http://evil.example","x")' }, { cell: '+1+2' }, { cell: '@SUM(A1)' }, { cell: '-5' }];
  const { bytes } = await convert(server.url, Buffer.from(JSON.stringify(risky)), 'risky.json', 'csv');
  const cells = readRecords(await writeTemp(bytes, 'out.csv'), 'csv').map((r) => r.cell);
  assert.deepEqual(cells, ['\'=HYPERLINK("http://evil.example","x")', '\'+1+2', '\'@SUM(A1)', '-5']);
  // read_data.py refuses a sheet with any <f> (formula) element.
  const xlsx = await convert(server.url, Buffer.from(JSON.stringify(risky)), 'risky.json', 'xlsx');
  assert.equal(readRecords(await writeTemp(xlsx.bytes, 'out.xlsx'), 'xlsx')[0]!.cell, risky[0]!.cell);
});

test('broken data ends in corrupt_input with the parser\'s reason', async () => {
  for (const [name, text] of [['bad.json', '{"a": [1, 2'], ['bad.yaml', 'a: [1, 2\nb: {'], ['bad.toml', 'a = = 1'], ['bad.xml', '<a><b></a>']] as const) {
    const jobId = await submitOk(server.url, Buffer.from(text), name, 'csv');
    const { final } = await waitForJob(server.url, jobId);
    assert.equal(final.error?.code, 'corrupt_input', `${name}: ${JSON.stringify(final.error)}`);
    assert.match(final.error!.message, /not valid/);
  }
});

test('XML entities are neither expanded nor fetched', async () => {
  const xxe = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY leak SYSTEM "file:///etc/passwd"><!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><r><x>&leak;</x><y>&b;&b;&b;&b;</y></r>';
  const jobId = await submitOk(server.url, Buffer.from(xxe), 'evil.xml', 'json');
  const { final } = await waitForJob(server.url, jobId);
  if (final.status === 'done') {
    const text = await (await fetch(`${server.url}${final.download_url}`)).text();
    assert.doesNotMatch(text, /root:/);
    assert.doesNotMatch(text, /a{40}/);
  } else {
    assert.equal(final.error?.code, 'corrupt_input');
  }
});

test('a 25 MB CSV becomes xlsx and back with every row (bounded memory, streaming workbook)', async () => {
  const lines = ['id,name,email,amount'];
  let size = lines[0]!.length + 1;
  for (let i = 1; size < 24 * 1024 * 1024; i++) {
    const line = `${i},Person ${i},person${i}@example.com,${(i * 7.31) % 1000}`;
    lines.push(line);
    size += line.length + 1;
  }
  const csv = Buffer.from(`${lines.join('\n')}\n`);
  const xlsx = await convert(server.url, csv, 'big.csv', 'xlsx');
  const back = await convert(server.url, xlsx.bytes, 'big.xlsx', 'csv');
  const backLines = back.bytes.toString('utf8').trimEnd().split('\n');
  assert.equal(backLines.length, lines.length);
  assert.equal(backLines[1], lines[1]);
  assert.equal(backLines.at(-1), lines.at(-1));
});
