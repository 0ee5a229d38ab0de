// PDF with poppler: the first page as an image (pdftoppm), the text (pdftotext), and an HTML
// rendition of the text (pdftohtml). Poppler, not Ghostscript, reads uploaded PDFs for these: it
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
import { checkPageCount, readPdfInfo } from '../support/pdf-info.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const PDFTOPPM = '/usr/bin/pdftoppm';
const PDFTOTEXT = '/usr/bin/pdftotext';
const PDFTOHTML = '/usr/bin/pdftohtml';

/** Rendering resolution of a page image, and the longest side allowed whatever the page size. */
const RENDER_DPI = 150;
const MAX_RENDER_SIDE = 5000;

/** The job error for a PDF whose pages hold no text at all. */
const NO_TEXT_LAYER = 'This PDF has no text layer (it is scanned or made of images): convert it to an image format, or to text once OCR is available.';

/** How much of an output is read at a time when looking for its first letter or digit. */
const SCAN_CHUNK = 64 * 1024;

/** pdftoppm's device per target; WebP is rendered as PNG and encoded by sharp's sandboxed processes. */
const IMAGE_TARGETS: Readonly<Record<string, string>> = { png: '-png', jpg: '-jpeg', tiff: '-tiff', webp: '-png' };

const EDGES: ConversionEdge[] = [
  // The first page as an image: a document's thumbnail, so also a fine last step of a longer
  // route (docx → pdf → png), but never the start of an image conversion chain.
  ...Object.keys(IMAGE_TARGETS).map((to) => ({ from: 'pdf', to, cost: 2, endsRoute: true })),
  // Text and HTML of a PDF make sense for an uploaded PDF only: chained after an image → PDF step
  // they would be empty.
  { from: 'pdf', to: 'txt', cost: 2, chainable: false },
  { from: 'pdf', to: 'html', cost: 3, chainable: false },
];

export class PopplerEngine implements Engine {
  readonly id = 'poppler';
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
    return (to === 'png' ? 1 : 0.4) + inputBytes / 2_000_000;
  }

  async probe(): Promise<void> {
    for (const tool of [PDFTOPPM, PDFTOTEXT, PDFTOHTML, '/usr/bin/pdfinfo']) {
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
    let result;
    if (IMAGE_TARGETS[to]) {
      const longest = Math.max(info.width, info.height) / 72 * RENDER_DPI;
      const side = Math.max(1, Math.min(MAX_RENDER_SIDE, Math.round(longest)));
      if (side * side > limits.maxImagePixels) throw new ConvertdError('input_too_complex', 'The page is too large to render within this service\'s pixel limit.');
      // -singlefile writes <root>.png, <root>.jpg or <root>.tif.
      const root = to === 'webp' ? path.join(workDir, 'page') : output.slice(0, -path.extname(output).length);
      result = await run(PDFTOPPM, [IMAGE_TARGETS[to]!, '-f', '1', '-l', '1', '-singlefile', '-scale-to', String(side), source, root]);
      if (to === 'tiff' && result.exitCode === 0) await fs.rename(`${root}.tif`, output);
      if (to === 'webp' && result.exitCode === 0) {
        await this.images.reencode(`${root}.png`, output, 'png', 'webp', limits, signal);
        await fs.rm(`${root}.png`, { force: true });
      }
    } else if (to === 'txt') {
      checkPageCount(info);
      result = await run(PDFTOTEXT, ['-enc', 'UTF-8', '-f', '1', '-l', String(info.pages), source, output]);
    } else {
      checkPageCount(info);
      // -s: one complete page; -i: no image files (the result is one file); -noframes: no frameset.
      const root = output.slice(0, -path.extname(output).length);
      result = await run(PDFTOHTML, ['-q', '-s', '-i', '-noframes', '-f', '1', '-l', String(info.pages), source, root]);
    }
    if (result.exitCode !== 0) {
      throw new ConvertdError('corrupt_input', `poppler could not read the PDF (${lastErrorLine(result.stderr) || `exit ${result.exitCode}`}).`);
    }
    if ((to === 'txt' || to === 'html') && !await holdsText(output, to === 'html')) throw new ConvertdError('conversion_failed', NO_TEXT_LAYER);
  }
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
