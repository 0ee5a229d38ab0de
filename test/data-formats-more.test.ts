// The tree formats added to the data engine (plist, json5, ini, properties, msgpack, cbor): every
// advertised pair between them and the first nine data formats, each output read back by
// test/helpers/read_data.py (plistlib, configparser, python3-msgpack, python3-cbor2, and its own
// small .properties and JSON5 readers; never the engine's npm libraries) and compared record by
// record with the source, then converted back to the source's format, which must give the
// source's records again. Values are compared with their types where every format on the way has
// types, as text where one of them (csv, tsv, xml, ini, properties) holds text only.
//
// Then what the sniffer decides (plist and self-described CBOR by content, the others by name),
// a binary plist read, and the hostile classes: nesting bombs in msgpack, CBOR and plist, a
// binary plist whose shared references expand exponentially or loop, a 4 GB length declared in a
// tiny msgpack file, a plist declaring external and recursive entities.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import ExcelJS from 'exceljs';
import { convert, submitOk, waitForJob } from './helpers/client.ts';
import { readData } from './helpers/data-reader.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const OLD = ['csv', 'tsv', 'json', 'ndjson', 'yaml', 'toml', 'xml', 'xlsx', 'ods'];
const NEW = ['plist', 'json5', 'ini', 'properties', 'msgpack', 'cbor'];
const TYPED = new Set(['json', 'ndjson', 'yaml', 'toml', 'xlsx', 'ods', 'plist', 'json5', 'msgpack', 'cbor']);

type Value = string | number | boolean;
type Records = Array<Record<string, Value>>;

/** The sample of data-formats.test.ts: quotes, a comma, non-ASCII letters, integers, fractions, booleans, "007" as text. */
const RECORDS: Records = [
  { name: 'Ada "the Countess"', age: 36, score: 2.5, member: true, zip: '007', city: 'London' },
  { name: 'Linus', age: 54, score: -0.125, member: false, zip: '00100', city: 'Helsinki' },
  { name: 'Zoë', age: 7, score: 1000000, member: true, zip: '14001', city: 'Córdoba, Spain' },
];
const KEYS = Object.keys(RECORDS[0]!);
const asText = (records: Records): Records => records.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, String(v)])));

const readTyped = async (file: string, format: string) => await readData(file, format, { typed: true }) as Records;

async function assertHoldsSample(bytes: Buffer, format: string, route: string[]): Promise<void> {
  const found = await readTyped(await writeTemp(bytes, `out.${format}`), format);
  if (route.every((f) => TYPED.has(f))) assert.deepEqual(found, RECORDS, `${route.join(' → ')}: values and their types`);
  else assert.deepEqual(asText(found), asText(RECORDS), `${route.join(' → ')}: values as text`);
}

/**
 * The sample in every format. The new formats' samples are written as people write them (JSON5
 * with comments, unquoted keys and trailing commas; .properties with escapes) or by Python's own
 * libraries (plistlib, msgpack, cbor2); the old ones as data-formats.test.ts writes them.
 */
async function samples(): Promise<Record<string, Buffer>> {
  const literal = (v: Value) => JSON.stringify(v);
  const csvQuote = (v: string) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const escapeXml = (v: string) => v.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const book = new ExcelJS.Workbook();
  const sheet = book.addWorksheet('People');
  sheet.addRow(KEYS);
  for (const record of RECORDS) sheet.addRow(KEYS.map((k) => record[k]));
  const ods = await convert(server.url, Buffer.from(JSON.stringify(RECORDS)), 'people.json', 'ods');
  const binary = JSON.parse(execFileSync('/usr/bin/python3', ['-c', [
    'import base64, json, plistlib, sys, msgpack, cbor2',
    'records = json.loads(sys.argv[1])',
    'out = {"plist": plistlib.dumps(records), "bplist": plistlib.dumps(records, fmt=plistlib.FMT_BINARY), "msgpack": msgpack.packb(records), "cbor": cbor2.dumps(records)}',
    'print(json.dumps({k: base64.b64encode(v).decode() for k, v in out.items()}))',
  ].join('\n'), JSON.stringify(RECORDS)], { encoding: 'utf8' })) as Record<string, string>;
  const javaEscape = (v: string) => v.replace(/[\\=:#! ]/g, (c) => `\\${c}`).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return {
    csv: Buffer.from(`${KEYS.join(',')}\n${RECORDS.map((r) => KEYS.map((k) => csvQuote(String(r[k]))).join(',')).join('\n')}\n`),
    tsv: Buffer.from(`${KEYS.join('\t')}\n${RECORDS.map((r) => KEYS.map((k) => String(r[k])).join('\t')).join('\n')}\n`),
    json: Buffer.from(JSON.stringify(RECORDS, null, 2)),
    ndjson: Buffer.from(RECORDS.map((r) => JSON.stringify(r)).join('\n')),
    yaml: Buffer.from(RECORDS.map((r) => KEYS.map((k, i) => `${i ? '  ' : '- '}${k}: ${literal(r[k]!)}`).join('\n')).join('\n')),
    toml: Buffer.from(RECORDS.map((r) => `[[people]]\n${KEYS.map((k) => `${k} = ${literal(r[k]!)}`).join('\n')}\n`).join('\n')),
    xml: Buffer.from(`<?xml version="1.0"?>\n<people>\n${RECORDS.map((r) => `  <person>${KEYS.map((k) => `<${k}>${escapeXml(String(r[k]))}</${k}>`).join('')}</person>`).join('\n')}\n</people>\n`),
    xlsx: Buffer.from(await book.xlsx.writeBuffer()),
    ods: ods.bytes,
    json5: Buffer.from(`// people, JSON5 as written by hand\n[\n${RECORDS.map((r) => `  {\n${KEYS.map((k) => `    ${k}: ${typeof r[k] === 'string' ? `'${String(r[k]).replace(/'/g, "\\'")}'` : r[k] === 1000000 ? '1e6' : literal(r[k]!)}, /* ${k} */`).join('\n')}\n  },`).join('\n')}\n]\n`),
    ini: Buffer.from(RECORDS.map((r, i) => `; person ${i + 1}\n[${i}]\n${KEYS.map((k) => `${k} = ${String(r[k])}`).join('\n')}\n`).join('\n')),
    properties: Buffer.from(`# people\n${RECORDS.map((r, i) => KEYS.map((k) => `${i}.${k}=${javaEscape(String(r[k])).replace(/^\\ /, ' ')}`).join('\n')).join('\n')}\n`),
    plist: Buffer.from(binary.plist!, 'base64'),
    bplist: Buffer.from(binary.bplist!, 'base64'),
    msgpack: Buffer.from(binary.msgpack!, 'base64'),
    cbor: Buffer.from(binary.cbor!, 'base64'),
  };
}

let server: RunningServer;
let sample: Record<string, Buffer>;
before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  sample = await samples();
  // The reader sees the sample in every new format, typed where the format has types.
  for (const format of NEW) await assertHoldsSample(sample[format]!, format, [format]);
});
after(async () => { await server.stop(); });

/** Each unordered pair once (with at least one new format): A → B → A converts both advertised pairs. */
const PAIRS = [...OLD, ...NEW].flatMap((a, i, all) => all.slice(i + 1).filter((b) => NEW.includes(a) || NEW.includes(b)).map((b) => (NEW.includes(a) ? [a, b] : [b, a]) as [string, string]));

describe('every advertised pair with a new tree format keeps every record, and converting back gives the source\'s records', { concurrency: 4 }, () => {
  for (const [from, to] of PAIRS) {
    test(`${from} → ${to} → ${from}`, async () => {
      const there = await convert(server.url, sample[from]!, `people.${from}`, to);
      assert.equal(there.record.source, from, 'the upload is recognised');
      await assertHoldsSample(there.bytes, to, [from, to]);
      const back = await convert(server.url, there.bytes, `people.${to}`, from);
      await assertHoldsSample(back.bytes, from, [from, to, from]);
    });
  }
});

test('the new formats are offered among the data formats only, never as a step to pdf or pictures', async () => {
  const catalogue = await (await fetch(`${server.url}/api/formats`)).json() as { formats: Array<{ id: string; targets: string[] }> };
  const all = [...OLD, ...NEW];
  for (const id of NEW) {
    const entry = catalogue.formats.find((f) => f.id === id);
    assert.deepEqual([...entry!.targets].sort(), all.filter((t) => t !== id).sort(), `${id}'s targets`);
  }
  // A spreadsheet LibreOffice reads reaches json, not the new formats (they convert from the upload only).
  const xls = catalogue.formats.find((f) => f.id === 'xls');
  if (xls) for (const id of NEW) assert.ok(!xls.targets.includes(id), `xls → ${id} is not offered`);
});

test('a binary plist (bplist00) is recognised by content, whatever its name, and read', async () => {
  const { bytes, record } = await convert(server.url, sample.bplist!, 'settings.dat', 'json');
  assert.equal(record.source, 'plist');
  assert.deepEqual(JSON.parse(bytes.toString('utf8')), RECORDS);
});

test('an XML plist named .xml is a plist; a self-described CBOR named .bin is CBOR', async () => {
  const plist = await convert(server.url, sample.plist!, 'settings.xml', 'json');
  assert.equal(plist.record.source, 'plist');
  const described = Buffer.concat([Buffer.from([0xd9, 0xd9, 0xf7]), sample.cbor!]);
  const cbor = await convert(server.url, described, 'data.bin', 'json');
  assert.equal(cbor.record.source, 'cbor');
  assert.deepEqual(JSON.parse(cbor.bytes.toString('utf8')), RECORDS);
});

/** Submits `bytes` as `name` to json; the job's final record. */
async function failure(bytes: Buffer, name: string) {
  const started = Date.now();
  const jobId = await submitOk(server.url, bytes, name, 'json');
  const { final } = await waitForJob(server.url, jobId);
  return { final, seconds: (Date.now() - started) / 1000 };
}

/** How long a hostile input may take to be refused: measured under 1 s each here; the rest is a busy shared machine's margin. */
const HOSTILE_SECONDS = 10;

/** A binary plist built here: objects (each already encoded), the top object's index. One-byte offsets and references. */
function bplist(objects: Buffer[], top = 0): Buffer {
  const offsets: number[] = [];
  let body = Buffer.from('bplist00', 'latin1');
  for (const object of objects) { offsets.push(body.length); body = Buffer.concat([body, object]); }
  const offsetSize = body.length + objects.length * 2 > 0xffff ? 4 : 2;
  const table = Buffer.alloc(objects.length * offsetSize);
  offsets.forEach((offset, i) => table.writeUIntBE(offset, i * offsetSize, offsetSize));
  const trailer = Buffer.alloc(32);
  trailer[6] = offsetSize;
  trailer[7] = 2;
  trailer.writeBigUInt64BE(BigInt(objects.length), 8);
  trailer.writeBigUInt64BE(BigInt(top), 16);
  trailer.writeBigUInt64BE(BigInt(body.length), 24);
  return Buffer.concat([body, table, trailer]);
}
/** A bplist array of two-byte references. */
const bplistArray = (refs: number[]) => Buffer.concat([Buffer.from([0xa0 | refs.length]), ...refs.map((ref) => { const b = Buffer.alloc(2); b.writeUInt16BE(ref); return b; })]);

describe('hostile data ends in a documented error, quickly', { concurrency: 4 }, () => {
  const cases: Array<[string, () => Buffer, string, string]> = [
    // A million nested one-element arrays: 1 MB.
    ['msgpack nested a million deep', () => Buffer.concat([Buffer.alloc(1_000_000, 0x91), Buffer.from([0xc0])]), 'bomb.msgpack', 'input_too_complex'],
    ['CBOR nested a million deep', () => Buffer.concat([Buffer.alloc(1_000_000, 0x81), Buffer.from([0xf6])]), 'bomb.cbor', 'input_too_complex'],
    ['an XML plist nested 100,000 deep', () => Buffer.from(`<?xml version="1.0"?><plist version="1.0">${'<array>'.repeat(100_000)}${'</array>'.repeat(100_000)}</plist>`), 'bomb.plist', 'input_too_complex'],
    // Object i is [i+1, i+1]: 60 levels of sharing name 2^60 values in 250 bytes.
    ['a binary plist whose shared references expand to 2^60 values', () => bplist([...Array.from({ length: 60 }, (_, i) => bplistArray([i + 1, i + 1])), Buffer.from([0x09])]), 'laughs.plist', 'input_too_complex'],
    ['a binary plist whose array contains itself', () => bplist([bplistArray([0])]), 'loop.plist', 'input_too_complex'],
    // str32 declaring 4 GB, followed by one byte.
    ['msgpack declaring a 4 GB string', () => Buffer.from([0xdb, 0xff, 0xff, 0xff, 0xff, 0x41]), 'huge.msgpack', 'corrupt_input'],
    ['CBOR declaring a 2^64-byte string', () => Buffer.from([0x7b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x41]), 'huge.cbor', 'corrupt_input'],
    ['a plist declaring an external and a recursive entity', () => Buffer.from('<?xml version="1.0"?><!DOCTYPE plist [<!ENTITY leak SYSTEM "file:///etc/passwd"><!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><plist version="1.0"><dict><key>k</key><string>&leak;&b;</string></dict></plist>'), 'evil.plist', 'corrupt_input'],
  ];
  for (const [name, make, filename, code] of cases) {
    test(name, async () => {
      const { final, seconds } = await failure(make(), filename);
      assert.equal(final.status, 'error');
      assert.equal(final.error?.code, code, JSON.stringify(final.error));
      assert.ok(seconds < HOSTILE_SECONDS, `refused in ${seconds} s`);
    });
  }
});
