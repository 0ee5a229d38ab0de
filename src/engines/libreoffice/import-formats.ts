// The formats LibreOffice only reads (issue #30): templates and macro-enabled variants of the
// Office and OpenDocument formats, older and foreign office formats, and drawings and metafiles.
// Each is read by one family (engine.ts IMPORTS) and converted to that family's common targets
// only. How each is recognised is said beside it; the real files of the shared corpus were
// checked against every signature (test/office-formats.test.ts).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/**
 * The member names of a ZIP archive's first local headers, walked in the bytes the sniffer sees
 * (an entry whose sizes come after its data ends the walk: its end cannot be found from here).
 */
export function zipMemberNames(head: Buffer): string[] {
  const names: string[] = [];
  let at = 0;
  while (at + 30 <= head.length && head.readUInt32LE(at) === 0x04034b50) {
    const flags = head.readUInt16LE(at + 6);
    const nameLength = head.readUInt16LE(at + 26);
    if (at + 30 + nameLength > head.length) break;
    names.push(head.toString('latin1', at + 30, at + 30 + nameLength));
    if (flags & 0x08) break; // a data descriptor: the compressed size is not in this header
    at += 30 + nameLength + head.readUInt16LE(at + 28) + head.readUInt32LE(at + 18);
  }
  return names;
}

/**
 * An Excel binary workbook (xlsb): an Office package whose workbook part is xl/workbook.bin.
 * file-type calls it a plain ZIP (its content type has no "+xml"), so the members decide. Excel
 * writes [Content_Types].xml, the relationships and then the workbook part first, each with its
 * sizes in its header: the shared corpus's files all show it within their first 2 KB.
 */
export function isExcelBinary(head: Buffer): boolean {
  return zipMemberNames(head).includes('xl/workbook.bin');
}

/**
 * A dBASE table: a version byte LibreOffice's dBASE driver knows, a last-update date, then a
 * header length that is 32 bytes, 32 per field and a terminator 0x0D (dBASE III-5; Visual FoxPro
 * adds a 263-byte backlink area) and a record length of at least one byte (the deletion flag).
 * The terminator is checked where the header length puts it.
 */
const DBASE_VERSIONS = new Set([0x02, 0x03, 0x04, 0x05, 0x30, 0x31, 0x32, 0x43, 0x63, 0x83, 0x8b, 0x8e, 0xcb, 0xf5, 0xfb]);
export function isDbase(head: Buffer): boolean {
  if (head.length < 33 || !DBASE_VERSIONS.has(head[0]!)) return false;
  const [month, day] = [head[2]!, head[3]!];
  if (month < 1 || month > 12 || day < 1 || day > 31) return false;
  const headerLength = head.readUInt16LE(8);
  const recordLength = head.readUInt16LE(10);
  if (recordLength < 2) return false;
  const fieldsBytes = headerLength - 33 - ((head[0]! & 0xf0) === 0x30 ? 263 : 0);
  if (fieldsBytes < 32 || fieldsBytes % 32 !== 0) return false;
  // The terminator follows the last field descriptor; past the head, the shape above must do.
  const terminator = 32 + fieldsBytes;
  return terminator >= head.length || head[terminator] === 0x0d;
}

/**
 * A Lotus 1-2-3 worksheet: Lotus records (type, length, body; little-endian) opening with a BOF
 * record 0x0000 whose body gives the file's release. Release 2 (WK1) writes a two-byte body
 * 0x0406; releases 3 to Millennium (WK3, WK4, 123) a 26-byte body from 0x1000 to 0x1005. Works
 * and 1-2-3 release 1A (body 0x0404) are the wks format's.
 */
export function isLotusWorksheet(head: Buffer): boolean {
  if (head.length < 8 || head.readUInt16LE(0) !== 0) return false;
  const length = head.readUInt16LE(2);
  const version = head.readUInt16LE(4);
  if (length === 2) return version === 0x0406 && head.length >= 10 && head.readUInt16LE(6) <= 0xff;
  return length === 0x1a && version >= 0x1000 && version <= 0x1005;
}

/**
 * A Computer Graphics Metafile. Binary: the first element is BEGIN METAFILE (class 0, id 1: the
 * 16-bit word 0x0020 plus a length; 31 means a long form whose length follows) holding the
 * metafile's name, and the next is METAFILE VERSION (class 1, id 1, two bytes: the word 0x1022).
 * Clear text: the BEGMF keyword.
 */
export function isCgm(head: Buffer, text: string): boolean {
  if (/^BEGMF\b/i.test(text)) return true;
  if (head.length < 8 || (head.readUInt16BE(0) & 0xffe0) !== 0x0020) return false;
  let length = head.readUInt16BE(0) & 0x1f;
  let at = 2;
  if (length === 31) {
    length = head.readUInt16BE(2) & 0x7fff;
    at = 4;
  }
  at += length + (length % 2);
  return at + 2 <= head.length && head.readUInt16BE(at) === 0x1022;
}

/**
 * A Windows metafile: placeable (the Aldus key 0x9AC6CDD7 first) or bare (a header of type 1 or
 * 2, nine 16-bit words long, version 0x0100 or 0x0300).
 */
export function isWindowsMetafile(head: Buffer): boolean {
  if (head.length < 18) return false;
  if (head.readUInt32LE(0) === 0x9ac6cdd7) return true;
  return [1, 2].includes(head.readUInt16LE(0)) && head.readUInt16LE(2) === 9 && [0x0100, 0x0300].includes(head.readUInt16LE(4));
}

/** An enhanced metafile: the EMR_HEADER record (type 1) with the " EMF" signature at byte 40. */
export function isEnhancedMetafile(head: Buffer): boolean {
  return head.length >= 44 && head.readUInt32LE(0) === 1 && head.toString('latin1', 40, 44) === ' EMF';
}

/** A CorelDRAW drawing: a RIFF file of form "CDR" plus a version letter or digit ("cdr" in version 3). */
export function isCorelDraw(head: Buffer): boolean {
  return head.length >= 12 && head.toString('latin1', 0, 4) === 'RIFF' && /^(CDR|cdr)[0-9A-Za-z]$/.test(head.toString('latin1', 8, 12));
}

/** An XML document of Office 2003: its processing instruction names the program (progid). */
const office2003Xml = (progid: string, root: RegExp) => (_head: Buffer, text: string) =>
  text.startsWith('<?xml') && (text.includes(`<?mso-application progid="${progid}"?>`) || root.test(text.slice(0, 2048)));

/** A Uniform Office Format (UOF 1.0, GB/T 20916) document: the uof:UOF root, whose mimetype says which kind. */
const uof = (kind: string) => (_head: Buffer, text: string) =>
  text.startsWith('<?xml') && text.includes('<uof:UOF') && text.includes(`uof:mimetype="vnd.uof.${kind}"`);

/**
 * An OpenOffice.org 1.x package (StarOffice 6/7, the XML formats before OpenDocument): a ZIP
 * whose first member is "mimetype", stored uncompressed, holding exactly `mediaType`, as in
 * OpenDocument. file-type knows only the OpenDocument media types and calls these plain "zip".
 */
export const openOffice1 = (mediaType: string) => (head: Buffer): boolean => {
  if (head.length < 30 || head.readUInt32LE(0) !== 0x04034b50 || head.readUInt16LE(8) !== 0) return false;
  const nameLength = head.readUInt16LE(26);
  if (head.toString('latin1', 30, 30 + nameLength) !== 'mimetype') return false;
  const start = 30 + nameLength + head.readUInt16LE(28);
  const size = head.readUInt32LE(18);
  return size === mediaType.length && head.toString('latin1', start, start + size) === mediaType;
};

/** The formats LibreOffice adds that it only reads. */
export const IMPORT_FORMATS: readonly FormatDefinition[] = [
  // Word: macro-enabled documents and templates, told by the main part's content type (file-type).
  { id: 'docm', name: 'Word macro-enabled document', category: 'document', mediaType: 'application/vnd.ms-word.document.macroEnabled.12', extensions: ['docm'], detect: 'magic' },
  { id: 'dotx', name: 'Word template', category: 'document', mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.template', extensions: ['dotx'], detect: 'magic' },
  { id: 'dotm', name: 'Word macro-enabled template', category: 'document', mediaType: 'application/vnd.ms-word.template.macroEnabled.12', extensions: ['dotm'], detect: 'magic' },
  { id: 'ott', name: 'OpenDocument text template', category: 'document', mediaType: 'application/vnd.oasis.opendocument.text-template', extensions: ['ott'], detect: 'magic' },
  // Word 2003 XML ("WordprocessingML"): saved as .xml, told from other XML by its progid or root element.
  { id: 'wordml', name: 'Word 2003 XML document', category: 'document', mediaType: 'application/xml', extensions: ['wordml'], detect: 'magic', signature: office2003Xml('Word.Document', /<w:wordDocument[\s>]/) },
  // AbiWord's XML: the abiword root element, with or without an XML declaration or a comment before it.
  { id: 'abw', name: 'AbiWord document', category: 'document', mediaType: 'application/x-abiword', extensions: ['abw'], detect: 'magic', signature: (_head, text) => /^(<\?xml[^>]*\?>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>]*>\s*)*<abiword[\s>]/.test(text) },
  // An OLE compound file with a MatOST stream: Microsoft Works's word processor (4 and later).
  { id: 'wps', name: 'Microsoft Works document', category: 'document', mediaType: 'application/vnd.ms-works', extensions: ['wps'], detect: 'magic', compoundStreams: ['MatOST'] },
  // Microsoft Publisher (98 to 2010): Draw reads it.
  { id: 'pub', name: 'Microsoft Publisher document', category: 'document', mediaType: 'application/vnd.ms-publisher', extensions: ['pub'], detect: 'magic', compoundStreams: ['Quill'] },
  // OpenOffice.org 1.x text document and template (their mimetype member); the Impress and Draw
  // templates (sti, std) are not here: LibreOffice 7.4 refuses to load them ("source file could not be loaded").
  { id: 'sxw', name: 'OpenOffice.org 1.x text document', category: 'document', mediaType: 'application/vnd.sun.xml.writer', extensions: ['sxw'], detect: 'magic', signature: openOffice1('application/vnd.sun.xml.writer') },
  // Apple Pages ('09 XML and the current binary format), told from Keynote and Numbers by the
  // package's members and its document's own type (src/formats/ooxml-shortcut.ts: iworkKind).
  { id: 'pages', name: 'Apple Pages document', category: 'document', mediaType: 'application/vnd.apple.pages', extensions: ['pages'], detect: 'magic' },
  { id: 'stw', name: 'OpenOffice.org 1.x text template', category: 'document', mediaType: 'application/vnd.sun.xml.writer.template', extensions: ['stw'], detect: 'magic', signature: openOffice1('application/vnd.sun.xml.writer.template') },

  // Excel: macro-enabled workbooks and templates (file-type), the binary workbook (its members).
  { id: 'xlsm', name: 'Excel macro-enabled workbook', category: 'spreadsheet', mediaType: 'application/vnd.ms-excel.sheet.macroEnabled.12', extensions: ['xlsm'], detect: 'magic' },
  { id: 'xltx', name: 'Excel template', category: 'spreadsheet', mediaType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.template', extensions: ['xltx'], detect: 'magic' },
  { id: 'xltm', name: 'Excel macro-enabled template', category: 'spreadsheet', mediaType: 'application/vnd.ms-excel.template.macroEnabled.12', extensions: ['xltm'], detect: 'magic' },
  { id: 'xlsb', name: 'Excel binary workbook', category: 'spreadsheet', mediaType: 'application/vnd.ms-excel.sheet.binary.macroEnabled.12', extensions: ['xlsb'], detect: 'magic', signature: isExcelBinary },
  { id: 'ots', name: 'OpenDocument spreadsheet template', category: 'spreadsheet', mediaType: 'application/vnd.oasis.opendocument.spreadsheet-template', extensions: ['ots'], detect: 'magic' },
  { id: 'spreadsheetml', name: 'Excel 2003 XML workbook', category: 'spreadsheet', mediaType: 'application/xml', extensions: ['spreadsheetml'], detect: 'magic', signature: office2003Xml('Excel.Sheet', /<Workbook[^>]*xmlns="urn:schemas-microsoft-com:office:spreadsheet"/) },
  { id: 'uos', name: 'Uniform Office Format spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.uof.spreadsheet', extensions: ['uos'], detect: 'magic', signature: uof('spreadsheet') },
  { id: 'dbf', name: 'dBASE table', category: 'spreadsheet', mediaType: 'application/x-dbf', extensions: ['dbf'], detect: 'magic', signature: isDbase },
  // SYLK opens with its ID record; DIF with its TABLE header item (0,1 and a quoted title follow).
  { id: 'slk', name: 'SYLK spreadsheet', category: 'spreadsheet', mediaType: 'application/x-sylk', extensions: ['slk', 'sylk'], detect: 'magic', signature: (_head, text) => /^ID;P/.test(text) },
  { id: 'dif', name: 'Data Interchange Format spreadsheet', category: 'spreadsheet', mediaType: 'text/x-dif', extensions: ['dif'], detect: 'magic', signature: (_head, text) => /^TABLE\r?\n0,1\r?\n"/.test(text) },
  { id: 'wk1', name: 'Lotus 1-2-3 worksheet', category: 'spreadsheet', mediaType: 'application/vnd.lotus-1-2-3', extensions: ['wk1', 'wk3', 'wk4', '123'], detect: 'magic', signature: isLotusWorksheet },
  { id: 'sxc', name: 'OpenOffice.org 1.x spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.sun.xml.calc', extensions: ['sxc'], detect: 'magic', signature: openOffice1('application/vnd.sun.xml.calc') },
  { id: 'numbers', name: 'Apple Numbers spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.apple.numbers', extensions: ['numbers'], detect: 'magic' },
  { id: 'stc', name: 'OpenOffice.org 1.x spreadsheet template', category: 'spreadsheet', mediaType: 'application/vnd.sun.xml.calc.template', extensions: ['stc'], detect: 'magic', signature: openOffice1('application/vnd.sun.xml.calc.template') },

  // PowerPoint: macro-enabled presentations, templates and shows (file-type).
  { id: 'pptm', name: 'PowerPoint macro-enabled presentation', category: 'presentation', mediaType: 'application/vnd.ms-powerpoint.presentation.macroEnabled.12', extensions: ['pptm'], detect: 'magic' },
  { id: 'potx', name: 'PowerPoint template', category: 'presentation', mediaType: 'application/vnd.openxmlformats-officedocument.presentationml.template', extensions: ['potx'], detect: 'magic' },
  { id: 'potm', name: 'PowerPoint macro-enabled template', category: 'presentation', mediaType: 'application/vnd.ms-powerpoint.template.macroEnabled.12', extensions: ['potm'], detect: 'magic' },
  { id: 'ppsx', name: 'PowerPoint show', category: 'presentation', mediaType: 'application/vnd.openxmlformats-officedocument.presentationml.slideshow', extensions: ['ppsx'], detect: 'magic' },
  { id: 'ppsm', name: 'PowerPoint macro-enabled show', category: 'presentation', mediaType: 'application/vnd.ms-powerpoint.slideshow.macroEnabled.12', extensions: ['ppsm'], detect: 'magic' },
  { id: 'otp', name: 'OpenDocument presentation template', category: 'presentation', mediaType: 'application/vnd.oasis.opendocument.presentation-template', extensions: ['otp'], detect: 'magic' },
  { id: 'uop', name: 'Uniform Office Format presentation', category: 'presentation', mediaType: 'application/vnd.uof.presentation', extensions: ['uop'], detect: 'magic', signature: uof('presentation') },
  { id: 'key', name: 'Apple Keynote presentation', category: 'presentation', mediaType: 'application/vnd.apple.keynote', extensions: ['key'], detect: 'magic' },
  { id: 'sxi', name: 'OpenOffice.org 1.x presentation', category: 'presentation', mediaType: 'application/vnd.sun.xml.impress', extensions: ['sxi'], detect: 'magic', signature: openOffice1('application/vnd.sun.xml.impress') },

  // Drawings and metafiles: Draw reads them (CGM: Impress).
  { id: 'vsd', name: 'Visio drawing (2003-2010)', category: 'vector', mediaType: 'application/vnd.visio', extensions: ['vsd', 'vss'], detect: 'magic', compoundStreams: ['VisioDocument'] },
  { id: 'vsdx', name: 'Visio drawing', category: 'vector', mediaType: 'application/vnd.ms-visio.drawing', extensions: ['vsdx'], detect: 'magic' },
  { id: 'otg', name: 'OpenDocument drawing template', category: 'vector', mediaType: 'application/vnd.oasis.opendocument.graphics-template', extensions: ['otg'], detect: 'magic' },
  { id: 'fodg', name: 'Flat OpenDocument drawing', category: 'vector', mediaType: 'application/vnd.oasis.opendocument.graphics-flat-xml', extensions: ['fodg'], detect: 'extension' },
  { id: 'sxd', name: 'OpenOffice.org 1.x drawing', category: 'vector', mediaType: 'application/vnd.sun.xml.draw', extensions: ['sxd'], detect: 'magic', signature: openOffice1('application/vnd.sun.xml.draw') },
  { id: 'cdr', name: 'CorelDRAW drawing', category: 'vector', mediaType: 'application/vnd.corel-draw', extensions: ['cdr'], detect: 'magic', signature: isCorelDraw },
  { id: 'cgm', name: 'Computer Graphics Metafile', category: 'vector', mediaType: 'image/cgm', extensions: ['cgm'], detect: 'magic', signature: isCgm },
  { id: 'emf', name: 'Enhanced Windows metafile', category: 'vector', mediaType: 'image/emf', extensions: ['emf'], detect: 'magic', signature: isEnhancedMetafile },
  { id: 'wmf', name: 'Windows metafile', category: 'vector', mediaType: 'image/wmf', extensions: ['wmf'], detect: 'magic', signature: isWindowsMetafile },
];
