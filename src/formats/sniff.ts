// Identifies an upload's format from its content (magic bytes) and its name's extension. The
// content wins whenever it matches a signature: a PNG named "report.docx" is a PNG. The extension
// is used only for signature-less text formats, and never to accept a file whose content says
// it is something else.
import path from 'node:path';
import { fileTypeFromFile } from 'file-type';
import { formatCatalogue, type FormatCatalogue, type FormatDefinition } from './catalogue.ts';

export interface SniffResult {
  /** The recognised format, or undefined when the service does not know it. */
  readonly format: FormatDefinition | undefined;
  /** What the content looked like, for messages ("mp3", "pdf", ...) even when unsupported. */
  readonly detected: string | undefined;
}

export async function sniffFile(file: string, filename: string, catalogue: FormatCatalogue = formatCatalogue): Promise<SniffResult> {
  const byContent = await fileTypeFromFile(file);
  if (byContent) {
    const format = catalogue.resolve(byContent.ext);
    // A signature we know of a format we do not handle: the extension must not override it.
    return { format: format?.detect === 'magic' ? format : undefined, detected: byContent.ext };
  }
  const ext = path.extname(filename).slice(1).toLowerCase();
  const byName = ext ? catalogue.resolve(ext) : undefined;
  if (byName?.detect === 'extension') return { format: byName, detected: byName.id };
  return { format: undefined, detected: undefined };
}
