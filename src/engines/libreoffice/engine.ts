// Office documents, spreadsheets, presentations and drawings through LibreOffice, kept warm in a
// supervised pool (office-pool.ts) and driven over UNO. The filters below are LibreOffice's own
// names; each family (Writer, Calc, Impress, Draw) has its readers and writers.
//
// CSV is deliberately not a LibreOffice source: Calc evaluates "=..." cells on CSV import, so a
// CSV would come out with live formulas (docs/security.md#libreoffice). CSV reaches Calc's targets through
// the data engine (csv → xlsx, which defuses formula cells) and then LibreOffice.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import type { ProcessPool } from '../../process/pool/index.ts';
import type { EngineContext } from '../module.ts';
import { booleanOption, narrow, OPTIONS, pageRangeOption, type OptionSpec, type StepOptions } from '../options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { isPasswordProtected } from './office-encryption.ts';
import { libreOfficeProgram, officeMessage, type OfficeRequest } from './office-pool.ts';
import type { LibreOfficeSettings } from './settings.ts';
import { PooledEngine } from '../support/pooled-engine.ts';

interface Family {
  readonly name: string;
  readonly reads: readonly string[];
  readonly writes: Readonly<Record<string, OfficeRequest>>;
  /** Targets that are final renditions (see ConversionEdge.endsRoute). */
  readonly renditions?: readonly string[];
  /**
   * Formats the family only reads (import-formats.ts), each converted to `importTargets` alone and
   * never the first link of a longer route (their edges end routes): a Visio drawing becomes a PDF,
   * a PNG, an SVG or an ODG, not every format those reach in turn.
   */
  readonly imports?: readonly string[];
  readonly importTargets?: readonly string[];
  /** Filters only the imports' edges use (Draw's own ODG, which its existing readers do not need). */
  readonly importWrites?: Readonly<Record<string, OfficeRequest>>;
  /** A tiny document of the family in a flat XML format, for the start-up probe. */
  readonly probe: { readonly ext: string; readonly content: string };
}

const FLAT_ODF = (mime: string, body: string) => `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.2" office:mimetype="${mime}">
<office:body>${body}</office:body></office:document>`;

const FAMILIES: readonly Family[] = [
  {
    name: 'writer',
    reads: ['doc', 'docx', 'odt', 'fodt', 'rtf', 'txt', 'html', 'wpd'],
    writes: {
      pdf: { filter: 'writer_pdf_Export' },
      docx: { filter: 'MS Word 2007 XML' },
      doc: { filter: 'MS Word 97' },
      odt: { filter: 'writer8' },
      rtf: { filter: 'Rich Text Format' },
      txt: { filter: 'Text (encoded)', exportOptions: 'UTF8,LF' },
      // Images go into the page as data: URIs; a single file is all a client downloads.
      html: { filter: 'HTML (StarWriter)', exportOptions: 'EmbedImages' },
      epub: { filter: 'EPUB' },
    },
    // Not here: Hangul's HWP 5 (LibreOffice 7.4 reads HWP 97 alone) and UOF text (its own UOF
    // text files come back without a page size: the PDF export fails, the page image is 1x1).
    imports: ['docm', 'dotx', 'dotm', 'ott', 'wordml', 'abw', 'wps', 'sxw', 'stw', 'pages'],
    // png: the first page, as Impress and Draw give their first slide or page.
    importTargets: ['pdf', 'docx', 'odt', 'doc', 'rtf', 'txt', 'png'],
    importWrites: { png: { filter: 'writer_png_Export' } },
    probe: { ext: 'fodt', content: FLAT_ODF('application/vnd.oasis.opendocument.text', '<office:text><text:p>probe</text:p></office:text>') },
  },
  {
    name: 'calc',
    reads: ['xls', 'xlsx', 'ods', 'fods', 'wks', 'mp'],
    writes: {
      pdf: { filter: 'calc_pdf_Export' },
      xlsx: { filter: 'Calc MS Excel 2007 XML' },
      xls: { filter: 'MS Excel 97' },
      ods: { filter: 'calc8' },
      // Comma, double quote, UTF-8 (76), first sheet.
      csv: { filter: 'Text - txt - csv (StarCalc)', exportOptions: '44,34,76,1' },
      html: { filter: 'HTML (StarCalc)' },
    },
    renditions: ['html'],
    imports: ['xlsm', 'xltx', 'xltm', 'xlsb', 'ots', 'spreadsheetml', 'uos', 'dbf', 'slk', 'dif', 'wk1', 'sxc', 'stc', 'numbers'],
    importTargets: ['pdf', 'xlsx', 'ods', 'xls', 'csv', 'png'],
    importWrites: { png: { filter: 'calc_png_Export' } },
    probe: { ext: 'fods', content: FLAT_ODF('application/vnd.oasis.opendocument.spreadsheet', '<office:spreadsheet><table:table table:name="S"><table:table-row><table:table-cell><text:p>probe</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>') },
  },
  {
    name: 'impress',
    reads: ['ppt', 'pptx', 'odp', 'fodp'],
    writes: {
      pdf: { filter: 'impress_pdf_Export' },
      pptx: { filter: 'Impress MS PowerPoint 2007 XML' },
      ppt: { filter: 'MS PowerPoint 97' },
      odp: { filter: 'impress8' },
      // The first slide, as an image.
      png: { filter: 'impress_png_Export' },
    },
    renditions: ['png'],
    // CGM opens in Impress (LibreOffice's CGM import is Impress's).
    imports: ['pptm', 'potx', 'potm', 'ppsx', 'ppsm', 'otp', 'uop', 'cgm', 'sxi', 'key'],
    importTargets: ['pdf', 'pptx', 'odp', 'ppt', 'png'],
    probe: { ext: 'fodp', content: FLAT_ODF('application/vnd.oasis.opendocument.presentation', '<office:presentation><draw:page draw:name="p1"><draw:frame svg:x="1cm" svg:y="1cm" svg:width="10cm" svg:height="2cm"><draw:text-box><text:p>probe</text:p></draw:text-box></draw:frame></draw:page></office:presentation>') },
  },
  {
    name: 'draw',
    reads: ['odg'],
    writes: {
      pdf: { filter: 'draw_pdf_Export' },
      png: { filter: 'draw_png_Export' },
      svg: { filter: 'draw_svg_Export' },
    },
    renditions: ['png'],
    // Publisher documents open in Draw, as LibreOffice's import makes them drawings.
    imports: ['vsd', 'vsdx', 'otg', 'fodg', 'pub', 'cdr', 'emf', 'wmf', 'sxd'],
    importTargets: ['pdf', 'png', 'svg', 'odg'],
    importWrites: { odg: { filter: 'draw8' } },
    probe: { ext: 'fodg', content: FLAT_ODF('application/vnd.oasis.opendocument.graphics', '<office:drawing><draw:page draw:name="p1"><draw:rect svg:x="1cm" svg:y="1cm" svg:width="2cm" svg:height="2cm"/></draw:page></office:drawing>') },
  },
];

/**
 * Readers named rather than left to LibreOffice's type detection: those it could send to the
 * wrong module, and those of files whose extension (input.<id>) it would not know, so that the
 * file is opened by the one reader its sniffed format says and by no other.
 */
const IMPORT_FILTERS: Readonly<Record<string, Pick<OfficeRequest, 'importFilter' | 'importOptions'>>> = {
  html: { importFilter: 'HTML (StarWriter)' },
  txt: { importFilter: 'Text (encoded)', importOptions: 'UTF8' },
  wordml: { importFilter: 'MS Word 2003 XML' },
  spreadsheetml: { importFilter: 'MS Excel 2003 XML' },
  uos: { importFilter: 'UOF spreadsheet' },
  uop: { importFilter: 'UOF presentation' },
  slk: { importFilter: 'SYLK' },
  dif: { importFilter: 'DIF' },
  dbf: { importFilter: 'dBase' },
  // OpenOffice.org 1.x: LibreOffice's own legacy XML readers, each in its own module.
  sxw: { importFilter: 'StarOffice XML (Writer)' },
  stw: { importFilter: 'writer_StarOffice_XML_Writer_Template' },
  sxc: { importFilter: 'StarOffice XML (Calc)' },
  stc: { importFilter: 'calc_StarOffice_XML_Calc_Template' },
  sxi: { importFilter: 'StarOffice XML (Impress)' },
  sxd: { importFilter: 'StarOffice XML (Draw)' },
  // Apple iWork (libetonyek): each reader opens only its own application's documents.
  pages: { importFilter: 'Apple Pages' },
  numbers: { importFilter: 'Apple Numbers' },
  key: { importFilter: 'Apple Keynote' },
};

/**
 * What the PDF export takes: the pages to export (LibreOffice's PageRange, counted on the laid-out
 * document; a route that needs only a first page asks for page 1 alone, so a 300-page document
 * is not exported whole for a thumbnail) and PDF/A-2b (SelectPdfVersion 2).
 */
const PDF_OPTIONS: readonly OptionSpec[] = [
  narrow(OPTIONS.page_range, { description: 'Which pages (slides; a spreadsheet\'s printed pages) to export, 1-based: "2", "1-3,5", "4-" (from 4 to the end).' }),
  OPTIONS.pdf_a,
];

/** LibreOffice's SelectPdfVersion for PDF/A-2b. */
const PDF_A_2B = 2;

/** The helper's typed PDF export fields for a step's options (none when the client gave none). */
function pdfExport(options: StepOptions): Pick<OfficeRequest, 'pageSpans' | 'pdfVersion'> {
  const ranges = pageRangeOption(options);
  return {
    ...(ranges ? { pageSpans: ranges.spans.map((span) => [span.from, span.to ?? null] as const) } : {}),
    ...(booleanOption(options, 'pdf_a') === true ? { pdfVersion: PDF_A_2B } : {}),
  };
}

/** Targets that carry all their input's pages (pdf), sheets (xlsx, ods) or shapes (svg). */
const FAITHFUL_TARGETS = new Set(['pdf', 'xlsx', 'ods', 'svg']);

/** A warm conversion costs a fraction of a second, but more than an in-process image step. */
const COST = 4;

/** The filter that writes `to` from a file of the family, read as one of its own or as an import. */
function writerOf(family: Family, from: string, to: string): OfficeRequest | undefined {
  if (family.reads.includes(from)) return family.writes[to];
  if (family.imports?.includes(from) && family.importTargets?.includes(to)) return family.importWrites?.[to] ?? family.writes[to];
  return undefined;
}

function edgesOf(family: Family): ConversionEdge[] {
  return [...readEdges(family), ...importEdges(family)];
}

/** An import's edges: its family's common targets, each ending the route. */
function importEdges(family: Family): ConversionEdge[] {
  return (family.imports ?? []).flatMap((from) => (family.importTargets ?? []).map((to) => ({
    from,
    to,
    cost: COST,
    endsRoute: true,
    ...(FAITHFUL_TARGETS.has(to) ? { faithful: true } : {}),
    ...(to === 'pdf' ? { options: PDF_OPTIONS } : {}),
  })));
}

function readEdges(family: Family): ConversionEdge[] {
  return family.reads.flatMap((from) => Object.keys(family.writes).filter((to) => to !== from).map((to) => ({
    from,
    to,
    // Writer's HTML import is the weakest reader (it crashed on real-world pages of the corpus
    // tests): pandoc's html → odt then LibreOffice is preferred wherever it exists.
    cost: from === 'html' ? COST + 3 : COST,
    endsRoute: family.renditions?.includes(to) ?? false,
    // Every page, sheet or shape of the input: a later step may choose among them (planner.ts).
    ...(FAITHFUL_TARGETS.has(to) ? { faithful: true } : {}),
    ...(to === 'pdf' ? { options: PDF_OPTIONS } : {}),
  })));
}

export class LibreOfficeEngine extends PooledEngine implements Engine {
  readonly id = 'libreoffice';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 300;
  /** Each family's edges, made once: the probe offers the same objects, as the probe cache expects. */
  private readonly edgesByFamily = new Map(FAMILIES.map((family) => [family, edgesOf(family)]));
  readonly edges: readonly ConversionEdge[] = FAMILIES.flatMap((family) => this.edgesByFamily.get(family)!);
  readonly reportsProgress = false;
  readonly pool: ProcessPool;
  private readonly withScratchDir: EngineContext<LibreOfficeSettings>['withScratchDir'];

  constructor(context: EngineContext<LibreOfficeSettings>) {
    super();
    const { settings } = context;
    this.withScratchDir = context.withScratchDir;
    this.pool = context.pools.create(libreOfficeProgram(context.maxOutputBytes), {
      size: settings.poolSize,
      maxJobsPerProcess: settings.maxJobs,
      // An API node never converts: its pool must not start processes.
      start: context.runsJobs ? settings.start : 'lazy',
      maxWaiting: settings.queue,
    });
  }

  estimateSeconds(inputBytes: number, from: string): number {
    return (from.startsWith('ppt') || from === 'odp' ? 1.5 : 1) + inputBytes / 200_000;
  }

  /** Starts the pool and converts a tiny document of each family; families that fail are not advertised. */
  async probe(): Promise<readonly ConversionEdge[]> {
    await fs.access('/usr/lib/libreoffice/program/soffice.bin');
    await this.pool.init();
    const working: ConversionEdge[] = [];
    const failures: string[] = [];
    await this.withScratchDir(async (dir) => {
      for (const family of FAMILIES) {
        const input = path.join(dir, `probe.${family.probe.ext}`);
        const output = path.join(dir, `probe-${family.name}.pdf`);
        await fs.writeFile(input, family.probe.content);
        try {
          await this.pool.convert(input, output, officeMessage(family.writes.pdf!), 60_000, AbortSignal.timeout(90_000), { probe: true });
          if ((await fs.stat(output)).size === 0) throw new Error('empty output');
          working.push(...this.edgesByFamily.get(family)!);
        } catch (error) {
          failures.push(`${family.name}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    });
    if (working.length === 0) throw new Error(`LibreOffice converted nothing (${failures.join('; ')})`);
    return working;
  }

  async convert(request: ConvertRequest): Promise<void> {
    const writer = FAMILIES.map((family) => writerOf(family, request.from, request.to)).find((found) => found !== undefined);
    if (!writer) throw new Error(`LibreOffice has no filter for ${request.from} → ${request.to}`);
    try {
      const pdf = request.to === 'pdf' ? pdfExport(request.options) : {};
      await this.pool.convert(request.input, request.output, officeMessage({ ...writer, ...IMPORT_FILTERS[request.from], ...pdf }), request.limits.timeoutMs, request.signal);
    } catch (error) {
      // LibreOffice answers a password-protected file as one it cannot open: say which it is.
      if (error instanceof ConvertdError && error.code === 'corrupt_input' && await isPasswordProtected(request.input)) {
        throw new ConvertdError('encrypted_input', 'The document is protected by a password: remove the protection (save it without a password) and upload it again.');
      }
      throw error;
    }
  }
}
