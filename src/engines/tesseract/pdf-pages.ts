// OCR of an uploaded PDF (issue #31): its pages drawn as pictures by poppler's pdftoppm, read by
// Tesseract in one run over the list of pictures, and put back together as the target asks.
//
//  - txt: the text of every selected page in order, pages ended by a form feed as pdftotext ends
//    them. A page that already has a text layer keeps it (pdftotext's) unless skip_text=false.
//  - hocr: every selected page read (a text layer has no word boxes to give).
//  - pdf (ocr=true): a searchable PDF. A page read by Tesseract becomes its picture with the text
//    invisible over it; a page with a text layer stays the page it was (pdfseparate), unless
//    skip_text=false; pdfunite joins them in order.
//
// Bounds: pdfinfo's gate (support/pdf-info.ts: pages, page size) first; at most MAX_OCR_PAGES
// pages read in one job (a page_range chooses others); each page drawn at OCR_DPI, or less where
// its picture would pass the pixel cap or MAX_OCR_SIDE pixels a side. Every program runs in the
// job's sandbox under the engine's time limit and the output cap.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE, type RunResult } from '../../process/runner.ts';
import type { RunProgram } from '../module.ts';
import { booleanOption, pageRangeOption, pageRuns, selectPages } from '../options.ts';
import { readPageSizes, readPdfInfo } from '../support/pdf-info.ts';
import type { ConvertRequest } from '../types.ts';

const PDFTOPPM = '/usr/bin/pdftoppm';
const PDFTOTEXT = '/usr/bin/pdftotext';
const PDFSEPARATE = '/usr/bin/pdfseparate';
const PDFUNITE = '/usr/bin/pdfunite';

/** The most pages one job reads: a page takes Tesseract one to a few seconds. */
export const MAX_OCR_PAGES = 300;
/** Tesseract reads print best at about 300 dpi. */
const OCR_DPI = 300;
/** The longest side of a page's picture (a poster-sized page is drawn at less than OCR_DPI). */
const MAX_OCR_SIDE = 10_000;
/** Shares of the job's progress: drawing the pages, then reading them; the rest is joining. */
const DRAW_SHARE = 0.2;
const READ_SHARE = 0.75;

/** Runs Tesseract on a list of pictures (one per line) into `<base>.<config>`; calls back at each page begun. */
export type ReadPictures = (list: string, base: string, config: string, onPage: (index: number) => void) => Promise<RunResult>;

/** What a page of an uploaded PDF becomes: read by Tesseract, or kept with its own text layer. */
interface PagePlan {
  readonly page: number;
  readonly ocr: boolean;
  /** Its own text (pdftotext's), when it is kept. */
  readonly text?: string;
}

/** Whether a page's text layer holds anything to read: a letter or a digit. */
const hasText = (text: string) => /[\p{L}\p{N}]/u.test(text);

/** Reads an uploaded PDF into `request.output` as txt, hocr or a searchable pdf. */
export async function readPdfPages(request: ConvertRequest, run: RunProgram, readPictures: ReadPictures): Promise<void> {
  const { input, output, to, workDir, limits, signal } = request;
  const runHere = (program: string, args: string[], captureStdout = false) => run(program, args, {
    cwd: workDir, timeoutMs: limits.timeoutMs, signal, captureStdout,
    limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
  });
  const checked = (result: RunResult, what: string) => {
    if (result.exitCode !== 0) throw new ConvertdError('corrupt_input', `The PDF could not be ${what} (${lastErrorLine(result.stderr) || `exit ${result.exitCode}`}): check that it is a valid PDF.`);
    return result;
  };
  const info = await readPdfInfo(run, input, workDir, signal);
  const ranges = pageRangeOption(request.options);
  if (!ranges && info.pages > MAX_OCR_PAGES) {
    throw new ConvertdError('input_too_complex', `The PDF has ${info.pages} pages; this service reads up to ${MAX_OCR_PAGES} pages of a PDF in one job: send a page_range ("1-${MAX_OCR_PAGES}", then the next pages).`);
  }
  const pages = selectPages(ranges ?? { kind: 'pages', spans: [{ from: 1, to: undefined }] }, info.pages);
  if (pages.length > MAX_OCR_PAGES) {
    throw new ConvertdError('input_too_complex', `The range selects ${pages.length} pages; this service reads up to ${MAX_OCR_PAGES} pages of a PDF in one job.`);
  }
  const source = `./${path.basename(input)}`;

  // Which pages are read: every one for hOCR or skip_text=false; otherwise those without text.
  const keepText = to !== 'hocr' && booleanOption(request.options, 'skip_text') !== false;
  const texts = new Map<number, string>();
  if (keepText) {
    for (const { first, last } of pageRuns(pages)) {
      const result = checked(await runHere(PDFTOTEXT, ['-enc', 'UTF-8', '-f', String(first), '-l', String(last), source, '-'], true), 'read');
      // pdftotext ends every page with a form feed.
      result.stdout.split('\f').slice(0, last - first + 1).forEach((text, index) => texts.set(first + index, text));
    }
  }
  const plan: PagePlan[] = pages.map((page) => {
    const text = texts.get(page) ?? '';
    return keepText && hasText(text) ? { page, ocr: false, text } : { page, ocr: true };
  });
  const toRead = plan.filter((step) => step.ocr).map((step) => step.page);

  const pictures: string[] = [];
  const base = path.join(workDir, 'ocr-out');
  const config = to === 'pdf' ? 'pdf' : to;
  try {
    if (toRead.length > 0) {
      const sizes = await readPageSizes(run, input, workDir, signal, toRead[0]!, toRead.at(-1)!);
      for (const [index, page] of toRead.entries()) {
        signal.throwIfAborted();
        const size = sizes.get(page);
        if (!size) throw new ConvertdError('corrupt_input', `Page ${page} of the PDF could not be read: check that it is a valid PDF.`);
        const root = path.join(workDir, `ocr-page-${page}`);
        checked(await runHere(PDFTOPPM, ['-gray', '-png', '-r', String(dpiFor(size, limits.maxImagePixels)), '-f', String(page), '-l', String(page), '-singlefile', source, `./${path.basename(root)}`]), `drawn (page ${page})`);
        pictures.push(`${root}.png`);
        request.onProgress(DRAW_SHARE * (index + 1) / toRead.length);
      }
      const list = path.join(workDir, 'ocr-pages.txt');
      await fs.writeFile(list, pictures.map((picture) => `./${path.basename(picture)}\n`).join(''));
      const result = await readPictures(list, base, config, (index) => request.onProgress(DRAW_SHARE + READ_SHARE * index / toRead.length));
      await fs.rm(list, { force: true });
      if (result.exitCode !== 0) {
        throw new ConvertdError('conversion_failed', `Tesseract could not read the PDF's pages (${lastErrorLine(result.stderr) || (result.exitCode === null ? `killed by ${result.signal}` : `exit ${result.exitCode}`)}).`);
      }
    }
    const written = `${base}.${config}`;
    if (to === 'hocr') return await fs.rename(written, output);
    if (to === 'txt') return await writeText(plan, toRead.length > 0 ? await fs.readFile(written, 'utf8') : '', output);
    await joinPdf(plan, source, toRead.length > 0 ? written : undefined, workDir, output, (program, args) => runHere(program, args).then((result) => checked(result, 'put together')));
  } finally {
    await Promise.all(pictures.map((picture) => fs.rm(picture, { force: true })));
    await fs.rm(`${base}.${config}`, { force: true });
  }
}

/** The resolution a page is drawn at for Tesseract: OCR_DPI, or less for a page whose picture would be too large. */
function dpiFor(size: { width: number; height: number }, maxPixels: number): number {
  const inches = { width: size.width / 72, height: size.height / 72 };
  const bySide = MAX_OCR_SIDE / Math.max(inches.width, inches.height);
  const byPixels = Math.sqrt(maxPixels / (inches.width * inches.height));
  return Math.max(1, Math.floor(Math.min(OCR_DPI, bySide, byPixels)));
}

/** The pages' text in order: Tesseract's for the pages it read (each ended by a form feed), the kept pages' own. */
async function writeText(plan: readonly PagePlan[], read: string, output: string): Promise<void> {
  const readPages = read.split('\f');
  let next = 0;
  const text = plan.map((step) => (step.ocr ? readPages[next++] ?? '' : step.text ?? '')).map((page) => `${page}\f`).join('');
  await fs.writeFile(output, text);
}

/**
 * The searchable PDF: Tesseract's PDF as it is where it read every page; otherwise each page
 * separated, from Tesseract's PDF (in order) or from the upload (a kept page), and joined.
 */
async function joinPdf(plan: readonly PagePlan[], source: string, read: string | undefined, workDir: string, output: string, runChecked: (program: string, args: string[]) => Promise<RunResult>): Promise<void> {
  if (read && plan.every((step) => step.ocr)) return fs.rename(read, output);
  const parts: string[] = [];
  try {
    if (read) await runChecked(PDFSEPARATE, [`./${path.basename(read)}`, './ocr-read-%d.pdf']);
    let next = 1;
    for (const step of plan) {
      if (step.ocr) {
        parts.push(path.join(workDir, `ocr-read-${next++}.pdf`));
      } else {
        // pdfseparate names its output from a pattern: the page number replaces %d.
        await runChecked(PDFSEPARATE, ['-f', String(step.page), '-l', String(step.page), source, './ocr-kept-%d.pdf']);
        parts.push(path.join(workDir, `ocr-kept-${step.page}.pdf`));
      }
    }
    if (parts.length === 1) return await fs.rename(parts[0]!, output);
    await runChecked(PDFUNITE, [...parts.map((part) => `./${path.basename(part)}`), `./${path.basename(output)}`]);
  } finally {
    await Promise.all(parts.map((part) => fs.rm(part, { force: true })));
  }
}
