// Markup and document formats through pandoc 2.17 (Debian). pandoc follows include directives
// (RST `include`, org `#+INCLUDE`), embeds images named by any path or URL into docx/odt/epub, and
// fetches URLs (docs/security.md#pandoc). Two fences keep every local file and URL out of outputs:
// `--sandbox` (pandoc's own: no IO but the input and output) wherever Debian's build allows it,
// and the OS sandbox always (no network; only the job's directory, /usr and, read-only, our Lua
// filters in filters/ visible). Debian's `--sandbox` cannot read pandoc's own data files, which
// docx, odt and epub output need (https://github.com/jgm/pandoc/issues/8128), and under it ipynb
// output fails outright on any image it cannot embed: those writers rely on the OS sandbox alone.
// Pathological input can take pandoc's heap past a gigabyte: the GHC runtime caps it (`-M`).
// GHC reserves a terabyte of address space at start, so no RLIMIT_AS here.
// pandoc 2.17's readers drop some content without a trace: a docx's charts, and the header rows
// of an odt's tables (https://github.com/jgm/pandoc/issues/9327). Before pandoc reads a docx or
// an odt, prepare-input.py (Python's standard library, in the same OS sandbox) writes a copy
// where each chart's title and data are a paragraph and a table after the chart, and header rows
// are ordinary rows. And the writers that print no title block (Markdown, plain text, ...) would
// drop a title held in the document's metadata (a docx's Title paragraph, a DocBook <title>):
// filters/title-heading.lua makes it the first heading there.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import { booleanOption, narrow, OPTIONS, type StepOptions } from '../options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const PANDOC = '/usr/bin/pandoc';
/**
 * The GHC runtime's options: the heap cap (-M, see the top), and a garbage collector sized for pandoc's
 * start, which allocates about 18 MB loading its data: with Debian's 8 MB nursery that cost a
 * 19 ms major collection on every run (half of a small document's time); a 12 MB nursery and a
 * 128 MB floor before the first major collection make small runs 30% faster and large ones 5-12%
 * (BENCHMARKS.md), for about 50 MB more memory on large documents.
 */
const RTS_OPTIONS = ['+RTS', '-M768m', '-A12m', '-O128m', '-RTS'];
/** Our Lua filters, bound read-only into the sandbox. */
const FILTERS = fileURLToPath(new URL('./filters/', import.meta.url));
const IMAGE_FILTER = path.join(FILTERS, 'no-external-images.lua');
const TITLE_FILTER = path.join(FILTERS, 'title-heading.lua');
/** Writes a copy of a docx or odt pandoc reads in full (see the top); bound read-only into the sandbox. */
const PREPARE_SCRIPT = fileURLToPath(new URL('./prepare-input.py', import.meta.url));
const PYTHON = '/usr/bin/python3';
/** The sources prepare-input.py rewrites. */
const PREPARED_SOURCES = new Set(['docx', 'odt']);
/** Readers of plain-text markup: their images can only be references to files or URLs. */
const TEXT_READERS = new Set(['md', 'gfm', 'rst', 'org', 'textile', 'mediawiki', 'jira', 'html', 'latex', 'ipynb', 'docbook', 'opml']);

/** Our format id → pandoc's reader name. */
const READERS: Readonly<Record<string, string>> = {
  md: 'markdown', gfm: 'gfm', rst: 'rst', org: 'org', textile: 'textile', mediawiki: 'mediawiki', jira: 'jira',
  html: 'html', docx: 'docx', odt: 'odt', epub: 'epub', latex: 'latex', ipynb: 'ipynb', docbook: 'docbook', opml: 'opml',
};

/** Our format id → pandoc's writer name. */
const WRITERS: Readonly<Record<string, string>> = {
  md: 'markdown', gfm: 'gfm', rst: 'rst', org: 'org', html: 'html5', docx: 'docx', odt: 'odt', epub: 'epub3',
  latex: 'latex', txt: 'plain', asciidoc: 'asciidoc', textile: 'textile', mediawiki: 'mediawiki', jira: 'jira',
  docbook: 'docbook5', ipynb: 'ipynb',
};

/** Writers that do not work under Debian's `--sandbox` (see above). */
const OS_SANDBOX_ONLY = new Set(['docx', 'odt', 'epub', 'ipynb']);
/** Writers that make a complete document only when asked to (`--standalone`). */
const STANDALONE = new Set(['html', 'latex', 'docbook']);
/** Writers that print no title block (short of `--standalone`): the title filter puts the title in their body. */
const NO_TITLE_BLOCK = new Set(['md', 'gfm', 'rst', 'org', 'txt', 'asciidoc', 'textile', 'mediawiki', 'jira', 'ipynb']);

/**
 * Between office formats LibreOffice keeps the layout (page setup, styles, tables) that pandoc's
 * document model drops: pandoc's edges there cost more, so it serves when LibreOffice is absent.
 */
const OFFICE_SOURCES = new Set(['docx', 'odt']);
const OFFICE_TARGETS = new Set(['docx', 'odt', 'html', 'txt', 'epub']);

/**
 * The writers that make a table of contents from the headings (`toc`, pandoc's `--toc`, three
 * levels deep): a linked list in HTML, EPUB's navigation page in the reading order, \tableofcontents
 * in LaTeX, a TOC field in docx (Word fills it in when the document is opened) and an index in
 * odt (filled in when the document's indexes are updated). The text markup writers print one only
 * in a standalone document (TOC_STANDALONE); the others (org, textile, jira, mediawiki, docbook,
 * ipynb) make none.
 */
const TOC_WRITERS = new Set(['html', 'latex', 'docx', 'odt', 'epub', 'md', 'gfm', 'rst', 'asciidoc', 'txt']);
/**
 * Writers that print the table of contents only with `--standalone`. Standalone, each prints the
 * title in its own title block (YAML for Markdown, a title for reStructuredText, AsciiDoc and
 * plain text), so the title filter is left out there.
 */
const TOC_STANDALONE = new Set(['md', 'gfm', 'rst', 'asciidoc', 'txt']);
const TOC = narrow(OPTIONS.toc, { description: 'Add a table of contents built from the headings (three levels deep).' });

const EDGES: ConversionEdge[] = Object.keys(READERS).flatMap((from) => Object.keys(WRITERS)
  .filter((to) => to !== from)
  .map((to) => ({ from, to, cost: OFFICE_SOURCES.has(from) && OFFICE_TARGETS.has(to) ? 5 : 2, options: TOC_WRITERS.has(to) ? [TOC] : [] })));

export class PandocEngine implements Engine {
  readonly id = 'pandoc';
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 0.5 + inputBytes / 300_000;
  }

  async probe(): Promise<void> {
    const { run, withScratchDir } = this.context;
    await withScratchDir(async (dir) => {
      await fs.writeFile(path.join(dir, 'probe.md'), '# Probe\n\nHello *pandoc*.\n');
      for (const to of ['html', 'docx']) {
        for (const args of this.runs('md', to, 'probe.md', `probe.${to}`)) {
          ensureSuccess(await run(PANDOC, args, { cwd: dir, timeoutMs: 30_000, readOnly: [FILTERS] }), 'pandoc');
        }
        if ((await fs.stat(path.join(dir, `probe.${to}`))).size === 0) throw new Error(`pandoc wrote an empty ${to}`);
      }
    });
  }

  private args(reader: string, writer: string, to: string, input: string, output: string, options: StepOptions = {}): string[] {
    const args = [...RTS_OPTIONS, '--from', reader, '--to', writer, '--output', output];
    const toc = booleanOption(options, 'toc') === true && TOC_WRITERS.has(to);
    // The image filter only where images are fetched and embedded: the writers outside pandoc's
    // sandbox, and the document tree that feeds one. Elsewhere an image stays a reference (HTML's
    // <img src>, Markdown's ![]()), nothing is read, and the filter cost large documents 10-15%
    // (BENCHMARKS.md).
    if (OS_SANDBOX_ONLY.has(to) || writer === 'json') args.push(`--lua-filter=${IMAGE_FILTER}`);
    if (!OS_SANDBOX_ONLY.has(to)) args.push('--sandbox');
    const standalone = STANDALONE.has(to) || (toc && TOC_STANDALONE.has(to));
    if (standalone) args.push('--standalone');
    if (toc) args.push('--toc');
    if (NO_TITLE_BLOCK.has(to) && !standalone) args.push(`--lua-filter=${TITLE_FILTER}`);
    // A file name from the service, never one that could read as an option.
    args.push('--', `./${input}`);
    return args;
  }

  /**
   * The pandoc runs of one conversion. pandoc 2.17's docx writer fetches every image before
   * filters run and fails on one it cannot fetch, so text markup goes to docx in two runs: first to
   * pandoc's document tree (JSON) under `--sandbox` with the image filter, then from that tree,
   * which names no outside file any more. (docx, odt and epub inputs keep their own media in one
   * run; LibreOffice does most of those pairs anyway.)
   */
  private runs(from: string, to: string, input: string, output: string, options: StepOptions = {}): string[][] {
    if (to === 'docx' && TEXT_READERS.has(from)) {
      return [
        this.args(READERS[from]!, 'json', 'json', input, 'document-tree.json'),
        this.args('json', WRITERS[to]!, to, 'document-tree.json', output, options),
      ];
    }
    return [this.args(READERS[from]!, WRITERS[to]!, to, input, output, options)];
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, workDir } = request;
    const prepared = PREPARED_SOURCES.has(from) ? await this.prepare(request) : undefined;
    const runs = this.runs(from, to, prepared ?? path.basename(input), path.basename(output), request.options);
    try {
      for (const args of runs) await this.runPandoc(args, request);
    } finally {
      if (runs.length > 1) await fs.rm(path.join(workDir, 'document-tree.json'), { force: true });
      if (prepared) await fs.rm(path.join(workDir, prepared), { force: true });
    }
  }

  /**
   * Writes the copy of a docx or odt that pandoc reads in full (see the top), when the upload
   * needs one, and returns its name. Should the step fail (a file too odd for it), pandoc reads
   * the upload as it came and the job goes on: pandoc is the judge of whether it is readable.
   */
  private async prepare({ input, from, workDir, limits, signal }: ConvertRequest): Promise<string | undefined> {
    const name = `prepared.${from}`;
    const copy = path.join(workDir, name);
    const result = await this.context.run(PYTHON, ['-I', '-S', PREPARE_SCRIPT, from, `./${path.basename(input)}`, `./${name}`], {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, readOnly: [PREPARE_SCRIPT],
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
    if (result.exitCode !== 0) {
      this.context.log.warn({ exitCode: result.exitCode, signal: result.signal, detail: lastErrorLine(result.stderr) }, 'preparing the file for pandoc failed: pandoc reads it as it came');
      await fs.rm(copy, { force: true });
      return undefined;
    }
    return fs.access(copy).then(() => name, () => undefined);
  }

  private async runPandoc(args: string[], { from, workDir, limits, signal }: ConvertRequest): Promise<void> {
    const result = await this.context.run(PANDOC, args, {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, readOnly: [FILTERS], limits: { fileSizeBytes: limits.maxOutputBytes },
    });
    if (result.exitCode === 251) {
      throw new ConvertdError('input_too_complex', 'The document needs more memory than this service gives one conversion: send a smaller or simpler file.');
    }
    if (result.exitCode === 64 || result.exitCode === 65 || result.exitCode === 92) {
      // 64 PandocParseError, 65 PandocParsecError, 92 PandocXMLError: the input did not parse.
      throw new ConvertdError('corrupt_input', `pandoc could not read the file as ${from} (${lastErrorLine(result.stderr)}).`);
    }
    ensureSuccess(result, 'pandoc');
  }
}
