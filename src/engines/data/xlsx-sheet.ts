// One sheet of an xlsx workbook (the first unless the `sheet` option names another) as rows of
// plain values, for the data engine.
//
// Why not ExcelJS's streaming WorkbookReader: its zip iteration drops entries at random on
// Node >= 18 (exceljs/exceljs#3064). A LibreOffice workbook stores its sheet before its shared
// strings; when the shared strings entry was lost, cells came out as {"sharedString":0}, about
// once in 300 reads here. This reader finds the parts through the zip's central directory
// (fflate) and parses the XML with saxes, a streaming parser, so that a sheet of hundreds of MB of
// XML is never a tree in memory. saxes resolves no external entities and no DTD-defined ones.
//
// What comes out: numbers, booleans, text (shared, inline or formula strings), the cached result
// of a formula, error values as their text (#N/A), and dates (a number in a date format) as ISO
// text: 2024-05-01, or 2024-05-01T10:30:00 when there is a time of day. Empty cells are '', empty
// rows between data rows stay as empty rows, trailing ones are dropped.
import path from 'node:path';
import { unzipSync } from 'fflate';
import { SaxesParser, type SaxesTagPlain } from 'saxes';

export interface SheetLimits {
  readonly maxRows: number;
  readonly maxColumns: number;
}

const RELATIONSHIP_TYPE = {
  officeDocument: /\/officeDocument$/,
  worksheet: /\/worksheet$/,
  sharedStrings: /\/sharedStrings$/,
  styles: /\/styles$/,
};

/** Element names without their namespace prefix (some writers use x:c rather than c). */
const local = (name: string) => name.slice(name.indexOf(':') + 1);

interface XmlHandlers {
  open?(name: string, attributes: Record<string, string>): void;
  text?(text: string): void;
  close?(name: string): void;
}

/** Runs a SAX pass over UTF-8 XML bytes, in slices so that a large part is never one string. */
function parseXml(bytes: Uint8Array, handlers: XmlHandlers): void {
  const parser = new SaxesParser();
  if (handlers.open) parser.on('opentag', (tag: SaxesTagPlain) => handlers.open!(local(tag.name), tag.attributes));
  if (handlers.text) parser.on('text', handlers.text);
  if (handlers.close) parser.on('closetag', (tag: SaxesTagPlain) => handlers.close!(local(tag.name)));
  const decoder = new TextDecoder('utf-8');
  const SLICE = 1 << 20;
  for (let start = 0; start < bytes.length; start += SLICE) {
    parser.write(decoder.decode(bytes.subarray(start, start + SLICE), { stream: true }));
  }
  parser.write(decoder.decode());
  parser.close();
}

interface Relationship { readonly type: string; readonly target: string }

/** Where a part's relationships are stored: _rels/NAME.rels beside it ('' is the package). */
const relationshipsPath = (part: string) => path.posix.join(path.posix.dirname(part), '_rels', `${path.posix.basename(part)}.rels`);

/** A part's relationships, targets resolved to zip paths. */
function relationships(parts: Record<string, Uint8Array>, part: string): Map<string, Relationship> {
  const found = new Map<string, Relationship>();
  const bytes = parts[relationshipsPath(part)];
  if (!bytes) return found;
  parseXml(bytes, {
    open(name, attributes) {
      if (name !== 'Relationship' || attributes.TargetMode === 'External') return;
      const target = attributes.Target ?? '';
      const resolved = target.startsWith('/') ? target.slice(1) : path.posix.join(path.posix.dirname(part), target);
      found.set(attributes.Id ?? '', { type: attributes.Type ?? '', target: path.posix.normalize(resolved) });
    },
  });
  return found;
}

function byType(rels: Map<string, Relationship>, type: RegExp): string | undefined {
  for (const rel of rels.values()) if (type.test(rel.type)) return rel.target;
  return undefined;
}

/** Only the named parts are inflated; the central directory says where they are. */
function extract(zip: Uint8Array, names: ReadonlySet<string>): Record<string, Uint8Array> {
  return unzipSync(zip, { filter: (entry) => names.has(entry.name) });
}

/** Text of <t> elements, leaving out phonetic runs (<rPh>), for <si> and inline <is>. */
class RichText {
  private depthInPhonetic = 0;
  private inText = false;
  value = '';
  open(name: string): void {
    if (name === 'rPh') this.depthInPhonetic++;
    else if (name === 't' && this.depthInPhonetic === 0) this.inText = true;
  }
  text(text: string): void {
    if (this.inText) this.value += text;
  }
  close(name: string): void {
    if (name === 'rPh') this.depthInPhonetic--;
    else if (name === 't') this.inText = false;
  }
}

function readSharedStrings(bytes: Uint8Array | undefined): string[] {
  const strings: string[] = [];
  if (!bytes) return strings;
  let item: RichText | undefined;
  parseXml(bytes, {
    open(name) {
      if (name === 'si') item = new RichText();
      else item?.open(name);
    },
    text(text) { item?.text(text); },
    close(name) {
      if (name === 'si' && item) { strings.push(item.value); item = undefined; } else item?.close(name);
    },
  });
  return strings;
}

/** Built-in number formats that show a date (ECMA-376 part 1, 18.8.30, and the CJK ones). */
const BUILT_IN_DATE_FORMATS = new Set([14, 15, 16, 17, 22, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 50, 51, 52, 53, 54, 55, 56, 57, 58]);

/** A custom format shows a date when, outside quoted text, [colour] and escapes, it has y or d. */
function isDateFormatCode(code: string): boolean {
  const bare = code.replace(/"[^"]*"/g, '').replace(/\[[^\]]*\]/g, '').replace(/\\./g, '');
  return /[yd]/i.test(bare);
}

/** For each cell style index (the s attribute), whether it formats the number as a date. */
function readDateStyles(bytes: Uint8Array | undefined): boolean[] {
  const dateStyles: boolean[] = [];
  if (!bytes) return dateStyles;
  const customDates = new Set<number>();
  let inCellXfs = false;
  parseXml(bytes, {
    open(name, attributes) {
      if (name === 'numFmt' && isDateFormatCode(attributes.formatCode ?? '')) customDates.add(Number(attributes.numFmtId));
      else if (name === 'cellXfs') inCellXfs = true;
      else if (name === 'xf' && inCellXfs) {
        const id = Number(attributes.numFmtId ?? 0);
        dateStyles.push(BUILT_IN_DATE_FORMATS.has(id) || customDates.has(id));
      }
    },
    close(name) { if (name === 'cellXfs') inCellXfs = false; },
  });
  return dateStyles;
}

const DAY_MS = 86_400_000;

/** A serial date as ISO text. The 1900 system counts a 29 February 1900 that never was. */
function serialDate(serial: number, date1904: boolean): string {
  const days = date1904 ? serial + 1462 : serial < 61 ? serial + 1 : serial;
  const ms = Date.UTC(1899, 11, 30) + Math.round(days * 86_400) * 1000;
  const iso = new Date(ms).toISOString();
  return ms % DAY_MS === 0 ? iso.slice(0, 10) : iso.slice(0, 19);
}

/** "BC12" → 54 (zero-based). */
function columnIndex(reference: string): number {
  let index = 0;
  for (const char of reference) {
    const code = char.charCodeAt(0);
    if (code < 65 || code > 90) break;
    index = index * 26 + (code - 64);
  }
  return index - 1;
}

/**
 * Picks one of a workbook's sheets, given their names in tab order; returns its index. Throws (an
 * error of the caller's kind) when none fits.
 */
export type SheetChoice = (names: readonly string[]) => number;

const FIRST_SHEET: SheetChoice = () => 0;

/** One sheet (by default the first in the workbook's tab order) of the xlsx file given as bytes. */
export function readXlsxSheet(zip: Uint8Array, limits: SheetLimits, choose: SheetChoice = FIRST_SHEET): unknown[][] {
  const rootRels = relationships(extract(zip, new Set([relationshipsPath('')])), '');
  const workbookPath = byType(rootRels, RELATIONSHIP_TYPE.officeDocument) ?? 'xl/workbook.xml';
  const meta = extract(zip, new Set([workbookPath, relationshipsPath(workbookPath)]));
  if (!meta[workbookPath]) throw new Error('no workbook part');
  const workbookRels = relationships(meta, workbookPath);

  const sheets: Array<{ name: string; id: string | undefined }> = [];
  let date1904 = false;
  parseXml(meta[workbookPath], {
    open(name, attributes) {
      if (name === 'workbookPr') date1904 = attributes.date1904 === '1' || attributes.date1904 === 'true';
      if (name === 'sheet') {
        sheets.push({ name: attributes.name ?? '', id: Object.entries(attributes).find(([key]) => local(key) === 'id')?.[1] });
      }
    },
  });
  if (sheets.length === 0) throw new Error('the workbook lists no sheet');
  const sheetId = sheets[choose(sheets.map((sheet) => sheet.name))]?.id;
  if (sheetId === undefined) throw new Error('the sheet has no relationship');
  const sheetPath = workbookRels.get(sheetId)?.target;
  if (!sheetPath) throw new Error('the sheet has no part');
  const sharedStringsPath = byType(workbookRels, RELATIONSHIP_TYPE.sharedStrings);
  const stylesPath = byType(workbookRels, RELATIONSHIP_TYPE.styles);

  const parts = extract(zip, new Set([sheetPath, sharedStringsPath, stylesPath].filter((name) => name !== undefined)));
  const sheet = parts[sheetPath];
  if (!sheet) throw new Error(`the sheet (${sheetPath}) is missing`);
  const sharedStrings = readSharedStrings(sharedStringsPath ? parts[sharedStringsPath] : undefined);
  const dateStyles = readDateStyles(stylesPath ? parts[stylesPath] : undefined);
  return readSheet(sheet, { sharedStrings, dateStyles, date1904, limits });
}

interface SheetContext {
  readonly sharedStrings: readonly string[];
  readonly dateStyles: readonly boolean[];
  readonly date1904: boolean;
  readonly limits: SheetLimits;
}

function readSheet(bytes: Uint8Array, context: SheetContext): unknown[][] {
  const { sharedStrings, dateStyles, date1904, limits } = context;
  const rows: unknown[][] = [];
  let row: unknown[] | undefined;
  let rowNumber = 0; // one-based, as in the r attribute
  let cell: { column: number; type: string; style: number } | undefined;
  let nextColumn = 0;
  let value = '';
  let inValue = false;
  let inline: RichText | undefined;

  const cellValue = (): unknown => {
    const { type, style } = cell!;
    switch (type) {
      case 's': {
        const text = sharedStrings[Number(value)];
        if (text === undefined) throw new Error(`a cell refers to shared string ${value}, which does not exist`);
        return text;
      }
      case 'inlineStr': return inline?.value ?? '';
      case 'b': return value === '1' || value === 'true';
      case 'str': case 'e': case 'd': return value;
      default: {
        if (value.trim() === '') return '';
        const number = Number(value);
        if (!Number.isFinite(number)) return value;
        return dateStyles[style] ? serialDate(number, date1904) : number;
      }
    }
  };

  parseXml(bytes, {
    open(name, attributes) {
      if (cell) {
        if (name === 'v') { inValue = true; value = ''; } else if (name === 'is') inline = new RichText();
        else inline?.open(name);
        return;
      }
      if (name === 'row') {
        const declared = Number(attributes.r);
        rowNumber = Number.isInteger(declared) && declared > rowNumber ? declared : rowNumber + 1;
        if (rowNumber > limits.maxRows) throw new Error(`the sheet is longer than ${limits.maxRows} rows`);
        row = [];
        nextColumn = 0;
      } else if (name === 'c' && row) {
        const column = attributes.r ? columnIndex(attributes.r) : nextColumn;
        if (column < 0 || column >= limits.maxColumns) throw new Error(`the sheet is wider than ${limits.maxColumns} columns`);
        cell = { column, type: attributes.t ?? 'n', style: Number(attributes.s ?? 0) };
        nextColumn = column + 1;
        value = '';
        inline = undefined;
      }
    },
    text(text) {
      if (inValue) value += text;
      else inline?.text(text);
    },
    close(name) {
      if (name === 'v') inValue = false;
      else if (name === 'c' && cell && row) {
        const result = cellValue();
        if (result !== '') {
          while (row.length < cell.column) row.push('');
          row[cell.column] = result;
        }
        cell = undefined;
      } else if (cell) inline?.close(name);
      else if (name === 'row' && row) {
        if (row.length > 0) {
          while (rows.length < rowNumber - 1) rows.push([]);
          rows.push(row);
        }
        row = undefined;
      }
    },
  });
  return rows;
}
