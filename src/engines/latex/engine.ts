// LaTeX → PDF with LuaLaTeX, run by latexmk (as many runs as cross-references need, at most
// MAX_RUNS), in the sandbox with TeX's own limits on top (docs/security.md#latex):
// - no shell escape (-no-shell-escape and shell_escape=f): \write18 runs nothing;
// - kpathsea's openin_any=p and openout_any=p: \input, \openin, \openout and their kind refuse
//   absolute paths, ../ and dot files, so TeX reads and writes inside the work directory only
//   (the installed TeX tree is found through kpathsea's search, not through paths in the document);
// - TEXMFVAR, TEXMFCONFIG, TEXMFCACHE and HOME in the work directory: nothing is kept between jobs;
// - -interaction=nonstopmode -halt-on-error: the first error ends the run (no prompt to wait on),
//   and its "! ..." line becomes the job's message;
// - the engine's time limit and the output cap (RLIMIT_FSIZE) from the runner.
// Lua code in the document (\directlua) is not held by kpathsea's rules: it can open any file the
// process can. That is why the sandbox is the boundary that matters: inside it the process sees
// /usr, the TeX and font configuration and its own work directory, nothing of the service's data.
//
// Scripts: a plain LaTeX document gets real glyphs for CJK, Arabic, Hebrew, Devanagari, Thai,
// Greek and Cyrillic without naming a font. A file given to TeX before the document (latexmk's
// -pretex) registers luaotfload fallback fonts (Noto) and, once the class is loaded, sets the
// Latin Modern faces through fontspec with that fallback; a document that sets its own fonts with
// fontspec keeps the fallback (it is a default feature). A document that selects a legacy 8-bit
// encoding (\usepackage[T1]{fontenc}) leaves Unicode fonts and gets no fallback.
//
// luaotfload builds a database of the system's fonts the first time it runs (about 8 s here): the
// probe builds it once, into a directory of the engine's (cacheDir), and every job starts with a
// copy of it in its work directory (copied inside the sandbox, so the job's process owns it).
// When the probe's verdict is remembered (probe-cache.ts: same code, packages and settings), the
// database is built at the first LaTeX job instead, once: the test suite starts the service about
// ninety times, and lualatex was a quarter of its CPU then, about half of it in these probes
// (process accounting over 19 minutes of a whole run: 161 lualatex runs, 88 of latexmk).
// The database depends on the installed fonts and TeX only, so where the probe cache is on, a copy
// is kept beside it (useKeptFiles): a later start, under any settings, starts its probe's
// typesetting from that copy (about 1.5 s of CPU) instead of scanning the fonts again (about 7 s;
// a whole test run did it some twenty times, issue #30).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { EXIT_BY_SIGXFSZ, lastErrorLine, NATIVE_ADDRESS_SPACE, type RunResult } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import { FONT_ENVIRONMENT } from '../support/fonts/index.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const LATEXMK = '/usr/bin/latexmk';
const CP = '/usr/bin/cp';
const TEST = '/usr/bin/test';

/** LuaLaTeX runs latexmk may make for one document (cross-references, a table of contents). */
const MAX_RUNS = 4;

/** The file given to TeX before the document: the fallback fonts (see above). */
const FONTS_FILE = 'convertd-latex-fonts.tex';
const CACHE = 'texmf-cache';

/**
 * The fallback faces, in order (the first that has a glyph draws it), each with the characters it
 * is loaded for. harf: HarfBuzz shapes (Arabic joining, Indic clusters). Loading them costs on every
 * pass (one pass of a short document: 1.2 s with none, 2.4-2.8 s with all twelve, measured here),
 * so a job loads only those whose characters its source has; a document in Latin-1 loads none.
 * Noto Serif takes whatever else lies past Latin-1 (Greek, Cyrillic, Latin Extended, ...).
 */
// The classes are Unicode blocks, combining marks among them on purpose (a match of one is a script's use).
/* eslint-disable no-misleading-character-class */
const FALLBACK_FONTS: ReadonlyArray<{ name: string; chars: RegExp }> = [
  { name: 'Noto Serif CJK JP', chars: /[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\u{20000}-\u{3ffff}]/u },
  { name: 'Noto Serif', chars: /[\u0100-\u02ff\u0370-\u052f\u1e00-\u1fff\u2000-\u218f]/u },
  { name: 'Noto Sans Arabic', chars: /[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff]/u },
  { name: 'Noto Sans Hebrew', chars: /[\u0590-\u05ff\ufb1d-\ufb4f]/u },
  { name: 'Noto Sans Devanagari', chars: /[\u0900-\u097f\ua8e0-\ua8ff]/u },
  { name: 'Noto Sans Bengali', chars: /[\u0980-\u09ff]/u },
  { name: 'Noto Sans Tamil', chars: /[\u0b80-\u0bff]/u },
  { name: 'Noto Sans Thai', chars: /[\u0e00-\u0e7f]/u },
  { name: 'Noto Sans Georgian', chars: /[\u10a0-\u10ff\u2d00-\u2d2f]/u },
  { name: 'Noto Sans Armenian', chars: /[\u0530-\u058f]/u },
  { name: 'Noto Sans Ethiopic', chars: /[\u1200-\u139f\u2d80-\u2ddf]/u },
  { name: 'Symbola', chars: /[\u2190-\u2bff\u{1f000}-\u{1faff}]/u },
];
/* eslint-enable no-misleading-character-class */

/** The fallback faces a source needs: those whose characters it has. */
export function fallbacksFor(source: string): string[] {
  return FALLBACK_FONTS.filter(({ chars }) => chars.test(source)).map(({ name }) => name);
}

const fontsTex = (fallbacks: readonly string[]) => `% convertd: fallback fonts for scripts Latin Modern lacks (src/engines/latex/engine.ts).
${fallbacks.length > 0 ? `\\directlua{luaotfload.add_fallback("convertdfallback", {${fallbacks.map((name) => `"${name}:mode=harf;"`).join(', ')}})}` : ''}
\\AddToHook{class/after}{%
  \\RequirePackage{fontspec}%
  ${fallbacks.length > 0 ? '\\defaultfontfeatures{RawFeature={fallback=convertdfallback}}%' : ''}
  \\setmainfont{Latin Modern Roman}%
  \\setsansfont{Latin Modern Sans}%
  \\setmonofont{Latin Modern Mono}}
% An upload is one file: a picture it names is not there. Drawn as a framed name, as a draft does,
% rather than stopping the document (graphicx's error under -halt-on-error).
\\makeatletter
\\AddToHook{begindocument/before}{\\@ifpackageloaded{graphicx}{%
  \\NewCommandCopy\\convertdincludegraphics\\includegraphics
  \\RenewDocumentCommand\\includegraphics{s O{} m}{%
    \\convertdfindgraphic{#3}%
    \\ifx\\convertdfound\\relax
      \\fbox{\\ttfamily\\detokenize{#3}}%
    \\else
      \\IfBooleanTF{#1}{\\convertdincludegraphics*[#2]{#3}}{\\convertdincludegraphics[#2]{#3}}%
    \\fi}}{}}
\\makeatother
\\def\\convertdfindgraphic#1{\\let\\convertdfound\\relax
  \\IfFileExists{#1}{\\def\\convertdfound{}}{%
    \\IfFileExists{#1.pdf}{\\def\\convertdfound{}}{%
      \\IfFileExists{#1.png}{\\def\\convertdfound{}}{%
        \\IfFileExists{#1.jpg}{\\def\\convertdfound{}}{}}}}}
`;

/**
 * A fragment (no \\documentclass: what pandoc writes without --standalone, or a chapter) is
 * typeset as the body of an article with the packages pandoc's LaTeX uses, as pandoc reads it.
 */
const FRAGMENT_FILE = 'convertd-latex-fragment.tex';
const fragmentTex = (source: string) => `\\documentclass{article}
\\usepackage{amsmath,amssymb,graphicx,longtable,booktabs,array,calc,hyperref}
\\usepackage[normalem]{ulem}
\\providecommand{\\tightlist}{\\setlength{\\itemsep}{0pt}\\setlength{\\parskip}{0pt}}
\\begin{document}
\\input{${source}}
\\end{document}
`;

/** The probe's document: Latin and Japanese text, so the font database and the fallback are both exercised. */
const PROBE_TEX = '\\documentclass{article}\n\\begin{document}\nconvertd probe 日本語\n\\end{document}\n';

const EDGES: ConversionEdge[] = [
  // Cheaper than pandoc's way to PDF (LaTeX read into HTML, printed by Chromium), which loses what
  // pandoc does not read of the document; this typesets it as LaTeX does. Only for LaTeX the user
  // wrote, never after pandoc: pandoc → latex → pdf was cheaper than every other way to PDF, so
  // html → pdf (Chromium's) and md → pdf (LibreOffice's) and every markup format's PDF went
  // through LaTeX, whose missing packages and fonts those routes were never measured against.
  { from: 'latex', to: 'pdf', cost: 2, notAfter: ['pandoc'] },
];

export class LatexEngine implements Engine {
  readonly id = 'latex';
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;
  /** Where the probe (or the first job, after a remembered probe) leaves luaotfload's font database; read-only to the jobs. */
  private cacheDir: string | undefined;
  /** The font database being built for the first job after a remembered probe. */
  private building: Promise<string> | undefined;
  /** The copy of the font database kept across starts (probe-cache.ts), when there may be one. */
  private kept: string | undefined;

  /**
   * A remembered probe restores the edges and leaves the font database to the first job
   * (fontCache): the facts are the fallback faces the database was built with.
   */
  readonly probeMemory = {
    found: (): unknown => ({ fallbacks: FALLBACK_FONTS.map(({ name }) => name) }),
    restore: async (facts: unknown): Promise<readonly ConversionEdge[] | undefined> => {
      const fallbacks = (facts as { fallbacks?: unknown } | undefined)?.fallbacks;
      const now = FALLBACK_FONTS.map(({ name }) => name);
      if (!Array.isArray(fallbacks) || fallbacks.length !== now.length || fallbacks.some((name, i) => name !== now[i])) return undefined;
      return EDGES;
    },
  };

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 3 + inputBytes / 20_000;
  }

  useKeptFiles(dir: string): void {
    this.kept = dir;
  }

  /** Typesets a line of Latin and Japanese with a fresh font cache, and keeps the cache for the jobs. */
  async probe(): Promise<readonly ConversionEdge[]> {
    const cacheDir = await this.makeCacheDir();
    const previous = this.cacheDir;
    this.cacheDir = cacheDir;
    if (previous) await fs.rm(previous, { recursive: true, force: true });
    return EDGES;
  }

  /** A directory of the engine's holding the font database, built by the probe's typesetting (the sandbox checked first). */
  private async makeCacheDir(): Promise<string> {
    const cacheDir = await fs.mkdtemp(path.join(os.tmpdir(), 'convertd-latex-'));
    await fs.chmod(cacheDir, 0o755);
    try {
      await this.refuseWithoutSandbox(cacheDir);
      let keptFailed = false;
      if (await this.copyKept(cacheDir)) {
        try {
          await this.buildCache(cacheDir, true);
          this.context.log.info({ event: 'latex_fonts_kept' }, 'LaTeX\'s font database is the copy an earlier start kept');
          return cacheDir;
        } catch (error) {
          this.context.log.warn({ reason: (error as Error).message }, 'LaTeX failed with the kept font database: building it afresh');
          await fs.rm(path.join(cacheDir, CACHE), { recursive: true, force: true });
          keptFailed = true;
        }
      }
      await this.buildCache(cacheDir, false);
      // A fresh database worked where the kept one did not (damaged, or another TeX's): it replaces it.
      // (When both fail, the conditions are to blame, a memory limit say, and the kept one stays.)
      if (keptFailed) await fs.rm(this.kept!, { recursive: true, force: true });
      await this.keep(cacheDir);
    } catch (error) {
      await fs.rm(cacheDir, { recursive: true, force: true });
      throw error;
    }
    return cacheDir;
  }

  /** The font database the jobs copy: the probe's, or after a remembered probe one built now, once for every job waiting on it. */
  private async fontCache(): Promise<string> {
    if (this.cacheDir) return this.cacheDir;
    this.building ??= this.makeCacheDir().then((dir) => {
      this.cacheDir = dir;
      return dir;
    }).finally(() => {
      this.building = undefined;
    });
    return this.building.catch((error: unknown) => {
      throw new ConvertdError('conversion_failed', `LaTeX could not prepare its fonts (${(error as Error).message}): try again later.`);
    });
  }

  /**
   * A document's Lua code reads any file its process can open (kpathsea's rules hold TeX's own
   * primitives only), so this engine runs only where the sandbox hides the service's files: a file
   * of the service's, outside what the sandbox binds, must be invisible to the engine's process.
   * With CONVERTD_SANDBOX=off it is visible, the probe fails, and latex → pdf is pandoc's again.
   */
  private async refuseWithoutSandbox(cacheDir: string): Promise<void> {
    const sentinel = path.join(cacheDir, 'outside-the-sandbox');
    await fs.writeFile(sentinel, '');
    const seen = await this.context.withScratchDir((dir) => this.context.run(TEST, ['-e', sentinel], { cwd: dir, timeoutMs: 20_000 }));
    await fs.rm(sentinel, { force: true });
    if (seen.exitCode === 0) {
      throw new Error('LaTeX runs only inside the sandbox (a document\'s \\directlua could read any file the service can): CONVERTD_SANDBOX is off');
    }
  }

  /** The kept font database copied into `cacheDir`, readable by the engine user; false when there is none. */
  private async copyKept(cacheDir: string): Promise<boolean> {
    if (!this.kept) return false;
    try {
      await fs.cp(path.join(this.kept, CACHE), path.join(cacheDir, CACHE), { recursive: true });
    } catch {
      await fs.rm(path.join(cacheDir, CACHE), { recursive: true, force: true });
      return false;
    }
    await chmodTree(path.join(cacheDir, CACHE));
    return true;
  }

  /** A fresh font database kept for later starts: copied whole, then renamed, so a start beside this one sees all of it or none. */
  private async keep(cacheDir: string): Promise<void> {
    if (!this.kept) return;
    const staging = `${this.kept}.${process.pid}.tmp`;
    try {
      await fs.rm(staging, { recursive: true, force: true });
      await fs.cp(path.join(cacheDir, CACHE), path.join(staging, CACHE), { recursive: true });
      await fs.rename(staging, this.kept);
    } catch (error) {
      // Another start kept one first (the rename finds it there), or the disk is full: the next start builds it.
      if ((error as NodeJS.ErrnoException).code !== 'ENOTEMPTY' && (error as NodeJS.ErrnoException).code !== 'EEXIST') {
        this.context.log.warn({ reason: (error as Error).message }, 'the LaTeX font database was not kept for later starts');
      }
    } finally {
      await fs.rm(staging, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /**
   * The probe's typesetting, with a fresh font cache (or, `fromCacheDir`, the kept one copied
   * there) that is then copied to `cacheDir`.
   */
  private async buildCache(cacheDir: string, fromCacheDir: boolean): Promise<void> {
    await this.context.withScratchDir(async (dir) => {
      if (fromCacheDir) {
        // Copied by the engine's own process, as a job's is: the typesetting may write to it.
        const copied = await this.context.run(CP, ['-R', '--', path.join(cacheDir, CACHE), `./${CACHE}`], { cwd: dir, timeoutMs: 30_000, readOnly: [cacheDir] });
        await fs.rm(path.join(cacheDir, CACHE), { recursive: true, force: true });
        if (copied.exitCode !== 0) throw new Error(`cp of the kept font database failed: ${lastErrorLine(copied.stderr) || `exit ${copied.exitCode}`}`);
      }
      await fs.writeFile(path.join(dir, 'probe.tex'), PROBE_TEX);
      // Every fallback face, so that the cache the jobs copy holds each one's tables.
      const result = await this.typeset(dir, 'probe.tex', FALLBACK_FONTS.map(({ name }) => name), 180_000);
      const pdf = await fs.readFile(path.join(dir, 'probe.pdf')).catch(() => Buffer.alloc(0));
      if (result.exitCode !== 0 || !pdf.subarray(0, 5).equals(Buffer.from('%PDF-'))) {
        throw new Error(`latexmk made no PDF: ${firstTexError(result) || lastErrorLine(result.stderr) || `exit ${result.exitCode}`}`);
      }
      await fs.cp(path.join(dir, CACHE), path.join(cacheDir, CACHE), { recursive: true });
    });
    // Readable by the engine user (the copy is the service's), writable by no one else.
    await chmodTree(path.join(cacheDir, CACHE));
  }

  async close(): Promise<void> {
    await this.building?.catch(() => undefined);
    if (this.cacheDir) await fs.rm(this.cacheDir, { recursive: true, force: true });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { workDir } = request;
    // The job's source under a name of ours (the input already is input.<ext>): latexmk names its
    // PDF after it.
    const source = path.basename(request.input);
    const cacheDir = await this.fontCache();
    await this.context.run(CP, ['-R', '--', path.join(cacheDir, CACHE), `./${CACHE}`], {
      cwd: workDir, timeoutMs: 30_000, signal: request.signal, readOnly: [cacheDir],
    });
    const text = await fs.readFile(request.input, 'utf8');
    let main = source;
    if (!/^[^%\n]*\\document(class|style)\b/m.test(text)) {
      main = FRAGMENT_FILE;
      await fs.writeFile(path.join(workDir, FRAGMENT_FILE), fragmentTex(source));
    }
    const result = await this.typeset(workDir, main, fallbacksFor(text), request.limits.timeoutMs, request, path.parse(source).name);
    const produced = path.join(workDir, `${path.parse(source).name}.pdf`);
    if (result.exitCode !== 0) {
      await fs.rm(produced, { force: true });
      // latexmk outlives a TeX killed at the output cap (RLIMIT_FSIZE, SIGXFSZ) and says so.
      const code = /gave return code (\d+)/.exec(`${result.stdout}\n${result.stderr}`)?.[1];
      if (Number(code) === EXIT_BY_SIGXFSZ) throw new ConvertdError('output_too_large');
      const error = firstTexError(result);
      if (error) throw new ConvertdError('corrupt_input', `LaTeX stopped at an error: ${error}`);
      throw new ConvertdError('conversion_failed', `latexmk failed (${lastErrorLine(result.stderr) || `exit ${result.exitCode}`}).`);
    }
    await fs.rename(produced, request.output).catch(() => {
      throw new ConvertdError('conversion_failed', 'LaTeX made no PDF: the document may have no \\begin{document} or no content.');
    });
  }

  /** latexmk -lualatex on `source` in `dir`, with the limits above and the given fallback faces. */
  private async typeset(dir: string, source: string, fallbacks: readonly string[], timeoutMs: number, request?: ConvertRequest, jobName = path.parse(source).name): Promise<RunResult> {
    await fs.writeFile(path.join(dir, FONTS_FILE), fontsTex(fallbacks));
    const env: Record<string, string> = {
      ...FONT_ENVIRONMENT.env,
      shell_escape: 'f',
      openin_any: 'p',
      openout_any: 'p',
      TEXMFVAR: path.join(dir, 'texmf-var'),
      TEXMFCONFIG: path.join(dir, 'texmf-config'),
      TEXMFCACHE: path.join(dir, CACHE),
      // Whole lines in the log, so an error line is not cut at 79 characters.
      max_print_line: '1000',
      error_line: '254',
      half_error_line: '238',
    };
    return this.context.run(LATEXMK, [
      '-norc', '-lualatex', '-interaction=nonstopmode', '-halt-on-error', '-no-shell-escape',
      // No previewer, no printing, no bibliography tools beyond bibtex/makeindex when needed.
      '-e', `$max_repeat=${MAX_RUNS}`,
      // With a -pretex, TeX would name its output after the first file it reads (ours): the job
      // names it after the source.
      `-jobname=${jobName}`,
      `-usepretex=\\input{${FONTS_FILE}}`,
      // latexmk takes no "--"; the name is ours (input.tex, probe.tex), never an option.
      source,
    ], {
      cwd: dir, env, timeoutMs, signal: request?.signal, captureStdout: true,
      readOnly: ['/etc/texmf', '/var/lib/texmf', ...FONT_ENVIRONMENT.readOnly],
      limits: { fileSizeBytes: request?.limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
  }
}

/** TeX's first error line ("! LaTeX Error: File `x.sty' not found."), with its source line when TeX gives one. */
function firstTexError(result: RunResult): string {
  const lines = `${result.stdout}\n${result.stderr}`.split('\n');
  const at = lines.findIndex((line) => line.startsWith('! '));
  if (at < 0) return '';
  const where = lines.slice(at + 1, at + 12).find((line) => /^l\.\d+ /.test(line));
  return `${lines[at]!.slice(2).trim()}${where ? ` (${where.split(' ')[0]!.replace('l.', 'line ')})` : ''}`.slice(0, 300);
}

async function chmodTree(target: string): Promise<void> {
  const stat = await fs.lstat(target);
  await fs.chmod(target, stat.isDirectory() ? 0o755 : 0o644);
  if (stat.isDirectory()) for (const name of await fs.readdir(target)) await chmodTree(path.join(target, name));
}

