// The formats LibreOffice only reads (issue #30; src/engines/libreoffice/import-formats.ts): each
// recognised by its content, each converted to every target the catalogue lists for it, each
// output checked by tools independent of LibreOffice (read_document.py: pdftotext, Python's
// zipfile and XML, Pillow) for the sample's words. The formats no tool here writes are checked on
// the shared corpus's real files when it is present. Macros in the new formats never run.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { unzipSync } from 'fflate';
import { convert, expectError, fetchCatalogue, submit, type CatalogueEntry } from './helpers/client.ts';
import { recall, wordsOf } from './helpers/documents.ts';
import { officeSamples, officeSampleWords } from './helpers/office-samples.ts';
import { DocumentReader } from './helpers/document-reader.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

/** The targets each family's imports are offered (src/engines/libreoffice/engine.ts), and no more. */
const FAMILY_TARGETS: Readonly<Record<string, readonly string[]>> = {
  writer: ['pdf', 'docx', 'odt', 'doc', 'rtf', 'txt', 'png'],
  calc: ['pdf', 'xlsx', 'ods', 'xls', 'csv', 'png'],
  impress: ['pdf', 'pptx', 'odp', 'ppt', 'png'],
  draw: ['pdf', 'png', 'svg', 'odg'],
};
/** Targets another engine adds to a new format: Inkscape's metafile and drawing pairs, converted and checked in vector-formats.test.ts. */
const DRAWING_VECTOR_TARGETS = ['dxf', 'emf', 'eps', 'ps', 'wmf'];
const OTHER_ENGINES_TARGETS: Readonly<Record<string, readonly string[]>> = {
  emf: ['dxf', 'eps', 'ps', 'wmf'], wmf: ['dxf', 'emf', 'eps', 'ps'], cdr: DRAWING_VECTOR_TARGETS, vsd: DRAWING_VECTOR_TARGETS, vsdx: DRAWING_VECTOR_TARGETS,
};
const FAMILY_OF: Readonly<Record<string, string>> = {
  ...Object.fromEntries(['docm', 'dotx', 'dotm', 'ott', 'wordml', 'abw', 'wps', 'sxw', 'stw'].map((id) => [id, 'writer'])),
  ...Object.fromEntries(['xlsm', 'xltx', 'xltm', 'xlsb', 'ots', 'spreadsheetml', 'uos', 'dbf', 'slk', 'dif', 'wk1', 'sxc', 'stc'].map((id) => [id, 'calc'])),
  ...Object.fromEntries(['pptm', 'potx', 'potm', 'ppsx', 'ppsm', 'otp', 'uop', 'cgm', 'sxi'].map((id) => [id, 'impress'])),
  ...Object.fromEntries(['vsd', 'vsdx', 'otg', 'fodg', 'pub', 'cdr', 'emf', 'wmf', 'sxd'].map((id) => [id, 'draw'])),
};
/** The formats tested on the corpus alone: no tool here writes them. */
const CORPUS_ONLY = new Set(['vsd', 'vsdx', 'pub', 'wps', 'xlsb', 'cdr', 'cgm']);
/** Office 97-2003 templates: the same files as their documents, read as those. */
const TEMPLATES_READ_AS: Readonly<Record<string, string>> = { dot: 'doc', xlt: 'xls', pot: 'ppt' };
/** Formats with no signature of their own, recognised by their name's extension. */
const BY_EXTENSION = new Set(['fodg']);

/**
 * The least share of a sample's words an output must hold: the samples are a heading and two
 * sentences (or three rows), and every pair keeps them all today; 0.95 lets one word in twenty
 * come out otherwise without hiding a lost sentence.
 */
const MIN_RECALL = 0.95;
/** Outputs without text to look for: pictures (checked not to be blank by Pillow). */
const PICTURES = new Set(['png']);
/**
 * Losses that are known (README, known limitations), and the words let go. A dBASE table's
 * header cells are LibreOffice's "NAME,C,10", "COUNT,N,10,0": the number column is narrower than
 * its header, so the printed page (PDF) shows it cut ("COUN") where the next header begins.
 */
const DOCUMENTED_LOSSES: ReadonlyArray<{ from: string; to: string; words: readonly string[] }> = [
  { from: 'dbf', to: 'pdf', words: ['count'] },
];
const wordsKept = (from: string, to: string) => officeSampleWords(from).filter((word) => !DOCUMENTED_LOSSES.some((loss) => loss.from === from && loss.to === to && loss.words.includes(word)));
/** Metafiles that Draw keeps as one picture: its ODG holds the uploaded file itself, not shapes with text. */
const METAFILES = new Set(['emf', 'wmf']);

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
/** The corpus folders of formats checked on real files, with the format each folder's files are. */
const CORPUS_FOLDERS: Readonly<Record<string, string>> = {
  vsd: 'vsd', vsdx: 'vsdx', pub: 'pub', wps: 'wps', wk1: 'wk1', xlsb: 'xlsb', abw: 'abw',
  dbf: 'dbf', cdr: 'cdr', cgm: 'cgm', emf: 'emf', wmf: 'wmf', docm: 'docm', xlsm: 'xlsm', pptm: 'pptm',
};

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let samples: Record<string, Buffer>;
let scratch: string;

before(async () => {
  [server, samples, scratch] = await Promise.all([
    startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '2' }),
    officeSamples(),
    tempDir('convertd-office-'),
  ]);
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  documents.close();
  await server?.stop();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

const targetsOf = (id: string) => catalogue.find((f) => f.id === id)?.targets ?? [];

/** read_document.py's verdict on an output (one long-lived reader for the file): its text, and its page count for a PDF. */
const documents = new DocumentReader();
const readDocument = (file: string, format: string) => documents.readValid(file, format);

let outputs = 0;
/** Uploads `data` (named so that only the content can tell its format, unless it has no signature), converts it, reads the result. */
async function convertAndRead(data: Buffer, format: string, to: string, expectedSource: string): Promise<{ text: string; pages: number | null; file: string }> {
  const name = BY_EXTENSION.has(format) ? `sample.${format}` : 'upload.data';
  const { bytes, record } = await convert(server.url, data, name, to);
  assert.equal(record.source, expectedSource, `an upload of ${format} is taken as ${record.source}`);
  const file = path.join(scratch, `out-${outputs++}.${to}`);
  await fs.writeFile(file, bytes);
  return { ...await readDocument(file, to), file };
}

test('each new format is offered its family\'s common targets, and no more', () => {
  for (const [id, family] of Object.entries(FAMILY_OF)) {
    assert.deepEqual([...targetsOf(id)].sort(), [...FAMILY_TARGETS[family]!, ...OTHER_ENGINES_TARGETS[id] ?? []].sort(), `${id}'s targets`);
  }
  // The templates of the 97-2003 formats are their documents' extensions.
  for (const [template, document] of Object.entries(TEMPLATES_READ_AS)) {
    assert.ok(catalogue.find((f) => f.id === document)?.extensions.includes(template), `${template} is an extension of ${document}`);
  }
});

describe('every pair of a new format converts, and the output holds the sample\'s words', { concurrency: 4 }, () => {
  const pairs = Object.keys(FAMILY_OF).filter((id) => !CORPUS_ONLY.has(id))
    .flatMap((from) => FAMILY_TARGETS[FAMILY_OF[from]!]!.map((to) => [from, to] as const));
  for (const [from, to] of pairs) {
    test(`${from} → ${to}`, async () => {
      assert.ok(targetsOf(from).includes(to), `${from} → ${to} is not listed`);
      const { text, file } = await convertAndRead(samples[from]!, from, to, from);
      if (PICTURES.has(to)) return;
      if (METAFILES.has(from) && to === 'odg') {
        const pictures = Object.values(unzipSync(await fs.readFile(file), { filter: (entry) => entry.name.startsWith('Pictures/') }));
        assert.ok(pictures.some((picture) => Buffer.from(picture).equals(samples[from]!)), `${from} → odg: the drawing does not hold the uploaded metafile`);
        return;
      }
      const found = recall(wordsKept(from, to), text);
      assert.ok(found.recall >= MIN_RECALL, `${from} → ${to}: recall ${found.recall.toFixed(2)}, missing ${found.missing.join(' ')}`);
    });
  }
  for (const [template, document] of Object.entries(TEMPLATES_READ_AS)) {
    test(`${template} (read as ${document}) → pdf`, async () => {
      const { text } = await convertAndRead(samples[template]!, template, 'pdf', document);
      const found = recall(officeSampleWords(template), text);
      assert.ok(found.recall >= MIN_RECALL, `${template} → pdf: missing ${found.missing.join(' ')}`);
    });
  }
});

/**
 * The corpus files of the text families: their PDF must hold at least this many distinct words
 * (three letters or more; the poorest, a workbook of formulas, held 1 when measured), and every
 * word an independent reader finds in an Office Open XML source (read_document.py, as docx, xlsx
 * or pptx); the other text outputs (docx, odt, xlsx, csv...) at least this share of the PDF's
 * words: they are other exports of the same loaded document; 0.8 allows for what a format leaves
 * out (a CSV holds the first sheet only, a text file no page headers).
 */
const CORPUS_MIN_WORDS = 1;
const CORPUS_MIN_SHARE = 0.8;
/** Corpus families whose files may be pictures without text (drawings, metafiles). */
const GRAPHIC = new Set(['vsd', 'vsdx', 'cdr', 'cgm', 'emf', 'wmf']);
/** The reader of a package's own text, for the Office Open XML kinds that show all their text. */
const OOXML_READER: Readonly<Record<string, string>> = { docm: 'docx', pptm: 'pptx' };
/** The spreadsheet families (an xlsx reader would count formulas' names, which no page shows: xlsm has none here). */
const CALC = new Set(['xlsm', 'xlsb', 'dbf', 'wk1']);
/**
 * The file of each corpus-only format converted to every target (the others to PDF). Not the
 * first Visio file: poi-44594-2.vsd comes out as a blank page, in soffice's own PDF as in ours.
 */
const EVERY_TARGET: Readonly<Record<string, string>> = {
  vsd: 'poi-v5-connection-types.vsd', vsdx: 'poi-test-text-extraction.vsdx', pub: 'poi-sample2000.pub', wps: 'tika-works-wp4.wps',
  xlsb: 'sheetjs-merge-cells.xlsb', cdr: 'transmute-sample.cdr', cgm: 'cgm-techdraw.cgm',
};
const longWords = (text: string) => [...new Set(wordsOf(text).filter((word) => word.length >= 3))];

describe('the corpus: every real file is recognised by its content and converts', { concurrency: 4 }, async () => {
  const present = await fs.stat(CORPUS).then(() => true, () => false);
  if (!present) test('the shared corpus', { skip: `absent (${CORPUS})` }, () => {});
  for (const [folder, format] of Object.entries(present ? CORPUS_FOLDERS : {})) {
    const files = (await fs.readdir(path.join(CORPUS, folder)).catch(() => [])).sort();
    for (const name of files) {
      const every = EVERY_TARGET[format] === name;
      test(`${folder}/${name}${every ? ' (every target)' : ''}`, async () => {
        const source = path.join(CORPUS, folder, name);
        const data = await fs.readFile(source);
        const pdf = await convertAndRead(data, format, 'pdf', format);
        assert.ok((pdf.pages ?? 0) >= 1, `${name}: a PDF without pages`);
        const words = longWords(pdf.text);
        // A workbook may hold figures alone: its letters and digits count.
        const held = CALC.has(format) ? pdf.text.match(/[\p{L}\p{N}]+/gu)?.length ?? 0 : words.length;
        // A macro-enabled workbook may have no cells at all (poi-45431.xlsm: a VBA project and an
        // empty sheet): its cells as an independent reader finds them decide.
        const empty = format === 'xlsm' && !/[\p{L}\p{N}]/u.test((await readDocument(source, 'xlsx')).text);
        if (!GRAPHIC.has(format) && !empty) assert.ok(held >= CORPUS_MIN_WORDS, `${name}: the PDF holds ${held} words`);
        const reader = OOXML_READER[format];
        if (reader) {
          const found = recall(longWords((await readDocument(source, reader)).text), pdf.text);
          assert.equal(found.recall, 1, `${name} → pdf: missing the source's ${found.missing.slice(0, 20).join(' ')}`);
        }
        // LibreOffice's targets: the vector ones of another engine are vector-formats.test.ts's.
        for (const to of every ? targetsOf(format).filter((target) => target !== 'pdf' && !OTHER_ENGINES_TARGETS[format]?.includes(target)) : []) {
          const { text } = await convertAndRead(data, format, to, format);
          if (PICTURES.has(to) || words.length === 0) continue;
          const found = recall(words, text);
          assert.ok(found.recall >= CORPUS_MIN_SHARE, `${name} → ${to}: ${found.recall.toFixed(2)} of the PDF's words, missing ${found.missing.slice(0, 20).join(' ')}`);
        }
      });
    }
  }
  // Hangul Word Processor 5 files are OLE files LibreOffice 7.4 cannot read (its HWP filter
  // reads HWP 97 alone): refused at upload, as a format the service does not know.
  const hwp = present ? (await fs.readdir(path.join(CORPUS, 'hwp')).catch(() => [])).sort() : [];
  if (hwp.length > 0) {
    test('hwp: HWP 5 files are refused at upload as unsupported', async () => {
      for (const name of hwp) await expectError(await submit(server.url, await fs.readFile(path.join(CORPUS, 'hwp', name)), name, 'pdf'), 415, 'unsupported_format');
    });
  }
});
