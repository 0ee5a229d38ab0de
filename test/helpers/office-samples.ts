// Samples of the formats LibreOffice only reads (src/engines/libreoffice/import-formats.ts), made
// here without the service: LibreOffice itself writes most of them from the flat ODF samples of
// documents.ts (one soffice start, office_samples.py); the macro-enabled variants it cannot write
// are its own packages with the main part's content type changed (what Office changes between
// the two); AbiWord, Lotus 1-2-3 and OpenOffice.org 1.x files are written by hand (LibreOffice 7.4
// reads the OpenOffice.org 1.x formats but no longer writes them). Each sample carries the words of
// the flat ODF it comes from (documents.ts sampleWords).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { strFromU8, strToU8, unzipSync, zipSync, type Zippable } from 'fflate';
import { BODY, MARKER, sampleWords, TEXT_SAMPLES, TITLE } from './documents.ts';

/** What LibreOffice writes, by sample format: the flat ODF it starts from and the export filter. */
const WRITTEN: Readonly<Record<string, readonly [string, string]>> = {
  docm: ['fodt', 'MS Word 2007 XML VBA'],
  dotx: ['fodt', 'MS Word 2007 XML Template'],
  ott: ['fodt', 'writer8_template'],
  wordml: ['fodt', 'MS Word 2003 XML'],
  dot: ['fodt', 'MS Word 97 Vorlage'],
  xlsm: ['fods', 'Calc MS Excel 2007 VBA XML'],
  xltx: ['fods', 'Calc MS Excel 2007 XML Template'],
  ots: ['fods', 'calc8_template'],
  spreadsheetml: ['fods', 'MS Excel 2003 XML'],
  uos: ['fods', 'UOF spreadsheet'],
  dbf: ['fods', 'dBase'],
  slk: ['fods', 'SYLK'],
  dif: ['fods', 'DIF'],
  xlt: ['fods', 'MS Excel 97 Vorlage/Template'],
  pptm: ['fodp', 'Impress MS PowerPoint 2007 XML VBA'],
  potx: ['fodp', 'Impress MS PowerPoint 2007 XML Template'],
  autoplay: ['fodp', 'Impress MS PowerPoint 2007 XML AutoPlay'],
  otp: ['fodp', 'impress8_template'],
  uop: ['fodp', 'UOF presentation'],
  pot: ['fodp', 'MS PowerPoint 97 Vorlage'],
  otg: ['fodg', 'draw8_template'],
  emf: ['fodg', 'draw_emf_Export'],
  wmf: ['fodg', 'draw_wmf_Export'],
};

/**
 * Packages made from another that LibreOffice writes, with the main part's content type changed
 * (what tells them apart, for Office as for the sniffer): the macro-enabled variants, which
 * LibreOffice writes only for documents that have macros, and the shows, whose packages
 * LibreOffice's AutoPlay export labels as ordinary presentations.
 */
const PRESENTATION_MAIN = 'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml';
const VARIANTS: Readonly<Record<string, readonly [string, string, string]>> = {
  dotm: ['dotx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml', 'application/vnd.ms-word.template.macroEnabledTemplate.main+xml'],
  xltm: ['xltx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml', 'application/vnd.ms-excel.template.macroEnabled.main+xml'],
  potm: ['potx', 'application/vnd.openxmlformats-officedocument.presentationml.template.main+xml', 'application/vnd.ms-powerpoint.template.macroEnabled.main+xml'],
  ppsx: ['autoplay', PRESENTATION_MAIN, 'application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml'],
  ppsm: ['autoplay', PRESENTATION_MAIN, 'application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml'],
};

/** An Office package with one content type replaced in its [Content_Types].xml. */
function withContentType(data: Uint8Array, from: string, to: string): Buffer {
  const entries = unzipSync(data);
  const types = strFromU8(entries['[Content_Types].xml']!);
  if (!types.includes(from)) throw new Error(`no ${from} in the package`);
  const files: Zippable = {};
  for (const [name, bytes] of Object.entries(entries)) files[name] = name === '[Content_Types].xml' ? strToU8(types.replace(from, to)) : bytes;
  return Buffer.from(zipSync(files));
}

/** An AbiWord document: the heading and the paragraphs of the text sample. */
const ABIWORD = `<?xml version="1.0" encoding="UTF-8"?>
<abiword xmlns="http://www.abisource.com/awml.dtd" version="1.0" fileformat="1.0">
<section><p style="Heading 1">${TITLE}</p><p>${BODY}</p><p>The fish swims.</p></section>
</abiword>
`;

/** The rows of documents.ts's spreadsheet sample, as Lotus cells. */
const LOTUS_ROWS: ReadonlyArray<ReadonlyArray<string | number>> = [
  ['name', 'count', 'note'],
  [MARKER, 2, 'swims across the quiet river'],
  ['trout', 5, 'seven herons watch at dawn'],
];

/**
 * A Lotus 1-2-3 release 2 worksheet: BOF (version 0x0406), the active range, one LABEL record
 * (left-aligned text, ') or INTEGER record per cell, EOF. Format byte 0xFF: the default format.
 */
function lotusWorksheet(): Buffer {
  const record = (type: number, body: Buffer) => {
    const head = Buffer.alloc(4);
    head.writeUInt16LE(type, 0);
    head.writeUInt16LE(body.length, 2);
    return Buffer.concat([head, body]);
  };
  const cell = (column: number, row: number, size: number) => {
    const body = Buffer.alloc(5 + size);
    body[0] = 0xff;
    body.writeUInt16LE(column, 1);
    body.writeUInt16LE(row, 3);
    return body;
  };
  const records = [record(0x0000, Buffer.from([0x06, 0x04]))];
  const range = Buffer.alloc(8);
  range.writeUInt16LE(2, 4);
  range.writeUInt16LE(LOTUS_ROWS.length - 1, 6);
  records.push(record(0x0006, range));
  LOTUS_ROWS.forEach((row, r) => row.forEach((value, c) => {
    if (typeof value === 'number') {
      const body = cell(c, r, 2);
      body.writeInt16LE(value, 5);
      records.push(record(0x000d, body));
    } else {
      const text = Buffer.from(`'${value}\0`, 'latin1');
      const body = cell(c, r, text.length);
      text.copy(body, 5);
      records.push(record(0x000f, body));
    }
  }));
  records.push(record(0x0001, Buffer.alloc(0)));
  return Buffer.concat(records);
}

/** The OpenOffice.org 1.x namespaces (OpenDocument renamed them when it standardised the format). */
const OOO1_NAMESPACES = ['office', 'style', 'text', 'table', 'drawing', 'presentation']
  .map((name) => `xmlns:${name === 'drawing' ? 'draw' : name}="http://openoffice.org/2000/${name}"`).join(' ')
  + ' xmlns:fo="http://www.w3.org/1999/XSL/Format" xmlns:svg="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"';

/** The OpenOffice.org 1.x samples: the media type, the flat ODF they restate, and its office:class. */
const OOO1: Readonly<Record<string, readonly [string, string, string]>> = {
  sxw: ['application/vnd.sun.xml.writer', 'fodt', 'text'],
  stw: ['application/vnd.sun.xml.writer.template', 'fodt', 'text'],
  sxc: ['application/vnd.sun.xml.calc', 'fods', 'spreadsheet'],
  stc: ['application/vnd.sun.xml.calc.template', 'fods', 'spreadsheet'],
  sxi: ['application/vnd.sun.xml.impress', 'fodp', 'presentation'],
  sxd: ['application/vnd.sun.xml.draw', 'fodg', 'drawing'],
};

/**
 * An OpenOffice.org 1.x package restating a flat ODF sample's body in the 1.x vocabulary: the
 * body's content sits in office:body itself (the kind is office:class), headings have text:level,
 * cell values are table: attributes, and a text box is a shape of its own (no draw:frame). The
 * mimetype member comes first and uncompressed, as OpenOffice.org wrote it.
 */
function openOffice1Package(format: string): Buffer {
  const [mediaType, flat, kind] = OOO1[format]!;
  const body = /<office:body>\s*<office:\w+>([\s\S]*)<\/office:\w+>\s*<\/office:body>/.exec(TEXT_SAMPLES[flat]!)![1]!
    .replaceAll('text:outline-level=', 'text:level=')
    .replaceAll('office:value-type=', 'table:value-type=').replaceAll('office:value=', 'table:value=')
    .replace(/<draw:frame( [^>]*)><draw:text-box>/g, '<draw:text-box$1>').replaceAll('</draw:text-box></draw:frame>', '</draw:text-box>');
  const content = `<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content ${OOO1_NAMESPACES} office:class="${kind}" office:version="1.0"><office:body>${body}</office:body></office:document-content>`;
  const manifest = `<?xml version="1.0" encoding="UTF-8"?>\n<manifest:manifest xmlns:manifest="http://openoffice.org/2001/manifest"><manifest:file-entry manifest:media-type="${mediaType}" manifest:full-path="/"/><manifest:file-entry manifest:media-type="text/xml" manifest:full-path="content.xml"/></manifest:manifest>`;
  return Buffer.from(zipSync({
    mimetype: [strToU8(mediaType), { level: 0 }],
    'content.xml': strToU8(content),
    'META-INF/manifest.xml': strToU8(manifest),
  }));
}

/** The flat ODF each sample comes from: its words are the sample's. */
export const ORIGIN: Readonly<Record<string, string>> = {
  ...Object.fromEntries(Object.entries(WRITTEN).map(([format, [source]]) => [format, source])),
  ...Object.fromEntries(Object.entries(VARIANTS).map(([format, [base]]) => [format, WRITTEN[base]![0]])),
  ...Object.fromEntries(Object.entries(OOO1).map(([format, [, source]]) => [format, source])),
  abw: 'fodt', wk1: 'fods', fodg: 'fodg',
};

/** The words a reader sees in a sample. */
export function officeSampleWords(format: string): readonly string[] {
  return sampleWords(ORIGIN[format] ?? format);
}

/** Every sample, by format id (dot, xlt and pot are Office 97-2003 templates: files of doc, xls and ppt). */
export async function officeSamples(): Promise<Record<string, Buffer>> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'convertd-office-'));
  try {
    for (const flat of ['fodt', 'fods', 'fodp', 'fodg']) await fs.writeFile(path.join(dir, `sample.${flat}`), TEXT_SAMPLES[flat]!);
    const jobs = Object.entries(WRITTEN).map(([format, [source, filter]]) => [path.join(dir, `sample.${source}`), filter, path.join(dir, `out.${format}`)]);
    const { VIPSHOME: _vipsHome, ...env } = process.env;
    execFileSync('/usr/bin/python3', [path.resolve(import.meta.dirname, 'office_samples.py'), dir], { input: JSON.stringify(jobs), env, stdio: ['pipe', 'pipe', 'pipe'], timeout: 300_000 });
    const written: Record<string, Buffer> = {};
    for (const format of Object.keys(WRITTEN)) written[format] = await fs.readFile(path.join(dir, `out.${format}`));
    const { autoplay: _autoplay, ...samples } = written;
    for (const [format, [base, from, to]] of Object.entries(VARIANTS)) samples[format] = withContentType(written[base]!, from, to);
    samples.abw = Buffer.from(ABIWORD);
    samples.wk1 = lotusWorksheet();
    samples.fodg = Buffer.from(TEXT_SAMPLES.fodg!);
    for (const format of Object.keys(OOO1)) samples[format] = openOffice1Package(format);
    return samples;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
