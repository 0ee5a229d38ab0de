// The formats the libreoffice engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';
import { IMPORT_FORMATS } from './import-formats.ts';

/**
 * The BOF record of a bare Excel stream, by record type: the length its body has, and the
 * sheet types LibreOffice 7.4 reads from such a stream (checked with `soffice --convert-to csv`
 * on hand-made files, test/real-world-formats.test.ts). Excel 2.x, 3.0 and 4.0 saved worksheets
 * as a bare BIFF2, BIFF3 or BIFF4 stream (no OLE container); Excel 5 and later put the stream in
 * one, but a stream taken out of it (BIFF5 or BIFF8) is read as well. A worksheet is type 0x0010;
 * a BIFF5/8 workbook stream starts with its globals, type 0x0005. Not matched: charts (0x0020)
 * and Excel 4 macro sheets (0x0040), which LibreOffice opens as empty sheets, and Excel 4
 * workbooks (BIFF4W, 0x0100), of which a hand-made one came out as an empty sheet.
 */
const BIFF_BOF: ReadonlyMap<number, { lengths: readonly number[]; versions?: readonly number[]; types: readonly number[] }> = new Map([
  [0x0009, { lengths: [4], types: [0x0010] }], // BIFF2: version (unused), type
  [0x0209, { lengths: [6], types: [0x0010] }], // BIFF3: version (unused), type, build
  [0x0409, { lengths: [6], types: [0x0010] }], // BIFF4: the same
  // BIFF5 (8 bytes, version 0x0500) and BIFF8 (16 bytes, version 0x0600): version, type, build, year...
  [0x0809, { lengths: [8, 16], versions: [0x0500, 0x0600], types: [0x0010, 0x0005] }],
]);

/** The longest record body BIFF8 allows (BIFF2-5: 2080 bytes). */
const MAX_BIFF_RECORD = 8224;

/**
 * A bare BIFF worksheet or workbook stream: a BOF record of a known version with its exact body
 * length and a sheet type LibreOffice reads, then the header of a next record no longer than
 * BIFF8 allows. Four 16-bit fields must agree, so random binary practically never passes.
 */
export function isBiffStream(head: Buffer): boolean {
  if (head.length < 12) return false;
  const bof = BIFF_BOF.get(head.readUInt16LE(0));
  if (!bof) return false;
  const length = head.readUInt16LE(2);
  if (!bof.lengths.includes(length) || head.length < 4 + length + 4) return false;
  if (bof.versions && !bof.versions.includes(head.readUInt16LE(4))) return false;
  return bof.types.includes(head.readUInt16LE(6)) && head.readUInt16LE(4 + length + 2) <= MAX_BIFF_RECORD;
}

/**
 * A Microsoft Works spreadsheet (.wks): Lotus-style records (type, body length, body; little-endian)
 * opening with a BOF whose two-byte body is 0x0404. Works for Windows writes the BOF as record
 * 0x00FF; Works for DOS writes Lotus 1-2-3 release 1A's own BOF, record 0x0000, so a 1A worksheet
 * is taken too (LibreOffice reads both kinds from a file named .wks: the Windows one through libwps,
 * the DOS/1A one through its Lotus filter). Not matched: Lotus WK1 (version 0x0406) and later
 * releases, whose files LibreOffice reads only with their own extensions. The header of a second
 * record must follow, of a Lotus (0x00xx) or Works (0x54xx) type.
 */
export function isWorksSpreadsheet(head: Buffer): boolean {
  if (head.length < 10) return false;
  const bof = head.readUInt16LE(0);
  if ((bof !== 0x00ff && bof !== 0x0000) || head.readUInt16LE(2) !== 2 || head.readUInt16LE(4) !== 0x0404) return false;
  const next = head.readUInt16LE(6) >> 8;
  return next === 0x00 || next === 0x54;
}

/**
 * Where a Multiplan 1 worksheet (Microsoft Multiplan for DOS) keeps what the sniffer checks, as
 * libwps (LibreOffice's "Microsoft Multiplan" import) reads it: a fixed 666-byte header, the file
 * signature in its first two bytes, the sheet's extent (rows, columns; each 1-255) at 0xFA, and at
 * 0x28A eight 16-bit offsets delimiting the zones that follow the header (0x29A on). The second
 * offset ends the table of cell positions, one 16-bit entry per cell of the extent.
 */
const MULTIPLAN = { signature: 0xe708, extent: 0xfa, zones: 0x28a, header: 0x29a } as const;

/**
 * Multiplan 2 and 3 (marks 0xEC0C and 0xED0C), as libwps reads them: eight linked-file names from
 * 0x1A, the extent at 0x112 (1-4095 rows, 1-255 columns), fixed settings and column widths, then at
 * 0x3C5 the offset of the zone list (0x3C7 or later). There, after a row count, come zones of 16-bit
 * type 7-12 (12: cell data), each with its own length (6 or more, its 6-byte head included), and
 * after the cell data a 16-bit 6 opens the rows. Version 3 keeps a password hash and checksum at 22.
 */
const MULTIPLAN_LATER = { signatures: [0xec0c, 0xed0c], password: 22, extent: 0x112, zoneList: 0x3c5, header: 0x3c7 } as const;
/** How much of an upload a signature sees (the sniffer's head, catalogue.ts `signature`): shorter means the whole file. */
const HEAD_BYTES = 8192;

/** A Multiplan 2 or 3 worksheet: see MULTIPLAN_LATER and isMultiplanSheet. */
function isLaterMultiplanSheet(head: Buffer): boolean {
  if (head.length < MULTIPLAN_LATER.header) return false;
  // A password-protected file is enciphered; libwps reads one only with its password, which the
  // service has no way to ask for: left unrecognised rather than failing in LibreOffice.
  if (head.readUInt32LE(MULTIPLAN_LATER.password) !== 0) return false;
  const rows = head.readUInt16LE(MULTIPLAN_LATER.extent);
  const columns = head.readUInt16LE(MULTIPLAN_LATER.extent + 2);
  if (rows === 0 || rows > 4095 || columns === 0 || columns > 255) return false;
  const zoneList = head.readUInt16LE(MULTIPLAN_LATER.zoneList);
  // The head is the whole file when shorter than the sniffer reads; otherwise the zones may run
  // past what it sees, and those past it are left to libwps.
  const whole = head.length < HEAD_BYTES;
  if (zoneList < MULTIPLAN_LATER.header || (whole && zoneList + 20 > head.length)) return false;
  // Zones of rising type (the cell data may repeat), until the rows' mark after cell data.
  let type = 6;
  for (let at = zoneList + 2; at + 6 <= head.length;) {
    const next = head.readUInt16LE(at);
    if (next === 6 && type === 12) return true;
    if (next > 12 || (next <= type && next !== 12)) return false;
    type = next;
    const length = head.readUInt16LE(at + 4);
    if (length < 6) return false;
    at += length;
    if (at > head.length) return !whole;
  }
  return !whole;
}

/**
 * A Multiplan worksheet. Multiplan 1: the signature, an extent of 1-255 rows by 1-255 columns, and
 * zone offsets that never go back (the fifth is a length added to the fourth, the sixth restarts
 * the count: libwps reads them so) with the cell-position table exactly two bytes per cell of the
 * extent. Multiplan 2 and 3: their mark, an extent, and a chain of zone lengths that lands on the
 * rows (isLaterMultiplanSheet). A 16-bit equality and a dozen ordered fields: random binary
 * practically never passes.
 */
export function isMultiplanSheet(head: Buffer): boolean {
  if (head.length < 2) return false;
  const mark = head.readUInt16LE(0);
  if ((MULTIPLAN_LATER.signatures as readonly number[]).includes(mark)) return isLaterMultiplanSheet(head);
  if (head.length < MULTIPLAN.header || mark !== MULTIPLAN.signature) return false;
  const rows = head.readUInt16LE(MULTIPLAN.extent);
  const columns = head.readUInt16LE(MULTIPLAN.extent + 2);
  if (rows === 0 || rows > 255 || columns === 0 || columns > 255) return false;
  let last = 0;
  for (let i = 0; i < 8; i++) {
    let offset = head.readUInt16LE(MULTIPLAN.zones + 2 * i);
    if (i === 4) offset += last; // the cell data zone is given by its length
    if (i === 5) {
      last = offset; // where the shared data starts: not ordered with the zones before it
      continue;
    }
    if (offset < last) return false;
    if (i === 1 && offset - last !== 2 * rows * columns) return false;
    last = offset;
  }
  return last >= 4;
}

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  // Encrypted by Office: an OLE file holding the package; taken as docx when so named, so the job can say it is encrypted.
  { id: 'docx', name: 'Word document', category: 'document', mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', extensions: ['docx'], detect: 'magic', encryptedInCompoundFile: true },
  // Word, Excel and PowerPoint 97-2003 files are all OLE compound files; the streams inside tell them apart.
  // Their templates (dot, xlt, pot) and PowerPoint's shows (pps) are the same files, and are read as such.
  { id: 'doc', name: 'Word 97-2003 document', category: 'document', mediaType: 'application/msword', extensions: ['doc', 'dot'], detect: 'magic', compoundStreams: ['WordDocument'] },
  { id: 'odt', name: 'OpenDocument text', category: 'document', mediaType: 'application/vnd.oasis.opendocument.text', extensions: ['odt'], detect: 'magic' },
  { id: 'fodt', name: 'Flat OpenDocument text', category: 'document', mediaType: 'application/vnd.oasis.opendocument.text-flat-xml', extensions: ['fodt'], detect: 'extension' },
  { id: 'rtf', name: 'Rich Text Format', category: 'document', mediaType: 'application/rtf', extensions: ['rtf'], detect: 'magic' },
  // WordPerfect 5 and later: FF "WPC", then the product type (1 = WordPerfect) at byte 8.
  { id: 'wpd', name: 'WordPerfect document', category: 'document', mediaType: 'application/vnd.wordperfect', extensions: ['wpd', 'wp'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === '\xffWPC' && head[8] === 1 },
  { id: 'txt', name: 'Plain text', category: 'document', mediaType: 'text/plain; charset=utf-8', extensions: ['txt', 'text'], detect: 'extension' },
  // Excel 97-2003 (and Excel 5/95) workbooks are OLE files holding a Workbook (Book) stream; Excel 2.x to 4.0 wrote bare BIFF streams.
  { id: 'xls', name: 'Excel workbook (97-2003 and older)', category: 'spreadsheet', mediaType: 'application/vnd.ms-excel', extensions: ['xls', 'xlt'], detect: 'magic', compoundStreams: ['Workbook', 'Book'], signature: isBiffStream },
  // Named input.wks, LibreOffice's type detection picks its Works (libwps) or Lotus reader by the content.
  { id: 'wks', name: 'Microsoft Works spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.ms-works', extensions: ['wks'], detect: 'magic', signature: isWorksSpreadsheet },
  // Microsoft Multiplan for DOS (no registered media type); LibreOffice's type detection hands input.mp to libwps.
  { id: 'mp', name: 'Microsoft Multiplan spreadsheet', category: 'spreadsheet', mediaType: 'application/x-multiplan', extensions: ['mp'], detect: 'magic', signature: isMultiplanSheet },
  { id: 'fods', name: 'Flat OpenDocument spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.oasis.opendocument.spreadsheet-flat-xml', extensions: ['fods'], detect: 'extension' },
  { id: 'pptx', name: 'PowerPoint presentation', category: 'presentation', mediaType: 'application/vnd.openxmlformats-officedocument.presentationml.presentation', extensions: ['pptx'], detect: 'magic', encryptedInCompoundFile: true },
  { id: 'ppt', name: 'PowerPoint 97-2003 presentation', category: 'presentation', mediaType: 'application/vnd.ms-powerpoint', extensions: ['ppt', 'pps', 'pot'], detect: 'magic', compoundStreams: ['PowerPoint Document'] },
  { id: 'odp', name: 'OpenDocument presentation', category: 'presentation', mediaType: 'application/vnd.oasis.opendocument.presentation', extensions: ['odp'], detect: 'magic' },
  { id: 'fodp', name: 'Flat OpenDocument presentation', category: 'presentation', mediaType: 'application/vnd.oasis.opendocument.presentation-flat-xml', extensions: ['fodp'], detect: 'extension' },
  { id: 'odg', name: 'OpenDocument drawing', category: 'vector', mediaType: 'application/vnd.oasis.opendocument.graphics', extensions: ['odg'], detect: 'magic' },
  ...IMPORT_FORMATS,
];
