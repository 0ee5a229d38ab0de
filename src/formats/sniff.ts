// Identifies an upload's format from its content (magic bytes) and its name's extension. The
// content wins whenever it matches a signature: a PNG named "report.docx" is a PNG. The extension
// is used only for signature-less text formats, and never to accept a file whose content says
// it is something else.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileTypeFromBuffer, fileTypeFromFile, type FileTypeResult } from 'file-type';
import { packageKind } from './ooxml-shortcut.ts';
import { bufferSource, fileSource } from './zip-directory.ts';
import type { FormatCatalogue, FormatDefinition } from './catalogue.ts';

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
 * which may look deep, and takes longer than that to upload anyway. An Office Open XML file and an
 * Apple iWork document are recognised from the central directory first (ooxml-shortcut.ts), with a
 * few positional reads.
 */
async function identify(file: string): Promise<{ found: FileTypeResult | undefined; head: Buffer }> {
  const fd = openSync(file, 'r');
  try {
    const { size } = fstatSync(fd);
    const whole = size <= SMALL_FILE_BYTES;
    const buffer = Buffer.allocUnsafe(whole ? size : HEAD_BYTES);
    const start = buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0));
    const head = start.subarray(0, HEAD_BYTES);
    const known = await packageKind(whole ? bufferSource(start) : fileSource(fd, size));
    if (known) return { found: known, head };
    return { found: whole ? await fileTypeFromBuffer(start) : await fileTypeFromFile(file), head };
  } finally {
    closeSync(fd);
  }
}

/**
 * Variants that share a signature with a format we read but that our engines cannot decode:
 * told apart here so the client gets 415 naming them, not a job that fails later.
 */
function unsupportedVariant(head: Buffer, ext: string): string | undefined {
  // ISO-BMFF: bytes 8-11 are the major brand; "avis" is an AVIF image sequence (animated).
  if (ext === 'avif' && head.toString('latin1', 8, 12) === 'avis') return 'an animated AVIF (image sequence)';
  // "mif3" is HEIF's low-overhead layout (a `mini` box instead of `meta`), newer than the libheif
  // 1.15 here; file-type takes its unknown brand for MP4, which it is not.
  if (head.toString('latin1', 4, 8) === 'ftyp' && head.toString('latin1', 8, 12) === 'mif3') return 'a low-overhead HEIF image (brand mif3), which the HEIF decoder here cannot read';
  return undefined;
}

/**
 * Signatures file-type does not know, declared by the formats themselves (FormatDefinition.signature):
 * the first bytes decide; text formats are matched on their start, after an optional byte-order
 * mark and white space.
 */
function ownSignature(head: Buffer, catalogue: FormatCatalogue): string | undefined {
  const text = head.toString('utf8').replace(/^\uFEFF/, '').trimStart();
  return catalogue.signed.find((format) => format.signature!(head, text))?.id;
}

/**
 * Office 97-2003 files (and others) are OLE compound files (file-type says "cfb"); the streams
 * inside, which formats declare (FormatDefinition.compoundStreams), tell them apart. Their names
 * are stored in UTF-16 in the file's directory, which may sit anywhere in it, so the whole file is
 * searched (uploads are bounded).
 */
async function compoundFileKind(file: string, catalogue: FormatCatalogue, ext = ''): Promise<string | undefined> {
  const content = await fs.readFile(file);
  // A directory entry's name is followed by a UTF-16 NUL terminator. Every format whose streams
  // are there matches: an Outlook message that carries a Word file carries the Word file's stream
  // names too. The one the name says wins, else the first.
  const matching = catalogue.inCompoundFiles.filter((format) => format.compoundStreams?.some((stream) => content.includes(Buffer.from(`${stream}\0`, 'utf16le'))));
  const named = catalogue.resolve(ext);
  if (matching.length > 0) return (matching.find((format) => format.id === named?.id) ?? matching[0]!).id;
  // Taken as the format its name says, so that the job can say it is encrypted (not "unsupported").
  if (named?.encryptedInCompoundFile && content.includes(Buffer.from('EncryptedPackage\0', 'utf16le'))) return named.id;
  return undefined;
}

/**
 * The format content with `signed`'s signature is taken as: a format that shares the signature
 * and whose name the upload bears, where it says the name decides (FormatDefinition.nameDecides).
 */
function namedVariant(signed: FormatDefinition, byName: FormatDefinition | undefined): FormatDefinition {
  return byName?.nameDecides && byName.signatureOf === signed.id ? byName : signed;
}

/** Signatures too weak to overrule the name or one of our own signatures: a cursor's is 00 00 02 00,
 * which is also how every uncompressed true-colour TGA without an id field begins, and how a Works
 * for DOS (Lotus 1-2-3 1A) spreadsheet does (its BOF record; a cursor would hold 1028 images). */
const WEAK_SIGNATURES = new Set(['cur']);

/** What file-type names by the container alone, whose content one of our own signatures may place more exactly. */
const GENERIC_CONTAINERS = new Set(['zip', 'gz', 'sqlite']);

export async function sniffFile(file: string, filename: string, catalogue: FormatCatalogue): Promise<SniffResult> {
  const { found, head } = await identify(file);
  const ext = path.extname(filename).slice(1).toLowerCase();
  const byName = ext ? catalogue.resolve(ext) : undefined;
  // file-type calls any XML document "xml"; an SVG is recognised below by its root element.
  const weak = found && WEAK_SIGNATURES.has(found.ext) && (byName?.detect === 'extension' || ownSignature(head, catalogue) !== undefined);
  // file-type calls a ZIP package it does not know plain "zip", any gzip stream "gz" and any SQLite
  // database "sqlite": one our own signatures place (an Excel binary workbook by its members, an
  // SVG by its inflated root element, a GeoPackage by its application id) is that format.
  const unknownPackage = GENERIC_CONTAINERS.has(found?.ext ?? '') && ownSignature(head, catalogue) !== undefined;
  const byContent = found?.ext === 'xml' || weak || unknownPackage ? undefined : found;
  if (byContent) {
    const variant = unsupportedVariant(head, byContent.ext);
    if (variant) return { format: undefined, detected: variant };
    if (byContent.ext === 'cfb') {
      const kind = await compoundFileKind(file, catalogue, ext);
      return { format: kind ? catalogue.get(kind) : undefined, detected: kind ?? 'an OLE compound file' };
    }
    const format = catalogue.resolve(byContent.ext);
    // A signature we know of a format we do not handle: the extension must not override it.
    if (format?.detect !== 'magic') return { format: undefined, detected: byContent.ext };
    const taken = namedVariant(format, byName);
    return { format: taken, detected: taken.id };
  }
  const signed = ownSignature(head, catalogue);
  if (signed) return { format: catalogue.get(signed), detected: signed };
  if (byName?.detect === 'extension') return { format: byName, detected: byName.id };
  return { format: undefined, detected: undefined };
}

/** The format id the content alone shows, by the same signatures as uploads; for checking outputs. */
export async function formatOfContent(file: string, catalogue: FormatCatalogue): Promise<string | undefined> {
  const { found, head } = await identify(file);
  if (found?.ext === 'cfb') return compoundFileKind(file, catalogue);
  // A GeoPackage is an SQLite database that file-type does not tell from others.
  if (found?.ext === 'sqlite') return ownSignature(head, catalogue);
  if (found && found.ext !== 'xml') return catalogue.resolve(found.ext)?.id;
  return ownSignature(head, catalogue);
}
