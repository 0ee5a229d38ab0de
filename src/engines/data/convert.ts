// Structured data conversions (the tree formats plist, json5, ini, properties, msgpack and cbor in more-trees.ts), run in pooled, sandboxed Node processes (engine.ts starts the
// pool; src/process/pool/node-host.ts loads this module and calls its handlers). An input that cannot be
// parsed as FROM is corrupt_input (the message says where); content that cannot be expressed as
// TO is conversion_failed. The mapping (README "Data formats"):
// - Tables (csv, tsv, xlsx and ods: the first sheet, or the one the `sheet` option names): the first row is the header. As records, each later
//   row becomes an object keyed by the header (CSV/TSV values stay text; xlsx and ods keep numbers,
//   booleans, dates as ISO text; xlsx-sheet.ts reads xlsx).
// - Records to a table: the root array (ndjson: the lines; an object whose only value is an
//   array: that array; any other object: one record); nested objects become dotted columns
//   (address.city), arrays indexed ones (tags.0); the columns are every key, in order of appearance.
//   A tree-shaped document (over 1,024 such columns, or records sharing few keys: treeToRows) is
//   a listing instead, one row per value: path (statuses.0.user.name), value.
// - Trees (json, yaml, toml, xml) to each other: the same structure. TOML needs a table at the
//   root (an array is wrapped as {items = [...]}) and has no null (such keys are left out). XML
//   attributes are "@_name" keys, text beside elements "#text"; a root that is not a single
//   element is wrapped in <root>, array items in <item>.
// - Spreadsheet safety: in csv and tsv outputs, a text cell starting with = + - @ or a tab or
//   carriage return (and not a plain number) gets a leading apostrophe, so that no spreadsheet
//   runs it as a formula; xlsx cells are written as values, never formulas.
// - Options (engine.ts declares them): `sheet` picks the workbook's sheet, `delimiter` the csv
//   output's separator, `indent` the json, yaml and xml outputs' indentation (0: compact).
import fs from 'node:fs/promises';
import { parse as parseCsv } from 'csv-parse/sync';
import { stringify as stringifyCsv } from 'csv-stringify/sync';
import ExcelJS from 'exceljs';
import { unzipSync, zipSync } from 'fflate';
import { XMLBuilder, XMLParser } from 'fast-xml-parser';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import YAML from 'yaml';
import { ConvertdError } from '../../errors.ts';
import type { Handlers } from '../../process/pool/node-host.ts';
import { MORE_TREES, readMoreTree, writeMoreTree } from './more-trees.ts';
import { readXlsxSheet, type SheetChoice } from './xlsx-sheet.ts';

type Row = unknown[];

/** Text by its byte-order mark: UTF-16 LE/BE or UTF-8 (the default, with or without a BOM). */
async function readText(file: string): Promise<string> {
  return decodeText(await fs.readFile(file));
}

function decodeText(bytes: Buffer): string {
  const encoding = bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : 'utf-8';
  return new TextDecoder(encoding).decode(bytes).replace(/^\uFEFF/, '');
}
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

class InputError extends Error {}
class OutputError extends Error {}

const TABLES = new Set(['csv', 'tsv', 'xlsx', 'ods']);

/** A sheet's size limits: what Calc and Excel themselves allow. */
const MAX_ROWS = 1_048_576;
const MAX_COLUMNS = 16_384;

type OdsNode = Record<string, unknown>;

function asArray<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/**
 * The text of one text:p, given as its raw inner XML (the parser stops there: parsed, its text and
 * its spans would come apart, the spans' words moved after the rest), in document order:
 * text:s is spaces, text:tab a tab, text:line-break a line break; other elements (spans, links)
 * give their text.
 */
function odsText(node: unknown): string {
  if (node === undefined || node === null) return '';
  const raw = typeof node === 'object' ? String((node as OdsNode)['#text'] ?? '') : String(node);
  const text = raw
    .replace(/<text:s(?:\s+text:c="(\d+)")?\s*\/>/g, (_whole, count?: string) => ' '.repeat(Math.min(Number(count ?? 1) || 1, 1000)))
    .replace(/<text:tab\s*\/>/g, '\t')
    .replace(/<text:line-break\s*\/>/g, '\n')
    .replace(/<[^>]*>/g, '');
  return decodeXmlText(text);
}

function odsCell(cell: OdsNode): unknown {
  switch (cell['@_office:value-type']) {
    case 'float': case 'percentage': case 'currency': return Number(cell['@_office:value']);
    case 'boolean': return cell['@_office:boolean-value'] === 'true';
    case 'date': return String(cell['@_office:date-value']);
    default: return asArray(cell['text:p']).map(odsText).join('\n');
  }
}

/**
 * One sheet (by default the first) of an OpenDocument spreadsheet. Repeated cells and rows are
 * expanded only when something follows them: sheets routinely declare a thousand empty columns
 * and a million empty rows after their data.
 */
async function readOds(file: string, choose: SheetChoice): Promise<Row[]> {
  let content: Uint8Array | undefined;
  try {
    content = unzipSync(await fs.readFile(file), { filter: (entry) => entry.name === 'content.xml' })['content.xml'];
  } catch (error) {
    throw new InputError(`not a readable ODS file (${(error as Error).message})`);
  }
  if (!content) throw new InputError('not a readable ODS file (no content.xml)');
  const parser = new XMLParser({
    ignoreAttributes: false, attributeNamePrefix: '@_', processEntities: true, parseTagValue: false, trimValues: false, stopNodes: ['*.text:p'],
    isArray: (name) => ['table:table', 'table:table-row', 'table:table-cell', 'table:covered-table-cell', 'text:p', 'table:table-row-group', 'table:table-header-rows'].includes(name),
  });
  const doc = parser.parse(new TextDecoder().decode(content)) as OdsNode;
  const spreadsheet = ((doc['office:document-content'] as OdsNode)?.['office:body'] as OdsNode)?.['office:spreadsheet'] as OdsNode | undefined;
  const tables = asArray(spreadsheet?.['table:table'] as OdsNode[]);
  if (tables.length === 0) return [];
  const table = tables[choose(tables.map((t) => String(t['@_table:name'] ?? '')))];
  if (!table) return [];
  const rowNodes: OdsNode[] = [];
  const collect = (node: OdsNode) => {
    for (const group of ['table:table-header-rows', 'table:table-row-group']) for (const inner of asArray(node[group] as OdsNode[])) collect(inner);
    rowNodes.push(...asArray(node['table:table-row'] as OdsNode[]));
  };
  collect(table);
  const rows: Row[] = [];
  let pendingEmptyRows = 0;
  for (const rowNode of rowNodes) {
    const cells: unknown[] = [];
    let pendingEmptyCells = 0;
    for (const cell of [...asArray(rowNode['table:table-cell'] as OdsNode[]), ...asArray(rowNode['table:covered-table-cell'] as OdsNode[])]) {
      const repeat = Math.max(1, Number(cell['@_table:number-columns-repeated'] ?? 1));
      const value = odsCell(cell);
      if (value === '') { pendingEmptyCells += repeat; continue; }
      if (cells.length + pendingEmptyCells + repeat > MAX_COLUMNS) throw new InputError(`the sheet is wider than ${MAX_COLUMNS} columns`);
      for (; pendingEmptyCells > 0; pendingEmptyCells--) cells.push('');
      for (let i = 0; i < repeat; i++) cells.push(value);
    }
    const repeat = Math.max(1, Number(rowNode['@_table:number-rows-repeated'] ?? 1));
    if (cells.length === 0) { pendingEmptyRows += repeat; continue; }
    if (rows.length + pendingEmptyRows + repeat > MAX_ROWS) throw new InputError(`the sheet is longer than ${MAX_ROWS} rows`);
    for (; pendingEmptyRows > 0; pendingEmptyRows--) rows.push([]);
    for (let i = 0; i < repeat; i++) rows.push(cells);
  }
  return rows;
}

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
const escapeXml = (text: string) => text.replace(/[&<>"]/g, (c) => XML_ESCAPES[c]!);

/** A minimal OpenDocument spreadsheet: mimetype (stored, first), manifest, content. */
async function writeOds(file: string, rows: Row[]): Promise<void> {
  const cell = (value: unknown) => {
    if (typeof value === 'number' && Number.isFinite(value)) return `<table:table-cell office:value-type="float" office:value="${value}"><text:p>${value}</text:p></table:table-cell>`;
    if (typeof value === 'boolean') return `<table:table-cell office:value-type="boolean" office:boolean-value="${value}"><text:p>${value ? 'TRUE' : 'FALSE'}</text:p></table:table-cell>`;
    const text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
    return text === '' ? '<table:table-cell/>' : `<table:table-cell office:value-type="string"><text:p>${escapeXml(text)}</text:p></table:table-cell>`;
  };
  const body = rows.map((row) => `<table:table-row>${row.map(cell).join('')}</table:table-row>`).join('');
  const content = '<?xml version="1.0" encoding="UTF-8"?>'
    + '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3">'
    + `<office:body><office:spreadsheet><table:table table:name="Sheet1">${body}</table:table></office:spreadsheet></office:body></office:document-content>`;
  const manifest = '<?xml version="1.0" encoding="UTF-8"?>'
    + '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
    + '<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
    + '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>';
  const encode = (text: string) => new TextEncoder().encode(text);
  await fs.writeFile(file, zipSync({
    mimetype: [encode('application/vnd.oasis.opendocument.spreadsheet'), { level: 0 }],
    'META-INF/manifest.xml': encode(manifest),
    'content.xml': encode(content),
  }));
}

async function readTable(file: string, format: string, choose: SheetChoice = () => 0): Promise<Row[]> {
  if (format === 'ods') return readOds(file, choose);
  if (format === 'xlsx') {
    const bytes = await fs.readFile(file);
    try {
      return readXlsxSheet(bytes, { maxRows: MAX_ROWS, maxColumns: MAX_COLUMNS }, choose);
    } catch (error) {
      if (error instanceof ConvertdError) throw error;
      throw new InputError(`not a readable xlsx workbook (${(error as Error).message})`);
    }
  }
  const text = await readText(file);
  try {
    return parseCsv(text, {
      delimiter: format === 'tsv' ? '\t' : ',',
      relax_column_count: true,
      relax_quotes: format === 'tsv',
      quote: format === 'tsv' ? false : '"',
      skip_empty_lines: true,
    }) as Row[];
  } catch (error) {
    throw new InputError(`not valid ${format.toUpperCase()} (${(error as Error).message})`);
  }
}

const XML_PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** &lt; &gt; &amp; &quot; &apos;, &#NN; and &#xNN; as the characters they stand for; any other entity stays as written. */
function decodeXmlText(text: string): string {
  return text.replace(/&(lt|gt|amp|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, (whole, name: string) => {
    if (name[0] !== '#') return XML_PREDEFINED[name]!;
    const code = name[1] === 'x' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
    return code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) && code !== 0 ? String.fromCodePoint(code) : whole;
  });
}

async function readTree(file: string, format: string): Promise<Json> {
  if (MORE_TREES.has(format)) {
    const bytes = await fs.readFile(file);
    try {
      return readMoreTree(bytes, () => decodeText(bytes), format);
    } catch (error) {
      if (error instanceof ConvertdError) throw error;
      throw new InputError(`not valid ${format === 'properties' ? '.properties' : format.toUpperCase()} (${(error as Error).message.split('\n')[0]})`);
    }
  }
  const text = await readText(file);
  try {
    switch (format) {
      case 'json': return JSON.parse(text) as Json;
      case 'ndjson': return text.split(/\r?\n/).filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as Json);
      case 'yaml': {
        const docs = YAML.parseAllDocuments(text);
        for (const doc of docs) if (doc.errors.length) throw doc.errors[0]!;
        const values = docs.map((doc) => doc.toJS({ maxAliasCount: 1000 }) as Json);
        return values.length === 1 ? values[0]! : values;
      }
      case 'toml': return parseToml(text) as unknown as Json;
      case 'xml': {
        // Entities a DOCTYPE declares are never expanded (billion laughs, external files); the
        // five XML predefines and character references are plain text and are decoded here.
        const parser = new XMLParser({
          ignoreAttributes: false, attributeNamePrefix: '@_', processEntities: false, parseTagValue: false,
          ignoreDeclaration: true, ignorePiTags: true,
          tagValueProcessor: (_name, value) => decodeXmlText(value),
          attributeValueProcessor: (_name, value) => decodeXmlText(value),
        });
        return parser.parse(text, true) as Json;
      }
    }
  } catch (error) {
    throw new InputError(`not valid ${format.toUpperCase()} (${(error as Error).message.split('\n')[0]})`);
  }
  throw new InputError(`cannot read ${format}`);
}

function isRecord(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Table rows to records keyed by the header row. */
function rowsToRecords(rows: Row[]): Json[] {
  const [header = [], ...body] = rows;
  const keys = header.map((key, index) => (String(key ?? '').trim() || `column${index + 1}`));
  return body.map((row) => Object.fromEntries(keys.map((key, index) => [key, (row[index] ?? '') as Json])));
}

/** Flattens nested values into dotted keys. */
function flatten(value: Json, prefix: string, out: Record<string, unknown>): void {
  if (isRecord(value)) {
    const entries = Object.entries(value);
    if (entries.length === 0 && prefix) out[prefix] = '';
    for (const [key, inner] of entries) flatten(inner, prefix ? `${prefix}.${key}` : key, out);
  } else if (Array.isArray(value)) {
    if (value.length === 0 && prefix) out[prefix] = '';
    value.forEach((inner, index) => flatten(inner, prefix ? `${prefix}.${index}` : String(index), out));
  } else {
    out[prefix || 'value'] = value ?? '';
  }
}

/**
 * Where the records of a tree are: the root array; the array under a root object's only key
 * ({"people": [...]}, TOML's [[people]], XML's <people><person/>...), however deep such single
 * keys nest; otherwise the tree is one record.
 */
function recordsOf(tree: Json): Json[] {
  let node = tree;
  while (isRecord(node) && Object.keys(node).length === 1) {
    const inner = Object.values(node)[0]!;
    if (Array.isArray(inner)) return inner;
    if (!isRecord(inner)) break;
    node = inner;
  }
  return Array.isArray(tree) ? tree : [tree];
}

/**
 * When a tree is a table. Flattened (dotted columns), record-shaped data gives a table people
 * read; tree-shaped data (an API response, a configuration, a schema) gives one that is all width
 * or all holes: the twitter search result of the corpus flattens into 12,346 columns of a single
 * row. Such a tree becomes a listing instead, one row per value: (path, value). The rule:
 * - more than MAX_TABLE_COLUMNS columns: 1,024, the widest sheet every LibreOffice release opens
 *   (Calc had 1,024 columns until 7.4), far past any table read on a screen or a page; or
 * - several records filling less than MIN_TABLE_FILL of the table's cells: the records share few
 *   keys (arrays of objects with different keys), and the table would be mostly empty cells.
 */
const MAX_TABLE_COLUMNS = 1024;
const MIN_TABLE_FILL = 1 / 3;

/** A listing's header row. */
const LISTING_HEADER = ['path', 'value'] as const;

/** Records (any tree) to table rows with a header, or a (path, value) listing for a tree-shaped one (see above). */
function treeToRows(tree: Json): { rows: Row[]; listing: boolean } {
  const records = recordsOf(tree);
  const flat = records.map((record) => {
    const out: Record<string, unknown> = {};
    flatten(record, '', out);
    return out;
  });
  const columns: string[] = [];
  const seen = new Set<string>();
  let filled = 0;
  for (const record of flat) {
    const keys = Object.keys(record);
    filled += keys.length;
    for (const key of keys) if (!seen.has(key)) { seen.add(key); columns.push(key); }
  }
  const fill = filled / Math.max(1, flat.length * columns.length);
  if (columns.length > MAX_TABLE_COLUMNS || (flat.length > 1 && fill < MIN_TABLE_FILL)) {
    const paths: Record<string, unknown> = {};
    flatten(tree, '', paths);
    return { rows: [[...LISTING_HEADER], ...Object.entries(paths)], listing: true };
  }
  return { rows: [columns, ...flat.map((record) => columns.map((column) => record[column] ?? ''))], listing: false };
}

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

/** Keeps spreadsheets from running a cell as a formula (CSV injection). */
function defuse(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if (/^[=+\-@\t\r]/.test(value) && !NUMBER.test(value)) return `'${value}`;
  return value;
}

/**
 * A value as CSV or TSV text: true and false as words (csv-stringify would write 1 and an empty
 * cell, which reads back as no value at all), nested values as JSON.
 */
function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * A listing's columns in xlsx, in characters: together about the printable width of an A4 or
 * Letter page, so that LibreOffice prints (pdf, images) both columns side by side, long paths
 * and values wrapped in their cells rather than cut off.
 */
const LISTING_WIDTHS = [36, 54];

/** Points per line of wrapped text in a listing row (LibreOffice's default row is 12.8 pt); CJK faces' lines are taller. */
const LINE_HEIGHT_POINTS = { latin: 13, wide: 16 };

/**
 * A listing row's height: the lines its tallest wrapped cell needs. LibreOffice does not
 * recompute the height of rows it imports from xlsx, so a long path or value wrapped in its cell
 * was drawn over the rows below it in pdf and image outputs.
 */
function listingRowHeight(row: Row): number {
  const heights = row.map((value, index) => {
    // A column's width counts characters of about a digit's width: most Latin letters are that or
    // narrower; CJK characters and emoji take two.
    const perLine = LISTING_WIDTHS[index] ?? LISTING_WIDTHS[0]!;
    return cellText(value).split('\n').reduce((height, line) => {
      const lines = Math.max(1, Math.ceil(displayWidth(line) / perLine));
      return height + lines * (WIDE.test(line) ? LINE_HEIGHT_POINTS.wide : LINE_HEIGHT_POINTS.latin);
    }, 0);
  });
  return Math.max(LINE_HEIGHT_POINTS.latin, ...heights);
}

/** East Asian wide characters (Hangul, CJK, kana, full-width forms) and emoji. */
const WIDE = /[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6\u{1F300}-\u{1FAFF}]/u;

/** A line's width in columns: two for a wide character, one for any other. */
function displayWidth(line: string): number {
  let width = 0;
  for (const character of line) width += WIDE.test(character) ? 2 : 1;
  return width;
}

/** A table's columns in xlsx are as wide as their longest value in the first rows, within these bounds (characters). */
const COLUMN_WIDTH = { min: 8, max: 60, sampledRows: 1000 };

/**
 * Each column's width for a record table: LibreOffice prints (pdf, images) a cell's text only up to
 * the next filled cell, so at the default width of about 10 characters a longer name was cut off.
 * The first rows decide, as the streaming writer needs the widths before the first row.
 */
function columnWidths(rows: readonly Row[]): number[] {
  const widths: number[] = [];
  for (const row of rows.slice(0, COLUMN_WIDTH.sampledRows)) {
    row.forEach((value, index) => {
      const longestLine = Math.max(...cellText(value).split('\n').map((line) => line.length));
      widths[index] = Math.max(widths[index] ?? COLUMN_WIDTH.min, Math.min(COLUMN_WIDTH.max, longestLine + 2));
    });
  }
  return widths;
}

async function writeTable(file: string, format: string, rows: Row[], listing = false, delimiter = ','): Promise<void> {
  if (format === 'ods') return writeOds(file, rows);
  if (format === 'xlsx') {
    // The streaming writer keeps memory flat for hundreds of thousands of rows. Plain values
    // only: a string starting with "=" stays text in xlsx, never a formula.
    const book = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useStyles: listing, useSharedStrings: false });
    const sheet = book.addWorksheet('Sheet1');
    if (listing) {
      sheet.columns = LISTING_WIDTHS.map((width) => ({ width, style: { alignment: { wrapText: true, vertical: 'top' } } }));
    } else {
      sheet.columns = columnWidths(rows).map((width) => ({ width }));
    }
    for (const row of rows) {
      const added = sheet.addRow(row.map((value) => (value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : value)));
      if (listing) added.height = listingRowHeight(row);
      added.commit();
    }
    sheet.commit();
    await book.commit();
    return;
  }
  const safe = rows.map((row) => row.map((value) => defuse(cellText(value))));
  if (format === 'tsv') {
    // TSV (IANA text/tab-separated-values) has no quoting: a quote is a plain character, as the
    // reader above takes it, and a tab or line break cannot be inside a value: each becomes a space.
    await fs.writeFile(file, safe.map((row) => row.map((cell) => String(cell).replace(/[\t\r\n]/g, ' ')).join('\t')).join('\n') + '\n');
    return;
  }
  // A value holding the separator, a quote or a line break is quoted. The separator is one of
  // OPTIONS.delimiter's six characters (checked at submission), escaped for the class anyway.
  const quoted = delimiter === ',' ? /[",\n\r]/ : new RegExp(`["\\n\\r${delimiter.replace(/[\\^\]-]/g, '\\$&')}]`);
  await fs.writeFile(file, stringifyCsv(safe, { delimiter, quoted_match: quoted }));
}

/** TOML has no null and needs a table at the root. */
function forToml(value: Json): Json | undefined {
  if (value === null) return undefined;
  if (Array.isArray(value)) return value.map((item) => forToml(item) ?? '');
  if (isRecord(value)) {
    return Object.fromEntries(Object.entries(value).flatMap(([key, inner]) => {
      const kept = forToml(inner);
      return kept === undefined ? [] : [[key, kept]];
    }));
  }
  return value;
}

const XML_NAME = /^[A-Za-z_][\w.-]*$/;

/** Keys that are not XML element names become valid ones. */
function forXml(value: Json): Json {
  if (Array.isArray(value)) return value.map(forXml);
  if (isRecord(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => {
      const name = key.startsWith('@_') || key === '#text' || XML_NAME.test(key) ? key : `_${key.replace(/[^\w.-]/g, '_')}`;
      return [name, forXml(inner)];
    }));
  }
  return value;
}

/** Spaces per level of json, yaml and xml outputs when the client gives no `indent`. */
const DEFAULT_INDENT = 2;

async function writeTree(file: string, format: string, tree: Json, indent = DEFAULT_INDENT): Promise<void> {
  if (MORE_TREES.has(format)) {
    let bytes: Buffer;
    try {
      bytes = writeMoreTree(format, tree);
    } catch (error) {
      throw new OutputError(`the data cannot be written as ${format} (${(error as Error).message})`);
    }
    return fs.writeFile(file, bytes);
  }
  switch (format) {
    case 'json': return fs.writeFile(file, `${JSON.stringify(tree, null, indent)}\n`);
    case 'ndjson': {
      const lines = recordsOf(tree).map((item) => JSON.stringify(item));
      return fs.writeFile(file, `${lines.join('\n')}\n`);
    }
    // YAML's block style needs at least one space per level (engine.ts offers 1-8).
    case 'yaml': return fs.writeFile(file, YAML.stringify(tree, { indent: Math.max(1, indent) }));
    case 'toml': {
      const table = forToml(Array.isArray(tree) || !isRecord(tree) ? { items: tree } : tree);
      try {
        return fs.writeFile(file, `${stringifyToml(table as Record<string, unknown>)}\n`);
      } catch (error) {
        throw new OutputError(`the data cannot be written as TOML (${(error as Error).message})`);
      }
    }
    case 'xml': {
      // One root element: an array, several keys, or a single key holding an array (which XML
      // writes as repeated elements) go inside <root>.
      let root = forXml(tree);
      if (Array.isArray(root)) root = { root: { item: root } };
      else if (!isRecord(root) || Object.keys(root).length !== 1 || Array.isArray(Object.values(root)[0])) root = { root };
      const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', format: indent > 0, indentBy: ' '.repeat(indent), processEntities: true });
      return fs.writeFile(file, `<?xml version="1.0" encoding="UTF-8"?>\n${builder.build(root) as string}`);
    }
  }
  throw new OutputError(`cannot write ${format}`);
}

/** The options of one conversion, parsed and checked by the service (engine.ts declares them). */
export interface DataOptions {
  /** A workbook's sheet: its name, or its number from 1. */
  readonly sheet?: string;
  /** The csv output's separator: one of OPTIONS.delimiter's characters. */
  readonly delimiter?: string;
  /** Spaces per level of json, yaml and xml outputs; 0 compact. */
  readonly indent?: number;
}

interface DataRequest {
  readonly input: string;
  readonly output: string;
  readonly from: string;
  readonly to: string;
  readonly options?: DataOptions;
}

/**
 * The sheet the `sheet` option names among a workbook's sheets (in tab order): the sheet of that
 * name (Excel and Calc refuse two names differing only in case, so case does not matter), else
 * the sheet of that number from 1. Anything else ends the job with invalid_option, naming the
 * sheets there are: the service cannot know them before the job reads the file.
 */
function sheetChoice(wanted: string | undefined): SheetChoice {
  if (wanted === undefined) return () => 0;
  return (names) => {
    const exact = names.indexOf(wanted);
    if (exact >= 0) return exact;
    const folded = names.findIndex((name) => name.toLowerCase() === wanted.toLowerCase());
    if (folded >= 0) return folded;
    if (/^\d{1,6}$/.test(wanted) && Number(wanted) >= 1 && Number(wanted) <= names.length) return Number(wanted) - 1;
    const listed = names.slice(0, 20).map((name) => `"${name}"`).join(', ') + (names.length > 20 ? `, and ${names.length - 20} more` : '');
    throw new ConvertdError('invalid_option', `Option "sheet": the workbook has no sheet "${wanted}". Its ${names.length} sheet${names.length === 1 ? ' is' : 's are'} ${listed} (or give a number from 1 to ${names.length}).`, { option: 'sheet', reason: 'no such sheet', values: names });
  };
}

async function convertData({ input, output, from, to, options = {} }: DataRequest): Promise<void> {
  const choose = sheetChoice(options.sheet);
  try {
    if (TABLES.has(from) && TABLES.has(to)) await writeTable(output, to, await readTable(input, from, choose), false, options.delimiter);
    else if (TABLES.has(from)) await writeTree(output, to, rowsToRecords(await readTable(input, from, choose)), options.indent);
    else if (TABLES.has(to)) {
      const { rows, listing } = treeToRows(await readTree(input, from));
      await writeTable(output, to, rows, listing, options.delimiter);
    }
    else await writeTree(output, to, await readTree(input, from), options.indent);
  } catch (error) {
    if (error instanceof InputError) throw new ConvertdError('corrupt_input', `The file could not be read: ${error.message}.`);
    if (error instanceof OutputError) throw new ConvertdError('conversion_failed', `The data cannot become ${to}: ${error.message}.`);
    throw error;
  }
}

export const handlers: Handlers = {
  convert: (request) => convertData(request as unknown as DataRequest),
};
