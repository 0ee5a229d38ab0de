// Vector drawings through Inkscape 1.2 (issue #31), where it is the tool that does the pair:
//  - svg and svgz to emf, wmf and dxf (rsvg keeps svg → png, pdf, eps, ps: faster, and it loads
//    nothing by itself);
//  - dxf to svg, pdf, png, eps, ps, emf and wmf: the DXF is read by Inkscape's own importer
//    (extensions/dxf_input.py, run here with python3, not through Inkscape, whose GUI-bound
//    import dialog aborts without a display), fitted to an A4 page, then exported by Inkscape;
//  - svg to itself: plain (Inkscape's and Sodipodi's markup left out) and self-contained, its text
//    outlined on request (text_to_path);
//  - pdf and ai (an Illustrator file, a PDF inside) to emf, wmf and dxf, and ai to svg, one page
//    (the first or a page_range's): Inkscape's PDF import (poppler, in-process; no Ghostscript),
//    which keeps text as text. eps and ps reach those pdf edges through Ghostscript's PDF
//    (chainsAfter), never through another engine's. An Illustrator file's pdf, eps and ps are
//    Ghostscript's and its png poppler's: the import sets text in substitute fonts and loses the
//    ligatures of a font embedded without a Unicode map ("this f le", issue #31), where those draw
//    the embedded glyphs. Inkscape never reads EPS, PS or PostScript-era AI itself (it would start
//    Ghostscript outside our -dSAFER arguments).
// emf, wmf, cdr, vsd and vsdx → pdf, png, svg stay LibreOffice's; Inkscape adds emf and wmf →
// each other, eps, ps and dxf, and cdr, vsd, vsdx → eps, ps, emf, wmf and dxf (their first page),
// which LibreOffice does not write. Compared on the shared corpus's three EMF and three
// WMF files (both to PNG): Inkscape drew five of them as LibreOffice does, only framed to the
// drawing rather than set on a page, and looped on the sixth (poi-60677.wmf, a Japanese table
// LibreOffice draws: wmf-fonts.ts has why); no drawing was better, so moving those pairs would
// only lose one. cdr and vsd: Inkscape 1.2 reads them through the same libcdr and libvisio as
// LibreOffice (the corpus's CorelDRAW and Visio files drew alike in both).
//
// Every edge is unchainable (but the pdf ones may follow Ghostscript): each makes sense for the
// file uploaded, and chained ones would add a dozen pairs of other formats through svg (a PDF → svg → wmf) that no one asked for and that
// another engine's svg may not carry well.
//
// Hostile input (docs/security.md#inkscape): an SVG is made self-contained first
// (support/svg-references.ts: non-local references dropped, XInclude made inert, entity bombs and
// external entities refused); Inkscape and python3 run in the sandbox (no network, no file but
// the work directory, HOME there for Inkscape's preferences), under the output cap, the address
// space cap and the engine's time limit. A PNG is rendered only after the page's size was checked
// against the pixel limit.
//
// Measured here (2 cores, 1.2.2): one Inkscape start and export takes 0.4-0.9 s (svg → emf 0.5 s,
// → dxf 0.9 s with its Python exporter), the DXF import 0.9 s of Python. A warm `inkscape --shell`
// would save about half a second a job but keep one Inkscape's state (its document, preferences,
// caches) across jobs of different users; for a conversion that is rare, a fresh process per job
// is kept (README "Known limitations").
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzip as gunzipCallback } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE, type RunResult } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import { booleanOption, firstSelectedPage, narrow, OPTIONS, pageRangeOption } from '../options.ts';
import { readPdfInfo } from '../support/pdf-info.ts';
import { fileStart } from '../support/file-start.ts';
import { selfContainedSvg } from '../support/svg-references.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { wmfForInkscape } from './wmf-fonts.ts';

const INKSCAPE = '/usr/bin/inkscape';
const PYTHON = '/usr/bin/python3';
const DXF_INPUT = '/usr/share/inkscape/extensions/dxf_input.py';
/** Inkscape's DXF R14 exporter (a Python extension; its built-in R12 one writes no entities for filled shapes). */
const DXF_OUTPUT_EXTENSION = 'org.ekips.output.dxf_outlines';
/** CSS pixels per inch: Inkscape's PNG export default; a PDF point is 1/72 inch. */
const CSS_DPI = 96;
const MAX_SIDE = 16384;
/** The most an SVG (or an .svgz inflated) may be before it is rewritten: past it, refused. */
const MAX_SVG_BYTES = 64 * 1024 * 1024;
/** Inkscape's address space: its GTK and cairo start at ~0.9 GB virtual; room for a large drawing, not for a runaway. */
const INKSCAPE_ADDRESS_SPACE = NATIVE_ADDRESS_SPACE;

const gunzip = promisify(gunzipCallback);

/** How one Inkscape export runs (export()). */
interface ExportRun {
  timeoutMs: number;
  signal?: AbortSignal;
  maxOutputBytes?: number;
  /** The drawing's own extent as the page (a DXF's import sits on an A4 page). */
  drawingArea?: boolean;
  /** The page of a PDF (or an Illustrator file) imported, 1-based. */
  pdfPage?: number;
  /** Text drawn as outlines (svg → svg's text_to_path). */
  textToPath?: boolean;
}

/** The page of a PDF (or an Illustrator file) that becomes the drawing. */
const DRAWING_PAGE = narrow(OPTIONS.page_range, { description: 'Which page becomes the drawing, 1-based: the first page of the range ("3", or "3-5": page 3). Default: page 1.' });

/** Drawings Inkscape imports through libcdr and libvisio (its Debian package depends on both). */
const DRAWING_IMPORTS = ['cdr', 'vsd', 'vsdx'];

// Cost 2: a slow program's start (about half a second), dearer than rsvg's 1 where both could.
const edge = (from: string, to: string): ConversionEdge => ({ from, to, cost: 2, chainable: false });
const EDGES: ConversionEdge[] = [
  ...['svg', 'svgz'].flatMap((from) => ['emf', 'wmf', 'dxf'].map((to) => edge(from, to))),
  ...['svg', 'pdf', 'png', 'eps', 'ps', 'emf', 'wmf'].map((to) => edge('dxf', to)),
  // An Illustrator file's first page as an editable drawing (a PDF's later pages are not the drawing).
  { ...edge('ai', 'svg'), firstPageOnly: true, options: [DRAWING_PAGE] },
  // A PDF's page (an Illustrator file's) as a metafile or a DXF, through Inkscape's PDF import;
  // also after Ghostscript's PDF of an EPS or a PostScript file (eps → emf). Not after another
  // engine's PDF: every document would list emf, wmf and dxf.
  ...['pdf', 'ai'].flatMap((from) => ['emf', 'wmf', 'dxf'].map((to): ConversionEdge => ({
    ...edge(from, to), firstPageOnly: true, options: [DRAWING_PAGE], ...(from === 'pdf' ? { chainsAfter: ['ghostscript'] } : {}),
  }))),
  // A metafile to the vector formats LibreOffice does not write (its emf and wmf → pdf, png, svg
  // stay LibreOffice's: see above).
  ...['wmf', 'eps', 'ps', 'dxf'].map((to) => edge('emf', to)),
  ...['emf', 'eps', 'ps', 'dxf'].map((to) => edge('wmf', to)),
  // CorelDRAW and Visio drawings (libcdr, libvisio, as LibreOffice reads them) to the vector
  // formats LibreOffice does not write; their pdf, png, svg and odg stay LibreOffice's. The first page.
  ...DRAWING_IMPORTS.flatMap((from) => ['eps', 'ps', 'emf', 'wmf', 'dxf'].map((to) => edge(from, to))),
  // An SVG to itself: plain (without Inkscape's and Sodipodi's namespaces) and self-contained
  // (support/svg-references.ts), its text outlined on request.
  { from: 'svg', to: 'svg', cost: 2, options: [OPTIONS.text_to_path] },
];

/** What each export starts with, checked by the probe and after each conversion. */
const WROTE: Record<string, (head: Buffer) => boolean> = {
  svg: (head) => /<svg[\s>]/.test(head.toString('utf8')),
  pdf: (head) => head.toString('latin1', 0, 5) === '%PDF-',
  png: (head) => head.readUInt32BE(0) === 0x89504e47,
  eps: (head) => /^%!PS-Adobe-[\d.]+ EPSF/.test(head.toString('latin1')),
  ps: (head) => head.toString('latin1', 0, 4) === '%!PS',
  // EMR_HEADER (type 1) and " EMF" at byte 40.
  emf: (head) => head.readUInt32LE(0) === 1 && head.toString('latin1', 40, 44) === ' EMF',
  // A placeable WMF (0x9AC6CDD7) or a bare one's header (type 1 or 2, header size 9 words).
  wmf: (head) => head.readUInt32LE(0) === 0x9ac6cdd7 || ((head.readUInt16LE(0) === 1 || head.readUInt16LE(0) === 2) && head.readUInt16LE(2) === 9),
  dxf: (head) => /^\s*(?:999\s*\r?\n[^\n]*\r?\n\s*)?0\s*\r?\nSECTION/.test(head.toString('latin1')),
};

export class InkscapeEngine implements Engine {
  readonly id = 'inkscape';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number, from: string): number {
    return (from === 'dxf' ? 2 : 1) + inputBytes / 1_000_000;
  }

  /**
   * Exports a small drawing to emf, wmf, dxf and pdf, imports the DXF made and reads the PDF back
   * as an Illustrator file: the edges whose steps all wrote what they should pass (png, eps and ps
   * are Inkscape's cairo export as pdf is).
   */
  async probe(): Promise<readonly ConversionEdge[]> {
    return this.context.withScratchDir(async (dir) => {
      await fs.writeFile(path.join(dir, 'probe.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect x="5" y="5" width="30" height="30" fill="#ff0000"/></svg>');
      const works = new Set<string>();
      const attempt = async (drawing: string, to: string, name: string) => {
        const output = path.join(dir, `${name}.${to}`);
        const result = await this.export(path.join(dir, drawing), output, to, dir, { timeoutMs: 30_000, ...(drawing.endsWith('.ai') ? { pdfPage: 1 } : {}) });
        return result.exitCode === 0 && WROTE[to]!(await fileStart(output));
      };
      for (const target of ['emf', 'wmf', 'dxf', 'pdf']) if (await attempt('probe.svg', target, 'probe')) works.add(target);
      if (works.has('dxf')) {
        await this.importDxf(path.join(dir, 'probe.dxf'), path.join(dir, 'imported.svg'), dir, 30_000).then(() => works.add('dxf-import'), () => undefined);
      }
      if (works.has('pdf')) {
        await fs.copyFile(path.join(dir, 'probe.pdf'), path.join(dir, 'probe.ai'));
        if (await attempt('probe.ai', 'svg', 'from-ai')) works.add('ai-import');
      }
      // The metafiles it wrote, read back: each to the other.
      if (works.has('emf') && await attempt('probe.emf', 'wmf', 'from-emf')) works.add('emf-import');
      if (works.has('wmf') && await attempt('probe.wmf', 'emf', 'from-wmf')) works.add('wmf-import');
      // A Visio drawing written here (no tool writes one): libvisio's import. A CorelDRAW file
      // cannot be made here; libcdr comes with Inkscape as libvisio does, and is taken with it.
      await fs.writeFile(path.join(dir, 'probe.vsdx'), probeVisioDrawing());
      if (await attempt('probe.vsdx', 'emf', 'from-vsdx')) works.add('drawing-import');
      const passes = (e: ConversionEdge) => {
        const exported = ['pdf', 'png', 'eps', 'ps', 'svg'].includes(e.to) ? works.has('pdf') : works.has(e.to);
        if (e.from === 'dxf') return works.has('dxf-import') && exported;
        if (e.from === 'ai' || e.from === 'pdf') return works.has('ai-import') && exported;
        if (e.from === 'emf' || e.from === 'wmf') return works.has(`${e.from}-import`) && exported;
        if (DRAWING_IMPORTS.includes(e.from)) return works.has('drawing-import') && exported;
        return exported;
      };
      const passed = EDGES.filter(passes);
      if (passed.length === 0) throw new Error('inkscape exported nothing');
      return passed;
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, workDir, limits, signal } = request;
    const run: ExportRun = { timeoutMs: limits.timeoutMs, signal, maxOutputBytes: limits.maxOutputBytes };
    let drawing: string;
    if (from === 'svg' || from === 'svgz') {
      drawing = await this.selfContained(input, from, workDir);
      if (booleanOption(request.options, 'text_to_path') === true) run.textToPath = true;
    } else if (from === 'dxf') {
      const imported = path.join(workDir, 'imported.svg');
      await this.importDxf(input, imported, workDir, limits.timeoutMs, signal);
      request.onProgress(0.4);
      // The importer puts the drawing on an A4 page, scaled to fit only when the DXF's header
      // gives its extent: Inkscape's export takes the drawing's own extent as the page instead.
      // A PNG of it is drawn only after that extent was checked against the pixel limit.
      drawing = to === 'png' ? path.join(workDir, 'extent.svg') : imported;
      if (to === 'png' || to === 'svg') {
        const fitted = to === 'svg' ? output : drawing;
        await this.ensureExported(await this.export(imported, fitted, 'svg', workDir, { ...run, drawingArea: true }), fitted, 'svg');
        if (to === 'svg') return;
        const size = declaredPixels(await fs.readFile(drawing, 'utf8'));
        if (size) checkPixels(size.width, size.height, limits.maxImagePixels);
        request.onProgress(0.7);
      }
    } else if (DRAWING_IMPORTS.includes(from)) {
      // Inkscape chooses the import by the name; it imports the first page, as an SVG first: a
      // page libvisio or libcdr could not parse (a billion laughs in a VSDX page) is an empty
      // drawing, which Inkscape would write as an empty EMF and call done.
      const upload = path.join(workDir, `drawing.${from}`);
      await fs.link(input, upload).catch(() => fs.copyFile(input, upload));
      drawing = path.join(workDir, 'imported.svg');
      await this.ensureExported(await this.export(upload, drawing, 'svg', workDir, run), drawing, 'svg');
      const svg = await fs.readFile(drawing, 'utf8');
      if (!drawsSomething(svg)) {
        throw new ConvertdError('conversion_failed', `The drawing's first page holds nothing Inkscape could read: it is empty, or its ${from === 'cdr' ? 'CorelDRAW' : 'Visio'} data could not be parsed.`);
      }
      // The import's SVG is the import's own making of the file's data; it goes through the same rewrite as an upload.
      await fs.writeFile(drawing, selfContainedSvg(svg), { mode: 0o644 });
      request.onProgress(0.5);
    } else if (from === 'emf' || from === 'wmf') {
      // Inkscape chooses its metafile import by the name. A metafile names no other file, and
      // every target here is vector: nothing is drawn at the drawing's own size. A WMF's fonts
      // are checked and its face names made ASCII first (wmf-fonts.ts: a loop and wrong letters).
      drawing = path.join(workDir, `drawing.${from}`);
      if (from === 'wmf') await fs.writeFile(drawing, wmfForInkscape(await fs.readFile(input)), { mode: 0o644 });
      else await fs.link(input, drawing).catch(() => fs.copyFile(input, drawing));
    } else {
      // pdf and ai: Inkscape chooses its PDF import by the name; pdfinfo refuses what is no PDF
      // first, and counts the pages a page_range chooses from.
      drawing = path.join(workDir, `drawing.${from}`);
      await fs.link(input, drawing).catch(() => fs.copyFile(input, drawing));
      const info = await readPdfInfo(this.context.run, drawing, workDir, signal);
      const ranges = pageRangeOption(request.options);
      run.pdfPage = ranges ? firstSelectedPage(ranges, info.pages) : 1;
    }
    const result = await this.export(drawing, output, to, workDir, { ...run, drawingArea: from === 'dxf' });
    await this.ensureExported(result, output, to);
  }

  /** The upload (an .svgz inflated within MAX_SVG_BYTES) rewritten self-contained, as drawing.svg; its path. */
  private async selfContained(input: string, from: string, workDir: string): Promise<string> {
    let bytes = await fs.readFile(input);
    if (from === 'svgz') {
      try {
        bytes = await gunzip(bytes, { maxOutputLength: MAX_SVG_BYTES });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new ConvertdError('input_too_complex', `The compressed drawing inflates to more than ${MAX_SVG_BYTES / 1024 / 1024} MiB of SVG.`);
        throw new ConvertdError('corrupt_input', 'The .svgz file is not a complete gzip stream: check that it is not damaged.');
      }
    }
    if (bytes.length > MAX_SVG_BYTES) throw new ConvertdError('input_too_complex', `The drawing is more than ${MAX_SVG_BYTES / 1024 / 1024} MiB of SVG.`);
    const drawing = path.join(workDir, 'drawing.svg');
    await fs.writeFile(drawing, selfContainedSvg(bytes.toString('utf8')), { mode: 0o644 });
    return drawing;
  }

  /** Inkscape's DXF importer, run by python3 in the sandbox, writing an SVG (made self-contained like an upload). */
  private async importDxf(input: string, svg: string, workDir: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    // --output: python3 writes the SVG itself, so the file-size cap (RLIMIT_FSIZE) bounds what a
    // DXF of nested blocks expands to (through a pipe it would not).
    const result = await this.context.run(PYTHON, [DXF_INPUT, '--scalemethod=auto', '--encoding=utf_8', `--output=./${path.basename(svg)}`, `./${path.basename(input)}`], {
      cwd: workDir, timeoutMs, ...(signal ? { signal } : {}),
      limits: { addressSpaceBytes: NATIVE_ADDRESS_SPACE, fileSizeBytes: MAX_SVG_BYTES },
    });
    const written = await fs.readFile(svg, 'utf8').catch(() => '');
    if (result.exitCode !== 0 || !/<svg[\s>]/.test(written)) {
      if (result.signal === 'SIGKILL' || result.signal === 'SIGXFSZ' || /MemoryError|RecursionError|File too large/.test(result.stderr)) throw new ConvertdError('input_too_complex', `The DXF drawing is too complex to read (${lastErrorLine(result.stderr) || result.signal}).`);
      throw new ConvertdError('corrupt_input', `The DXF drawing could not be read${lastErrorLine(result.stderr) ? ` (${lastErrorLine(result.stderr)})` : ''}: check that it is a valid DXF file.`);
    }
    // The importer draws lines, arcs, circles, polylines, splines, text, hatches and blocks; it
    // skips 3D faces, solids and meshes (the corpus's PinkEggFromLW.dxf is 288 3DFACEs). A DXF of
    // only those would come back as an empty page, which a user would take for a conversion.
    if (!drawsSomething(written)) {
      throw new ConvertdError('conversion_failed', 'The DXF holds nothing this converter draws: its entities are 3D ones (3DFACE, 3DSOLID, MESH, ...), which Inkscape\'s DXF reader does not import. Only 2D drawings (lines, arcs, polylines, splines, text, hatches) convert.');
    }
    // The importer's SVG is text it made of the DXF's; it goes through the same rewrite as an upload.
    await fs.writeFile(svg, selfContainedSvg(written), { mode: 0o644 });
  }

  /** One Inkscape run: `drawing` exported as `to`. */
  private export(drawing: string, output: string, to: string, workDir: string, how: ExportRun): Promise<RunResult> {
    const { timeoutMs, signal, maxOutputBytes } = how;
    const kind = to === 'dxf' ? [`--export-extension=${DXF_OUTPUT_EXTENSION}`] : [`--export-type=${to}`];
    // --export-plain-svg: an SVG without Inkscape's namespaces; --pdf-page: which page of a PDF is imported.
    const extra = [
      ...(to === 'svg' ? ['--export-plain-svg'] : []), ...(how.drawingArea ? ['--export-area-drawing'] : []),
      ...(how.textToPath ? ['--export-text-to-path'] : []),
    ];
    const page = how.pdfPage ? [`--pdf-page=${how.pdfPage}`] : [];
    return this.context.run(INKSCAPE, [...page, ...kind, ...extra, `--export-filename=./${path.basename(output)}`, `./${path.basename(drawing)}`], {
      cwd: workDir, timeoutMs, ...(signal ? { signal } : {}),
      // Inkscape finds its data and its extensions from its own path, read from /proc/self/exe:
      // without a /proc it aborts at start.
      procfs: true,
      // Inkscape writes its preferences and caches under these: the work dir, never a shared home.
      env: { XDG_CONFIG_HOME: path.join(workDir, '.config'), XDG_CACHE_HOME: path.join(workDir, '.cache'), XDG_DATA_HOME: path.join(workDir, '.local') },
      limits: { addressSpaceBytes: INKSCAPE_ADDRESS_SPACE, ...(maxOutputBytes ? { fileSizeBytes: maxOutputBytes } : {}) },
    });
  }

  /** Inkscape exits 0 when an import or export fails: the output's own start says whether it wrote one. */
  private async ensureExported(result: RunResult, output: string, to: string): Promise<void> {
    const start = await fileStart(output);
    if (result.exitCode === 0 && start.length > 0 && WROTE[to]!(start)) return;
    await fs.rm(output, { force: true });
    const detail = lastErrorLine(result.stderr.split('\n').filter((line) => !/GtkRecentManager|^\s*$/.test(line)).join('\n'));
    if (result.signal === 'SIGKILL' || result.signal === 'SIGSEGV' || result.signal === 'SIGABRT' || /memory|too many|recursion/i.test(detail)) {
      throw new ConvertdError('input_too_complex', `Inkscape could not convert the drawing (${detail || result.signal}): it may be too large or too complex.`);
    }
    throw new ConvertdError('corrupt_input', `Inkscape could not read or export the drawing${detail ? ` (${detail})` : ''}: check that it is a valid file.`);
  }
}

/**
 * A Visio drawing of one page holding a filled square (a VSDX: the package parts libvisio reads),
 * for the probe of Inkscape's Visio import.
 */
function probeVisioDrawing(): Uint8Array {
  const visio = 'http://schemas.microsoft.com/office/visio/2012/main';
  const packageRels = 'http://schemas.openxmlformats.org/package/2006/relationships';
  const relationship = (kind: string, target: string) => `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="${packageRels}"><Relationship Id="rId1" Type="http://schemas.microsoft.com/visio/2010/relationships/${kind}" Target="${target}"/></Relationships>`;
  const cell = (name: string, value: string | number) => `<Cell N="${name}" V="${value}"/>`;
  const corners = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]].map(([x, y], index) => `<Row T="${index === 0 ? 'MoveTo' : 'LineTo'}" IX="${index + 1}">${cell('X', x!)}${cell('Y', y!)}</Row>`).join('');
  const square = `<Shape ID="1" Type="Shape">${cell('PinX', 1)}${cell('PinY', 1)}${cell('Width', 1)}${cell('Height', 1)}${cell('LocPinX', 0.5)}${cell('LocPinY', 0.5)}${cell('FillForegnd', '#ff0000')}${cell('FillPattern', 1)}<Section N="Geometry" IX="0">${corners}</Section></Shape>`;
  const text = (xml: string) => strToU8(`<?xml version="1.0" encoding="UTF-8"?>${xml}`);
  return zipSync({
    '[Content_Types].xml': text('<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/visio/document.xml" ContentType="application/vnd.ms-visio.drawing.main+xml"/></Types>'),
    '_rels/.rels': strToU8(relationship('document', 'visio/document.xml')),
    'visio/document.xml': text(`<VisioDocument xmlns="${visio}"/>`),
    'visio/_rels/document.xml.rels': strToU8(relationship('pages', 'pages/pages.xml')),
    'visio/pages/pages.xml': text(`<Pages xmlns="${visio}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><Page ID="0" Name="P"><PageSheet>${cell('PageWidth', 2)}${cell('PageHeight', 2)}</PageSheet><Rel r:id="rId1"/></Page></Pages>`),
    'visio/pages/_rels/pages.xml.rels': strToU8(relationship('page', 'page1.xml')),
    'visio/pages/page1.xml': text(`<PageContents xmlns="${visio}"><Shapes>${square}</Shapes></PageContents>`),
  });
}

function checkPixels(width: number, height: number, maxPixels: number): void {
  const w = Math.ceil(width);
  const h = Math.ceil(height);
  if (w > MAX_SIDE || h > MAX_SIDE || w * h > maxPixels) {
    throw new ConvertdError('input_too_complex', `The drawing's page is ${w}x${h} pixels at ${CSS_DPI} dpi; this service renders at most ${MAX_SIDE} a side and ${maxPixels} in all.`);
  }
}

/** The width and height (in CSS pixels) the root of an SVG this engine made declares. */
function declaredPixels(svg: string): { width: number; height: number } | undefined {
  const root = /<svg\b([^>]*)>/i.exec(svg)?.[1] ?? '';
  const number = (name: string) => Number(new RegExp(`\\s${name}="([0-9.]+)(?:px)?"`).exec(root)?.[1]);
  const width = number('width');
  const height = number('height');
  return Number.isFinite(width) && Number.isFinite(height) ? { width, height } : undefined;
}

/** Whether an SVG has a shape or text outside its <defs> (the importer's markers and patterns live there). */
export function drawsSomething(svg: string): boolean {
  const outsideDefs = svg.replace(/<defs[\s>][\s\S]*?<\/defs>/g, '').replace(/<defs\s*\/>/g, '');
  return /<(?:[\w-]+:)?(?:path|line|polyline|polygon|circle|ellipse|rect|text|use|image)[\s/>]/.test(outsideDefs);
}
