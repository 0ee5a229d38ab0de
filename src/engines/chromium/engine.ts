// HTML to PDF and to images (PNG, JPEG, WebP) through headless Chromium: the page laid out as a
// browser lays it out (flexbox, grid, web fonts given as data:, print CSS and @page), which the
// document engines' HTML readers do not. Each browser runs in a pooled, sandboxed Node process
// (render.ts, through context.pools.node: one browser per slot, replaced after
// CONVERTD_CHROMIUM_MAX_JOBS pages, a failed health check, a crash or a page that ran out of
// time). The service never loads playwright: it sends the helper a request built here from
// parsed options (page-setup.ts), and checks the PDF that comes back with pdfinfo (the page cap).
//
// Costs: Chromium is the route for html → pdf (4.5 against 6 for pandoc's docx then LibreOffice)
// and html → pictures (6.5 against 8 through a PDF and poppler), and so for the e-mail engine's
// pages; a document that pandoc reads keeps its route through LibreOffice (md → html → pdf would
// cost 6.5 against 6), so that no existing document conversion changes engines.
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../../errors.ts';
import type { ProcessPool } from '../../process/pool/index.ts';
import type { EngineContext, RunProgram } from '../module.ts';
import { booleanOption, enumOption, narrow, numberOption, OPTIONS, pageRangeOption, type OptionSpec, type StepOptions } from '../options.ts';
import { MAX_PDF_PAGES, readPdfInfo } from '../support/pdf-info.ts';
import { PooledEngine } from '../support/pooled-engine.ts';
import type { ConversionEdge, ConvertRequest, Engine, EngineLimits } from '../types.ts';
import { PAPER, printRanges, type RenderRequest } from './page-setup.ts';
import type { ChromiumSettings } from './settings.ts';

const MODULE = fileURLToPath(new URL('./render.ts', import.meta.url));

const DEFAULT_WIDTH = 1280;
const DEFAULT_HEIGHT = 800;
const DEFAULT_MARGIN_MM = 10;
const DEFAULT_QUALITY = 85;

const JAVASCRIPT = narrow(OPTIONS.javascript, { description: `${OPTIONS.javascript.description} Requests to anything but data: URLs stay blocked either way.` });
const PAGE_SIZE = narrow(OPTIONS.page_size, { values: Object.keys(PAPER), description: 'Paper size of the PDF. Without it, the page\'s own CSS @page size, else A4.' });
const LANDSCAPE = OPTIONS.landscape;
const MARGIN = narrow(OPTIONS.margin, { maximum: 50, default: DEFAULT_MARGIN_MM, description: 'Margin on every side of the PDF\'s pages, in millimetres, 0-50 (a page\'s CSS @page margin wins).' });
const PRINT_BACKGROUND = OPTIONS.print_background;
const FULL_PAGE = narrow(OPTIONS.full_page, { description: 'The picture holds the whole page, as tall as it is (at least `height`, cut at the pixel limit); false: only the browser window\'s `width` × `height`.' });
const WIDTH = narrow(OPTIONS.width, { default: DEFAULT_WIDTH, description: `Width of the browser window in pixels, and so of the picture (default ${DEFAULT_WIDTH}).` });
const HEIGHT = narrow(OPTIONS.height, { default: DEFAULT_HEIGHT, description: `Height of the browser window in pixels (default ${DEFAULT_HEIGHT}): the picture's height, or with full_page its least height.` });
const QUALITY = narrow(OPTIONS.quality, { default: DEFAULT_QUALITY });

const PDF_OPTIONS: readonly OptionSpec[] = [PAGE_SIZE, LANDSCAPE, MARGIN, PRINT_BACKGROUND, OPTIONS.page_range, JAVASCRIPT];
const IMAGE_OPTIONS: Readonly<Record<string, readonly OptionSpec[]>> = {
  png: [WIDTH, HEIGHT, FULL_PAGE, JAVASCRIPT],
  jpg: [WIDTH, HEIGHT, FULL_PAGE, QUALITY, JAVASCRIPT],
  webp: [WIDTH, HEIGHT, FULL_PAGE, QUALITY, JAVASCRIPT],
};

/** See the header: below pandoc → LibreOffice (6) for html, above it for what pandoc reads (2 + 4.5). */
const PDF_COST = 4.5;
/** Below html → pdf → picture (6 + 2), above md → docx → pdf → picture (8) for what pandoc reads (2 + 6.5). */
const IMAGE_COST = 6.5;

const EDGES: ConversionEdge[] = [
  // The PDF holds every page of the document: a later step may choose among them (page_range).
  { from: 'html', to: 'pdf', cost: PDF_COST, faithful: true, options: PDF_OPTIONS },
  // A picture of the page is a final rendition (as a document's first page is), never the start of an image chain.
  ...Object.entries(IMAGE_OPTIONS).map(([to, options]): ConversionEdge => ({ from: 'html', to, cost: IMAGE_COST, endsRoute: true, options })),
];

/** The helper's request for one job, from the step's parsed options (no client text in it). */
export function renderRequest(to: string, options: StepOptions, limits: Pick<EngineLimits, 'timeoutMs' | 'maxImagePixels'>): RenderRequest {
  if (to !== 'pdf' && to !== 'png' && to !== 'jpg' && to !== 'webp') throw new Error(`Chromium does not write ${to}`);
  // The page's own limit falls inside the job's, so that the helper answers before the pool kills it.
  const pageTimeoutMs = Math.max(1_000, Math.min(limits.timeoutMs - 5_000, Math.round(limits.timeoutMs * 0.9)));
  const javascript = booleanOption(options, 'javascript') ?? false;
  if (to === 'pdf') {
    const size = enumOption<string>(options, 'page_size');
    const pages = printRanges(pageRangeOption(options)?.spans, MAX_PDF_PAGES + 1);
    if (pages === '') {
      throw new ConvertdError('input_too_complex', `Option "page_range": this service prints the first ${MAX_PDF_PAGES} pages of a page at most.`);
    }
    return {
      to,
      javascript,
      pageTimeoutMs,
      pdf: {
        paper: size === undefined ? undefined : PAPER[size],
        landscape: booleanOption(options, 'landscape') ?? false,
        marginMm: numberOption(options, 'margin') ?? DEFAULT_MARGIN_MM,
        printBackground: booleanOption(options, 'print_background') ?? true,
        pageRanges: pages,
      },
    };
  }
  return {
    to,
    javascript,
    pageTimeoutMs,
    image: {
      width: numberOption(options, 'width') ?? DEFAULT_WIDTH,
      height: numberOption(options, 'height') ?? DEFAULT_HEIGHT,
      fullPage: booleanOption(options, 'full_page') ?? true,
      quality: to === 'png' ? undefined : numberOption(options, 'quality') ?? DEFAULT_QUALITY,
      maxPixels: limits.maxImagePixels,
    },
  };
}

export class ChromiumEngine extends PooledEngine implements Engine {
  readonly id = 'chromium';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 60;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  readonly pool: ProcessPool;
  private readonly withScratchDir: EngineContext<ChromiumSettings>['withScratchDir'];
  private readonly run: RunProgram;

  constructor(context: EngineContext<ChromiumSettings>) {
    super();
    this.withScratchDir = context.withScratchDir;
    this.run = context.run;
    this.pool = context.pools.node({
      label: 'Chromium',
      logName: 'chromium',
      module: MODULE,
      // The helper's own heap (playwright's client); the browser's memory is the cgroup's.
      heapMb: 256,
      tooComplex: 'The page is too large for the memory this service gives a browser.',
    }, { size: context.settings.poolSize, maxJobsPerProcess: context.settings.maxJobs });
  }

  estimateSeconds(inputBytes: number, _from: string, to: string): number {
    return (to === 'pdf' ? 0.8 : 0.6) + inputBytes / 1_000_000;
  }

  /** Starts a browser and renders a tiny page as a PDF and as a PNG. */
  async probe(): Promise<void> {
    const limits = { timeoutMs: 60_000, maxImagePixels: 10_000_000 };
    const page = '<!doctype html><meta charset="utf-8"><p style="background:#f00;width:40px;height:20px">convertd probe</p>';
    const [pdf, png] = await this.convertSamples(this.withScratchDir, [
      { input: 'probe.html', sample: page, output: 'probe.pdf', message: { ...renderRequest('pdf', {}, limits) } },
      { input: 'probe.html', sample: page, output: 'probe.png', message: { ...renderRequest('png', { width: 64, height: 32 }, limits) } },
    ]);
    if (pdf!.subarray(0, 5).toString('latin1') !== '%PDF-') throw new Error('Chromium wrote no PDF');
    if (png!.subarray(1, 4).toString('latin1') !== 'PNG') throw new Error('Chromium wrote no PNG');
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, to, options, limits, signal, workDir } = request;
    await this.pool.convert(input, output, { ...renderRequest(to, options, limits) }, limits.timeoutMs, signal);
    // The PDF as poppler reads it: printed to at most one page past the cap, which is refused here.
    if (to === 'pdf' && (await readPdfInfo(this.run, output, workDir, signal)).pages > MAX_PDF_PAGES) {
      throw new ConvertdError('input_too_complex', `The page prints to more than ${MAX_PDF_PAGES} pages; this service makes PDFs of up to ${MAX_PDF_PAGES} pages (choose some with page_range).`);
    }
  }
}
