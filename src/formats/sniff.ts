// Identifies an upload's format from its content (magic bytes) and its name's extension. The
// content wins whenever it matches a signature: a PNG named "report.docx" is a PNG. The extension
// is used only for signature-less text formats, and never to accept a file whose content says
// it is something else.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileTypeFromFile } from 'file-type';
import { formatCatalogue, type FormatCatalogue, type FormatDefinition } from './catalogue.ts';

export interface SniffResult {
  /** The recognised format, or undefined when the service does not know it. */
  readonly format: FormatDefinition | undefined;
  /** What the content looked like, for messages ("mp3", "pdf", ...) even when unsupported. */
  readonly detected: string | undefined;
}

/**
 * Variants that share a signature with a format we read but that our engines cannot decode:
 * told apart here so the client gets 415 naming them, not a job that fails later.
 */
async function unsupportedVariant(file: string, ext: string): Promise<string | undefined> {
  if (ext === 'avif') {
    // ISO-BMFF: bytes 8-11 are the major brand; "avis" is an AVIF image sequence (animated).
    const handle = await fs.open(file, 'r');
    try {
      const { buffer } = await handle.read(Buffer.alloc(12), 0, 12, 0);
      if (buffer.toString('latin1', 8, 12) === 'avis') return 'an animated AVIF (image sequence)';
    } finally {
      await handle.close();
    }
  }
  return undefined;
}

export async function sniffFile(file: string, filename: string, catalogue: FormatCatalogue = formatCatalogue): Promise<SniffResult> {
  const byContent = await fileTypeFromFile(file);
  if (byContent) {
    const variant = await unsupportedVariant(file, byContent.ext);
    if (variant) return { format: undefined, detected: variant };
    // An ASF container holds Windows Media audio or video alike; only the name tells them apart,
    // and either way ffmpeg reads it the same.
    if (byContent.ext === 'asf') {
      const named = path.extname(filename).slice(1).toLowerCase() === 'wma' ? 'wma' : 'wmv';
      return { format: catalogue.get(named), detected: named };
    }
    const format = catalogue.resolve(byContent.ext);
    // A signature we know of a format we do not handle: the extension must not override it.
    return { format: format?.detect === 'magic' ? format : undefined, detected: byContent.ext };
  }
  const ext = path.extname(filename).slice(1).toLowerCase();
  const byName = ext ? catalogue.resolve(ext) : undefined;
  if (byName?.detect === 'extension') return { format: byName, detected: byName.id };
  return { format: undefined, detected: undefined };
}
