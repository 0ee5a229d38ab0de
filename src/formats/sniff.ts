// Identifies an upload's format from its content (magic bytes) and its name's extension. The
// content wins whenever it matches a signature: a PNG named "report.docx" is a PNG. The extension
// is used only for signature-less text formats, and never to accept a file whose content says
// it is something else.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileTypeFromBuffer, fileTypeFromFile, type FileTypeResult } from 'file-type';
import { bufferSource, ooxmlKind, type ByteSource } from './ooxml-shortcut.ts';
import { formatCatalogue, type FormatCatalogue, type FormatDefinition } from './catalogue.ts';

export interface SniffResult {
  /** The recognised format, or undefined when the service does not know it. */
  readonly format: FormatDefinition | undefined;
  /** What the content looked like, for messages ("mp3", "pdf", ...) even when unsupported. */
  readonly detected: string | undefined;
}

/** Bytes of a file's start that our own signatures look at. */
const HEAD_BYTES = 8192;
/** Files up to this size are read whole and identified from memory. */
const SMALL_FILE_BYTES = 1024 * 1024;

/**
 * What file-type finds in a file, and the file's first bytes for our own signatures. A small file
 * is read at once (one synchronous read of at most 1 MiB, from the page cache right after an
 * upload or a conversion: 0.1 ms at most) and identified from memory, with the same result:
 * file-type reading the file itself makes a dozen small asynchronous reads, about 1 ms, as much as
 * the rest of a small image's job (BENCHMARKS.md, change 15). A larger file is read by file-type,
 * which may look deep, and takes longer than that to upload anyway. An Office Open XML file is
 * recognised from its central directory first (ooxml-shortcut.ts), with a few positional reads.
 */
async function identify(file: string): Promise<{ found: FileTypeResult | undefined; head: Buffer }> {
  const fd = openSync(file, 'r');
  try {
    const { size } = fstatSync(fd);
    const whole = size <= SMALL_FILE_BYTES;
    const buffer = Buffer.allocUnsafe(whole ? size : HEAD_BYTES);
    const start = buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0));
    const head = start.subarray(0, HEAD_BYTES);
    const ooxml = await ooxmlKind(whole ? bufferSource(start) : fileSource(fd, size));
    if (ooxml) return { found: ooxml, head };
    return { found: whole ? await fileTypeFromBuffer(start) : await fileTypeFromFile(file), head };
  } finally {
    closeSync(fd);
  }
}

/** Positional reads of an open file (synchronous, as above: the file was just written). */
function fileSource(fd: number, size: number): ByteSource {
  return {
    size,
    read(position, length) {
      const buffer = Buffer.allocUnsafe(Math.max(0, Math.min(length, size - position)));
      return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, position));
    },
  };
}

/**
 * Variants that share a signature with a format we read but that our engines cannot decode:
 * told apart here so the client gets 415 naming them, not a job that fails later.
 */
function unsupportedVariant(head: Buffer, ext: string): string | undefined {
  // ISO-BMFF: bytes 8-11 are the major brand; "avis" is an AVIF image sequence (animated).
  if (ext === 'avif' && head.toString('latin1', 8, 12) === 'avis') return 'an animated AVIF (image sequence)';
  return undefined;
}

/**
 * Signatures file-type does not know, for formats our engines read: the first bytes decide.
 * (Text formats are matched on their start, after an optional byte-order mark and white space.)
 */
function ownSignature(head: Buffer): string | undefined {
  const netpbm = /^P([1-6])[ \t\r\n#]/.exec(head.toString('latin1', 0, 3));
  if (netpbm) return { 1: 'pbm', 4: 'pbm', 2: 'pgm', 5: 'pgm', 3: 'ppm', 6: 'ppm' }[Number(netpbm[1])];
  if (head[0] === 0x0a && [0, 2, 3, 4, 5].includes(head[1]!) && head[2] === 1 && [1, 2, 4, 8].includes(head[3]!)) return 'pcx';
  if (head.toString('latin1', 0, 4) === 'DDS ') return 'dds';
  // WordPerfect 5 and later: FF "WPC", then the product type (1 = WordPerfect) at byte 8.
  if (head.toString('latin1', 0, 4) === '\xffWPC' && head[8] === 1) return 'wpd';
  const text = head.toString('utf8').replace(/^\uFEFF/, '').trimStart();
  if (text.startsWith('/* XPM */')) return 'xpm';
  // SVG: an XML document whose root element is <svg>, possibly after a declaration, comments and a doctype.
  if (/^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>[]*(\[[\s\S]*?\])?\s*>\s*)*<svg[\s>]/i.test(text)) return 'svg';
  return undefined;
}

/**
 * Word, Excel and PowerPoint 97-2003 files are all OLE compound files (file-type says "cfb"); the
 * streams inside tell them apart. Their names are stored in UTF-16 in the file's directory, which
 * may sit anywhere in it, so the whole file is searched (uploads are bounded).
 */
const CFB_STREAMS: ReadonlyArray<[string, string]> = [
  ['WordDocument', 'doc'], ['Workbook', 'xls'], ['Book', 'xls'], ['PowerPoint Document', 'ppt'],
];

/** What Office writes for a password-protected docx, xlsx or pptx: the package, encrypted, in an OLE file. */
const ENCRYPTED_OOXML = new Set(['docx', 'xlsx', 'pptx']);

async function compoundFileKind(file: string, ext = ''): Promise<string | undefined> {
  const content = await fs.readFile(file);
  for (const [stream, format] of CFB_STREAMS) {
    // A directory entry's name is followed by a UTF-16 NUL terminator.
    if (content.includes(Buffer.from(`${stream}\0`, 'utf16le'))) return format;
  }
  // Taken as the format its name says, so that the job can say it is encrypted (not "unsupported").
  if (ENCRYPTED_OOXML.has(ext) && content.includes(Buffer.from('EncryptedPackage\0', 'utf16le'))) return ext;
  return undefined;
}

/**
 * Kindle KF8 (azw3) and Mobipocket share the BOOKMOBI signature; the name tells what the client
 * calls it, and calibre reads both the same way.
 */
const MOBI_NAMES: Readonly<Record<string, string>> = { azw3: 'azw3', azw: 'azw3' };

/** Signatures too weak to overrule the name: a cursor's is 00 00 02 00, which is also how every
 * uncompressed true-colour TGA without an id field begins. */
const WEAK_SIGNATURES = new Set(['cur']);

export async function sniffFile(file: string, filename: string, catalogue: FormatCatalogue = formatCatalogue): Promise<SniffResult> {
  const { found, head } = await identify(file);
  const ext = path.extname(filename).slice(1).toLowerCase();
  const byName = ext ? catalogue.resolve(ext) : undefined;
  // file-type calls any XML document "xml"; an SVG is recognised below by its root element.
  const weak = found && WEAK_SIGNATURES.has(found.ext) && byName?.detect === 'extension';
  const byContent = found?.ext === 'xml' || weak ? undefined : found;
  if (byContent) {
    const variant = unsupportedVariant(head, byContent.ext);
    if (variant) return { format: undefined, detected: variant };
    // An ASF container holds Windows Media audio or video alike; only the name tells them apart,
    // and either way ffmpeg reads it the same.
    if (byContent.ext === 'asf') {
      const named = ext === 'wma' ? 'wma' : 'wmv';
      return { format: catalogue.get(named), detected: named };
    }
    if (byContent.ext === 'cfb') {
      const kind = await compoundFileKind(file, ext);
      return { format: kind ? catalogue.get(kind) : undefined, detected: kind ?? 'an OLE compound file' };
    }
    if (byContent.ext === 'mobi') {
      const named = MOBI_NAMES[ext] ?? 'mobi';
      return { format: catalogue.get(named), detected: named };
    }
    const format = catalogue.resolve(byContent.ext);
    // A signature we know of a format we do not handle: the extension must not override it.
    return { format: format?.detect === 'magic' ? format : undefined, detected: byContent.ext };
  }
  const signed = ownSignature(head);
  if (signed) return { format: catalogue.get(signed), detected: signed };
  if (byName?.detect === 'extension') return { format: byName, detected: byName.id };
  return { format: undefined, detected: undefined };
}

/** The format id the content alone shows, by the same signatures as uploads; for checking outputs. */
export async function formatOfContent(file: string, catalogue: FormatCatalogue = formatCatalogue): Promise<string | undefined> {
  const { found, head } = await identify(file);
  if (found?.ext === 'cfb') return compoundFileKind(file);
  if (found && found.ext !== 'xml') return found.ext === 'asf' ? 'wmv' : catalogue.resolve(found.ext)?.id;
  return ownSignature(head);
}
