// PDF with poppler: a page as an image (pdftoppm; the first, or the first of a page_range), every
// page (or those of a page_range) as images, text or one-page PDFs in a ZIP (target zip, option
// each), the text (pdftotext), and an HTML rendition of the text (pdftohtml). Poppler, not Ghostscript, reads uploaded PDFs for these: it
// runs no PostScript (docs/security.md#ghostscript-and-postscript). pdfinfo is read first (page count, page size,
// encryption), and every tool is told which pages to touch, because poppler exits 0 on "Loop in
// Pages tree" and "Bogus memory allocation size" (docs/security.md#pdf-and-poppler).
// A scanned PDF (pages that are pictures, no text layer) gives pdftotext and pdftohtml nothing to
// write: that job fails with a message saying so, rather than a blank file presented as done.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { RasterImages } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import { enumOption, firstSelectedPage, MAX_DIMENSION, narrow, numberOption, OPTIONS, pageRangeOption, pageRuns, selectPages, type OptionSpec } from '../options.ts';
import { checkPageCount, MAX_PDF_PAGES, readPageSizes, readPdfInfo, type PageSize } from '../support/pdf-info.ts';
import { pageName, writeZip } from '../support/zip-writer.ts';
import type { ConversionEdge, ConvertRequest, Engine, EngineLimits } from '../types.ts';

const PDFTOPPM = '/usr/bin/pdftoppm';
const PDFTOTEXT = '/usr/bin/pdftotext';
const PDFTOHTML = '/usr/bin/pdftohtml';
const PDFSEPARATE = '/usr/bin/pdfseparate';

/** Rendering resolution of a page image, and the longest side allowed whatever the page size. */
const RENDER_DPI = 150;
const MAX_RENDER_SIDE = 5000;

/** The job error for a PDF whose pages hold no text at all. */
const NO_TEXT_LAYER = 'This PDF has no text layer (it is scanned or made of images): send ocr=true to read its pages (OCR), or convert it to an image format.';

/** How much of an output is read at a time when looking for its first letter or digit. */
const SCAN_CHUNK = 64 * 1024;

/** pdftoppm's device per target; WebP is rendered as PNG and encoded by sharp's sandboxed processes. */
const IMAGE_TARGETS: Readonly<Record<string, string>> = { png: '-png', jpg: '-jpeg', tiff: '-tiff', webp: '-png' };

/** What each page may become in a ZIP of pages: the page images, its text, or a one-page PDF. */
const EACH_FORMATS = [...Object.keys(IMAGE_TARGETS), 'txt', 'pdf'];

const PIXEL_DENSITY = narrow(OPTIONS.pixel_density, {
  default: RENDER_DPI,
  description: `Resolution in dots per inch at which pages are rendered (default ${RENDER_DPI}; without it, a page whose longest side would pass ${MAX_RENDER_SIDE} pixels is scaled down to ${MAX_RENDER_SIDE}).`,
});

/** The options of a page image: which page, at what resolution. */
const IMAGE_OPTIONS: readonly OptionSpec[] = [
  narrow(OPTIONS.page_range, { description: 'Which page becomes the image, 1-based: the first page of the range ("3", or "3-5": page 3). Default: page 1.' }),
  PIXEL_DENSITY,
];

/** Which pages' text: also what keeps a page_range alone off Tesseract's dearer pdf → txt (its OCR). */
const TEXT_PAGES = narrow(OPTIONS.page_range, { description: 'Which pages\' text, 1-based: "2", "1-3,5", "4-" (from 4 to the end). Default: all.' });

/** The options of a ZIP of pages. */
const ZIP_OPTIONS: readonly OptionSpec[] = [
  narrow(OPTIONS.each, {
    values: EACH_FORMATS,
    default: 'png',
    description: 'What every page becomes in the ZIP (page-001.png, page-002.png, ...): png (default), jpg, tiff or webp images, its text (txt), or a one-page pdf.',
  }),
  narrow(OPTIONS.page_range, { description: 'Which pages go into the ZIP, 1-based: "2", "1-3,5", "4-" (from 4 to the end). Default: all.' }),
  PIXEL_DENSITY,
];

/** Share of a ZIP job's progress spent rendering pages; the rest is writing the ZIP. */
const RENDER_SHARE = 0.95;

const EDGES: ConversionEdge[] = [
  // A page as an image: a document's thumbnail, so also a fine last step of a longer route
  // (docx → pdf → png), but never the start of an image conversion chain. It renders the first
  // page unless given a page_range, so a route's earlier step is asked for page 1 only.
  ...Object.keys(IMAGE_TARGETS).map((to) => ({ from: 'pdf', to, cost: 2, endsRoute: true, firstPageOnly: true, options: IMAGE_OPTIONS })),
  // Every page (of a page_range) in a ZIP: after LibreOffice, every page or slide of a document.
  // A document's pages, not an image wrapped in a one-page PDF by img2pdf (every image would list
  // zip), nor a TIFF's pages OCR'd into a PDF by tesseract, or an image traced into one by potrace,
  // only to be drawn again as pictures.
  { from: 'pdf', to: 'zip', cost: 3, endsRoute: true, options: ZIP_OPTIONS, notAfter: ['img2pdf', 'tesseract', 'potrace'] },
  // An Illustrator file's first page (its PDF content, inkscape/formats.ts), drawn by the PDF
  // renderer so its embedded fonts draw as they are (issue #31). For the uploaded file only.
  { from: 'ai', to: 'png', cost: 2, chainable: false, options: IMAGE_OPTIONS },
  // Text and HTML of a PDF make sense for an uploaded PDF only: chained after an image → PDF step
  // they would be empty.
  { from: 'pdf', to: 'txt', cost: 2, chainable: false, options: [TEXT_PAGES] },
  { from: 'pdf', to: 'html', cost: 3, chainable: false },
];

export class PopplerEngine implements Engine {
  readonly id = 'poppler';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 180;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;
  private readonly images: RasterImages;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
    this.images = context.use('raster-images');
  }

  estimateSeconds(inputBytes: number, _from: string, to: string): number {
    if (to === 'zip') return 2 + inputBytes / 200_000;
    return (to === 'png' ? 1 : 0.4) + inputBytes / 2_000_000;
  }

  async probe(): Promise<void> {
    for (const tool of [PDFTOPPM, PDFTOTEXT, PDFTOHTML, PDFSEPARATE, '/usr/bin/pdfinfo']) {
      const result = await this.context.run(tool, ['-v'], { cwd: '/', timeoutMs: 10_000 });
      if (!/version/i.test(result.stderr)) throw new Error(`${tool} did not run: ${lastErrorLine(result.stderr)}`);
    }
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, to, workDir, limits, signal } = request;
    const info = await readPdfInfo(this.context.run, input, workDir, signal);
    const run = (tool: string, args: string[]) => this.context.run(tool, args, {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal,
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
    const source = `./${path.basename(input)}`;
    if (to === 'zip') return this.pagesToZip(request, info.pages);
    let result;
    if (IMAGE_TARGETS[to]) {
      const ranges = pageRangeOption(request.options);
      const page = ranges ? firstSelectedPage(ranges, info.pages) : 1;
      const size = page === 1 ? info : await this.pageSize(request, page);
      const root = to === 'webp' ? path.join(workDir, 'page') : output.slice(0, -path.extname(output).length);
      result = await this.renderPage(request, page, size, to, root, output);
    } else if (to === 'txt') {
      const ranges = pageRangeOption(request.options);
      if (!ranges) checkPageCount(info);
      // Each run of consecutive pages in turn, appended: pdftotext takes one first and last page.
      const runs = ranges ? pageRuns(selectPages(ranges, info.pages)) : [{ first: 1, last: info.pages }];
      const part = `${output}.part`;
      for (const [index, { first, last }] of runs.entries()) {
        result = await run(PDFTOTEXT, ['-enc', 'UTF-8', '-f', String(first), '-l', String(last), source, index === 0 ? output : part]);
        if (result.exitCode !== 0) break;
        if (index > 0) {
          await fs.appendFile(output, await fs.readFile(part));
          await fs.rm(part, { force: true });
        }
      }
    } else {
      checkPageCount(info);
      // -s: one complete page; -i: no image files (the result is one file); -noframes: no frameset.
      const root = output.slice(0, -path.extname(output).length);
      result = await run(PDFTOHTML, ['-q', '-s', '-i', '-noframes', '-f', '1', '-l', String(info.pages), source, root]);
    }
    if (!result || result.exitCode !== 0) {
      throw new ConvertdError('corrupt_input', `poppler could not read the PDF (${lastErrorLine(result?.stderr ?? '') || `exit ${result?.exitCode}`}).`);
    }
    if ((to === 'txt' || to === 'html') && !await holdsText(output, to === 'html')) throw new ConvertdError('conversion_failed', NO_TEXT_LAYER);
  }

  private run(request: ConvertRequest, tool: string, args: string[]) {
    const { workDir, limits, signal } = request;
    return this.context.run(tool, args, {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal,
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
  }

  private async pageSize(request: ConvertRequest, page: number): Promise<PageSize> {
    const size = (await readPageSizes(this.context.run, request.input, request.workDir, request.signal, page, page)).get(page);
    if (!size) throw new ConvertdError('corrupt_input', `Page ${page} of the PDF could not be read: check that it is a valid PDF.`);
    return size;
  }

  /**
   * Renders page `page` (of size `size`) as `to` into `output`; pdftoppm writes `<root>.png`
   * (`.jpg`, `.tif`) with -singlefile, and WebP goes through sharp from a PNG.
   */
  private async renderPage(request: ConvertRequest, page: number, size: PageSize, to: string, root: string, output: string) {
    const args = renderScale(size, numberOption(request.options, 'pixel_density'), request.limits);
    const source = `./${path.basename(request.input)}`;
    const result = await this.run(request, PDFTOPPM, [IMAGE_TARGETS[to]!, '-f', String(page), '-l', String(page), '-singlefile', ...args, source, root]);
    if (result.exitCode !== 0) return result;
    if (to === 'tiff') await fs.rename(`${root}.tif`, output);
    else if (to === 'jpg' && `${root}.jpg` !== output) await fs.rename(`${root}.jpg`, output);
    else if (to === 'png' && `${root}.png` !== output) await fs.rename(`${root}.png`, output);
    else if (to === 'webp') {
      await this.images.reencode(`${root}.png`, output, 'png', 'webp', request.limits, request.signal);
      await fs.rm(`${root}.png`, { force: true });
    }
    return result;
  }

  /**
   * Every selected page as `each` (png by default), one file at a time in the job directory (the
   * only place the sandboxed tools may write: a folder made here would be the service's, not
   * theirs), then all of them into the ZIP in page order. Bounded by the page cap (at most
   * MAX_PDF_PAGES pages), the pixel cap per page and the output cap for the files together.
   */
  private async pagesToZip(request: ConvertRequest, pageCount: number): Promise<void> {
    const { input, output, workDir, limits, signal } = request;
    const each = enumOption<string>(request.options, 'each') ?? 'png';
    const ranges = pageRangeOption(request.options);
    if (!ranges) checkPageCount({ pages: pageCount, width: 0, height: 0 });
    const pages = selectPages(ranges ?? { kind: 'pages', spans: [{ from: 1, to: undefined }] }, pageCount);
    if (pages.length > MAX_PDF_PAGES) {
      throw new ConvertdError('input_too_complex', `The range selects ${pages.length} pages; this service puts up to ${MAX_PDF_PAGES} pages in one ZIP.`);
    }
    const sizes = IMAGE_TARGETS[each] ? await readPageSizes(this.context.run, input, workDir, signal, pages[0]!, pages.at(-1)!) : undefined;
    const source = `./${path.basename(input)}`;
    const members: Array<{ name: string; file: string }> = [];
    let total = 0;
    try {
      for (const [index, page] of pages.entries()) {
        signal.throwIfAborted();
        const name = pageName('page', index + 1, pages.length, each);
        const file = path.join(workDir, `zip-${name}`);
        let result;
        if (sizes) {
          const size = sizes.get(page);
          if (!size) throw new ConvertdError('corrupt_input', `Page ${page} of the PDF could not be read: check that it is a valid PDF.`);
          result = await this.renderPage(request, page, size, each, path.join(workDir, `zip-render-${page}`), file);
        } else if (each === 'txt') {
          result = await this.run(request, PDFTOTEXT, ['-enc', 'UTF-8', '-f', String(page), '-l', String(page), source, path.basename(file)]);
        } else {
          // pdfseparate names its output from a pattern: the page number replaces %d.
          result = await this.run(request, PDFSEPARATE, ['-f', String(page), '-l', String(page), source, 'zip-one-%d.pdf']);
          if (result.exitCode === 0) await fs.rename(path.join(workDir, `zip-one-${page}.pdf`), file);
        }
        if (result.exitCode !== 0) {
          throw new ConvertdError('corrupt_input', `poppler could not read page ${page} of the PDF (${lastErrorLine(result.stderr) || `exit ${result.exitCode}`}).`);
        }
        // The pages wait on disk for the ZIP: together they may not pass the output cap either.
        total += (await fs.stat(file)).size;
        if (total > limits.maxOutputBytes) throw new ConvertdError('output_too_large');
        members.push({ name, file });
        request.onProgress(RENDER_SHARE * (index + 1) / pages.length);
      }
      await writeZip(output, members, limits.maxOutputBytes, (done) => request.onProgress(RENDER_SHARE + (1 - RENDER_SHARE) * done / members.length), signal);
    } finally {
      await Promise.all(members.map((member) => fs.rm(member.file, { force: true })));
    }
  }
}

/**
 * pdftoppm's scale arguments for a page: without a pixel_density, the page at 150 dpi with its
 * longest side at most MAX_RENDER_SIDE (as before options existed); with one, exactly that
 * resolution, refused (invalid_option) when the page would pass the pixel cap or a side the image
 * encoders take.
 */
function renderScale(size: PageSize, dpi: number | undefined, limits: EngineLimits): string[] {
  if (dpi === undefined) {
    const longest = Math.max(size.width, size.height) / 72 * RENDER_DPI;
    const side = Math.max(1, Math.min(MAX_RENDER_SIDE, Math.round(longest)));
    if (side * side > limits.maxImagePixels) throw new ConvertdError('input_too_complex', 'The page is too large to render within this service\'s pixel limit.');
    return ['-scale-to', String(side)];
  }
  const width = Math.ceil(size.width / 72 * dpi);
  const height = Math.ceil(size.height / 72 * dpi);
  if (width * height > limits.maxImagePixels || Math.max(width, height) > MAX_DIMENSION) {
    throw new ConvertdError('invalid_option', `Option "pixel_density": at ${dpi} dpi the page would be ${width} × ${height} pixels, past this service's limit of ${limits.maxImagePixels} pixels (${MAX_DIMENSION} a side); choose a lower density.`, { option: 'pixel_density', reason: 'the page would pass the pixel limit', maximum_pixels: limits.maxImagePixels });
  }
  return ['-r', String(dpi)];
}

/** Markup of pdftohtml's pages that is not text: style and script blocks, comments, tags, character references. */
const MARKUP = /<(style|script)\b[\s\S]*?<\/\1\s*>|<!--[\s\S]*?-->|<[^>]*>|&#?\w+;/gi;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/**
 * Whether `file` holds a letter or a digit anywhere: pdftotext's output of a PDF without text is
 * page breaks; pdftohtml's is a skeleton of empty pages, so there its head and its markup are
 * left out. Reads in chunks and stops at the first one found, so a long document costs little.
 */
async function holdsText(file: string, markup: boolean): Promise<boolean> {
  const handle = await fs.open(file, 'r');
  try {
    const buffer = Buffer.alloc(SCAN_CHUNK);
    const decoder = new TextDecoder('utf-8');
    let pending = '';
    let inBody = !markup;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, SCAN_CHUNK, null);
      if (bytesRead === 0) return false;
      const chunk = decoder.decode(buffer.subarray(0, bytesRead), { stream: true });
      if (!markup) {
        if (LETTER_OR_DIGIT.test(chunk)) return true;
        continue;
      }
      pending += chunk;
      if (!inBody) {
        const body = pending.search(/<body\b/i);
        // "<body" may straddle two chunks: keep the end of this one.
        if (body < 0) { pending = pending.slice(-8); continue; }
        inBody = true;
        pending = pending.slice(body);
      }
      const text = pending.replace(MARKUP, ' ');
      // What follows an unfinished tag or reference waits for the next chunk.
      const unfinished = text.search(/<|&[#\w]*$/);
      if (LETTER_OR_DIGIT.test(unfinished < 0 ? text : text.slice(0, unfinished))) return true;
      pending = unfinished < 0 ? '' : text.slice(unfinished);
    }
  } finally {
    await handle.close();
  }
}
