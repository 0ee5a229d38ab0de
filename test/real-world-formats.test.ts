// Files from old programs that the engines read but that carry no signature file-type knows:
// bare Excel BIFF streams (Excel 2.x to 4.0 worksheets, and BIFF5/BIFF8 streams taken out of
// their OLE container) and Microsoft Works spreadsheets (Windows and DOS), read by LibreOffice; and Palm database ebooks (PalmDOC and kin, often
// named .mobi or .prc), read by calibre. The test writes each file byte by byte, converts it
// through the HTTP API and reads the result with independent tools (Python's zipfile/csv for
// workbooks, poppler for PDF, test/helpers/read_document.py for ebooks): the words and numbers
// the file holds must come back. The sniffer's near misses are checked directly.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { catalogueOf } from '../src/engines/assembly.ts';
import { ENGINE_MODULES } from '../src/engines/index.ts';
import { sniffFile } from '../src/formats/sniff.ts';
import { convert, fetchCatalogue } from './helpers/client.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { DocumentReader } from './helpers/document-reader.ts';
import { fileMimeOf, writeTemp } from './helpers/tools.ts';

const PYTHON = '/usr/bin/python3';
const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');

// --- Excel BIFF streams -------------------------------------------------------------------------

/** One BIFF record: type, body length, body (little-endian). */
function record(type: number, body: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt16LE(type, 0);
  header.writeUInt16LE(body.length, 2);
  return Buffer.concat([header, body]);
}
const u16 = (...values: number[]) => Buffer.from(new Uint16Array(values).buffer);
const f64 = (value: number) => { const b = Buffer.alloc(8); b.writeDoubleLE(value); return b; };
const EOF = record(0x000a, Buffer.alloc(0));

type Biff = 2 | 3 | 4 | 5 | 8;
/** The BOF record each version starts with, for a sheet of the given type (0x0010 worksheet, 0x0005 workbook globals). */
function bof(version: Biff, sheetType = 0x0010): Buffer {
  switch (version) {
    case 2: return record(0x0009, u16(0x0000, sheetType));
    case 3: return record(0x0209, u16(0x0000, sheetType, 0));
    case 4: return record(0x0409, u16(0x0000, sheetType, 0));
    case 5: return record(0x0809, u16(0x0500, sheetType, 0x0dbb, 0x07cc));
    case 8: return record(0x0809, Buffer.concat([u16(0x0600, sheetType, 0x0dbb, 0x07cc), Buffer.from([0, 0, 0, 0, 6, 0, 0, 0])]));
  }
}
/** A1 holds a word (LABEL), A2 a number (NUMBER), in the version's own record layout. */
function cells(version: Biff, word: string, number: number): Buffer {
  const text = Buffer.from(word, 'latin1');
  if (version === 2) {
    // BIFF2: row, column, three bytes of cell attributes; a one-byte string length.
    return Buffer.concat([
      record(0x0004, Buffer.concat([u16(0, 0), Buffer.from([0, 0, 0, text.length]), text])),
      record(0x0003, Buffer.concat([u16(1, 0), Buffer.from([0, 0, 0]), f64(number)])),
    ]);
  }
  // BIFF3 and later: row, column, XF index; BIFF8 strings carry a flags byte (0: 8-bit characters).
  const label = version === 8 ? Buffer.concat([u16(0, 0, 0, text.length), Buffer.from([0]), text]) : Buffer.concat([u16(0, 0, 0, text.length), text]);
  return Buffer.concat([record(0x0204, label), record(0x0203, Buffer.concat([u16(1, 0, 0), f64(number)]))]);
}
function worksheet(version: Biff, word: string, number: number): Buffer {
  return Buffer.concat([bof(version), cells(version, word, number), EOF]);
}
/** A BIFF5 workbook stream (what Excel 5/95 keeps in its OLE "Book" stream): globals naming one sheet, then the sheet. */
function biff5Workbook(word: string, number: number): Buffer {
  const name = Buffer.from('Data', 'latin1');
  const boundSheetLength = 4 + 4 + 2 + 1 + name.length;
  const sheetOffset = bof(5, 0x0005).length + boundSheetLength + EOF.length;
  const offset = Buffer.alloc(4);
  offset.writeUInt32LE(sheetOffset);
  const boundSheet = record(0x0085, Buffer.concat([offset, u16(0), Buffer.from([name.length]), name]));
  return Buffer.concat([bof(5, 0x0005), boundSheet, EOF, worksheet(5, word, number)]);
}

/** Each bare stream LibreOffice 7.4 imports, with the word and number it holds. */
const SHEETS: ReadonlyArray<{ label: string; file: string; data: Buffer; word: string; number: number }> = [
  { label: 'BIFF2 worksheet (Excel 2.x)', file: 'ledger2.xls', data: worksheet(2, 'Heron', 1234.5), word: 'Heron', number: 1234.5 },
  { label: 'BIFF3 worksheet (Excel 3.0)', file: 'ledger3.xls', data: worksheet(3, 'Osprey', 2345.25), word: 'Osprey', number: 2345.25 },
  // The case: an Excel 4.0 worksheet, here without an extension (the content decides).
  { label: 'BIFF4 worksheet (Excel 4.0)', file: 'LEDGER4', data: worksheet(4, 'Plover', 3456.75), word: 'Plover', number: 3456.75 },
  { label: 'BIFF5 worksheet stream', file: 'ledger5.xls', data: worksheet(5, 'Curlew', 4567.5), word: 'Curlew', number: 4567.5 },
  { label: 'BIFF5 workbook stream', file: 'book5.xls', data: biff5Workbook('Godwit', 5678.25), word: 'Godwit', number: 5678.25 },
  { label: 'BIFF8 worksheet stream', file: 'ledger8.xls', data: worksheet(8, 'Dunlin', 6789.75), word: 'Dunlin', number: 6789.75 },
];
/** What each target of a workbook is read with, and how its text is obtained. */
const SHEET_TARGETS = ['xlsx', 'csv', 'pdf'] as const;

// --- Microsoft Works spreadsheets ----------------------------------------------------------------

/**
 * A Works spreadsheet with a word in A1 and a number in A2, in Lotus-style records (the BIFF
 * `record` layout above: type, body length, body). Works for Windows: BOF record 0x00FF, cells
 * addressed by column byte, sheet byte, row, then a style number. Works for DOS (the layout of
 * Lotus 1-2-3 release 1A): BOF record 0x0000, cells led by a format byte, column and row as 16-bit
 * numbers, labels by an alignment character. Two settings records (calculation mode and order)
 * come first: libwps, LibreOffice's Works reader, wants four records before the end to accept a file.
 */
function worksSheet(kind: 'windows' | 'dos', word: string, number: number): Buffer {
  const windows = kind === 'windows';
  const at = (row: number) => windows ? Buffer.concat([Buffer.from([0, 0]), u16(row, 0)]) : Buffer.concat([Buffer.from([0xff]), u16(0, row)]);
  return Buffer.concat([
    record(windows ? 0x00ff : 0x0000, u16(0x0404)),
    record(0x0002, Buffer.from([0xff])),
    record(0x0003, Buffer.from([0x00])),
    record(0x000f, Buffer.concat([at(0), Buffer.from(`${windows ? '' : "'"}${word}\0`, 'latin1')])),
    record(0x000e, Buffer.concat([at(1), f64(number)])),
    record(0x0001, Buffer.alloc(0)),
  ]);
}
const WORKS_SHEETS: ReadonlyArray<{ label: string; file: string; data: Buffer; word: string; number: number }> = [
  { label: 'Works for Windows spreadsheet', file: 'budget.wks', data: worksSheet('windows', 'Kestrel', 7890.25), word: 'Kestrel', number: 7890.25 },
  // Named .xls: read as text, LibreOffice would give the record bytes as cells; the content decides.
  { label: 'Works for Windows spreadsheet named .xls', file: 'budget.xls', data: worksSheet('windows', 'Merlin', 8901.5), word: 'Merlin', number: 8901.5 },
  { label: 'Works for DOS spreadsheet (Lotus 1-2-3 1A layout)', file: 'BUDGET.WKS', data: worksSheet('dos', 'Harrier', 9012.75), word: 'Harrier', number: 9012.75 },
];

/**
 * A Multiplan 1 worksheet (Microsoft Multiplan for DOS) with a word in R1C1 and a number in R2C1,
 * laid out as libwps reads it (src/engines/libreoffice/formats.ts, isMultiplanSheet): a 666-byte
 * header (signature, the names of linked files, the extent at 0xFA, settings left zero, the zone
 * offsets at 0x28A), then a table of 16-bit cell positions, row by row, and the cells themselves.
 * A cell is a formula length (none), a format byte (default), a kind byte (0x44: text, 0x04:
 * number) and its data's length, then the data; a position of 0 means an empty cell, so the data
 * zone starts with two unused bytes. Numbers are decimal: an exponent byte (0x40 for 10^0, the
 * top bit the sign), then 14 BCD digits of a mantissa below 1.
 */
function multiplanSheet(word: string, number: number): Buffer {
  const [mantissa, exponent] = Math.abs(number).toExponential().split('e');
  const digits = mantissa!.replace('.', '').padEnd(14, '0');
  const bcd = Buffer.from(Array.from({ length: 7 }, (_, i) => Number(digits[2 * i]) << 4 | Number(digits[2 * i + 1])));
  const numberCell = Buffer.concat([Buffer.from([0, 0, 0x04, 8, (number < 0 ? 0x80 : 0) | (0x41 + Number(exponent))]), bcd]);
  const text = Buffer.from(word, 'latin1');
  // Cells start at even offsets.
  const textCell = Buffer.concat([Buffer.from([0, 0, 0x44, text.length]), text, Buffer.alloc(text.length % 2)]);
  const data = Buffer.concat([Buffer.alloc(2), textCell, numberCell]);
  const positions = u16(2, 2 + textCell.length); // rows 1 and 2 of column 1
  const header = Buffer.alloc(0x29a);
  header.writeUInt16LE(0xe708, 0);
  header.writeUInt16LE(2, 0xfa); // rows
  header.writeUInt16LE(1, 0xfc); // columns
  // Zone offsets from the end of the header: nothing, the cell positions, links and file names
  // (none), the cell data (by its length), then shared data and names (none).
  const end = positions.length + data.length;
  [0, positions.length, positions.length, positions.length, data.length, end, end, end].forEach((offset, i) => header.writeUInt16LE(offset, 0x28a + 2 * i));
  return Buffer.concat([header, positions, data]);
}
/**
 * A Multiplan 2 or 3 worksheet with a word in R1C1 and a number in R2C1, laid out as libwps reads
 * those versions (src/engines/libreoffice/formats.ts, isLaterMultiplanSheet): a 967-byte header
 * (the version's mark, linked-file names left empty, the extent at 0x112, settings left zero, 255
 * column widths of 0xFF for "default" at 0x2AB, the zone list's offset at 0x3C5), then the zone
 * list: a row count, one cell data zone (type 12, its length with its 6-byte head), the rows' mark
 * (6) and one record per row (6, its length in 16-bit words, its number of cells, its index, then
 * per column a 16-bit offset into the cell data zone and a zone number). A cell is a formula
 * length (none), a format byte (default), its data's length, a kind byte (0x44: text, 0x04:
 * number), then the data; numbers are IEEE doubles, little-endian, from version 2 on.
 */
function laterMultiplanSheet(version: 2 | 3, word: string, number: number): Buffer {
  const text = Buffer.from(word, 'latin1');
  // Cells start at even offsets.
  const textCell = Buffer.concat([Buffer.from([0, 0, text.length, 0x44]), text, Buffer.alloc(text.length % 2)]);
  const value = Buffer.alloc(8);
  value.writeDoubleLE(number);
  const numberCell = Buffer.concat([Buffer.from([0, 0, 8, 0x04]), value]);
  const cellData = Buffer.concat([u16(12, 0, 6 + textCell.length + numberCell.length), textCell, numberCell]);
  // Six words: the mark, the length, one cell, the row index, the cell's offset and zone (0), a pad byte.
  const row = (index: number, offset: number) => Buffer.concat([u16(6, 6, 1, index, offset), Buffer.alloc(2)]);
  const header = Buffer.alloc(0x3c7);
  header.writeUInt16LE(version === 2 ? 0xec0c : 0xed0c, 0);
  header.writeUInt16LE(2, 0x112); // rows
  header.writeUInt16LE(1, 0x114); // columns
  header.fill(0xff, 0x2ab, 0x3aa); // column widths: default
  header.writeUInt16LE(0x3c7, 0x3c5); // the zone list follows the header
  return Buffer.concat([header, u16(2), cellData, u16(6), row(0, 6), row(1, 6 + textCell.length)]);
}
/** Random headers tried against the Multiplan signature: one passes with odds of about 1e-11 (two 1-255 extents, an exact table length, ordered offsets), and 10,000 take milliseconds. */
const RANDOM_MULTIPLAN_TRIALS = 10_000;
const MULTIPLAN_SHEETS: ReadonlyArray<{ label: string; file: string; data: Buffer; word: string; number: number }> = [
  { label: 'Multiplan 1 worksheet', file: 'BUDGET.MP', data: multiplanSheet('Osprey', 6789.125), word: 'Osprey', number: 6789.125 },
  // Named .xls: the content decides, and LibreOffice is handed the file as .mp.
  { label: 'Multiplan 1 worksheet named .xls', file: 'ledger.xls', data: multiplanSheet('Peregrine', 5678.5), word: 'Peregrine', number: 5678.5 },
  { label: 'Multiplan 2 worksheet', file: 'BUDGET2.MP', data: laterMultiplanSheet(2, 'Gyrfalcon', 4567.375), word: 'Gyrfalcon', number: 4567.375 },
  { label: 'Multiplan 3 worksheet', file: 'BUDGET3.MP', data: laterMultiplanSheet(3, 'Hobby', 3456.25), word: 'Hobby', number: 3456.25 },
  { label: 'Multiplan 3 worksheet named .xls', file: 'ledger3.xls', data: laterMultiplanSheet(3, 'Lanner', 2345.5), word: 'Lanner', number: 2345.5 },
];

function readRecords(file: string, format: 'xlsx' | 'csv' | 'json'): Array<Record<string, string | number>> {
  return JSON.parse(execFileSync(PYTHON, [path.resolve('test/helpers/read_data.py'), file, format, ...(format === 'json' ? ['--typed'] : [])], { encoding: 'utf8' })) as Array<Record<string, string | number>>;
}
function readText(file: string, format: string): string {
  return (JSON.parse(execFileSync(PYTHON, [path.resolve('test/helpers/read_document.py'), file, format], { encoding: 'utf8', maxBuffer: 64 << 20 })) as { text: string }).text;
}

// --- Palm database ebooks -----------------------------------------------------------------------

/** The text without control characters NUL to backspace, which no text of the book holds. */
const withoutControlBytes = (text: string) => Array.from(text).filter((c) => c.codePointAt(0)! > 8).join('');
/** PalmDOC text records hold at most 4096 bytes each. */
const PALMDOC_RECORD = 4096;

/**
 * A PalmDOC book with uncompressed text (compression 1): the 78-byte database header with type
 * "TEXt" and creator "REAd", the record list, two bytes of padding, record 0 (the PalmDOC header)
 * and the text in 4096-byte records. Big-endian throughout.
 */
function palmDoc(title: string, text: string): Buffer {
  const data = Buffer.from(text, 'latin1');
  const chunks: Buffer[] = [];
  for (let at = 0; at < data.length; at += PALMDOC_RECORD) chunks.push(data.subarray(at, at + PALMDOC_RECORD));
  const record0 = Buffer.alloc(16);
  record0.writeUInt16BE(1, 0); // no compression
  record0.writeUInt32BE(data.length, 4);
  record0.writeUInt16BE(chunks.length, 8);
  record0.writeUInt16BE(PALMDOC_RECORD, 10);
  const records = [record0, ...chunks];
  const header = Buffer.alloc(78);
  header.write(title.slice(0, 31), 0, 'latin1');
  header.writeUInt32BE(0x5deb1124, 36); // created
  header.writeUInt32BE(0x5deb1124, 40); // modified
  header.write('TEXtREAd', 60, 'latin1');
  header.writeUInt16BE(records.length, 76);
  const list = Buffer.alloc(records.length * 8 + 2);
  let offset = header.length + list.length;
  records.forEach((entry, index) => {
    list.writeUInt32BE(offset, index * 8);
    list.writeUInt32BE(index, index * 8 + 4); // attributes 0, unique id
    offset += entry.length;
  });
  return Buffer.concat([header, list, ...records]);
}

/**
 * Words the built book holds: its first, one in its last record, and some with Windows-1252
 * letters. PalmDOC records no text encoding, and calibre guesses it from the bytes: the book's
 * Spanish sentence gives the guess enough accented letters to be right (a text whose only
 * non-ASCII letter is one "ñ" was read as Baltic, "ņ": README's known limitations).
 */
/** The targets calibre writes from a Palm book itself. */
const PALM_CALIBRE_TARGETS = ['azw3', 'docx', 'epub', 'fb2', 'mobi', 'pdf', 'txt'];
const BOOK_WORDS = ['Lighthouse', 'Harbourmaster', 'señora', 'canción', 'niño'];
const BOOK_TEXT = [
  'Lighthouse Chronicle',
  ...Array.from({ length: 120 }, (_, i) => `Chapter ${i + 1}. The keeper trims the lamp. La señora esperó en el café; el niño leyó una canción.`),
  'The Harbourmaster closes the log.',
].join('\n\n');

// -------------------------------------------------------------------------------------------------

const catalogue = catalogueOf(ENGINE_MODULES);
async function sniffed(data: Buffer, name: string): Promise<string | undefined> {
  return (await sniffFile(await writeTemp(data, name), name, catalogue)).format?.id;
}

test('the sniffer takes bare BIFF streams as xls, Works spreadsheets as wks, Multiplan ones as mp and Palm ebooks as pdb, and not their near misses', async () => {
  for (const sheet of SHEETS) assert.equal(await sniffed(sheet.data, sheet.file), 'xls', sheet.label);
  for (const sheet of WORKS_SHEETS) assert.equal(await sniffed(sheet.data, sheet.file), 'wks', sheet.label);
  for (const sheet of MULTIPLAN_SHEETS) assert.equal(await sniffed(sheet.data, sheet.file), 'mp', sheet.label);
  // Lotus 1-2-3 release 2 (BOF version 0x0406) is not a Works sheet: it is the wk1 format's (test/office-formats.test.ts).
  const wk1 = worksSheet('dos', 'x', 1);
  wk1.writeUInt16LE(0x0406, 4);
  assert.equal(await sniffed(wk1, 'upload.xls'), 'wk1', 'a Lotus 1-2-3 WK1 worksheet (BOF version 0x0406)');
  const book = palmDoc('Lighthouse', BOOK_TEXT);
  assert.equal(await sniffed(book, 'book.mobi'), 'pdb', 'PalmDOC named .mobi');
  assert.equal(await sniffed(book, 'book.prc'), 'pdb', 'PalmDOC named .prc');
  // Each near miss differs from a good file in one field the signature checks.
  const multiplanWith = (change: (sheet: Buffer) => void) => { const sheet = multiplanSheet('x', 1); change(sheet); return sheet; };
  const multiplan3With = (change: (sheet: Buffer) => void) => { const sheet = laterMultiplanSheet(3, 'x', 1); change(sheet); return sheet; };
  const multiplan3 = laterMultiplanSheet(3, 'x', 1);
  const multiplan3Rows = multiplan3.length - 2 - 2 * 12; // where the rows' mark sits
  const worksheet4 = worksheet(4, 'Plover', 1);
  const nearMisses: Array<[string, Buffer]> = [
    ['a BIFF4 chart (sheet type 0x0020), which has no cells', Buffer.concat([bof(4, 0x0020), EOF])],
    ['an Excel 4 macro sheet (0x0040), which LibreOffice opens empty', Buffer.concat([bof(4, 0x0040), cells(4, 'x', 1), EOF])],
    ['a BIFF4 BOF with a wrong length', Buffer.concat([record(0x0409, u16(0, 0x0010, 0, 0)), cells(4, 'x', 1), EOF])],
    ['a BIFF5 BOF with an unknown version', Buffer.concat([record(0x0809, u16(0x0400, 0x0010, 0, 0)), cells(5, 'x', 1), EOF])],
    ['a BIFF BOF with nothing after it', worksheet4.subarray(0, 10)],
    ['a Works BOF with a wrong length', Buffer.concat([record(0x00ff, u16(0x0404, 0)), worksSheet('windows', 'x', 1).subarray(6)])],
    ['a Works BOF with nothing after it', worksSheet('windows', 'x', 1).subarray(0, 6)],
    ['a Works BOF followed by a record of no Lotus or Works type', Buffer.concat([record(0x00ff, u16(0x0404)), record(0x1234, Buffer.alloc(4))])],
    ['a Multiplan 1 layout under the Multiplan 3 mark', multiplanWith((sheet) => sheet.writeUInt16LE(0xed0c, 0))],
    ['a Multiplan 3 layout under the Multiplan 1 mark', multiplan3With((sheet) => sheet.writeUInt16LE(0xe708, 0))],
    ['a password-protected Multiplan 3 file (hash and checksum set)', multiplan3With((sheet) => sheet.writeUInt16LE(0x1234, 24))],
    ['a Multiplan 3 header with an empty extent (0 rows)', multiplan3With((sheet) => sheet.writeUInt16LE(0, 0x112))],
    ['a Multiplan 2 header with more than 255 columns', (() => { const sheet = laterMultiplanSheet(2, 'x', 1); sheet.writeUInt16LE(256, 0x114); return sheet; })()],
    ['a Multiplan 3 zone list inside the header', multiplan3With((sheet) => sheet.writeUInt16LE(0x3c5, 0x3c5))],
    ['a Multiplan 3 zone list past the end of the file', multiplan3With((sheet) => sheet.writeUInt16LE(0x4000, 0x3c5))],
    ['a Multiplan 3 zone of an unknown type (13)', multiplan3With((sheet) => sheet.writeUInt16LE(13, 0x3c9))],
    ['a Multiplan 3 zone list with no cell data before the rows (type 11)', multiplan3With((sheet) => sheet.writeUInt16LE(11, 0x3c9))],
    ['a Multiplan 3 zone shorter than its own head', multiplan3With((sheet) => sheet.writeUInt16LE(4, 0x3cd))],
    ['a Multiplan 3 zone longer than the file', multiplan3With((sheet) => sheet.writeUInt16LE(sheet.length, 0x3cd))],
    ['a Multiplan 3 file cut before its rows', multiplan3.subarray(0, multiplan3Rows)],
    ['a Multiplan header with an empty extent (0 columns)', multiplanWith((sheet) => sheet.writeUInt16LE(0, 0xfc))],
    ['a Multiplan header with more than 255 rows', multiplanWith((sheet) => sheet.writeUInt16LE(256, 0xfa))],
    ['a Multiplan cell-position table too long for the extent', multiplanWith((sheet) => sheet.writeUInt16LE(6, 0x28c))],
    ['a Multiplan zone offset that goes back', multiplanWith((sheet) => sheet.writeUInt16LE(2, 0x28e))],
    ['a Multiplan header cut before its zone offsets', multiplanSheet('x', 1).subarray(0, 0x290)],
    ['a Palm database of another kind (an address book)', Buffer.concat([book.subarray(0, 60), Buffer.from('DATAaddr', 'latin1'), book.subarray(68)])],
    ['a PalmDOC header with no records', Buffer.concat([book.subarray(0, 76), Buffer.from([0, 0]), book.subarray(78)])],
    ['a PalmDOC header whose records point into its own header', (() => { const bad = Buffer.from(book); bad.writeUInt32BE(10, 78); return bad; })()],
  ];
  for (const [label, data] of nearMisses) assert.equal(await sniffed(data, 'upload.xls'), undefined, label);
  // Multiplan's own mark is two bytes; the rest of its signature must turn away random data behind it.
  const isMultiplanSheet = catalogue.get('mp')!.signature!;
  for (let i = 0; i < RANDOM_MULTIPLAN_TRIALS; i++) {
    const data = randomBytes(0x300);
    data.writeUInt16LE(0xe708, 0);
    assert.equal(isMultiplanSheet(data, ''), false, `random bytes after the Multiplan mark: ${data.toString('hex')}`);
  }
  // The same for the Multiplan 2 and 3 marks, on whole files of the size of a small sheet: one
  // passes with odds far below 1e-10 (two extents, a zone list offset inside the file, a zone
  // type of 7-12 and lengths landing exactly on the rows' mark).
  for (let i = 0; i < RANDOM_MULTIPLAN_TRIALS; i++) {
    const data = randomBytes(0x600);
    data.writeUInt16LE(i % 2 ? 0xec0c : 0xed0c, 0);
    assert.equal(isMultiplanSheet(data, ''), false, `random bytes after a Multiplan 2/3 mark: ${data.toString('hex')}`);
  }
});

describe('through the service', () => {
  let server: RunningServer;
  const documents = new DocumentReader();
  before(async () => { server = await startServer({ CONVERTD_RATE_LIMITS: 'off' }); });
  after(async () => { documents.close(); await server.stop(); });

  /** Converts each sheet to each workbook target, all at once (the service queues them), and reads its cells back. */
  async function convertSheets(source: string, sheets: typeof SHEETS): Promise<void> {
    const catalogueEntry = (await fetchCatalogue(server.url)).find((f) => f.id === source)!;
    for (const target of SHEET_TARGETS) assert.ok(catalogueEntry.targets.includes(target), `${source} → ${target} is listed`);
    await Promise.all(sheets.flatMap((sheet) => SHEET_TARGETS.map(async (target) => {
      const where = `${sheet.label} → ${target}`;
      const { record, bytes } = await convert(server.url, sheet.data, sheet.file, target);
      assert.equal(record.source, source, where);
      const file = await writeTemp(bytes, `out.${target}`);
      if (target === 'pdf') {
        const text = readText(file, 'pdf');
        assert.match(text, new RegExp(`\\b${sheet.word}\\b`), where);
        assert.match(text, new RegExp(`\\b${String(sheet.number).replace('.', '\\.')}\\b`), where);
      } else {
        // The word heads the only column, the number is the one row under it: nothing else.
        assert.deepEqual(readRecords(file, target), [{ [sheet.word]: String(sheet.number) }], where);
      }
    })));
  }

  test('bare Excel 2.x-4.0 worksheets and BIFF5/BIFF8 streams become xlsx, csv and pdf with their cells', { timeout: 600_000 }, async () => {
    await convertSheets('xls', SHEETS);
  });

  test('Works spreadsheets (Windows and DOS) become xlsx, csv and pdf with their cells', { timeout: 600_000 }, async () => {
    await convertSheets('wks', WORKS_SHEETS);
  });

  test('Multiplan 1, 2 and 3 worksheets become xlsx, csv and pdf with their cells', { timeout: 600_000 }, async () => {
    await convertSheets('mp', MULTIPLAN_SHEETS);
  });

  test('a PalmDOC ebook named .pdb or .mobi converts to each ebook target with its words', { timeout: 600_000 }, async () => {
    const book = palmDoc('Lighthouse', BOOK_TEXT);
    const formats = await fetchCatalogue(server.url);
    const targets = formats.find((f) => f.id === 'pdb')!.targets;
    const mobiTargets = formats.find((f) => f.id === 'mobi')!.targets;
    // The older formats calibre writes from the ebooks of today are not written from a Palm book
    // (calibre/engine.ts, LEGACY_WRITES; their pairs are ebook-formats.test.ts's).
    const olderFormats = ['htmlz', 'txtz', 'pmlz', 'lrf', 'pdb', 'rb', 'snb', 'tcr'];
    assert.deepEqual([...targets].sort(), [...mobiTargets.filter((t) => !olderFormats.includes(t)), 'mobi'].sort(), 'the targets of mobi, and mobi itself');
    // calibre's own targets: every one is converted here; the rest of the list, routes that
    // continue from one of these with another engine, in the test after this one.
    const jobs = [
      ...PALM_CALIBRE_TARGETS.map((target) => ({ name: 'lighthouse.pdb', target })),
      // Named .mobi, as PalmDOC books often are: the content decides.
      ...['epub', 'txt'].map((target) => ({ name: 'lighthouse.mobi', target })),
    ];
    await Promise.all(jobs.map(async ({ name, target }) => {
      const { record, bytes } = await convert(server.url, book, name, target);
      assert.equal(record.source, 'pdb', name);
      // The MOBI/AZW3 reader of read_document.py keeps the bytes that close each text record (the
      // "trailing entries"), so a NUL may sit inside a word at a record boundary: dropped here.
      const text = withoutControlBytes(readText(await writeTemp(bytes, `out.${target}`), target));
      for (const word of BOOK_WORDS) assert.ok(text.includes(word), `${name} → ${target}: "${word}" is missing`);
      // All 120 chapters are there, not just the first record's worth.
      assert.equal(new Set(text.match(/Chapter \d+\./g)).size, 120, `${name} → ${target}: chapters`);
    }));
  });

  /**
   * The pairs the tests above leave to routes that go on from their targets with another engine
   * (a sheet's xlsx to HTML, Markdown or data; a Palm book's EPUB through pandoc): every other
   * target the catalogue lists, each converted here, three at a time. A picture must be one
   * (file(1) says so; a ZIP holds pictures of the pages in order), the format's own tests check
   * what is drawn; every other output must hold the source's words (`numbers` too, where the
   * format keeps a number as text: BIFF and JSON keep it as a number, which readRecords reads).
   */
  async function everyOtherTarget(source: string, name: string, data: Buffer, covered: readonly string[], words: readonly string[], numbers: readonly string[] = []): Promise<void> {
    const formats = await fetchCatalogue(server.url);
    const pictures = new Set(formats.filter((f) => f.category === 'image').map((f) => f.id));
    const targets = formats.find((f) => f.id === source)!.targets.filter((target) => !covered.includes(target));
    assert.ok(targets.length > 0, `${source} lists targets beyond ${covered.join(', ')}`);
    const failures: string[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: 3 }, async () => {
      while (next < targets.length) {
        const target = targets[next++]!;
        try {
          const { record, bytes } = await convert(server.url, data, name, target, { timeoutMs: 300_000 });
          assert.equal(record.source, source);
          const file = await writeTemp(bytes, `out.${target}`);
          if (pictures.has(target)) {
            assert.match(await fileMimeOf(file), /^image\//, 'file(1) sees a picture');
          } else if (target === 'zip') {
            await documents.readValid(file, 'zip'); // page-001.png, ... in order
          } else if (target === 'json' && numbers.length > 0) {
            assert.deepEqual(readRecords(file, 'json'), [{ [words[0]!]: Number(numbers[0]) }]);
          } else {
            const text = withoutControlBytes((await documents.readValid(file, target)).text);
            for (const word of [...words, ...(target === 'xls' ? [] : numbers)]) assert.ok(text.includes(word), `"${word}" is missing`);
          }
        } catch (error) {
          failures.push(`${source} → ${target}: ${(error as Error).message.split('\n')[0]}`);
        }
      }
    }));
    assert.deepEqual(failures, [], failures.join('\n'));
  }

  test('a Works and a Multiplan sheet reach every other target they list, with their cells', { timeout: 600_000 }, async () => {
    for (const [source, sheet] of [['wks', WORKS_SHEETS[0]!], ['mp', MULTIPLAN_SHEETS[0]!]] as const) {
      await everyOtherTarget(source, sheet.file, sheet.data, SHEET_TARGETS, [sheet.word], [String(sheet.number)]);
    }
  });

  test('a PalmDOC ebook reaches every other target it lists, with its words', { timeout: 600_000 }, async () => {
    await everyOtherTarget('pdb', 'lighthouse.pdb', palmDoc('Lighthouse', BOOK_TEXT), PALM_CALIBRE_TARGETS, BOOK_WORDS);
  });

  const corpusBook = path.join(CORPUS, 'pdb', 'transmute-sample.pdb');
  test('corpus: a real PalmDOC book (pdb/transmute-sample.pdb) becomes text with its words', { skip: fs.existsSync(corpusBook) ? false : 'no ../shared/corpus/pdb here', timeout: 180_000 }, async () => {
    const { record, bytes } = await convert(server.url, fs.readFileSync(corpusBook), path.basename(corpusBook), 'txt');
    assert.equal(record.source, 'pdb');
    const text = readText(await writeTemp(bytes, 'out.txt'), 'txt');
    // calibre's own reading of it (SOURCES.md) gave 309,329 characters; the book is the UDHR in
    // 28 languages, Latin-script ones in PalmDOC's Windows-1252.
    assert.ok(text.length > MIN_CORPUS_BOOK_CHARS, `${text.length} characters`);
    for (const phrase of ['Around the', 'Universal Declaration of Human Rights', 'Whakapuakitanga', 'Declaración']) {
      assert.ok(text.includes(phrase), `"${phrase}" is missing`);
    }
  });
});

/** The corpus book's text is about 309,000 characters (calibre, SOURCES.md); 90 % of it must come back. */
const MIN_CORPUS_BOOK_CHARS = 278_000;
