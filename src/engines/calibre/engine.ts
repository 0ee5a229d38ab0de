// Ebooks with calibre's ebook-convert: epub, mobi, azw3 and fb2 among themselves, and to docx,
// txt and pdf; Palm database ebooks (pdb: PalmDOC, eReader, zTXT...) read, and written as PalmDOC;
// older formats (lit, lrf, rb, tcr, pml/pmlz, txtz, htmlz, djvu's text layer) and comics (cbz,
// cb7, cbc) read, and older formats written, each as a route of its own (EDGES says why). calibre
// picks its input plugin by the file's extension and runs `.recipe` files as Python
// (docs/security.md#calibre): the input here is always the service's own `input.<format>`, with
// the format one of INPUTS (a PalmDOC book uploaded as .mobi is sniffed as pdb, so calibre gets
// `input.pdb`). calibre's HTML input (also behind htmlz, txtz and pml) takes in files next to the
// input, so the job directory holds nothing else of value; and it runs in the OS sandbox, which
// also holds what a comic archive unpacks.
// ebook-convert runs warm, in a supervised pool (calibre-pool.ts): a helper that has imported
// calibre forks a child per job. PDF output renders with Qt WebEngine (Chromium): its own sandbox
// cannot start inside ours, so it is switched off there, the bubblewrap sandbox standing in for
// it. No address-space cap: it breaks Chromium: under a 4 GB RLIMIT_AS it writes no PDF and still
// exits 0 (docs/security.md#resource-limits).
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ProcessPool } from '../../process/pool/index.ts';
import type { ArchiveMembers } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import { booleanOption, enumOption, narrow, numberOption, OPTIONS, type OptionSpec, type StepOptions } from '../options.ts';
import { PooledEngine } from '../support/pooled-engine.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { calibreMessage, calibreProgram } from './calibre-pool.ts';

/** The ebooks of today: each to each, and to docx, txt and pdf, and on through other engines. */
const READS = ['epub', 'mobi', 'azw3', 'fb2', 'pdb'];
const WRITES = ['epub', 'mobi', 'azw3', 'fb2', 'docx', 'txt', 'pdf'];
/**
 * Older or rarer ebook formats calibre reads: read into the ebooks of today (WRITES), one step
 * from the upload only. Left out: SNB (calibre 6.13's reader looks its chapters up by a text name
 * among names it keeps as bytes, finds none and makes an empty book), CBR (RAR needs unrardll,
 * which is not free software and not in Debian) and CHM (Debian's calibre 6.13 fails on every CHM
 * with "'HTMLInput' object has no attribute 'root_dir_of_input'": its fix of CVE-2023-46303 left
 * the CHM reader's call into the HTML reader behind).
 */
const LEGACY_READS = ['lit', 'lrf', 'rb', 'tcr', 'pml', 'pmlz', 'txtz', 'htmlz', 'djvu'];
/**
 * A DjVu's PDF and text come from the djvulibre engine: its PDF shows the pages as they look
 * (calibre's would be the text layer set anew, without the pictures) and djvutxt reads the text
 * layer without calibre's start. calibre makes the reflowable ebooks and docx of it.
 */
const DJVULIBRE_WRITES = ['pdf', 'txt'];
/** Comic archives: pictures, so only into the formats that show pictures as pages. */
const COMICS = ['cbz', 'cb7', 'cbc'];
const COMIC_WRITES = ['epub', 'mobi', 'azw3', 'pdf'];
/**
 * The archive each comic kind is packed as, where the input check cannot read its members from a
 * ZIP directory (formats/input-caps.ts reads cbz's): a cb7 is 7-Zip, and a cbc is a ZIP of cbz
 * comics. calibre would unpack them with no cap of its own, so they are first unpacked through
 * the archive engine's checks (member count, expanded size and ratio, links), then calibre runs.
 */
const CHECKED_COMICS: Readonly<Record<string, string>> = { cb7: '7z', cbc: 'zip' };
/**
 * Formats for older readers (and zipped HTML or text), written from the ebooks of today only.
 * Left out: LIT (its content is LZX-compressed and sealed: no tool here reads it back except
 * calibre itself), OEB (a directory, not a file), ZIP (needs pystache, not installed; and `zip`
 * means an archive or pages as pictures elsewhere) and RTF (the ebooks reach rtf already, through
 * docx and LibreOffice, a route document-pairs.test.ts checks).
 */
const MODERN = ['epub', 'mobi', 'azw3', 'fb2'];
const LEGACY_WRITES = ['htmlz', 'txtz', 'pmlz', 'lrf', 'pdb', 'rb', 'snb', 'tcr'];
/** Every format calibre is given as input here: the input is always `input.<one of these>`. */
const INPUTS = new Set([...READS, ...LEGACY_READS, ...COMICS]);

/** calibre's paper sizes (`--paper-size`); letter is its default. */
const PAPER_SIZES = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'b0', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'legal', 'letter'];

/**
 * What people printing a book ask of its PDF: a table of contents with page numbers, page numbers,
 * the paper size, and a larger or smaller type. The ebook targets take none: their reader sets the
 * type size and pages them, and their table of contents is always made (from the book's own, or
 * from its headings).
 */
const PDF_OPTIONS: readonly OptionSpec[] = [
  narrow(OPTIONS.toc, { description: 'Add a table of contents with page numbers at the end of the PDF (its outline, the bookmarks, is always there).' }),
  { name: 'page_numbers', type: 'boolean', default: false, appliesAt: 'output', description: 'Print the page number at the bottom of every page.' },
  { name: 'paper_size', type: 'enum', values: PAPER_SIZES, default: 'letter', appliesAt: 'output', description: 'Paper size of the PDF: ISO A0-A6 and B0-B6, US letter or legal.' },
  { name: 'base_font_size', type: 'number', minimum: 6, maximum: 48, appliesAt: 'output', description: 'Size in points of the body text; every other size in the book is scaled with it (default: calibre\'s choice for the paper, about 12).' },
];

/** One calibre edge; PDF targets take the PDF options. */
function edge(from: string, to: string, extra: Partial<ConversionEdge> = {}): ConversionEdge {
  // calibre starts slowly; its PDF of a book is still better paginated than the alternatives.
  return { from, to, cost: to === 'pdf' ? 5 : 6, ...(to === 'pdf' ? { options: PDF_OPTIONS } : {}), ...extra };
}

/**
 * The older formats are routes of their own (chainable: false): a LIT book becomes an EPUB or a
 * PDF, not an EPUB on its way to Markdown; a Word document does not become a Rocket eBook through
 * an EPUB. Nobody needs those pairs, and each would be a calibre start more in every test run.
 */
const EDGES: ConversionEdge[] = [
  ...READS.flatMap((from) => WRITES.filter((to) => to !== from).map((to) => edge(from, to))),
  ...MODERN.flatMap((from) => LEGACY_WRITES.map((to) => edge(from, to, { chainable: false }))),
  ...LEGACY_READS.flatMap((from) => WRITES.filter((to) => from !== 'djvu' || !DJVULIBRE_WRITES.includes(to)).map((to) => edge(from, to, { chainable: false }))),
  ...COMICS.flatMap((from) => COMIC_WRITES.map((to) => edge(from, to, { chainable: false }))),
];

/** ebook-convert's arguments for the options given (parsed values only: booleans, an enum word of ours, a number). */
function optionArguments(to: string, options: StepOptions): string[] {
  if (to !== 'pdf') return [];
  const args: string[] = [];
  if (booleanOption(options, 'toc') === true) args.push('--pdf-add-toc');
  if (booleanOption(options, 'page_numbers') === true) args.push('--pdf-page-numbers');
  const paper = enumOption<string>(options, 'paper_size');
  if (paper !== undefined && PAPER_SIZES.includes(paper)) args.push(`--paper-size=${paper}`);
  const size = numberOption(options, 'base_font_size');
  if (size !== undefined && size >= 6 && size <= 48) args.push(`--base-font-size=${size}`);
  return args;
}

/** Conversions after which a helper is replaced: each job runs in a child that exits, so this only bounds the helper's own life. */
const JOBS_PER_HELPER = 500;

export class CalibreEngine extends PooledEngine implements Engine {
  readonly id = 'calibre';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 600;
  readonly edges = EDGES;
  readonly reportsProgress = true;
  readonly pool: ProcessPool;
  private readonly archives: ArchiveMembers;

  constructor(context: EngineContext<unknown>) {
    super();
    this.archives = context.use('archive-members');
    this.pool = context.pools.create(calibreProgram(context.maxOutputBytes), {
      // One helper per concurrent job, started on the first ebook job: many services convert none.
      size: context.concurrency,
      maxJobsPerProcess: JOBS_PER_HELPER,
      start: 'lazy',
      // The job queue already holds jobs back to the service's concurrency.
      maxWaiting: 10_000,
    });
  }

  estimateSeconds(inputBytes: number, _from: string, to: string): number {
    return (to === 'pdf' ? 3 : 1.5) + inputBytes / 500_000;
  }

  /**
   * Unpacks a comic through the archive engine's caps into a folder of the job, and each comic a
   * collection holds, then removes what was unpacked: a bomb or a link ends the job before calibre
   * starts. The pages are unpacked twice (here and by calibre); comics are small next to the caps.
   */
  private async checkComic(request: ConvertRequest, packedAs: string): Promise<void> {
    const { input, workDir, limits, signal } = request;
    const dir = path.join(workDir, 'comic-check');
    // The archive engine reads its input by name from the folder it runs in: a nested comic's is the unpacked folder.
    const unpack = (file: string, from: string, into: string) => this.archives.unpack({
      input: file, from, dir: into, workDir: path.dirname(file), timeoutMs: limits.timeoutMs, signal, onProgress: () => undefined,
    });
    try {
      const members = await unpack(input, packedAs, dir);
      for (const [index, member] of members.filter((m) => /\.cbz$/i.test(m.name)).entries()) {
        await unpack(member.file, 'zip', path.join(dir, `comic-${index + 1}`));
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }

  /** The warm helper starts: it imports calibre and converts a sample of its own before it says it is ready. */
  async probe(): Promise<void> {
    await this.pool.init();
    await this.pool.ask({ op: 'ping' }, 30_000, AbortSignal.timeout(90_000));
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, limits, signal, onProgress } = request;
    if (!INPUTS.has(from)) throw new Error(`calibre is not used to read ${from}`);
    const packedAs = CHECKED_COMICS[from];
    if (packedAs) await this.checkComic(request, packedAs);
    // A comic's pages as drawn: calibre's comic reader otherwise turns every page grey, trims what
    // it takes for borders (a white band of the drawing, and on a page of flat colours all of it:
    // "Could not find any valid pages") and stretches each page to its reader's screen.
    const comic = COMICS.includes(from) ? ['--dont-grayscale', '--disable-trim', '--keep-aspect-ratio'] : [];
    // The helper passes `./input.<from>` and `./output.<to>` first: calibre picks its plugins by their extensions.
    const args = [...comic, ...optionArguments(to, request.options)];
    // calibre's progress ("12% Converting input to HTML..."), relayed by the helper.
    await this.pool.convert(input, output, calibreMessage(args, limits.timeoutMs), limits.timeoutMs, signal, { onProgress });
  }
}
