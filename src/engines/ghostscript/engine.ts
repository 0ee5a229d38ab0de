// PDF → PDF/A-2b with Ghostscript's pdfwrite. Ghostscript reads only PDF here, never PostScript
// uploads: PostScript is a programming language whose -dSAFER sandbox has a long record of
// escapes (docs/security.md#ghostscript-and-postscript). Even so it runs with -dSAFER, in the OS sandbox, with TMPDIR in
// the job directory (gs lets SAFER jobs read and write its temp dir), a page cap from pdfinfo, and
// a check of the result: gs exits 0 on PDFs it could not read.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE, type RunResult } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import { checkPageCount, readPdfInfo } from '../support/pdf-info.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

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

/** What gs prints when it abandons PDF/A output and writes an ordinary PDF instead. */
const REVERTED_TO_PLAIN_PDF = /reverting to normal PDF output/i;

const EDGES: ConversionEdge[] = [{ from: 'pdf', to: 'pdfa', cost: 3 }];

export class GhostscriptEngine implements Engine {
  readonly id = 'ghostscript';
  readonly timeoutSeconds = 300;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;
  private prologue = '';

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 1 + inputBytes / 500_000;
  }

  async probe(): Promise<void> {
    const result = await this.context.run(GS, ['--version'], { cwd: '/', timeoutMs: 10_000, captureStdout: true });
    if (!/^\d+\.\d+/.test(result.stdout.trim())) throw new Error(`gs did not run: ${lastErrorLine(result.stderr)}`);
    this.prologue = pdfaPrologue(await findSrgbProfile());
  }

  async convert(request: ConvertRequest): Promise<void> {
    const info = await readPdfInfo(this.context.run, request.input, request.workDir, request.signal);
    checkPageCount(info);
    const prologue = path.join(request.workDir, 'pdfa-prologue.ps');
    await fs.writeFile(prologue, this.prologue);
    try {
      let result = await this.runPdfWrite(request, info.pages, prologue, []);
      if (REVERTED_TO_PLAIN_PDF.test(result.stderr)) {
        // gs gives up on PDF/A (and silently writes a plain PDF) when a font breaks a PDF/A rule it
        // cannot repair, typically a CID font using CID 0 (Word's MS Mincho). Drawing the glyphs as
        // outlines keeps the pages' appearance, which is what PDF/A-2b promises, at the cost of the
        // text layer; the README lists this under known limitations.
        result = await this.runPdfWrite(request, info.pages, prologue, ['-dNoOutputFonts']);
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

  private runPdfWrite(request: ConvertRequest, pages: number, prologue: string, extraArgs: string[]): Promise<RunResult> {
    const { input, output, workDir, limits, signal } = request;
    return this.context.run(GS, [
      '-dSAFER', '-dBATCH', '-dNOPAUSE', '-dNOPROMPT', '-dQUIET',
      '-sDEVICE=pdfwrite', '-dPDFA=2', '-dPDFACompatibilityPolicy=1', '-sColorConversionStrategy=RGB', ...extraArgs,
      `-dLastPage=${pages}`, `-sOutputFile=${path.basename(output)}`, `./${path.basename(prologue)}`, `./${path.basename(input)}`,
    ], { cwd: workDir, readOnly: GS_CONFIG, timeoutMs: limits.timeoutMs, signal, limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE } });
  }
}
