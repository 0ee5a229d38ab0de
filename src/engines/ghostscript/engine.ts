// PDF → PDF/A-2b, and PDF → PDF (pages cut to a page_range, made PDF/A, made smaller), with
// Ghostscript's pdfwrite; a PDF's page as EPS and its pages as PostScript (eps2write, ps2write);
// an Illustrator file (a PDF inside) likewise; and uploaded EPS and PostScript to PDF and PNG
// (postscript.ts), and on to each other through their PDF.
// PostScript is a programming language whose -dSAFER sandbox has a long record of escapes
// (docs/security.md#ghostscript-and-postscript): gs always runs with -dSAFER, in the OS sandbox,
// with TMPDIR in the job directory (gs lets SAFER jobs read and write its temp dir), a page cap,
// and a check of the result: gs exits 0 on PDFs it could not read.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE, type RunResult } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import { booleanOption, enumOption, firstSelectedPage, narrow, OPTIONS, pageRangeOption, selectPages, type OptionSpec } from '../options.ts';
import { fileStart } from '../support/file-start.ts';
import { checkPageCount, readPdfInfo } from '../support/pdf-info.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { pageListArgument, POSTSCRIPT_EDGES, PostScriptReader, type RunGs } from './postscript.ts';
import type { GhostscriptSettings } from './settings.ts';

const GS = '/usr/bin/gs';
const GS_SHARE = '/usr/share/ghostscript';
/**
 * Debian's font maps (generated under /var/lib/ghostscript, configured in /etc/ghostscript).
 * Without them gs cannot keep a PDF's CID TrueType fonts: it rewrites them as Type 1C fonts with
 * no Unicode mapping, and the PDF/A's text can no longer be searched or copied.
 */
const GS_CONFIG = ['/etc/ghostscript', '/var/lib/ghostscript'];

/**
 * PDF/A needs an output intent with an embedded ICC profile, which pdfwrite adds only when told
 * by a PostScript prologue (Ghostscript's PDFA_def.ps, without its placeholder title). Without it
 * gs still writes "PDF/A" metadata, but the file is not PDF/A. This prologue is ours, never the
 * user's, and names the sRGB profile Ghostscript ships by its absolute path (SAFER lets gs read
 * its own files).
 */
function pdfaPrologue(iccProfile: string): string {
  return [
    `/ICCProfile (${iccProfile}) def`,
    '[/_objdef {icc_PDFA} /type /stream /OBJ pdfmark',
    '[{icc_PDFA} << /N 3 >> /PUT pdfmark',
    '[{icc_PDFA} ICCProfile (r) file /PUT pdfmark',
    '[/_objdef {OutputIntent_PDFA} /type /dict /OBJ pdfmark',
    '[{OutputIntent_PDFA} << /Type /OutputIntent /S /GTS_PDFA1 /DestOutputProfile {icc_PDFA} /OutputConditionIdentifier (sRGB) >> /PUT pdfmark',
    '[{Catalog} << /OutputIntents [ {OutputIntent_PDFA} ] >> /PUT pdfmark',
    '',
  ].join('\n');
}

/** Ghostscript's own sRGB profile (its directory is named after the version). */
async function findSrgbProfile(): Promise<string> {
  for (const version of await fs.readdir(GS_SHARE).catch(() => [] as string[])) {
    const candidate = path.join(GS_SHARE, version, 'iccprofiles', 'srgb.icc');
    if (/^[\w./-]+$/.test(candidate) && await fs.access(candidate).then(() => true, () => false)) return candidate;
  }
  throw new Error(`no srgb.icc under ${GS_SHARE}/*/iccprofiles`);
}

/** pdfwrite's PDF/A-2b settings (the prologue adds the output intent). */
const PDFA_ARGS = ['-dPDFA=2', '-dPDFACompatibilityPolicy=1', '-sColorConversionStrategy=RGB'];

/** What gs prints when it abandons PDF/A output and writes an ordinary PDF instead. */
const REVERTED_TO_PLAIN_PDF = /reverting to normal PDF output/i;

/** Ghostscript's -dPDFSETTINGS preset for each value of `compress` (options.ts). */
const COMPRESS_PRESETS: Readonly<Record<string, string>> = { low: '/printer', medium: '/ebook', high: '/screen' };

const PAGE_RANGE = narrow(OPTIONS.page_range, { description: 'Which pages to keep, 1-based, in document order: "2", "1-3,5", "4-" (from 4 to the end).' });

/** The one page of a PDF an EPS holds. */
const EPS_PAGE = narrow(OPTIONS.page_range, { description: 'Which page becomes the EPS, 1-based: the first page of the range ("3", or "3-5": page 3). Default: page 1.' });

/** pdf → pdf is worth doing only with an option: each of these. */
const PDF_OPTIONS: readonly OptionSpec[] = [PAGE_RANGE, OPTIONS.pdf_a, OPTIONS.compress];
/** The PDF/A target is PDF/A whatever pdf_a says. */
const PDFA_OPTIONS: readonly OptionSpec[] = [PAGE_RANGE, OPTIONS.compress];

const EDGES: ConversionEdge[] = [
  { from: 'pdf', to: 'pdfa', cost: 3, options: PDFA_OPTIONS },
  // A same-format route of its own (the planner never chains it).
  { from: 'pdf', to: 'pdf', cost: 3, options: PDF_OPTIONS },
  // A PDF's page as EPS, its pages as PostScript: for the uploaded PDF, or after Ghostscript's own
  // PDF of an EPS or a PostScript file (eps → ps, ps → eps); after another engine's PDF every
  // document would list them.
  { from: 'pdf', to: 'eps', cost: 3, chainable: false, chainsAfter: ['ghostscript'], firstPageOnly: true, options: [EPS_PAGE] },
  { from: 'pdf', to: 'ps', cost: 3, chainable: false, chainsAfter: ['ghostscript'], options: [PAGE_RANGE] },
  // An Illustrator file is a PDF (inkscape/formats.ts): its PDF content redistilled keeps the
  // fonts it embeds, glyph for glyph; Inkscape's import set its text in substitutes and lost the
  // ligatures of a font embedded without a Unicode map (issue #31: "this f le"). Its EPS and
  // PostScript likewise. For the uploaded file only: chained, every PDF target would become an ai one.
  { from: 'ai', to: 'pdf', cost: 3, chainable: false, options: PDF_OPTIONS },
  { from: 'ai', to: 'eps', cost: 3, chainable: false, options: [EPS_PAGE] },
  { from: 'ai', to: 'ps', cost: 3, chainable: false, options: [PAGE_RANGE] },
  ...POSTSCRIPT_EDGES,
];

/** The formats whose uploads gs reads as PDF (the rest are PostScript programs). */
const READ_AS_PDF = new Set(['pdf', 'ai']);

/** Ghostscript's edges: those from PDF always; from EPS and PostScript only where gs turned the probe's program into a page. */
function ghostscriptEdges(readsPostScript: boolean): readonly ConversionEdge[] {
  return readsPostScript ? EDGES : EDGES.filter((edge) => READ_AS_PDF.has(edge.from));
}

/** A tiny EPS for the start-up probe: a filled square. */
const PROBE_EPS = '%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 8 8\n0 0 8 8 rectfill\n';

export class GhostscriptEngine implements Engine {
  readonly id = 'ghostscript';
  readonly timeoutSeconds = 300;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<GhostscriptSettings>;
  private readonly postscript: PostScriptReader;
  private prologue = '';

  constructor(context: EngineContext<GhostscriptSettings>) {
    this.context = context;
    this.postscript = new PostScriptReader((request, args, extra) => this.runGs(request, args, extra), context.run, context.settings.postscriptSeconds);
  }

  estimateSeconds(inputBytes: number): number {
    return 1 + inputBytes / 500_000;
  }

  async probe(): Promise<readonly ConversionEdge[] | void> {
    const result = await this.context.run(GS, ['--version'], { cwd: '/', timeoutMs: 10_000, captureStdout: true });
    if (!/^\d+\.\d+/.test(result.stdout.trim())) throw new Error(`gs did not run: ${lastErrorLine(result.stderr)}`);
    this.srgbProfile = await findSrgbProfile();
    this.prologue = pdfaPrologue(this.srgbProfile);
    // EPS and PostScript are offered only where gs really turns a program into a PDF page here;
    // PDF/A does not depend on it.
    const readsPostScript = await this.context.withScratchDir(async (dir) => {
      await fs.writeFile(path.join(dir, 'probe.eps'), PROBE_EPS);
      const result = await this.context.run(GS, ['-dSAFER', '-dBATCH', '-dNOPAUSE', '-dNOPROMPT', '-dQUIET', '-sDEVICE=pdfwrite', '-dEPSCrop', '-sOutputFile=probe.pdf', './probe.eps'], { cwd: dir, readOnly: GS_CONFIG, timeoutMs: 20_000 });
      const written = await fs.stat(path.join(dir, 'probe.pdf')).then((stat) => stat.size, () => 0);
      if (result.exitCode !== 0 || written === 0) throw new Error(`gs could not read PostScript: ${lastErrorLine(result.stderr)}`);
    }).then(() => true, (error: unknown) => {
      this.context.log.warn({ err: error }, 'Ghostscript cannot read PostScript here: EPS and PostScript uploads are not offered');
      return false;
    });
    this.readsPostScript = readsPostScript;
    return ghostscriptEdges(readsPostScript);
  }

  private srgbProfile = '';
  private readsPostScript = false;

  /** The sRGB profile found for PDF/A's output intent and whether gs reads PostScript here (probe-cache.ts). */
  readonly probeMemory = {
    found: (): unknown => ({ srgbProfile: this.srgbProfile, readsPostScript: this.readsPostScript }),
    restore: async (facts: unknown): Promise<readonly ConversionEdge[] | undefined> => {
      const { srgbProfile, readsPostScript } = (facts ?? {}) as { srgbProfile?: unknown; readsPostScript?: unknown };
      if (typeof readsPostScript !== 'boolean' || typeof srgbProfile !== 'string') return undefined;
      // A profile that went away since makes the probe run instead.
      if (!await fs.access(srgbProfile).then(() => true, () => false)) return undefined;
      this.srgbProfile = srgbProfile;
      this.prologue = pdfaPrologue(srgbProfile);
      this.readsPostScript = readsPostScript;
      return ghostscriptEdges(readsPostScript);
    },
  };

  async convert(request: ConvertRequest): Promise<void> {
    if (!READ_AS_PDF.has(request.from)) return this.postscript.convert(request);
    const info = await readPdfInfo(this.context.run, request.input, request.workDir, request.signal);
    const ranges = pageRangeOption(request.options);
    // An EPS is one page, drawn as a picture of a page is: a long document is no reason to refuse it.
    if (request.to === 'eps') return this.writePostScript(request, 'eps2write', [`-sPageList=${ranges ? firstSelectedPage(ranges, info.pages) : 1}`]);
    checkPageCount(info);
    // The pages as numbers from the parsed range, clamped to the document: "-sPageList=" gets
    // digits, commas and hyphens we wrote.
    const pages = ranges ? [pageListArgument(selectPages(ranges, info.pages))] : [`-dLastPage=${info.pages}`];
    if (request.to === 'ps') return this.writePostScript(request, 'ps2write', pages);
    const preset = COMPRESS_PRESETS[enumOption<string>(request.options, 'compress') ?? ''];
    const settings = [...(preset ? [`-dPDFSETTINGS=${preset}`] : []), ...pages];
    if (request.to === 'pdf' && booleanOption(request.options, 'pdf_a') !== true) {
      const result = await this.runPdfWrite(request, settings, []);
      if (result.exitCode !== 0) {
        throw new ConvertdError('corrupt_input', `Ghostscript could not read the PDF (${lastErrorLine(result.stderr) || `exit ${result.exitCode}`}).`);
      }
      return;
    }
    const prologue = path.join(request.workDir, 'pdfa-prologue.ps');
    await fs.writeFile(prologue, this.prologue);
    try {
      const pdfa = [...PDFA_ARGS, ...settings];
      let result = await this.runPdfWrite(request, pdfa, [`./${path.basename(prologue)}`]);
      if (REVERTED_TO_PLAIN_PDF.test(result.stderr)) {
        // gs gives up on PDF/A (and silently writes a plain PDF) when a font breaks a PDF/A rule it
        // cannot repair, typically a CID font using CID 0 (Word's MS Mincho). Drawing the glyphs as
        // outlines keeps the pages' appearance, which is what PDF/A-2b promises, at the cost of the
        // text layer; the README lists this under known limitations.
        result = await this.runPdfWrite(request, [...pdfa, '-dNoOutputFonts'], [`./${path.basename(prologue)}`]);
        if (REVERTED_TO_PLAIN_PDF.test(result.stderr)) {
          throw new ConvertdError('conversion_failed', 'This PDF uses features PDF/A forbids and Ghostscript could not repair them: convert it to plain PDF instead.');
        }
      }
      if (/Failed to open the supplied ICCProfile/.test(result.stderr)) {
        throw new ConvertdError('conversion_failed', 'Ghostscript could not embed the colour profile PDF/A requires.');
      }
      if (result.exitCode !== 0) {
        throw new ConvertdError('corrupt_input', `Ghostscript could not read the PDF (${lastErrorLine(result.stderr) || `exit ${result.exitCode}`}).`);
      }
    } finally {
      await fs.rm(prologue, { force: true });
    }
  }

  /**
   * The PDF's `pages` as PostScript: one page as an EPS (eps2write: the page's drawn extent as its
   * bounding box), or a PostScript document (ps2write), the fonts embedded either way. gs exits 0
   * on a page it could not draw, so the output's start is checked.
   */
  private async writePostScript(request: ConvertRequest, device: 'eps2write' | 'ps2write', pages: string[]): Promise<void> {
    const { input, output, limits } = request;
    const result = await this.runGs(request, [`-sDEVICE=${device}`, ...pages, `-sOutputFile=${path.basename(output)}`, `./${path.basename(input)}`], { timeoutMs: limits.timeoutMs });
    const start = (await fileStart(output, 32)).toString('latin1');
    if (result.exitCode !== 0 || !start.startsWith(device === 'eps2write' ? '%!PS-Adobe-3.0 EPSF' : '%!PS')) {
      await fs.rm(output, { force: true });
      throw new ConvertdError('corrupt_input', `Ghostscript could not write the PDF's pages as PostScript (${lastErrorLine(result.stderr) || `exit ${result.exitCode}`}): check that it is a valid PDF.`);
    }
  }

  /** pdfwrite with `settings` (PDF/A, preset, pages), reading `prologues` then the input. */
  private runPdfWrite(request: ConvertRequest, settings: string[], prologues: string[]): Promise<RunResult> {
    const { input, output, limits } = request;
    return this.runGs(request, [
      '-sDEVICE=pdfwrite', ...settings, `-sOutputFile=${path.basename(output)}`, ...prologues, `./${path.basename(input)}`,
    ], { timeoutMs: limits.timeoutMs });
  }

  /**
   * gs in the job directory, always with -dSAFER (never -dNOSAFER or --permit-file-*), batch mode
   * (no prompt to wait on), the output cap and an address-space cap.
   */
  private runGs(request: ConvertRequest, args: readonly string[], extra: Parameters<RunGs>[2]): Promise<RunResult> {
    const { workDir, limits, signal } = request;
    return this.context.run(GS, ['-dSAFER', '-dBATCH', '-dNOPAUSE', '-dNOPROMPT', '-dQUIET', ...args], {
      cwd: workDir, readOnly: GS_CONFIG, timeoutMs: extra.timeoutMs, signal, ...(extra.env ? { env: extra.env } : {}),
      ...(extra.onStderrLine ? { onStderrLine: extra.onStderrLine } : {}),
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
  }
}
