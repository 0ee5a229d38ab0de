// Markup and document formats through pandoc 2.17 (Debian). pandoc follows include directives
// (RST `include`, org `#+INCLUDE`, man `.so`, txt2tags `%!include`, Muse `#include`), embeds
// images named by any path or URL into docx/odt/epub/fb2, embeds what raw HTML's img, video, audio
// and source tags and the metadata's cover-image and css name into epub, and fetches URLs
// (docs/security.md#pandoc). The rule: a conversion reads the upload and nothing else, whatever
// the writer. Three fences hold it:
// - pandoc's own `--sandbox` (no IO but the input and output) for every reader, always, and for
//   every writer Debian's build allows. Debian's `--sandbox` cannot read pandoc's own data files,
//   which docx, odt and epub output need (https://github.com/jgm/pandoc/issues/8128), and under it
//   ipynb output fails outright on any image it cannot embed: those writers get a document tree
//   that was read under `--sandbox`, with the media of a docx, odt or epub upload extracted beside
//   it, and with every reference to anything else emptied by our Lua filters (see runs()).
// - the filters no-external-images.lua and no-external-resources.lua, on that tree.
// - the OS sandbox: no network; only the job's directory (the upload and this step's files),
//   /usr, the fonts' configuration and, read-only, our Lua filters visible; and no /proc, so the
//   engine's own environment and command line (which hold the job's path) are not there to read.
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
const RESOURCE_FILTER = path.join(FILTERS, 'no-external-resources.lua');
/**
 * Where the media a docx, odt or epub upload carries are extracted for the writer that runs
 * outside `--sandbox` (see runs()): a directory in the job's own, removed after the step.
 */
const MEDIA_DIR = 'upload-media';
/** The document tree handed from the reader's run to the writer's (see runs()). */
const TREE = 'document-tree.json';
const TITLE_FILTER = path.join(FILTERS, 'title-heading.lua');
const REFERENCES_FILTER = path.join(FILTERS, 'all-references.lua');
/**
 * Filters for writers that lose part of a table in pandoc 2.17: TEI and XWiki leave the caption
 * out (it becomes a paragraph before the table), Muse drops the header row of a table it writes as
 * a grid (filters/muse-tables.lua).
 */
const TABLE_FILTERS: Readonly<Record<string, string>> = {
  tei: path.join(FILTERS, 'caption-paragraphs.lua'),
  xwiki: path.join(FILTERS, 'caption-paragraphs.lua'),
  muse: path.join(FILTERS, 'muse-tables.lua'),
};
/** Writes a copy of a docx or odt pandoc reads in full (see the top); bound read-only into the sandbox. */
const PREPARE_SCRIPT = fileURLToPath(new URL('./prepare-input.py', import.meta.url));
const PYTHON = '/usr/bin/python3';
/** The sources prepare-input.py rewrites. */
const PREPARED_SOURCES = new Set(['docx', 'odt']);
/**
 * The readers of office and ebook packages, which carry their own media: extracted for the writer
 * (see runs()). Every other reader's images can only be references to files or URLs.
 */
const CONTAINER_READERS = new Set(['docx', 'odt', 'epub']);

/** Our format id → pandoc's reader name. */
const READERS: Readonly<Record<string, string>> = {
  md: 'markdown', gfm: 'gfm', rst: 'rst', org: 'org', textile: 'textile', mediawiki: 'mediawiki', jira: 'jira',
  html: 'html', docx: 'docx', odt: 'odt', epub: 'epub', latex: 'latex', ipynb: 'ipynb', docbook: 'docbook', opml: 'opml',
  creole: 'creole', dokuwiki: 'dokuwiki', tikiwiki: 'tikiwiki', twiki: 'twiki', vimwiki: 'vimwiki', muse: 'muse',
  t2t: 't2t', haddock: 'haddock', man: 'man', jats: 'jats',
  mmd: 'markdown_mmd',
};

/** Our format id → pandoc's writer name. */
const WRITERS: Readonly<Record<string, string>> = {
  md: 'markdown', gfm: 'gfm', rst: 'rst', org: 'org', html: 'html5', docx: 'docx', odt: 'odt', epub: 'epub3',
  latex: 'latex', txt: 'plain', asciidoc: 'asciidoc', textile: 'textile', mediawiki: 'mediawiki', jira: 'jira',
  docbook: 'docbook5', ipynb: 'ipynb',
  dokuwiki: 'dokuwiki', zimwiki: 'zimwiki', xwiki: 'xwiki', muse: 'muse', haddock: 'haddock', markua: 'markua',
  jats: 'jats_archiving', tei: 'tei', icml: 'icml', fb2: 'fb2',
  man: 'man', ms: 'ms', texinfo: 'texinfo', context: 'context',
  beamer: 'beamer', revealjs: 'revealjs', slidy: 'slidy', dzslides: 'dzslides',
  commonmark: 'commonmark', mdstrict: 'markdown_strict', mdextra: 'markdown_phpextra', mmd: 'markdown_mmd',
};

/**
 * Writers added for issue #30 that make sense only for markup pandoc reads itself: slides, man
 * pages and typesetting sources out of an authored text. A Word 97, RTF or WordPerfect file (through
 * LibreOffice's docx) or an ebook (through calibre's) is never offered as beamer slides or a man
 * page; docx, odt and epub uploads are (pandoc reads them).
 */
const AUTHORING_WRITERS = new Set(['beamer', 'revealjs', 'slidy', 'dzslides', 'man', 'ms', 'texinfo', 'context', 'haddock']);
/**
 * Writers added for issue #30 that take office documents too (a Word file into a wiki, InDesign,
 * a journal's JATS), but not ebooks: calibre's docx of a Kindle book as a DokuWiki page or a TEI
 * edition is not a conversion anyone asks for.
 */
/**
 * The Markdown dialects besides `md` and `gfm`: for text pandoc reads itself, not for a Word or
 * ebook file chained through LibreOffice or calibre (their `md` is there for that), nor after another
 * step: a dialect is the last word of a markup conversion, not a stop on a route.
 */
const MARKDOWN_DIALECTS = new Set(['commonmark', 'mdstrict', 'mdextra', 'mmd']);
const INTERCHANGE_WRITERS = new Set(['dokuwiki', 'zimwiki', 'xwiki', 'muse', 'markua', 'jats', 'tei', 'icml', 'fb2']);
/**
 * FictionBook is written, not read: pandoc 2.17's fb2 reader drops every table (measured on the
 * shared corpus's pandoc-tables.fb2), so calibre stays the reader. Between ebooks calibre is the
 * specialist: epub → fb2 stays calibre's.
 */
const CALIBRE_PAIRS = new Set(['epub>fb2']);

/**
 * Bibliographies: our id → pandoc's reader. Any .bib is `bibtex` (one signature for both), read
 * by the BibLaTeX reader, which takes BibTeX's fields (year, journal) as well as its own (date,
 * journaltitle); `biblatex` is a target (BibLaTeX's fields), never a source.
 */
const BIB_READERS: Readonly<Record<string, string>> = { bibtex: 'biblatex', csljson: 'csljson' };
const BIB_WRITERS: Readonly<Record<string, string>> = { bibtex: 'bibtex', biblatex: 'biblatex', csljson: 'csljson' };
/**
 * A bibliography's reference list, rendered by citeproc (every entry, see filters/all-references.lua).
 * Markdown without its `citations` extension: with it, pandoc would keep the citation unrendered.
 */
const REFERENCE_LISTS: Readonly<Record<string, string>> = { md: 'markdown-citations', html: 'html5', docx: 'docx', txt: 'plain' };

/** Writers that do not work under Debian's `--sandbox` (see above). */
const OS_SANDBOX_ONLY = new Set(['docx', 'odt', 'epub', 'ipynb']);
/**
 * Writers that make a complete document only when asked to (`--standalone`): a man page needs its
 * .TH line, slides their framework, ICML, TEI and JATS their root and header, Texinfo its
 * `\input texinfo`, ms its macros.
 */
const STANDALONE = new Set(['html', 'latex', 'docbook', 'man', 'ms', 'texinfo', 'context', 'icml', 'tei', 'jats', 'beamer', 'revealjs', 'slidy', 'dzslides']);
/**
 * Writers that print no title block (short of `--standalone`; ICML not even then): the title
 * filter puts the title in their body.
 */
const NO_TITLE_BLOCK = new Set(['md', 'gfm', 'commonmark', 'mdstrict', 'mdextra', 'mmd', 'rst', 'org', 'txt', 'asciidoc', 'textile', 'mediawiki', 'jira', 'ipynb', 'dokuwiki', 'zimwiki', 'xwiki', 'muse', 'haddock', 'markua', 'icml']);

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
 * odt (filled in when the document's indexes are updated); a contents slide (beamer, reveal.js,
 * Slidy, DZSlides), ConTeXt's \completecontent, Texinfo's @contents, ms's .TC. The text markup
 * writers print one only in a standalone document (TOC_STANDALONE); the others (org, textile, jira,
 * mediawiki, docbook, ipynb, the wikis, man, ICML, TEI, JATS, FictionBook) make none.
 */
const TOC_WRITERS = new Set(['html', 'latex', 'docx', 'odt', 'epub', 'md', 'gfm', 'rst', 'asciidoc', 'txt', 'beamer', 'revealjs', 'slidy', 'dzslides', 'context', 'texinfo', 'ms']);
/**
 * Writers that print the table of contents only with `--standalone`. Standalone, each prints the
 * title in its own title block (YAML for Markdown, a title for reStructuredText, AsciiDoc and
 * plain text), so the title filter is left out there.
 */
const TOC_STANDALONE = new Set(['md', 'gfm', 'rst', 'asciidoc', 'txt']);
const TOC = narrow(OPTIONS.toc, { description: 'Add a table of contents built from the headings (three levels deep).' });

function documentEdge(from: string, to: string): ConversionEdge {
  return {
    from,
    to,
    cost: OFFICE_SOURCES.has(from) && OFFICE_TARGETS.has(to) ? 5 : 2,
    options: TOC_WRITERS.has(to) ? [TOC] : [],
    // The upload's own format only (see AUTHORING_WRITERS).
    ...(AUTHORING_WRITERS.has(to) || MARKDOWN_DIALECTS.has(to) ? { chainable: false } : {}),
    // After LibreOffice's docx or odt of an office upload, never after calibre's of an ebook, nor
    // after another pandoc step (which is how calibre's docx would reach them: mobi → docx → md).
    ...(INTERCHANGE_WRITERS.has(to) ? { notAfter: ['calibre', 'pandoc'] } : {}),
    // calibre reads FictionBook into every ebook target: pandoc's FictionBook is a book to read,
    // not the start of a chain through calibre that routes through epub already reach.
    ...(to === 'fb2' ? { endsRoute: true } : {}),
  };
}

const EDGES: ConversionEdge[] = [
  ...Object.keys(READERS).flatMap((from) => Object.keys(WRITERS)
    .filter((to) => to !== from && !CALIBRE_PAIRS.has(`${from}>${to}`))
    .map((to) => documentEdge(from, to))),
  // A bibliography goes to the other bibliography formats and to its rendered reference list, which
  // ends the route (a reference list is not the start of a document's conversions).
  ...Object.keys(BIB_READERS).flatMap((from) => [
    ...Object.keys(BIB_WRITERS).filter((to) => to !== from).map((to) => ({ from, to, cost: 2 })),
    ...Object.keys(REFERENCE_LISTS).map((to) => ({ from, to, cost: 2, endsRoute: true })),
  ]),
];

export class PandocEngine implements Engine {
  readonly id = 'pandoc';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
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

  /**
   * One pandoc run. `references`: the input is a bibliography whose reference list the output is
   * (citeproc with every entry listed, filters/all-references.lua). `media`: extract the media
   * the upload carries into MEDIA_DIR (the document tree of a docx, odt or epub upload, see runs()).
   */
  private args(reader: string, writer: string, to: string, input: string, output: string, options: StepOptions = {}, references = false, media = false): string[] {
    const args = [...RTS_OPTIONS, '--from', reader, '--to', writer, '--output', output];
    const toc = booleanOption(options, 'toc') === true && TOC_WRITERS.has(to);
    if (writer === 'json') {
      // The document tree for a writer outside `--sandbox`: every reference to anything but the
      // upload emptied here, where nothing has been fetched yet. Elsewhere an image or a raw tag
      // stays a reference (HTML's <img src>, Markdown's ![]()) that nothing reads, and the image
      // filter alone cost large documents 10-15% (BENCHMARKS.md). FictionBook embeds images too,
      // but under `--sandbox`, which reads none.
      args.push(`--lua-filter=${IMAGE_FILTER}`, `--lua-filter=${RESOURCE_FILTER}`);
      // pandoc 2.17.1.1-2~deb12u1 carries the fix of CVE-2023-35936 (media names with `..`
      // written outside this directory); the OS sandbox has nowhere else to write besides.
      if (media) args.push(`--extract-media=${MEDIA_DIR}`);
    }
    if (OS_SANDBOX_ONLY.has(to)) {
      // Reads the tree and the media extracted beside it, found from the job's directory only.
      args.push('--resource-path=.');
    } else {
      args.push('--sandbox');
    }
    if (references) args.push(`--lua-filter=${REFERENCES_FILTER}`, '--citeproc');
    const standalone = STANDALONE.has(to) || (toc && TOC_STANDALONE.has(to));
    if (standalone) args.push('--standalone');
    if (toc) args.push('--toc');
    if (NO_TITLE_BLOCK.has(to) && !(standalone && TOC_STANDALONE.has(to))) args.push(`--lua-filter=${TITLE_FILTER}`);
    if (TABLE_FILTERS[to]) args.push(`--lua-filter=${TABLE_FILTERS[to]}`);
    // A file name from the service, never one that could read as an option.
    args.push('--', `./${input}`);
    return args;
  }

  /**
   * The pandoc runs of one conversion. Outside `--sandbox` (docx, odt, epub and ipynb output, see
   * the top) a reader would follow include directives (man `.so`, RST `include`, ...) to any file
   * the OS sandbox shows (/usr, /etc/fonts), pandoc 2.17's docx writer fetches every image before
   * filters run (it embedded a file an odt upload linked to, measured), and the epub writer fetches
   * what raw HTML and the metadata name. So every upload goes to those writers in two runs: first
   * to pandoc's document tree (JSON) under `--sandbox` with the filters, the media of a docx, odt
   * or epub upload extracted beside it; then from that tree, which names nothing outside the
   * upload any more.
   */
  private runs(from: string, to: string, input: string, output: string, options: StepOptions = {}): string[][] {
    const bibliography = BIB_READERS[from];
    const reader = bibliography ?? READERS[from]!;
    const writer = bibliography ? (BIB_WRITERS[to] ?? REFERENCE_LISTS[to]!) : WRITERS[to]!;
    const references = bibliography !== undefined && BIB_WRITERS[to] === undefined;
    if (OS_SANDBOX_ONLY.has(to)) {
      return [
        this.args(reader, 'json', 'json', input, TREE, {}, references, CONTAINER_READERS.has(from)),
        this.args('json', writer, to, TREE, output, options),
      ];
    }
    return [this.args(reader, writer, to, input, output, options, references)];
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, workDir } = request;
    const prepared = PREPARED_SOURCES.has(from) ? await this.prepare(request) : undefined;
    const runs = this.runs(from, to, prepared ?? path.basename(input), path.basename(output), request.options);
    try {
      for (const args of runs) await this.runPandoc(args, request);
    } finally {
      if (runs.length > 1) {
        await fs.rm(path.join(workDir, TREE), { force: true });
        await fs.rm(path.join(workDir, MEDIA_DIR), { recursive: true, force: true });
      }
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
      // No /proc: pandoc and the GHC runtime run without one (see the top).
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
