// OCR with Tesseract 5: an image's text as plain text (txt) or as hOCR (the words with their
// boxes, XHTML), and the searchable PDF (the picture with an invisible text layer), asked for as
// target pdf with option ocr=true. An uploaded PDF likewise (pdf-pages.ts): its pages drawn by
// pdftoppm, those without text read (skip_text), txt and pdf with ocr=true, hocr always.
//
// Which decoder reads the upload: leptonica (inside tesseract) reads only TIFF, for its pages,
// after the pages and each page's declared size were read here from the TIFF's directories
// (tiffPages: past MAX_TIFF_PAGES pages or a page past the pixel cap, refused before tesseract
// starts). Every other image (png, jpg, webp, gif) is first written anew as a flat PNG by sharp's
// sandboxed processes ('raster-images', flattenOntoWhite: transparency onto white, which
// tesseract would otherwise read as black), so leptonica decodes only PNGs our sharp wrote. A
// BMP, which sharp does not read, is made a PNG by ImageMagick under its policy first
// ('other-raster-images'; its size was held to the pixel cap by the input caps), then the same.
//
// Routes. txt and hocr are `chainable: false`: only an uploaded png, jpg, webp, gif, tiff or bmp is
// read, never a picture some other route made (png is reached by ~45 formats in up to three
// steps; each would have gained two OCR targets to prove by a test, for conversions nobody asks
// of a PCX or a DDS). The searchable PDF (png, tiff → pdf) costs more than img2pdf's picture PDF
// (2), so a client sending only file and target keeps img2pdf; sending ocr=true moves the job here
// (the planner takes the route applying most options). It may follow sharp (jpg, webp, gif → png
// → pdf with ocr=true). It is not marked endsRoute, yet never becomes the middle of a longer route:
// ocr and language shape the output, so only a route's last step counts for them, and without them
// img2pdf's way is cheaper. (Marked endsRoute, it hid tiff → pdf → pdfa: the planner's target walk
// follows a format from the engine that first reached it.)
// ocr=false on that route is refused (422): it would otherwise bring the job here for a PDF
// without text, which tesseract does not write; leaving the option out gives that PDF.
//
// Start cost, measured with `tesseract tiny.png -` (80 × 30 pixels, eng) on the loaded 2-core
// machine: 1.2-1.6 s wall, 0.30-0.40 s of CPU, 35 MB (43 MB with eng+rus); a page of text takes
// one to a few seconds more. The start is a small share of a page's recognition: no warm pool.
// OMP_THREAD_LIMIT=1: tesseract's OpenMP threads would otherwise take every core for one job.
//
// A PDF's routes. pdf → txt and pdf → pdf take ocr (refused when false, as above), language,
// page_range and skip_text; poppler's pdf → txt (the text layer) and Ghostscript's pdf → pdf are
// cheaper and take page_range too, so without ocr, language or skip_text a job stays theirs.
// pdf → hocr is Tesseract's alone. All three for the uploaded PDF only: a document made a PDF
// by another engine has its text already.
//
// A TIFF's page_range: the pages chosen are drawn by sharp (its `page`) as flat PNGs and read
// from a list, as a PDF's are (tesseract itself reads a TIFF's pages all, or one). On tiff → pdf it
// needs ocr=true: without it, the picture PDF is img2pdf's of the first page.
//
// Left: the other raster formats ImageMagick reads (convert to png first: each would be two more
// targets to prove, for OCR nobody asks of a PCX).
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { OtherRasterImages, RasterImages } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import { booleanOption, narrow, OPTIONS, OptionError, pageRangeOption, refuseFalse, selectPages, type StepOptions, type StringSpec } from '../options.ts';
import type { ConversionEdge, ConvertRequest, Engine, EngineLimits } from '../types.ts';
import { MAX_OCR_PAGES, readPdfPages } from './pdf-pages.ts';
import { MAX_TIFF_PAGES, readTiffPages } from './tiff-pages.ts';

const TESSERACT = '/usr/bin/tesseract';

/** Languages joined with `+` in one `language` value, at most: each adds its model's load and a pass. */
export const MAX_LANGUAGES = 4;
/** Not a language: the orientation and script detector's data, which --list-langs lists too. */
const NOT_LANGUAGES = new Set(['osd', 'equ']);
/** A language code as tessdata names them: eng, chi_sim, script/Latin is not offered. */
const CODE = /^[a-z]{3}(_[a-z]{3,4})?$/;
const DEFAULT_LANGUAGE = 'eng';

/** A tiny picture of the word "probe" (80 × 30, DejaVu Sans 20 px) for the start-up probe. */
const PROBE_SAMPLE = 'iVBORw0KGgoAAAANSUhEUgAAAFAAAAAeCAAAAACeKMZtAAABr0lEQVR42u2WvUtbURiHn5t4LcHSqNUotQqCFEEURASxfnSyg2AHt4KazjqVFpfSKaJ/gjgptJJJB8FJAtVBBSEplkK1DWiriPiBDeIH6M/h3iR6DbdD3cy7XM57Hp5zuL/D4RjibstDVpgV2hUzgtl/6C6MGcF49+O8tog92Hgd8CwRbn3kqx05s8k0wGJ3aW5ZMJ7ZKEmK8jIA4J22BiXA4nsLaD93AmPWLvJXlaGSQp7N/f3RQ9GxFIXaSELzmMOb+5OFDDmA72bpxPbpr3e0uAnNNUl6TliK4tuUFOSDJM1Q6QAGWJAkdbLjIrRWG2VQivJCkupYlyQFOLwJNOD1ejwGsJxBmEy5DIAnHAGUAxzZvadWLw3sc3FxeSngPEMmOfZ3C4Bt/Kno/WxVAfyxemnAz0bFv8/h8k+Az9SnZuqZAJjdrcy/CTQx6nYQkylXRxJrb+yU+yTpC+bw74NwESEH8C3H6P+a2FsJdbml3FEM4J1SSqi31oqtZ05g3LRmatyEfeuvCnwtc7om1Kfmhw9qQie3AMV6K3KLGz/GXYW6o7qH15eRfTn8d10BGSDu5seyoRQAAAAASUVORK5CYII=';

const OCR_OPTION = narrow(OPTIONS.ocr, {
  description: 'true: the PDF holds the picture and, invisible over it, the text Tesseract read (a searchable PDF). Without it, the image becomes a picture PDF without text (img2pdf, as before).',
});

/** The tesseract config each target names (its output is `<base>.<config's extension>`). */
const CONFIGS: Readonly<Record<string, { config: string; extension: string }>> = {
  txt: { config: 'txt', extension: 'txt' },
  hocr: { config: 'hocr', extension: 'hocr' },
  pdf: { config: 'pdf', extension: 'pdf' },
};

/**
 * `language` for the languages installed: one code or several joined with `+`, each one of
 * `installed`, none twice, at most MAX_LANGUAGES. The pattern lists them, so the descriptor shows
 * what this server has; the parse checks again and returns the codes joined, built from our list.
 */
export function languageOption(installed: readonly string[]): StringSpec {
  const codes = installed.filter((code) => CODE.test(code));
  const one = codes.length > 0 ? `(${codes.join('|')})` : '[a-z]{3}(_[a-z]{3,4})?';
  return {
    ...OPTIONS.language,
    default: DEFAULT_LANGUAGE,
    pattern: `${one}(\\+${one}){0,${MAX_LANGUAGES - 1}}`,
    description: `The language(s) of the text, as Tesseract's codes: one, or up to ${MAX_LANGUAGES} joined with "+" (eng+rus). Installed here: ${codes.length > 0 ? codes.join(', ') : 'found when the service starts'}. Default ${DEFAULT_LANGUAGE}.`,
    parse(text: string): string {
      const wanted = text.toLowerCase().split('+');
      if (wanted.length > MAX_LANGUAGES) throw new OptionError(`at most ${MAX_LANGUAGES} languages joined with "+".`);
      const chosen = wanted.map((code) => {
        const found = codes.find((known) => known === code);
        if (found === undefined) throw new OptionError(`"${code.slice(0, 20)}" is not an installed language (${codes.join(', ')}).`);
        return found;
      });
      if (new Set(chosen).size !== chosen.length) throw new OptionError('a language is named twice.');
      return chosen.join('+');
    },
  };
}

/** ocr=false would bring the job to this route for a PDF without text: refused before the job exists. */
function ocrMustBeTrue(options: StepOptions): void {
  refuseFalse(options, 'ocr', 'a picture PDF, through img2pdf', 'for a searchable PDF');
}

/**
 * A TIFF's searchable PDF: ocr as for any image, and a page_range only with ocr=true (the picture
 * PDF without OCR, img2pdf's, has the first page alone and chooses none).
 */
function tiffPdfOptions(options: StepOptions): void {
  ocrMustBeTrue(options);
  if (!pageRangeOption(options) || booleanOption(options, 'ocr') === true) return;
  throw new ConvertdError('invalid_option', 'Option "page_range": a TIFF\'s pages are chosen for its searchable PDF: send ocr=true with it (without OCR, tiff → pdf is a picture of the first page).', { option: 'page_range', reason: 'needs ocr=true' });
}

/** Which pages of a multi-page TIFF are read. */
const TIFF_PAGES = narrow(OPTIONS.page_range, { description: 'Which pages of a multi-page TIFF are read, 1-based: "2", "1-3,5", "4-" (from 4 to the end). Default: every page.' });

/** The formats read as uploads (all but tiff through sharp's PNG first, bmp through ImageMagick's PNG before that). */
const TEXT_SOURCES = ['png', 'jpg', 'webp', 'gif', 'tiff', 'bmp'];
/** Read by ImageMagick first (sharp does not decode them); offered when the probe's decode of one worked. */
const DECODED_FIRST = new Set(['bmp']);

/** A 2 × 2 BMP (24-bit, bottom-up rows padded to 4 bytes) for the probe of ImageMagick's decode. */
function tinyBmp(): Buffer {
  const rows = Buffer.alloc(2 * 8, 0xff);
  const header = Buffer.alloc(54);
  header.write('BM', 0, 'latin1');
  header.writeUInt32LE(54 + rows.length, 2);
  header.writeUInt32LE(54, 10);
  header.writeUInt32LE(40, 14);
  header.writeInt32LE(2, 18);
  header.writeInt32LE(2, 22);
  header.writeUInt16LE(1, 26);
  header.writeUInt16LE(24, 28);
  header.writeUInt32LE(rows.length, 34);
  return Buffer.concat([header, rows]);
}

const PDF_OCR_OPTION = narrow(OPTIONS.ocr, {
  description: 'true: read the text of the pages that have none (OCR; skip_text) and give it with the others\'. Without it, a PDF\'s text is its text layer (poppler), and its PDF is Ghostscript\'s.',
});
const PDF_PAGES = narrow(OPTIONS.page_range, { description: `Which pages of the PDF are read and kept, 1-based: "2", "1-3,5", "4-" (from 4 to the end). Default: all, up to ${MAX_OCR_PAGES} in one job.` });

/** ocr=false on a PDF's route would OCR nothing: refused, as for an image's searchable PDF. */
function pdfOcrMustBeTrue(options: StepOptions): void {
  refuseFalse(options, 'ocr', 'the PDF\'s own text layer', 'to read the pages that have no text');
}

export function tesseractEdges(languages: readonly string[]): ConversionEdge[] {
  const language = languageOption(languages);
  const pages = (from: string) => (from === 'tiff' ? [TIFF_PAGES] : []);
  const text = TEXT_SOURCES.flatMap((from) => ['txt', 'hocr'].map((to): ConversionEdge => ({ from, to, cost: 6, chainable: false, options: [language, ...pages(from)] })));
  const pdf = TEXT_SOURCES.map((from): ConversionEdge => ({
    from, to: 'pdf', cost: 8, options: [OCR_OPTION, language, ...pages(from)], checkOptions: from === 'tiff' ? tiffPdfOptions : ocrMustBeTrue,
  }));
  const ofPdf: ConversionEdge[] = [
    { from: 'pdf', to: 'txt', cost: 8, chainable: false, options: [PDF_OCR_OPTION, language, PDF_PAGES, OPTIONS.skip_text], checkOptions: pdfOcrMustBeTrue },
    { from: 'pdf', to: 'pdf', cost: 8, chainable: false, options: [PDF_OCR_OPTION, language, PDF_PAGES, OPTIONS.skip_text], checkOptions: pdfOcrMustBeTrue },
    { from: 'pdf', to: 'hocr', cost: 8, chainable: false, options: [language, PDF_PAGES] },
  ];
  return [...text, ...pdf, ...ofPdf];
}

export class TesseractEngine implements Engine {
  readonly id = 'tesseract';
  /** OCR of a page takes seconds; a TIFF of MAX_TIFF_PAGES pages many minutes. */
  readonly timeoutSeconds = 900;
  /** Per page of a TIFF (tesseract's "Page n" lines); an image is one step. */
  readonly reportsProgress = true;
  private readonly context: EngineContext<unknown>;
  private readonly images: RasterImages;
  private readonly otherImages: OtherRasterImages;
  /** The languages `tesseract --list-langs` found at the probe (or remembered from it). */
  private languages: readonly string[] = [];
  private declared: readonly ConversionEdge[] = tesseractEdges([]);

  constructor(context: EngineContext<unknown>) {
    this.context = context;
    this.images = context.use('raster-images');
    this.otherImages = context.use('other-raster-images');
  }

  get edges(): readonly ConversionEdge[] {
    return this.declared;
  }

  /** Whether pdftoppm ran at the probe (a PDF's edges are offered only then). */
  private readsPdf = false;
  /** Whether ImageMagick made a PNG of the probe's BMP (the BMP edges are offered only then). */
  private readsBmp = false;

  /** The languages found and what is read are the probe's facts; the edges (their `language` option) are built from them. */
  readonly probeMemory = {
    found: (): unknown => ({ languages: this.languages, readsPdf: this.readsPdf, readsBmp: this.readsBmp }),
    restore: async (facts: unknown): Promise<readonly ConversionEdge[] | undefined> => {
      const { languages, readsPdf, readsBmp } = (facts ?? {}) as { languages?: unknown; readsPdf?: unknown; readsBmp?: unknown };
      if (!Array.isArray(languages) || !languages.every((code) => typeof code === 'string' && CODE.test(code)) || !languages.includes(DEFAULT_LANGUAGE)) return undefined;
      if (typeof readsPdf !== 'boolean' || typeof readsBmp !== 'boolean') return undefined;
      this.readsPdf = readsPdf;
      this.readsBmp = readsBmp;
      return this.offered(this.useLanguages(languages as string[]));
    },
  };

  /** The edges whose reader the probe found working. */
  private offered(edges: readonly ConversionEdge[]): readonly ConversionEdge[] {
    return edges.filter((edge) => (edge.from !== 'pdf' || this.readsPdf) && (!DECODED_FIRST.has(edge.from) || this.readsBmp));
  }

  estimateSeconds(inputBytes: number): number {
    return 3 + inputBytes / 200_000;
  }

  /** Lists the languages, then reads the word in the embedded picture into each target's format. */
  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    return withScratchDir(async (dir) => {
      const options = { cwd: dir, timeoutMs: 60_000, env: { OMP_THREAD_LIMIT: '1' }, captureStdout: true };
      const list = await run(TESSERACT, ['--list-langs'], options);
      if (list.exitCode !== 0) throw new Error(`tesseract --list-langs failed: ${lastErrorLine(list.stderr)}`);
      const languages = list.stdout.split('\n').map((line) => line.trim()).filter((code) => CODE.test(code) && !NOT_LANGUAGES.has(code)).sort();
      if (!languages.includes(DEFAULT_LANGUAGE)) throw new Error(`tesseract has no "${DEFAULT_LANGUAGE}" language data (tesseract-ocr-eng); it lists ${languages.join(', ') || 'none'}`);
      await fs.writeFile(path.join(dir, 'probe.png'), Buffer.from(PROBE_SAMPLE, 'base64'));
      const result = await run(TESSERACT, ['./probe.png', './probe', '-l', DEFAULT_LANGUAGE, 'txt', 'hocr', 'pdf'], options);
      if (result.exitCode !== 0) throw new Error(`tesseract did not read the probe picture: ${lastErrorLine(result.stderr)}`);
      const read = async (file: string) => fs.readFile(path.join(dir, file), 'latin1').catch(() => '');
      const works = new Set<string>();
      if ((await read('probe.txt')).toLowerCase().includes('probe')) works.add('txt');
      if (/class=.ocrx_word[^>]*>probe</i.test(await read('probe.hocr'))) works.add('hocr');
      if ((await read('probe.pdf')).startsWith('%PDF-')) works.add('pdf');
      if (works.size === 0) throw new Error('tesseract read nothing of the probe picture');
      // A PDF's pages are drawn by poppler's pdftoppm: without it, no PDF is read.
      const poppler = await run('/usr/bin/pdftoppm', ['-v'], options);
      this.readsPdf = /version/i.test(poppler.stderr);
      // A BMP is read through ImageMagick's PNG of it: without that, no BMP.
      await fs.writeFile(path.join(dir, 'probe.bmp'), tinyBmp());
      const limits = { timeoutMs: 30_000, maxOutputBytes: 1_000_000, maxImagePixels: 100, maxMediaSeconds: 0 };
      const decoded = path.join(dir, 'probe-bmp.png');
      this.readsBmp = await this.otherImages.toPng({ input: path.join(dir, 'probe.bmp'), from: 'bmp', workDir: dir, limits, signal: AbortSignal.timeout(30_000) }, decoded)
        .then(async () => (await fs.readFile(decoded)).subarray(1, 4).toString('latin1') === 'PNG', () => false);
      return this.offered(this.useLanguages(languages)).filter((edge) => works.has(edge.to));
    });
  }

  private useLanguages(languages: readonly string[]): readonly ConversionEdge[] {
    this.languages = languages;
    this.declared = tesseractEdges(languages);
    return this.declared;
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { from, to, workDir, limits, signal, output } = request;
    const target = CONFIGS[to];
    if (!target) throw new ConvertdError('conversion_failed', `tesseract does not write ${to}.`);
    const language = typeof request.options['language'] === 'string' ? request.options['language'] : DEFAULT_LANGUAGE;
    // Checked again here (a job stored before a restart, with other languages installed since).
    const codes = language.split('+');
    if (!codes.every((code) => this.languages.includes(code))) {
      throw new ConvertdError('invalid_option', `Option "language": "${language}" is not installed here (${this.languages.join(', ')}).`, { option: 'language', reason: 'not installed' });
    }
    if (from === 'pdf') {
      // "Page 2 : ./ocr-page-7.png" as it starts a listed picture (counted from 0 in 5.3).
      return readPdfPages(request, this.context.run, (list, base, config, onPage) => this.tesseract(request, list, base, codes, config, (line) => {
        const started = /^Page (\d+) : /.exec(line.trim());
        if (started) onPage(Number(started[1]));
      }));
    }
    let source = request.input;
    let pages = 1;
    const pictures: string[] = [];
    if (from === 'tiff') {
      pages = await tiffPageCount(source, limits);
      const ranges = pageRangeOption(request.options);
      if (ranges) {
        // The pages chosen, each drawn as a flat PNG by sharp and read from a list, as a PDF's are.
        const chosen = selectPages(ranges, pages);
        for (const [index, page] of chosen.entries()) {
          const picture = path.join(workDir, `ocr-page-${page}.png`);
          pictures.push(picture);
          await this.images.flattenOntoWhite(request.input, picture, limits, signal, page - 1);
          request.onProgress(0.05 * (index + 1) / chosen.length);
        }
        source = path.join(workDir, 'ocr-pages.txt');
        await fs.writeFile(source, pictures.map((picture) => `./${path.basename(picture)}\n`).join(''));
        pages = chosen.length;
      }
    } else {
      source = path.join(workDir, 'ocr-page.png');
      let picture = request.input;
      if (DECODED_FIRST.has(from)) {
        picture = path.join(workDir, 'ocr-decoded.png');
        await this.otherImages.toPng(request, picture);
      }
      try {
        await this.images.flattenOntoWhite(picture, source, limits, signal);
      } finally {
        if (picture !== request.input) await fs.rm(picture, { force: true });
      }
      request.onProgress(0.05);
    }
    const base = path.join(workDir, 'ocr-out');
    const written = `${base}.${target.extension}`;
    try {
      let done = 0;
      // "Page 2" when it starts a TIFF's second page ("Page 2 : ./ocr-page-5.png" a listed
      // picture's): the one before is done.
      const result = await this.tesseract(request, source, base, codes, target.config, (line) => {
        if (/^Page \d+( : |$)/.test(line.trim()) && pages > 1) request.onProgress(0.05 + 0.95 * done++ / pages);
      });
      if (result.exitCode !== 0) {
        const detail = failureOf(result.stderr);
        const unreadable = /Error in (pixRead|findFileFormat|pixReadStream|tiff|pixReadMem)|Unsupported image type|Error during processing/i.test(result.stderr);
        throw new ConvertdError(unreadable ? 'corrupt_input' : 'conversion_failed', `Tesseract could not ${unreadable ? 'read the image' : 'read the text'} (${detail || (result.exitCode === null ? `killed by ${result.signal}` : `exit ${result.exitCode}`)}).`);
      }
      await fs.rename(written, output).catch(() => {
        throw new ConvertdError('conversion_failed', `Tesseract wrote no ${to} (${failureOf(result.stderr) || 'no message'}).`);
      });
    } finally {
      await fs.rm(written, { force: true });
      if (source !== request.input) await fs.rm(source, { force: true });
      await Promise.all(pictures.map((picture) => fs.rm(picture, { force: true })));
    }
  }

  /** One tesseract run in the job's directory: `source` (a picture, or a list of them) read into `<base>.<config>`. */
  private tesseract(request: ConvertRequest, source: string, base: string, codes: readonly string[], config: string, onStderrLine: (line: string) => void) {
    const { workDir, limits, signal } = request;
    return this.context.run(TESSERACT, [`./${path.basename(source)}`, `./${path.basename(base)}`, '-l', codes.join('+'), config], {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, env: { OMP_THREAD_LIMIT: '1' },
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      onStderrLine,
    });
  }
}

/** The pages of a TIFF, each within the pixel cap, at most MAX_TIFF_PAGES: input_too_complex otherwise. */
async function tiffPageCount(file: string, limits: EngineLimits): Promise<number> {
  const found = await readTiffPages(file, MAX_TIFF_PAGES + 1);
  if (!found) throw new ConvertdError('corrupt_input', 'The file is not a TIFF this service can read (its header or page directory is damaged).');
  if (found.length > MAX_TIFF_PAGES) {
    throw new ConvertdError('input_too_complex', `The TIFF has more than ${MAX_TIFF_PAGES} pages; this service reads the text of TIFFs of up to ${MAX_TIFF_PAGES} pages.`);
  }
  for (const [index, page] of found.entries()) {
    if (page.width * page.height > limits.maxImagePixels) {
      throw new ConvertdError('input_too_complex', `Page ${index + 1} of the TIFF is ${page.width} × ${page.height} pixels, more than this service's limit of ${limits.maxImagePixels}.`);
    }
  }
  return found.length;
}

/** The last line of tesseract's that says what went wrong (it also prints "Estimating resolution as 300", "Page 2"). */
function failureOf(stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter((line) => line && !/^(Estimating resolution|Page \d+$|Tesseract Open Source|Warning\. Invalid resolution)/.test(line));
  return (lines.at(-1) ?? lastErrorLine(stderr)).slice(0, 300);
}

