// Apple Keynote, Pages and Numbers through LibreOffice (libetonyek; issue #30): recognised by the
// package's members and content (src/formats/ooxml-shortcut.ts) in all three layouts, converted to
// their family's common targets. Nothing installed here writes iWork files: the pairs are proven on
// iWork '09 XML packages written by hand below (so the test runs without the corpus) and, when the
// shared corpus is present, on its real files ('09 and the current binary format). Every output is
// read by tools independent of LibreOffice (read_document.py: pdftotext, Python's zipfile and XML,
// Pillow) and compared with the source's words as read_iwork.py finds them without libetonyek.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { strToU8, zipSync, type Zippable } from 'fflate';
import { convert, fetchCatalogue, submitOk, waitForJob, type CatalogueEntry } from './helpers/client.ts';
import { recall, wordsOf } from './helpers/documents.ts';
import { DocumentReader } from './helpers/document-reader.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

/** The targets of each (src/engines/libreoffice/engine.ts: its family's importTargets), and no more. */
const TARGETS: Readonly<Record<string, readonly string[]>> = {
  pages: ['pdf', 'docx', 'odt', 'doc', 'rtf', 'txt', 'png'],
  numbers: ['pdf', 'xlsx', 'ods', 'xls', 'csv', 'png'],
  key: ['pdf', 'pptx', 'odp', 'ppt', 'png'],
};

// iWork '09 XML, as Pages, Numbers and Keynote '09 write it, cut down to what libetonyek needs to
// show the words: a body text, a table's cells (the first one placed by sf:ct="0"), a slide's text
// box (on a layer typed as the slide's foreground).
const NS = 'xmlns:sf="http://developer.apple.com/namespaces/sf" xmlns:sfa="http://developer.apple.com/namespaces/sfa"';
const PAGES_XML = `<?xml version="1.0"?>
<sl:document ${NS} xmlns:sl="http://developer.apple.com/namespaces/sl" sl:version="92008102400"><sf:text-storage sf:kind="body"><sf:text-body><sf:section><sf:layout><sf:p>Quixotic zephyrs waltz beside amber lighthouses</sf:p><sf:p>Marmalade sparrows whistle gently</sf:p></sf:layout></sf:section></sf:text-body></sf:text-storage></sl:document>`;
const NUMBERS_XML = `<?xml version="1.0"?>
<ls:document ${NS} xmlns:ls="http://developer.apple.com/namespaces/ls" ls:version="92008102400"><ls:workspace-array><ls:workspace ls:workspace-name="Sheet 1"><ls:page-info><sf:layers><sf:layer><sf:type><sf:string sfa:string="LSWorkspaceForegroundLayer"/></sf:type><sf:drawables><sf:tabular-info><sf:geometry><sf:naturalSize sfa:w="300" sfa:h="60"/><sf:size sfa:w="300" sfa:h="60"/><sf:position sfa:x="0" sfa:y="0"/></sf:geometry><sf:tabular-model sf:name="Table 1"><sf:grid sf:numcols="3" sf:numrows="2"><sf:columns sf:count="3"><sf:grid-column sf:width="100"/><sf:grid-column sf:width="100"/><sf:grid-column sf:width="100"/></sf:columns><sf:rows sf:count="2"><sf:grid-row sf:height="20"/><sf:grid-row sf:height="20"/></sf:rows><sf:datasource><sf:t sf:ct="0"><sf:ct sfa:s="Quixotic"/></sf:t><sf:t><sf:ct sfa:s="zephyrs"/></sf:t><sf:t><sf:ct sfa:s="lighthouses"/></sf:t><sf:t><sf:ct sfa:s="marmalade"/></sf:t><sf:n sf:v="4217"/><sf:t><sf:ct sfa:s="sparrows"/></sf:t></sf:datasource></sf:grid></sf:tabular-model></sf:tabular-info></sf:drawables></sf:layer></sf:layers></ls:page-info></ls:workspace></ls:workspace-array></ls:document>`;
const KEYNOTE_XML = `<?xml version="1.0"?>
<key:presentation ${NS} xmlns:key="http://developer.apple.com/namespaces/keynote2" key:version="92008102400"><key:size sfa:w="1024" sfa:h="768"/><key:slide-list><key:slide><key:page><sf:layers><sf:layer><sf:type><sf:string sfa:string="BGSlideForegroundLayer"/></sf:type><sf:drawables><sf:shape><sf:geometry><sf:naturalSize sfa:w="800" sfa:h="100"/><sf:size sfa:w="800" sfa:h="100"/><sf:position sfa:x="100" sfa:y="100"/></sf:geometry><sf:path><sf:bezier-path><sf:bezier sfa:path="M 0 0 L 800 0 L 800 100 L 0 100 Z M 0 0"/></sf:bezier-path></sf:path><sf:text><sf:text-storage sf:kind="textbox"><sf:text-body><sf:p>Quixotic zephyrs waltz beside amber lighthouses</sf:p></sf:text-body></sf:text-storage></sf:text></sf:shape></sf:drawables></sf:layer></sf:layers></key:page></key:slide></key:slide-list></key:presentation>`;

/** The hand-made sample of each format: a ZIP holding its '09 XML main member, as the applications name it. */
const SAMPLES: Readonly<Record<string, Buffer>> = {
  pages: Buffer.from(zipSync({ 'index.xml': strToU8(PAGES_XML) })),
  numbers: Buffer.from(zipSync({ 'index.xml': strToU8(NUMBERS_XML) })),
  key: Buffer.from(zipSync({ 'index.apxl': strToU8(KEYNOTE_XML) })),
};
/** The words each sample shows, read out of its XML here (read_iwork.py reads them so too, on the corpus). */
const SAMPLE_WORDS: Readonly<Record<string, readonly string[]>> = {
  pages: wordsOf('Quixotic zephyrs waltz beside amber lighthouses Marmalade sparrows whistle gently'),
  numbers: wordsOf('Quixotic zephyrs lighthouses marmalade sparrows'),
  key: wordsOf('Quixotic zephyrs waltz beside amber lighthouses'),
};

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let scratch: string;

before(async () => {
  [server, scratch] = await Promise.all([
    // One warm LibreOffice: it starts sooner on a busy machine, and these jobs are small.
    startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '2', CONVERTD_LIBREOFFICE_POOL: '1' }),
    tempDir('convertd-iwork-'),
  ]);
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  documents.close();
  await server?.stop();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

const HELPERS = path.resolve(import.meta.dirname, 'helpers');

/** read_document.py's verdict on an output (one long-lived reader for the file): its text, and its page count for a PDF. */
const documents = new DocumentReader();
const readDocument = (file: string, format: string) => documents.readValid(file, format);

/** read_iwork.py's reading of a package: its preview PDF's text, the '09 XML's shown text, or every string of the binary format's objects. */
function readIwork(file: string): { kind: 'preview' | 'xml' | 'iwa'; text: string } {
  return JSON.parse(execFileSync('/usr/bin/python3', [path.join(HELPERS, 'read_iwork.py'), file], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })) as { kind: 'preview' | 'xml' | 'iwa'; text: string };
}

let outputs = 0;
/** Uploads `data` under a name that says nothing (the content must), converts it, reads the result. */
async function convertAndRead(data: Buffer, to: string, expectedSource: string): Promise<{ text: string; pages: number | null }> {
  const { bytes, record } = await convert(server.url, data, 'upload.data', to);
  assert.equal(record.source, expectedSource, `the upload is taken as ${record.source}`);
  const file = path.join(scratch, `out-${outputs++}.${to}`);
  await fs.writeFile(file, bytes);
  return readDocument(file, to);
}

/** Submits `data` as `name` and waits for the job to end; the job's record (source, status, error). */
async function outcome(data: Uint8Array, name: string, target: string) {
  const jobId = await submitOk(server.url, data, name, target);
  return (await waitForJob(server.url, jobId, { timeoutMs: 120_000 })).final;
}

test('Keynote, Pages and Numbers are offered their family\'s common targets, and no more', () => {
  for (const [id, targets] of Object.entries(TARGETS)) {
    assert.deepEqual([...catalogue.find((f) => f.id === id)?.targets ?? []].sort(), [...targets].sort(), `${id}'s targets`);
  }
});

describe('every pair converts a hand-made iWork \'09 package, and the output holds its words', { concurrency: 3 }, () => {
  for (const [from, targets] of Object.entries(TARGETS)) {
    for (const to of targets) {
      test(`${from} → ${to}`, async () => {
        const { text } = await convertAndRead(SAMPLES[from]!, to, from);
        if (to === 'png') return; // read_document.py has checked the picture is not blank
        const found = recall(SAMPLE_WORDS[from]!, text);
        assert.equal(found.recall, 1, `${from} → ${to}: missing ${found.missing.join(' ')}`);
      });
    }
  }
});

// The current binary format, as far as the sniffer looks: Index/Document.iwa opens with a Snappy
// chunk (a 0 byte, a 3-byte length) holding the document object's ArchiveInfo (identifier 1, the
// type in its MessageInfo). A literal-only Snappy block is valid Snappy. The rest is not a document.
function varint(value: number): number[] {
  const bytes: number[] = [];
  do {
    bytes.push((value & 0x7f) | (value > 0x7f ? 0x80 : 0));
    value >>>= 7;
  } while (value > 0);
  return bytes;
}
function documentIwa(type: number): Uint8Array {
  const messageInfo = [0x08, ...varint(type), 0x18, 0x00]; // type, length 0
  const archiveInfo = [0x08, 0x01, 0x12, messageInfo.length, ...messageInfo]; // identifier 1, MessageInfo
  const object = [archiveInfo.length, ...archiveInfo];
  const block = [...varint(object.length), (object.length - 1) << 2, ...object]; // one literal
  return Uint8Array.from([0, block.length & 0xff, (block.length >> 8) & 0xff, 0, ...block]);
}
function binaryPackage(type: number, extra: readonly string[]): Zippable {
  return Object.fromEntries([['Index/Document.iwa', documentIwa(type)], ...extra.map((name) => [name, strToU8('x')])]) as Zippable;
}
const BINARY: ReadonlyArray<{ kind: string; files: Zippable }> = [
  { kind: 'key', files: binaryPackage(1, ['Index/MasterSlide-1.iwa', 'Index/Slide-2.iwa', 'Index/Tables/Tile-3.iwa']) },
  { kind: 'numbers', files: binaryPackage(1, ['Index/CalculationEngine.iwa', 'Index/Tables/Tile-3.iwa']) },
  // A Pages document with a table has Index/Tables/ members as Numbers has: its own type decides.
  { kind: 'pages', files: binaryPackage(10000, ['Index/CalculationEngine.iwa', 'Index/Tables/Tile-3.iwa']) },
];

describe('the sniffer tells the three apart in every layout, by content alone', { concurrency: 3 }, () => {
  for (const { kind, files } of BINARY) {
    const top = Buffer.from(zipSync(files));
    // A zipped bundle: "Name.ext/" holding Index.zip (the Index/ members), previews and metadata.
    const bundle = Buffer.from(zipSync({ 'Doc.bundle/Index.zip': zipSync(files, { level: 0 }), 'Doc.bundle/Metadata/DocumentIdentifier': strToU8('A-B-C'), 'Doc.bundle/preview.jpg': strToU8('not a picture') }));
    for (const [layout, data] of [['at the top', top], ['in a zipped bundle', bundle]] as const) {
      test(`${kind}, binary format ${layout}: recognised, then a clean corrupt_input (its objects are not a document)`, async () => {
        // Named as another of the three: the content wins over the name.
        const final = await outcome(data, kind === 'pages' ? 'doc.numbers' : 'doc.pages', 'pdf');
        assert.equal(final.source, kind);
        assert.equal(final.status, 'error');
        assert.equal(final.error?.code, 'corrupt_input', JSON.stringify(final.error));
      });
    }
  }
  test('\'09 XML: Pages and Numbers by index.xml\'s root element, gzipped too; Keynote by index.apxl', async () => {
    const gzipped = Buffer.from(zipSync({ 'index.xml.gz': zlib.gzipSync(PAGES_XML) }));
    const cases = [[SAMPLES.pages!, 'pages'], [SAMPLES.numbers!, 'numbers'], [SAMPLES.key!, 'key'], [gzipped, 'pages']] as const;
    for (const [data, kind] of cases) {
      const final = await outcome(data, 'doc.zip', 'pdf');
      assert.equal(final.source, kind);
    }
  });
});

describe('hostile packages: a clean error or a contained output, and the service goes on', () => {
  test('iWork member names around garbage: corrupt_input', async () => {
    const garbage = Buffer.from(zipSync({ 'index.apxl': strToU8('<<<not xml at all'), 'QuickLook/Thumbnail.jpg': strToU8('no') }));
    const final = await outcome(garbage, 'deck.key', 'pdf');
    assert.equal(final.source, 'key');
    assert.equal(final.error?.code, 'corrupt_input', JSON.stringify(final.error));
    const damaged = Buffer.from(zipSync({ 'Index/Document.iwa': Uint8Array.from([0, 9, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), 'Index/MasterSlide-1.iwa': strToU8('x') }));
    const broken = await outcome(damaged, 'deck.key', 'pdf');
    // Its Snappy data is broken: file-type's member names still call it Keynote, and the reader refuses it.
    assert.equal(broken.source, 'key');
    assert.equal(broken.error?.code, 'corrupt_input', JSON.stringify(broken.error));
  });

  test('members named out of the package (../, absolute) and a symbolic link are never followed: nothing outside the upload reaches the output', async () => {
    // LibreOffice reads the package's members from the upload itself and extracts nothing; the
    // sandbox holds no file of another job's. A link member named as an image the text refers to,
    // pointing at /etc/passwd, and escaping names beside the document.
    const files = zipSync({
      'index.xml': strToU8(PAGES_XML),
      '../../../../tmp/iwork-escape.xml': strToU8('escaped'),
      '/tmp/iwork-absolute.xml': strToU8('absolute'),
      'Data/link.png': strToU8('/etc/passwd'),
    });
    const data = Buffer.from(files);
    // Mark Data/link.png a symbolic link in its central directory entry (Unix mode 0120777, made by Unix).
    const name = Buffer.from('Data/link.png');
    for (let at = data.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02])); at >= 0; at = data.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]), at + 4)) {
      if (data.subarray(at + 46, at + 46 + name.length).equals(name)) {
        data.writeUInt16LE((3 << 8) | 20, at + 4);
        data.writeUInt32LE((0o120777 << 16) >>> 0, at + 38);
      }
    }
    for (const target of ['pdf', 'txt']) {
      const { text } = await convertAndRead(data, target, 'pages');
      assert.equal(recall(SAMPLE_WORDS.pages!, text).recall, 1);
      assert.doesNotMatch(text, /root:x:0:0|escaped|absolute/);
    }
    await assert.rejects(fs.stat('/tmp/iwork-escape.xml'));
    await assert.rejects(fs.stat('/tmp/iwork-absolute.xml'));
  });

  test('a zip bomb: an Index.zip whose directory lies about its size is not inflated past the sniffer\'s cap, and the job ends cleanly', async () => {
    // 256 MiB of zeros deflate to about 256 KiB; the outer directory says 1000 bytes.
    const bomb = zlib.deflateRawSync(Buffer.alloc(256 * 1024 * 1024), { level: 9 });
    const data = Buffer.from(zipSync({ 'Doc.bundle/Index.zip': new Uint8Array(1), 'Doc.bundle/Metadata/DocumentIdentifier': strToU8('A') }, { level: 0 }));
    // Put the deflated zeros in place of the one-byte stored member, by rebuilding its entry.
    const patched = replaceMember(data, 'Doc.bundle/Index.zip', bomb, 1000);
    const jobId = await submitOk(server.url, patched, 'deck.key', 'pdf').catch(() => undefined);
    if (jobId) {
      const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
      assert.equal(final.status, 'error', 'a bomb is no document');
      assert.ok(['corrupt_input', 'unsupported_format'].includes(final.error?.code ?? ''), JSON.stringify(final.error));
    }
    // The service goes on converting.
    const { text } = await convertAndRead(SAMPLES.pages!, 'txt', 'pages');
    assert.equal(recall(SAMPLE_WORDS.pages!, text).recall, 1);
  });
});

/** `zip` with member `name`'s data replaced by deflated `deflated`, its directory entry claiming `claimed` bytes inflated. */
function replaceMember(zip: Buffer, name: string, deflated: Buffer, claimed: number): Buffer {
  const parts: Buffer[] = [];
  const directory: Buffer[] = [];
  let at = 0;
  let offset = 0;
  while (zip.readUInt32LE(at) === 0x04034b50) {
    const nameLength = zip.readUInt16LE(at + 26);
    const extraLength = zip.readUInt16LE(at + 28);
    const memberName = zip.toString('latin1', at + 30, at + 30 + nameLength);
    const size = zip.readUInt32LE(at + 18);
    const header = Buffer.from(zip.subarray(at, at + 30 + nameLength + extraLength));
    let body = zip.subarray(at + 30 + nameLength + extraLength, at + 30 + nameLength + extraLength + size);
    if (memberName === name) {
      body = deflated;
      header.writeUInt16LE(8, 8);
      header.writeUInt32LE(deflated.length, 18);
      header.writeUInt32LE(claimed, 22);
    }
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    header.copy(central, 6, 4, 30); // version needed .. extra length, as in the local header
    central.writeUInt16LE(0, 30); // no extra field in the directory
    central.writeUInt32LE(offset, 42);
    directory.push(central, Buffer.from(memberName, 'latin1'));
    parts.push(header, body);
    offset += header.length + body.length;
    at += 30 + nameLength + extraLength + size;
  }
  const directoryBytes = Buffer.concat(directory);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(directory.length / 2, 8);
  end.writeUInt16LE(directory.length / 2, 10);
  end.writeUInt32LE(directoryBytes.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, directoryBytes, end]);
}

/**
 * The corpus's real files. A Pages '09 file carries Apple's own rendering (QuickLook/Preview.pdf):
 * the words pdftotext finds there (three letters or more) must be in our PDF, but for this share
 * (a word split by a hyphen or a curly apostrophe comes out otherwise). Keynote and Numbers '09:
 * the same for the words of the slides' and tables' text in the XML. The binary format:
 * read_iwork.py's strings are more than a page shows (styles, fonts, template text), so the PDF's
 * words must be among them (but LibreOffice's own: a spreadsheet's "Page 1" footer, TRUE and
 * FALSE for a checkbox), and the PDF must hold a few. One file of each kind is converted to every
 * target, whose text must hold most of the PDF's words.
 */
const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
const MIN_SOURCE_RECALL = 0.9;
const MIN_PDF_WORDS = 3;
const MIN_SHARE = 0.8;
/**
 * Not the binary Numbers file: its sheet's text boxes and titles are no cells, so a workbook output
 * holds less than its PDF, and read_document.py's workbook readers add formulas and font names.
 */
const EVERY_TARGET = new Set(['tika-keynote2018.key', 'tika-pages-layout.pages', 'tika-numbers-table-headers.numbers']);
/** Words LibreOffice writes itself: Calc's default page footer, and a Numbers checkbox's value. */
const LIBREOFFICE_WORDS = new Set(['page', 'true', 'false']);
/**
 * Known losses (README, known limitations): a Pages layout document's text boxes and table sit
 * outside the body text, and LibreOffice's RTF and plain-text exports write the body alone. A CSV
 * holds one sheet, the first, as for every workbook (README, spreadsheets): this Numbers
 * document's first table ("Table 1") is empty; its words are in "Table 2", which the xlsx, xls and ods outputs carry (checked as every target is).
 */
const DOCUMENTED_LOSSES: ReadonlyArray<{ file: string; to: string }> = [
  { file: 'tika-pages-layout.pages', to: 'rtf' },
  { file: 'tika-pages-layout.pages', to: 'txt' },
  { file: 'tika-numbers-table-headers.numbers', to: 'csv' },
];
const longWords = (text: string) => [...new Set(wordsOf(text).filter((word) => word.length >= 3))];

/** A PDF of the binary format holds a few words, and (LibreOffice's own aside) they are the source's. */
function assertFromSource(name: string, to: string, text: string, source: string): void {
  const words = longWords(text);
  assert.ok(words.length >= MIN_PDF_WORDS, `${name} → ${to}: the output holds ${words.length} words`);
  const found = recall(words.filter((word) => !LIBREOFFICE_WORDS.has(word)), source);
  assert.ok(found.recall >= MIN_SOURCE_RECALL, `${name} → ${to}: ${found.recall.toFixed(2)} of the output's words are in the source, not ${found.missing.slice(0, 20).join(' ')}`);
}

// One file at a time, to keep the load of a shared machine down (the every-target files convert a dozen times).
describe('the corpus: every real file is recognised by its content and converts with its words', async () => {
  const present = await fs.stat(CORPUS).then(() => true, () => false);
  if (!present) test('the shared corpus', { skip: `absent (${CORPUS})` }, () => {});
  for (const kind of present ? Object.keys(TARGETS) : []) {
    const files = (await fs.readdir(path.join(CORPUS, kind)).catch(() => [])).sort();
    for (const name of files) {
      test(`${kind}/${name}${EVERY_TARGET.has(name) ? ' (every target)' : ''}`, async () => {
        const source = path.join(CORPUS, kind, name);
        const data = await fs.readFile(source);
        const original = readIwork(source);
        const pdf = await convertAndRead(data, 'pdf', kind);
        assert.ok((pdf.pages ?? 0) >= 1, `${name}: a PDF without pages`);
        const words = longWords(pdf.text);
        const sourceWords = new Set(wordsOf(original.text));
        if (original.kind === 'iwa') {
          assertFromSource(name, 'pdf', pdf.text, original.text);
        } else {
          const shown = longWords(original.text);
          assert.ok(shown.length >= 1, `${name}: read_iwork.py found no words`);
          const found = recall(shown, pdf.text);
          assert.ok(found.recall >= MIN_SOURCE_RECALL, `${name} → pdf: ${found.recall.toFixed(2)} of the source's words, missing ${found.missing.slice(0, 20).join(' ')}`);
        }
        for (const to of EVERY_TARGET.has(name) ? TARGETS[kind]!.filter((target) => target !== 'pdf') : []) {
          const { text } = await convertAndRead(data, to, kind);
          if (name === 'tika-numbers-table-headers.numbers' && to === 'csv') {
            // The first sheet, empty here: the CSV has no cell value, and no word from elsewhere.
            assert.equal(text.trim(), '', `${name} → csv: the first (empty) table, nothing else`);
          }
          if (to === 'png' || DOCUMENTED_LOSSES.some((loss) => loss.file === name && loss.to === to)) continue;
          // The PDF's words that are the source's: not what LibreOffice prints itself (a sheet's name as the page header, "Page 1").
          const kept = words.filter((word) => sourceWords.has(word));
          assert.ok(kept.length >= 1, `${name}: none of the PDF's words is the source's`);
          const found = recall(kept, text);
          assert.ok(found.recall >= MIN_SHARE, `${name} → ${to}: ${found.recall.toFixed(2)} of the PDF's words, missing ${found.missing.slice(0, 20).join(' ')}`);
        }
      });
    }
  }
});
