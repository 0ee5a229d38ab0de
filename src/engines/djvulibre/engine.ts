// DjVu with DjVuLibre: every page (or those of a page_range) as a PDF or a multi-page TIFF
// (ddjvu), a page as a PNG (ddjvu's TIFF of it, encoded by sharp's sandboxed processes through
// 'raster-images'), and the text layer (djvutxt). Before any tool runs, the document's structure
// is read in-process (formats/djvu-structure.ts, also checked for every route by
// formats/input-caps.ts): a document that names other files (indirect, obsolete layouts, INCL in
// a single page) is refused, and so is one past the page cap or with a page past the pixel cap;
// then djvused counts the pages as DjVuLibre sees them, and a pixel_density is checked against
// every page (docs/security.md#djvu). A DjVu without a text layer gives djvutxt nothing: that
// job fails with a message saying so, rather than an empty file presented as done.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { checkDjvuStructure, MAX_DJVU_PAGES, readDjvuFile, type DjvuPageSize } from '../../formats/djvu-structure.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { RasterImages } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import { MAX_DIMENSION, narrow, numberOption, firstSelectedPage, OPTIONS, pageRangeOption, pageRuns, selectPages, type OptionSpec } from '../options.ts';
import type { ConversionEdge, ConvertRequest, Engine, EngineLimits } from '../types.ts';

const DDJVU = '/usr/bin/ddjvu';
const DJVUTXT = '/usr/bin/djvutxt';
const DJVUSED = '/usr/bin/djvused';

/**
 * JPEG quality of the colour and grey pages of a PDF (ddjvu -quality; bitonal pages are always
 * CCITT G4, lossless). DjVu's own colour layers are lossy wavelets already; lossless, a 300 dpi
 * colour page of 75 KB became a PDF page of 10.6 MB, at 85 one of 475 KB (measured).
 */
const PDF_QUALITY = 85;

/** The job error for a DjVu whose pages hold no text at all. */
const NO_TEXT_LAYER = 'This DjVu has no text layer (its pages are pictures only): convert it to pdf and that PDF to txt with ocr=true (OCR), or convert it to pdf, tiff or png.';

/** A tiny page for the start-up probe: 32 × 16 bitonal stripes (cjb2) and the text layer "probe" (djvused set-txt). */
const PROBE_SAMPLE = 'QVQmVEZPUk0AAABUREpWVUlORk8AAAAKACAAEBgALAEWAVNqYnoAAAANg+pJFNwLsiKc4J3EvwBUWFR6AAAAIP//0og/UkYUK7irdmMkm1g7N04K3Z25wuqzckK49nOv';

/** Share of a PDF job's progress spent rendering pages; the rest is ddjvu writing the PDF from them. */
const RENDER_SHARE = 0.9;

const PIXEL_DENSITY = narrow(OPTIONS.pixel_density, {
  description: 'Resolution in dots per inch at which pages are rendered (default: each page\'s own resolution, as scanned).',
});
const PAGES = narrow(OPTIONS.page_range, { description: 'Which pages to convert, 1-based: "2", "1-3,5", "4-" (from 4 to the end). Default: all.' });

/**
 * The PDF's resolution shapes the PDF itself (appliesAt output): on a longer route (djvu → pdf →
 * jpg) the last step that takes pixel_density, poppler's rendering, applies it.
 */
const PDF_OPTIONS: readonly OptionSpec[] = [
  PAGES,
  { ...PIXEL_DENSITY, appliesAt: 'output' },
  narrow(OPTIONS.quality, { minimum: 25, default: PDF_QUALITY, description: `JPEG quality of the colour and grey pages, 25-100 (default ${PDF_QUALITY}); black-and-white pages are stored losslessly (CCITT G4) whatever it says.` }),
];
const TIFF_OPTIONS: readonly OptionSpec[] = [PAGES, PIXEL_DENSITY];
const PNG_OPTIONS: readonly OptionSpec[] = [
  narrow(OPTIONS.page_range, { description: 'Which page becomes the image, 1-based: the first page of the range ("3", or "3-5": page 3). Default: page 1.' }),
  PIXEL_DENSITY,
];
const TXT_OPTIONS: readonly OptionSpec[] = [narrow(OPTIONS.page_range, { description: 'Whose pages\' text to keep, 1-based: "2", "1-3,5", "4-" (from 4 to the end). Default: all.' })];

const EDGES: ConversionEdge[] = [
  // The pages as pictures in a PDF: also the way on to PDF/A, JPEG and WebP pages, and a ZIP of pages.
  { from: 'djvu', to: 'pdf', cost: 3, options: PDF_OPTIONS },
  // Page pictures end a route, as poppler's do: a page is not the start of an image chain.
  { from: 'djvu', to: 'tiff', cost: 3, endsRoute: true, options: TIFF_OPTIONS },
  { from: 'djvu', to: 'png', cost: 3, endsRoute: true, firstPageOnly: true, options: PNG_OPTIONS },
  // The text layer is the upload's own (calibre's readers do not chain from it either).
  { from: 'djvu', to: 'txt', cost: 2, chainable: false, options: TXT_OPTIONS },
];

export class DjvulibreEngine implements Engine {
  readonly id = 'djvulibre';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 300;
  readonly edges = EDGES;
  /** ddjvu says which page it renders (-verbose); the text and a single page are quick. */
  readonly reportsProgress = true;
  private readonly context: EngineContext<unknown>;
  private readonly images: RasterImages;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
    this.images = context.use('raster-images');
  }

  estimateSeconds(inputBytes: number, _from: string, to: string): number {
    return (to === 'txt' ? 0.3 : 1) + inputBytes / (to === 'txt' ? 5_000_000 : 300_000);
  }

  /** Converts the embedded page with each tool; the edges whose tools worked pass. */
  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    return withScratchDir(async (dir) => {
      await fs.writeFile(path.join(dir, 'probe.djvu'), Buffer.from(PROBE_SAMPLE, 'base64'));
      const options = { cwd: dir, timeoutMs: 20_000 };
      const count = await run(DJVUSED, ['./probe.djvu', '-e', 'n'], { ...options, captureStdout: true });
      if (count.exitCode !== 0 || count.stdout.trim() !== '1') throw new Error(`djvused did not count the probe's page: ${lastErrorLine(count.stderr)}`);
      const works = new Set<string>();
      const wrote = async (file: string, magic: RegExp) => {
        const bytes = await fs.readFile(path.join(dir, file)).catch(() => Buffer.alloc(0));
        return magic.test(bytes.subarray(0, 8).toString('latin1'));
      };
      if ((await run(DDJVU, ['-format=tiff', './probe.djvu', './probe.tif'], options)).exitCode === 0 && await wrote('probe.tif', /^(II\*\0|MM\0\*)/)) {
        works.add('tiff').add('png');
      }
      if ((await run(DDJVU, ['-format=pdf', './probe.djvu', './probe.pdf'], options)).exitCode === 0 && await wrote('probe.pdf', /^%PDF-/)) works.add('pdf');
      const text = await run(DJVUTXT, ['./probe.djvu'], { ...options, captureStdout: true });
      if (text.exitCode === 0 && text.stdout.includes('probe')) works.add('txt');
      if (works.size === 0) throw new Error('ddjvu and djvutxt converted nothing');
      return EDGES.filter((edge) => works.has(edge.to));
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, to, limits } = request;
    // The input check did this for the upload; a tool never runs on a document that names other files.
    const structure = await readDjvuFile(input);
    if (!structure) throw new ConvertdError('corrupt_input', 'The file is not a DjVu document this service can read: check that it is a valid DjVu file.');
    checkDjvuStructure(structure, limits);
    const pageCount = await this.pageCount(request);
    const ranges = pageRangeOption(request.options);
    if (to === 'png') {
      const page = ranges ? firstSelectedPage(ranges, pageCount) : 1;
      return this.renderPng(request, page, structure.sizes);
    }
    const pages = ranges ? selectPages(ranges, pageCount) : undefined;
    // Both tools take the pages as "1-3,5": ddjvu as -page=, djvutxt as --page=.
    const spec = pages ? pageRuns(pages).map(({ first, last }) => first === last ? `${first}` : `${first}-${last}`).join(',') : undefined;
    if (to === 'txt') return this.text(request, spec ? [`--page=${spec}`] : []);
    const density = scaleArguments(structure.sizes, numberOption(request.options, 'pixel_density'), limits);
    const quality = to === 'pdf' ? [`-quality=${numberOption(request.options, 'quality') ?? PDF_QUALITY}`] : [];
    const selected = spec ? [`-page=${spec}`] : [];
    await this.ddjvu(request, [`-format=${to}`, ...selected, ...density, ...quality], request.output, pages?.length ?? pageCount, to === 'pdf' ? RENDER_SHARE : 1);
  }

  /** The pages as DjVuLibre counts them (its directory's page flags), held to the page cap. */
  private async pageCount(request: ConvertRequest): Promise<number> {
    const result = await this.run(request, DJVUSED, [`./${path.basename(request.input)}`, '-e', 'n'], { captureStdout: true });
    const count = Number(result.stdout.trim());
    if (result.exitCode !== 0 || !Number.isInteger(count) || count < 1) {
      throw new ConvertdError('corrupt_input', `DjVuLibre could not read the document (${lastErrorLine(result.stderr) || `exit ${result.exitCode}`}).`);
    }
    if (count > MAX_DJVU_PAGES) {
      throw new ConvertdError('input_too_complex', `The DjVu document has ${count} pages; this service converts documents of up to ${MAX_DJVU_PAGES} pages.`);
    }
    return count;
  }

  private run(request: ConvertRequest, tool: string, args: string[], extra: { captureStdout?: boolean; onStderrLine?: (line: string) => void } = {}) {
    const { workDir, limits, signal } = request;
    return this.context.run(tool, args, {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal,
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      ...extra,
    });
  }

  /**
   * Runs ddjvu into `output`; with -verbose it names each page as it starts it ("-------- page
   * 3 -------"), which is the job's progress over `pages` pages, up to `share` of it.
   */
  private async ddjvu(request: ConvertRequest, args: string[], output: string, pages: number, share: number): Promise<void> {
    let started = 0;
    const result = await this.run(request, DDJVU, ['-verbose', ...args, `./${path.basename(request.input)}`, `./${path.basename(output)}`], {
      onStderrLine: (line) => {
        if (/^-+ page \d+ -+$/.test(line.trim())) request.onProgress(share * started++ / pages);
      },
    });
    if (result.exitCode !== 0) {
      await fs.rm(output, { force: true });
      throw new ConvertdError('corrupt_input', `DjVuLibre could not render the document (${failureOf(result.stderr) || `exit ${result.exitCode}`}).`);
    }
  }

  /** One page: ddjvu's TIFF of it, then sharp's PNG of that. */
  private async renderPng(request: ConvertRequest, page: number, sizes: readonly DjvuPageSize[]): Promise<void> {
    const { workDir, limits, signal, output } = request;
    const density = scaleArguments(sizes, numberOption(request.options, 'pixel_density'), limits);
    const tiff = path.join(workDir, 'page.tiff');
    try {
      await this.ddjvu(request, ['-format=tiff', `-page=${page}`, ...density], tiff, 1, 0.8);
      await this.images.reencode(tiff, output, 'tiff', 'png', limits, signal);
    } finally {
      await fs.rm(tiff, { force: true });
    }
  }

  /** The text layer of the pages (all, or those of `spec`); none at all fails the job, saying so. */
  private async text(request: ConvertRequest, pages: string[]): Promise<void> {
    const { input, output } = request;
    const result = await this.run(request, DJVUTXT, [...pages, `./${path.basename(input)}`, `./${path.basename(output)}`]);
    if (result.exitCode !== 0) {
      throw new ConvertdError('corrupt_input', `DjVuLibre could not read the document's text (${failureOf(result.stderr) || `exit ${result.exitCode}`}).`);
    }
    const text = await fs.readFile(output, 'utf8').catch(() => '');
    if (!/[\p{L}\p{N}]/u.test(text)) {
      await fs.rm(output, { force: true });
      throw new ConvertdError('conversion_failed', NO_TEXT_LAYER);
    }
  }
}

/**
 * ddjvu's scale argument for a pixel_density: the resolution itself (-scale is dots per inch,
 * each page's own resolution being its 100 %), refused (invalid_option) when a page of the
 * document would pass the pixel cap or a side the encoders take at it. Without one, every page at its own
 * resolution, whose size the structure check has held to the pixel cap.
 */
function scaleArguments(sizes: readonly DjvuPageSize[], dpi: number | undefined, limits: EngineLimits): string[] {
  if (dpi === undefined) return [];
  for (const size of sizes) {
    const width = Math.ceil(size.width * dpi / size.dpi);
    const height = Math.ceil(size.height * dpi / size.dpi);
    if (width * height <= limits.maxImagePixels && Math.max(width, height) <= MAX_DIMENSION) continue;
    throw new ConvertdError('invalid_option', `Option "pixel_density": at ${dpi} dpi a page would be ${width} × ${height} pixels, past this service's limit of ${limits.maxImagePixels} pixels (${MAX_DIMENSION} a side); choose a lower density.`, { option: 'pixel_density', reason: 'the page would pass the pixel limit', maximum_pixels: limits.maxImagePixels });
  }
  return [`-scale=${dpi}`];
}

/** DjVuLibre's error lines start with the program's name ("ddjvu: Cannot decode page 1."); -verbose adds others. */
function failureOf(stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter((line) => /^(ddjvu|djvutxt): /.test(line) && !/^\w+: '[^']*\.cpp:\d+'$/.test(line));
  return (lines.at(-1) ?? lastErrorLine(stderr)).replace(/^\w+: (\[[\d-]+\] )?/, '').slice(0, 300);
}
