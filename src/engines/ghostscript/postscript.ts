// Uploaded EPS and PostScript, read by Ghostscript: to PDF (every page, or a page_range) and to PNG
// (one page). PostScript is a program, and Ghostscript's -dSAFER, the only thing between it and the
// machine inside the OS sandbox, has a long record of escapes (docs/security.md#ghostscript-and-postscript).
// So the upload's program runs exactly once, in its own short time limit
// (CONVERTD_GHOSTSCRIPT_POSTSCRIPT_SECONDS), with its temp dir (which SAFER lets it read, list and
// write) an empty folder of its own, into a PDF through pdfwrite with a page cap; everything else
// (the page count and sizes, cutting pages, rendering) is done from that PDF, which runs nothing.
// gs exits 0 on a program that drew nothing, so the PDF must have a page with a mark on it.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import type { RunResult } from '../../process/runner.ts';
import type { RunProgram } from '../module.ts';
import { MAX_DIMENSION, narrow, numberOption, OPTIONS, pageRangeOption, pageRuns, selectPages, type OptionSpec } from '../options.ts';
import { MAX_PDF_PAGES, readPageSizes, readPdfInfo, type PageSize } from '../support/pdf-info.ts';
import type { ConversionEdge, ConvertRequest, EngineLimits } from '../types.ts';

/** How the engine runs gs: its fixed safety arguments first, then `args`, in the job directory. */
export type RunGs = (request: ConvertRequest, args: readonly string[], extra: { timeoutMs: number; env?: Record<string, string>; onStderrLine?: (line: string) => void }) => Promise<RunResult>;

/** Rendering resolution of a page without pixel_density, and the longest side it may then have (as poppler's pages). */
const RENDER_DPI = 150;
const MAX_RENDER_SIDE = 5000;

const PIXEL_DENSITY = narrow(OPTIONS.pixel_density, {
  default: RENDER_DPI,
  description: `Resolution in dots per inch at which the page is rendered (default ${RENDER_DPI}; without it, a page whose longest side would pass ${MAX_RENDER_SIDE} pixels is scaled down to ${MAX_RENDER_SIDE}).`,
});
const IMAGE_OPTIONS: readonly OptionSpec[] = [
  narrow(OPTIONS.page_range, { description: 'Which page becomes the image, 1-based: the first page of the range ("3", or "3-5": page 3). Default: page 1.' }),
  PIXEL_DENSITY,
];
const PDF_OPTIONS: readonly OptionSpec[] = [
  narrow(OPTIONS.page_range, { description: 'Which pages to keep, 1-based, in document order: "2", "1-3,5", "4-" (from 4 to the end). Default: all.' }),
];

export const POSTSCRIPT_EDGES: readonly ConversionEdge[] = [
  // The PDF keeps every page (and the drawing as vectors, text as text): what a later step (poppler's
  // page images and ZIP of pages, the PDF/A step) selects from is all there.
  { from: 'eps', to: 'pdf', cost: 3, faithful: true },
  { from: 'ps', to: 'pdf', cost: 3, faithful: true, options: PDF_OPTIONS },
  // One page as an image ends the route, as a document's page image does: an EPS logo as a PNG,
  // not on its way to an icon. An EPS keeps its transparency (nothing is drawn outside its figure);
  // a PostScript page is paper, white.
  { from: 'eps', to: 'png', cost: 3, endsRoute: true, options: [PIXEL_DENSITY] },
  { from: 'ps', to: 'png', cost: 3, endsRoute: true, firstPageOnly: true, options: IMAGE_OPTIONS },
];

/** The file SAFER refusing the program a file or a command (`%pipe%`, /etc/passwd, another directory). */
const FILE_ACCESS_DENIED = /\/invalidfileaccess\b/;
/** gs's report of a PostScript error: "Error: /undefined in foo". */
const GS_ERROR_ALL = /Error: \/\w+ in [^\n]{0,120}/g;
/** A line of the bbox device: a page's marked area in points; all zero on a blank page. */
const BOUNDING_BOX = /^%%BoundingBox:\s*(-?\d+)\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)/;

export class PostScriptReader {
  private readonly runGs: RunGs;
  private readonly run: RunProgram;
  private readonly postscriptMs: number;

  constructor(runGs: RunGs, run: RunProgram, postscriptSeconds: number) {
    this.runGs = runGs;
    this.run = run;
    this.postscriptMs = postscriptSeconds * 1000;
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { workDir, limits } = request;
    const started = performance.now();
    const left = (budget: number) => Math.max(1, Math.floor(budget - (performance.now() - started)));
    const distilled = path.join(workDir, 'distilled.pdf');
    try {
      const pages = await this.distil(request, distilled, () => left(Math.min(limits.timeoutMs, this.postscriptMs)));
      const stepLeft = () => left(limits.timeoutMs);
      if (request.to === 'pdf') await this.keepPages(request, distilled, pages, stepLeft);
      else await this.renderPage(request, distilled, pages, stepLeft);
    } finally {
      await fs.rm(distilled, { force: true });
    }
  }

  /**
   * Runs the upload's program once, into `distilled` (a PDF of at most MAX_PDF_PAGES pages), and
   * returns its page count. Throws unsafe_input when SAFER refused it a file or a command.
   */
  private async distil(request: ConvertRequest, distilled: string, postscriptLeft: () => number): Promise<number> {
    const { input, workDir, signal } = request;
    // Its temp dir, the one place SAFER lets the program read, list and write besides its output:
    // an empty folder (not the job directory, where its input and the route's other files are),
    // made by the engine's own user through the runner so that gs may write there.
    const temp = path.join(workDir, 'gs-temp');
    // A job run again after a restart finds the folder of its first attempt: emptied, not reused.
    await fs.rm(temp, { recursive: true, force: true });
    const made = await this.run('/usr/bin/mkdir', ['--', path.basename(temp)], { cwd: workDir, timeoutMs: 10_000, signal });
    if (made.exitCode !== 0) throw new Error(`mkdir ${temp} failed: ${made.stderr.trim()}`);
    try {
      const result = await this.runGs(request, [
        // gs reports a program's errors on its standard output, which the runner does not keep (a
        // program may print without end): on standard error, whose last 16 KiB it keeps.
        '-sstdout=%stderr',
        '-sDEVICE=pdfwrite',
        // Pages as the program draws them (pdfwrite would turn a page whose text runs sideways).
        '-dAutoRotatePages=/None',
        // One page past the cap, to tell a document at the cap from a longer one.
        `-dLastPage=${MAX_PDF_PAGES + 1}`,
        // An EPS's page is its bounding box, not a sheet of paper around it.
        ...(request.from === 'eps' ? ['-dEPSCrop'] : []),
        `-sOutputFile=${path.basename(distilled)}`, `./${path.basename(input)}`,
      ], { timeoutMs: postscriptLeft(), env: { TMPDIR: temp } });
      checkResult(result);
    } finally {
      await fs.rm(temp, { recursive: true, force: true });
    }
    let pages: number;
    try {
      ({ pages } = await readPdfInfo(this.run, distilled, workDir, signal));
    } catch (error) {
      if (error instanceof ConvertdError && error.code === 'corrupt_input') {
        throw new ConvertdError('corrupt_input', 'Ghostscript made no page of this PostScript: check that it is a complete PostScript or EPS file.');
      }
      throw error;
    }
    if (pages > MAX_PDF_PAGES) {
      throw new ConvertdError('input_too_complex', `The PostScript draws more than ${MAX_PDF_PAGES} pages; this service converts documents of up to ${MAX_PDF_PAGES} pages.`);
    }
    // pdfwrite always writes a page, even for a program that drew nothing (an empty file, an
    // Illustrator file without the procedures it calls): a blank result is not a conversion.
    if (!await this.drawsOnPage(request, distilled, 1, postscriptLeft) && (pages === 1 || !await this.drawsOnPage(request, distilled, pages, postscriptLeft))) {
      throw new ConvertdError('conversion_failed', 'The PostScript drew nothing on any page: it may rely on procedures or resources it does not include.');
    }
    return pages;
  }

  /** Whether any of the first `last` pages of `pdf` has a mark on it (gs's bbox device). */
  private async drawsOnPage(request: ConvertRequest, pdf: string, last: number, timeLeft: () => number): Promise<boolean> {
    let marked = false;
    const result = await this.runGs(request, ['-sDEVICE=bbox', `-dLastPage=${last}`, `./${path.basename(pdf)}`], {
      timeoutMs: timeLeft(),
      onStderrLine: (line) => {
        const box = BOUNDING_BOX.exec(line);
        if (box && box.slice(1).some((value) => value !== '0')) marked = true;
      },
    });
    checkResult(result);
    return marked;
  }

  /** The PDF as it is, or the pages of a page_range (cut by pdfwrite from the PDF, not the program). */
  private async keepPages(request: ConvertRequest, distilled: string, pages: number, timeLeft: () => number): Promise<void> {
    const ranges = pageRangeOption(request.options);
    if (!ranges) {
      await fs.rename(distilled, request.output);
      return;
    }
    const result = await this.runGs(request, [
      '-sDEVICE=pdfwrite', '-dAutoRotatePages=/None', pageListArgument(selectPages(ranges, pages)),
      `-sOutputFile=${path.basename(request.output)}`, `./${path.basename(distilled)}`,
    ], { timeoutMs: timeLeft() });
    checkResult(result);
  }

  /** One page (the first, or the first of a page_range) as a PNG: with transparency for EPS. */
  private async renderPage(request: ConvertRequest, distilled: string, pages: number, timeLeft: () => number): Promise<void> {
    const { workDir, signal, limits } = request;
    const ranges = pageRangeOption(request.options);
    const page = ranges ? selectPages(ranges, pages)[0]! : 1;
    const size = (await readPageSizes(this.run, distilled, workDir, signal, page, page)).get(page);
    if (!size) throw new ConvertdError('corrupt_input', `Page ${page} of the PostScript could not be read back.`);
    const dpi = resolution(size, numberOption(request.options, 'pixel_density'), limits);
    const result = await this.runGs(request, [
      request.from === 'eps' ? '-sDEVICE=pngalpha' : '-sDEVICE=png16m', `-r${dpi}`,
      '-dTextAlphaBits=4', '-dGraphicsAlphaBits=4', `-dFirstPage=${page}`, `-dLastPage=${page}`,
      `-sOutputFile=${path.basename(request.output)}`, `./${path.basename(distilled)}`,
    ], { timeoutMs: timeLeft() });
    checkResult(result);
  }
}

/** pdfwrite's -sPageList for the selected pages, as runs ("1-3,5") of numbers we computed. */
export function pageListArgument(pages: readonly number[]): string {
  return `-sPageList=${pageRuns(pages).map(({ first, last }) => first === last ? `${first}` : `${first}-${last}`).join(',')}`;
}

/** What a finished gs run means: a full output file, a denied file access, or a broken program. */
function checkResult(result: RunResult): void {
  // (Past the output cap gs dies of SIGXFSZ: the process runner ends such a run as output_too_large.)
  if (result.exitCode === 0) return;
  // The last report: a program may print look-alikes of its own before it fails.
  const reported = [...result.stderr.matchAll(GS_ERROR_ALL)].at(-1)?.[0];
  if (reported && FILE_ACCESS_DENIED.test(reported)) {
    throw new ConvertdError('unsafe_input', 'The PostScript tried to open a file or run a command outside itself, which this service never allows.');
  }
  throw new ConvertdError('corrupt_input', `Ghostscript could not run the PostScript (${reported ?? (result.exitCode === null ? `stopped by ${result.signal}` : `exit ${result.exitCode}`)}).`);
}

/**
 * The resolution (dpi) of a page image: without pixel_density, 150 dpi with the longest side at
 * most MAX_RENDER_SIDE pixels; with one, exactly it, refused (invalid_option) past the pixel cap or
 * a side the image encoders take.
 */
function resolution(size: PageSize, dpi: number | undefined, limits: EngineLimits): number {
  const longest = Math.max(size.width, size.height);
  if (dpi === undefined) {
    const fitted = Math.min(RENDER_DPI, MAX_RENDER_SIDE * 72 / longest);
    // Rounded down to a hundredth, so that the longest side stays within MAX_RENDER_SIDE.
    const chosen = Math.max(0.01, Math.floor(fitted * 100) / 100);
    if (Math.ceil(size.width / 72 * chosen) * Math.ceil(size.height / 72 * chosen) > limits.maxImagePixels) {
      throw new ConvertdError('input_too_complex', 'The page is too large to render within this service\'s pixel limit.');
    }
    return chosen;
  }
  const width = Math.ceil(size.width / 72 * dpi);
  const height = Math.ceil(size.height / 72 * dpi);
  if (width * height > limits.maxImagePixels || Math.max(width, height) > MAX_DIMENSION) {
    throw new ConvertdError('invalid_option', `Option "pixel_density": at ${dpi} dpi the page would be ${width} × ${height} pixels, past this service's limit of ${limits.maxImagePixels} pixels (${MAX_DIMENSION} a side); choose a lower density.`, { option: 'pixel_density', reason: 'the page would pass the pixel limit', maximum_pixels: limits.maxImagePixels });
  }
  return dpi;
}
