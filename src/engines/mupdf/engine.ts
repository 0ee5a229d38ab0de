// XPS and OpenXPS with MuPDF (mutool draw): the document as a PDF (every page, or those of a
// page_range), a page as a PNG or an SVG (the first, or the first of a page_range), the text; and
// a PDF's page as an SVG, which no other engine writes, and an uploaded PDF's page as a PNG
// (faster than poppler's; see EDGES). Before a tool renders anything the document is measured by MuPDF itself (mutool run on
// a small script: its page count and the size of the page to render), and held to the same caps
// as a PDF: at most MAX_PDF_PAGES pages, pages up to MAX_PAGE_POINTS a side, a rendered page within
// the pixel cap. An uploaded PDF goes through poppler's pdfinfo gate first, as in the poppler
// engine (support/pdf-info.ts), since MuPDF repairs what poppler refuses and the gate is one.
// An XPS is a ZIP package: its members and declared size were checked by formats/input-caps.ts
// before this runs; MuPDF reads its parts from the package only, so an ImageSource or font URI
// naming a file or a host outside it resolves to a missing part, not to the file
// (docs/security.md#xps-and-mupdf, measured by test/mupdf-formats.test.ts).
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import { MAX_DIMENSION, narrow, numberOption, firstSelectedPage, OPTIONS, pageRangeOption, pageRuns, selectPages, type OptionSpec } from '../options.ts';
import { MAX_PDF_PAGES, readPageSizes, readPdfInfo } from '../support/pdf-info.ts';
import type { ConversionEdge, ConvertRequest, Engine, EngineLimits } from '../types.ts';

const MUTOOL = '/usr/bin/mutool';

/** Rendering resolution of a page image by default, and the longest side it may have then (as poppler's). */
const RENDER_DPI = 150;
const MAX_RENDER_SIDE = 5000;
/** The largest page rendered, in points a side: the PDF gate's bound (support/pdf-info.ts). */
const MAX_PAGE_POINTS = 14_400;

/** The job error for a document whose pages hold no text at all. */
const NO_TEXT = 'This document has no text (its pages are pictures or drawings only): convert it to pdf and that PDF to txt with ocr=true (OCR), or convert it to pdf, png or svg.';

/**
 * What MuPDF says of a document (mutool run): "pages N", then "page P x0 y0 x1 y1" (points) for
 * the pages from scriptArgs[1] to scriptArgs[2] that exist. Written into the job directory, the
 * only place the sandboxed tool reads besides the system.
 */
const MEASURE_SCRIPT = `var doc = new Document(scriptArgs[0]);
var count = doc.countPages();
print("pages " + count);
var last = Math.min(count, Number(scriptArgs[2]));
for (var i = Number(scriptArgs[1]); i <= last; i++) print("page " + i + " " + doc.loadPage(i - 1).bound().join(" "));
`;
const MEASURE_FILE = 'mupdf-measure.js';

/**
 * A one-page XPS for the start-up probe: a 96 × 48 page (1/96 inch units) with a red rectangle,
 * stored (no compression) as an XPS printer writes the minimum: the package relationship, the
 * content types, the sequence, the document, the page.
 */
const PROBE_PARTS: Readonly<Record<string, string>> = {
  '[Content_Types].xml': '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="fdseq" ContentType="application/vnd.ms-package.xps-fixeddocumentsequence+xml"/><Default Extension="fdoc" ContentType="application/vnd.ms-package.xps-fixeddocument+xml"/><Default Extension="fpage" ContentType="application/vnd.ms-package.xps-fixedpage+xml"/></Types>',
  '_rels/.rels': '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="R0" Type="http://schemas.microsoft.com/xps/2005/06/fixedrepresentation" Target="/FixedDocumentSequence.fdseq"/></Relationships>',
  'FixedDocumentSequence.fdseq': '<FixedDocumentSequence xmlns="http://schemas.microsoft.com/xps/2005/06"><DocumentReference Source="/Documents/1/FixedDocument.fdoc"/></FixedDocumentSequence>',
  'Documents/1/FixedDocument.fdoc': '<FixedDocument xmlns="http://schemas.microsoft.com/xps/2005/06"><PageContent Source="/Documents/1/Pages/1.fpage"/></FixedDocument>',
  'Documents/1/Pages/1.fpage': '<FixedPage xmlns="http://schemas.microsoft.com/xps/2005/06" Width="96" Height="48" xml:lang="en"><Path Data="M 8,8 L 88,8 88,40 8,40 Z" Fill="#FFFF0000"/></FixedPage>',
};

const PIXEL_DENSITY = narrow(OPTIONS.pixel_density, {
  default: RENDER_DPI,
  description: `Resolution in dots per inch at which the page is rendered (default ${RENDER_DPI}; without it, a page whose longest side would pass ${MAX_RENDER_SIDE} pixels is scaled down to ${MAX_RENDER_SIDE}).`,
});
const FIRST_PAGE = narrow(OPTIONS.page_range, { description: 'Which page becomes the picture, 1-based: the first page of the range ("3", or "3-5": page 3). Default: page 1.' });
const PAGES = narrow(OPTIONS.page_range, { description: 'Which pages to convert, 1-based: "2", "1-3,5", "4-" (from 4 to the end). Default: all.' });
const TEXT_PAGES = narrow(OPTIONS.page_range, { description: 'Whose pages\' text to keep, 1-based: "2", "1-3,5", "4-" (from 4 to the end). Default: all.' });

const PNG_OPTIONS: readonly OptionSpec[] = [FIRST_PAGE, PIXEL_DENSITY];
const SVG_OPTIONS: readonly OptionSpec[] = [FIRST_PAGE];

const XPS_EDGES: ConversionEdge[] = ['xps', 'oxps'].flatMap((from) => [
  // The document as a PDF (vector pages, the text kept as text): also the way on to PDF/A, JPEG,
  // WebP and TIFF pages, and a ZIP of pages, through poppler and Ghostscript.
  { from, to: 'pdf', cost: 2, faithful: true, options: [PAGES] },
  // Page pictures end a route, as poppler's and djvulibre's do: a page is no start of an image chain.
  { from, to: 'png', cost: 2, endsRoute: true, firstPageOnly: true, options: PNG_OPTIONS },
  { from, to: 'svg', cost: 2, endsRoute: true, firstPageOnly: true, options: SVG_OPTIONS },
  // The upload's own text: never one link of a longer route.
  { from, to: 'txt', cost: 2, chainable: false, options: [TEXT_PAGES] },
]);

const EDGES: ConversionEdge[] = [
  ...XPS_EDGES,
  // An uploaded PDF's page as an SVG (the text drawn as outlines, so it looks the same without the
  // fonts). One page, the first or the first of a page_range: a document's pages as SVGs would need
  // a ZIP of pages, which poppler's pdf → zip builds with its own tools; not offered here yet. Not
  // chainable for now: after LibreOffice, pandoc or calibre it would list svg for 56 more document
  // formats, each of which must first be proven by the suites that convert every listed pair.
  // After Ghostscript's PDF of an EPS or a PostScript file it is their SVG (eps → svg, ps → svg).
  { from: 'pdf', to: 'svg', cost: 2, chainable: false, chainsAfter: ['ghostscript'], endsRoute: true, firstPageOnly: true, options: SVG_OPTIONS },
  // An uploaded PDF's page as a PNG: MuPDF draws it 3 to 6 times faster than poppler's pdftoppm,
  // as close to a reference rendering (BENCHMARKS.md, "MuPDF against poppler"), so it is cheaper
  // here than poppler's edge (2), which stays for jpg, tiff and webp, for a ZIP of pages, and for
  // a document made a PDF on the way (docx → pdf → png): those pages are the ones the suites of
  // every document family check, and MuPDF's would have to be proven there first.
  { from: 'pdf', to: 'png', cost: 1, chainable: false, endsRoute: true, firstPageOnly: true, options: PNG_OPTIONS },
];

/** mutool draw's output format per target. */
const DRAW_FORMATS: Readonly<Record<string, string>> = { png: 'png', svg: 'svg', txt: 'txt' };

export class MupdfEngine implements Engine {
  readonly id = 'mupdf';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 180;
  readonly edges = EDGES;
  /** mutool draw names each page as it starts it ("page input.xps 3"): a PDF or the text of many pages reports it. */
  readonly reportsProgress = true;
  private readonly context: EngineContext<unknown>;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number, _from: string, to: string): number {
    return (to === 'png' ? 0.8 : 0.4) + inputBytes / (to === 'pdf' ? 1_000_000 : 3_000_000);
  }

  /** Converts the embedded page to every target, and the PDF made of it to SVG; the edges whose outputs came out pass. */
  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    const { zipSync, strToU8 } = await import('fflate');
    return withScratchDir(async (dir) => {
      const parts = Object.fromEntries(Object.entries(PROBE_PARTS).map(([name, text]) => [name, strToU8(text)]));
      await fs.writeFile(path.join(dir, 'probe.xps'), zipSync(parts, { level: 0 }));
      const options = { cwd: dir, timeoutMs: 20_000 };
      const starts = async (file: string, magic: RegExp) => {
        const bytes = await fs.readFile(path.join(dir, file)).catch(() => Buffer.alloc(0));
        return magic.test(bytes.subarray(0, 1024).toString('latin1'));
      };
      const works = new Set<string>();
      if ((await run(MUTOOL, ['draw', '-q', '-F', 'pdf', '-o', './probe.pdf', './probe.xps', '1'], options)).exitCode === 0 && await starts('probe.pdf', /^%PDF-/)) works.add('xps pdf');
      if ((await run(MUTOOL, ['draw', '-q', '-F', 'png', '-r', '72', '-o', './probe.png', './probe.xps', '1'], options)).exitCode === 0 && await starts('probe.png', /^\x89PNG/)) works.add('xps png');
      if ((await run(MUTOOL, ['draw', '-q', '-F', 'svg', '-o', './probe-%d.svg', './probe.xps', '1'], options)).exitCode === 0 && await starts('probe-1.svg', /<svg/)) works.add('xps svg');
      if ((await run(MUTOOL, ['draw', '-q', '-F', 'txt', '-o', './probe.txt', './probe.xps', '1'], options)).exitCode === 0) works.add('xps txt');
      if (works.has('xps pdf') && (await run(MUTOOL, ['draw', '-q', '-F', 'svg', '-o', './probe-pdf-%d.svg', './probe.pdf', '1'], options)).exitCode === 0 && await starts('probe-pdf-1.svg', /<svg/)) works.add('pdf svg');
      if (works.has('xps pdf') && (await run(MUTOOL, ['draw', '-q', '-F', 'png', '-r', '72', '-o', './probe-pdf.png', './probe.pdf', '1'], options)).exitCode === 0 && await starts('probe-pdf.png', /^\x89PNG/)) works.add('pdf png');
      if (works.size === 0) throw new Error('mutool converted nothing');
      return EDGES.filter((edge) => works.has(`${edge.from === 'pdf' ? 'pdf' : 'xps'} ${edge.to}`));
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { to } = request;
    const ranges = pageRangeOption(request.options);
    const single = to === 'png' || to === 'svg';
    const wanted = single && ranges ? Math.min(...ranges.spans.map((span) => span.from)) : 1;
    const { pages, sizes } = request.from === 'pdf' ? await this.measurePdf(request, wanted) : await this.measure(request, wanted);
    if (single) {
      if (ranges) firstSelectedPage(ranges, pages);
      const size = sizes.get(wanted);
      if (!size) throw new ConvertdError('corrupt_input', `Page ${wanted} of the document could not be read: check that it is a valid ${request.from.toUpperCase()} file.`);
      checkPageSize(wanted, size);
      const scale = to === 'png' ? renderScale(size, numberOption(request.options, 'pixel_density'), request.limits) : [];
      await this.draw(request, DRAW_FORMATS[to]!, scale, String(wanted), 1);
      return;
    }
    if (pages > MAX_PDF_PAGES && !ranges) {
      throw new ConvertdError('input_too_complex', `The document has ${pages} pages; this service converts documents of up to ${MAX_PDF_PAGES} pages.`);
    }
    const selected = ranges ? selectPages(ranges, pages) : undefined;
    if (selected && selected.length > MAX_PDF_PAGES) {
      throw new ConvertdError('input_too_complex', `The range selects ${selected.length} pages; this service converts up to ${MAX_PDF_PAGES} pages at once.`);
    }
    // mutool takes pages as "1-3,5", in that order.
    const spec = selected ? pageRuns(selected).map(({ first, last }) => first === last ? `${first}` : `${first}-${last}`).join(',') : `1-${pages}`;
    if (to === 'txt') {
      await this.draw(request, 'txt', [], spec, selected?.length ?? pages);
      if (!await holdsText(request.output)) {
        await fs.rm(request.output, { force: true });
        throw new ConvertdError('conversion_failed', NO_TEXT);
      }
      return;
    }
    // mutool draw writes the same PDF as mutool convert (byte for byte, measured), and names each
    // page as it starts it: the job's progress.
    await this.draw(request, 'pdf', [], spec, selected?.length ?? pages);
  }

  private run(request: ConvertRequest, args: string[], extra: { captureStdout?: boolean; onStderrLine?: (line: string) => void; timeoutMs?: number } = {}) {
    const { workDir, limits, signal } = request;
    return this.context.run(MUTOOL, args, {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal,
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      ...extra,
    });
  }

  /**
   * An XPS's page count and the size of page `page` as MuPDF reads them (mutool run), before any
   * rendering: the count is MuPDF's own (the PageContent entries of every FixedDocument), so the
   * cap holds whatever the package's part names say.
   */
  private async measure(request: ConvertRequest, page: number): Promise<{ pages: number; sizes: Map<number, { width: number; height: number }> }> {
    const script = path.join(request.workDir, MEASURE_FILE);
    await fs.writeFile(script, MEASURE_SCRIPT);
    try {
      const result = await this.run(request, ['run', `./${MEASURE_FILE}`, `./${path.basename(request.input)}`, String(page), String(page)], { captureStdout: true, timeoutMs: Math.min(60_000, request.limits.timeoutMs) });
      const pages = Number(/^pages (\d+)$/m.exec(result.stdout)?.[1]);
      if (result.exitCode !== 0 || !Number.isInteger(pages) || pages < 1) {
        throw new ConvertdError('corrupt_input', `MuPDF could not read the document (${failureOf(result.stderr) || 'it has no pages'}): check that it is a valid ${request.from.toUpperCase()} file.`);
      }
      const sizes = new Map<number, { width: number; height: number }>();
      for (const [, number, x0, y0, x1, y1] of result.stdout.matchAll(/^page (\d+) (\S+) (\S+) (\S+) (\S+)$/gm)) {
        sizes.set(Number(number), { width: Number(x1) - Number(x0), height: Number(y1) - Number(y0) });
      }
      return { pages, sizes };
    } finally {
      await fs.rm(script, { force: true });
    }
  }

  /** A PDF's page count and the size of page `page`, by poppler's pdfinfo (the gate every PDF reader here passes). */
  private async measurePdf(request: ConvertRequest, page: number): Promise<{ pages: number; sizes: Map<number, { width: number; height: number }> }> {
    const info = await readPdfInfo(this.context.run, request.input, request.workDir, request.signal);
    if (page > info.pages) return { pages: info.pages, sizes: new Map() };
    const sizes = page === 1 ? new Map([[1, info]]) : await readPageSizes(this.context.run, request.input, request.workDir, request.signal, page, page);
    return { pages: info.pages, sizes };
  }

  /**
   * mutool draw of the pages `spec` as `format` into the output; it names each page as it starts
   * it on stderr ("page ./input.xps 3"), which is the job's progress over `count` pages.
   */
  private async draw(request: ConvertRequest, format: string, extra: string[], spec: string, count: number): Promise<void> {
    // mutool draw writes SVG a file per page, numbering the name it is given when it holds no %d:
    // it is given one, and the page is renamed to the output.
    const target = format === 'svg' ? 'svg-page-%d.svg' : path.basename(request.output);
    let started = 0;
    const result = await this.run(request, ['draw', '-F', format, ...extra, '-o', `./${target}`, `./${path.basename(request.input)}`, spec], {
      onStderrLine: (line) => {
        if (/^page \S+ \d+/.test(line.trim())) request.onProgress(started++ / count);
      },
    });
    if (result.exitCode === 0 && format === 'svg') await fs.rename(path.join(request.workDir, target.replace('%d', spec)), request.output);
    if (result.exitCode !== 0) {
      await fs.rm(request.output, { force: true });
      throw new ConvertdError('corrupt_input', `MuPDF could not render the document (${failureOf(result.stderr) || `exit ${result.exitCode}`}).`);
    }
  }
}

function checkPageSize(page: number, size: { width: number; height: number }): void {
  if (size.width > MAX_PAGE_POINTS || size.height > MAX_PAGE_POINTS || !(size.width > 0 && size.height > 0)) {
    throw new ConvertdError('input_too_complex', `Page ${page} of the document is ${Math.round(size.width)} x ${Math.round(size.height)} points; this service renders pages up to ${MAX_PAGE_POINTS} points a side.`);
  }
}

/**
 * mutool draw's scale arguments for a page: without a pixel_density, 150 dpi with the longest side
 * at most MAX_RENDER_SIDE (-w and -h are maxima beside -r); with one, exactly that resolution,
 * refused (invalid_option) when the page would pass the pixel cap or a side the encoders take.
 */
function renderScale(size: { width: number; height: number }, dpi: number | undefined, limits: EngineLimits): string[] {
  if (dpi === undefined) {
    const fit = Math.min(1, MAX_RENDER_SIDE / (Math.max(size.width, size.height) / 72 * RENDER_DPI));
    const pixels = Math.ceil(size.width / 72 * RENDER_DPI * fit) * Math.ceil(size.height / 72 * RENDER_DPI * fit);
    if (pixels > limits.maxImagePixels) throw new ConvertdError('input_too_complex', 'The page is too large to render within this service\'s pixel limit.');
    return ['-r', String(RENDER_DPI), '-w', String(MAX_RENDER_SIDE), '-h', String(MAX_RENDER_SIDE)];
  }
  const width = Math.ceil(size.width / 72 * dpi);
  const height = Math.ceil(size.height / 72 * dpi);
  if (width * height > limits.maxImagePixels || Math.max(width, height) > MAX_DIMENSION) {
    throw new ConvertdError('invalid_option', `Option "pixel_density": at ${dpi} dpi the page would be ${width} × ${height} pixels, past this service's limit of ${limits.maxImagePixels} pixels (${MAX_DIMENSION} a side); choose a lower density.`, { option: 'pixel_density', reason: 'the page would pass the pixel limit', maximum_pixels: limits.maxImagePixels });
  }
  return ['-r', String(dpi)];
}

/** Whether the text holds a letter or a digit (mutool's text of pages without any is blank lines). */
async function holdsText(file: string): Promise<boolean> {
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  return /[\p{L}\p{N}]/u.test(text);
}

/** MuPDF's error lines ("error: cannot find page 3"), without its warnings; else the last line. */
function failureOf(stderr: string): string {
  const errors = stderr.split('\n').map((line) => line.trim()).filter((line) => /^error: /.test(line));
  return (errors.at(-1) ?? lastErrorLine(stderr)).replace(/^error: /, '').slice(0, 300);
}
