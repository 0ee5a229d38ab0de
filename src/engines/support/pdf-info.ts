// What a PDF says about itself, from poppler's pdfinfo, read before any engine renders it: a PDF
// may hold 10,000 pages, pages a kilometre wide, or be encrypted (docs/security.md#pdf-and-poppler), and the
// renderers exit 0 on all of these. Shared by the engines that read PDF (poppler, ghostscript),
// which pass in their context's process runner.
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { RunProgram } from '../module.ts';

const PDFINFO = '/usr/bin/pdfinfo';
/** The most pages a whole-document conversion (text, HTML, PDF/A) processes. */
export const MAX_PDF_PAGES = 2000;
/** The largest page accepted, in points a side (200 inches; A0 is 3370). */
const MAX_PAGE_POINTS = 14_400;

export interface PdfInfo {
  readonly pages: number;
  /** Size of the first page in points. */
  readonly width: number;
  readonly height: number;
}

/** Runs pdfinfo on `input` (through `run`, the engine's process runner) and checks what it says. */
export async function readPdfInfo(run: RunProgram, input: string, workDir: string, signal: AbortSignal): Promise<PdfInfo> {
  const result = await run(PDFINFO, ['--', input], {
    cwd: workDir, timeoutMs: 30_000, signal, captureStdout: true, limits: { addressSpaceBytes: NATIVE_ADDRESS_SPACE },
  });
  const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(result.stdout)?.[1]?.trim();
  // A PDF with only an owner password (permissions) opens without one and is converted; one that
  // needs a password to open cannot be.
  if (result.exitCode !== 0 && /incorrect password/i.test(result.stderr)) {
    throw new ConvertdError('encrypted_input', 'The PDF is protected by a password: remove the password, then send it again.');
  }
  if (result.exitCode !== 0) {
    throw new ConvertdError('corrupt_input', `The PDF could not be read (${lastErrorLine(result.stderr) || 'no detail'}): check that it is a valid PDF.`);
  }
  const pages = Number(field('Pages'));
  const size = /([\d.]+)\s*x\s*([\d.]+)\s*pts/.exec(field('Page size') ?? '');
  if (!Number.isInteger(pages) || pages < 1 || !size) {
    throw new ConvertdError('corrupt_input', 'The PDF has no readable pages: check that it is a valid PDF.');
  }
  const width = Number(size[1]);
  const height = Number(size[2]);
  if (width > MAX_PAGE_POINTS || height > MAX_PAGE_POINTS) {
    throw new ConvertdError('input_too_complex', `The PDF's first page is ${Math.round(width)} x ${Math.round(height)} points; this service renders pages up to ${MAX_PAGE_POINTS} points a side.`);
  }
  return { pages, width, height };
}

/** Refuses documents longer than whole-document conversions handle. */
export function checkPageCount(info: PdfInfo): void {
  if (info.pages > MAX_PDF_PAGES) {
    throw new ConvertdError('input_too_complex', `The PDF has ${info.pages} pages; this service converts documents of up to ${MAX_PDF_PAGES} pages.`);
  }
}

/** Size of a page in points, as pdfinfo reads it, with the page's rotation applied. */
export interface PageSize {
  readonly width: number;
  readonly height: number;
}

/**
 * The size of every page from `first` to `last` (1-based, inclusive), for engines that render pages
 * other than the first: each is checked against the same bound as the first page's in readPdfInfo,
 * since a PDF may hold one ordinary page and then one a kilometre wide.
 */
export async function readPageSizes(run: RunProgram, input: string, workDir: string, signal: AbortSignal, first: number, last: number): Promise<Map<number, PageSize>> {
  const result = await run(PDFINFO, ['-f', String(first), '-l', String(last), '--', input], {
    cwd: workDir, timeoutMs: 60_000, signal, captureStdout: true, limits: { addressSpaceBytes: NATIVE_ADDRESS_SPACE },
  });
  if (result.exitCode !== 0) {
    throw new ConvertdError('corrupt_input', `The PDF could not be read (${lastErrorLine(result.stderr) || 'no detail'}): check that it is a valid PDF.`);
  }
  const read = new Map<number, { width: number; height: number; rotation: number }>();
  for (const line of result.stdout.split('\n')) {
    const size = /^Page\s+(\d+) size:\s*([\d.]+)\s*x\s*([\d.]+)\s*pts/.exec(line);
    if (size) read.set(Number(size[1]), { width: Number(size[2]), height: Number(size[3]), rotation: 0 });
    const rotation = /^Page\s+(\d+) rot:\s*(\d+)/.exec(line);
    const page = rotation ? read.get(Number(rotation[1])) : undefined;
    if (page) page.rotation = Number(rotation![2]);
  }
  const sizes = new Map<number, PageSize>();
  for (const [page, { width, height, rotation }] of read) {
    const turned = rotation % 180 === 90;
    if (width > MAX_PAGE_POINTS || height > MAX_PAGE_POINTS) {
      throw new ConvertdError('input_too_complex', `Page ${page} of the PDF is ${Math.round(width)} x ${Math.round(height)} points; this service renders pages up to ${MAX_PAGE_POINTS} points a side.`);
    }
    sizes.set(page, turned ? { width: height, height: width } : { width, height });
  }
  return sizes;
}
