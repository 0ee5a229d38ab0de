// The markup formats of issue #30 through pandoc 2.17: the wiki dialects, man pages, JATS, Haddock,
// Muse and txt2tags it reads; the slides, typesetting sources, XML vocabularies and wikis it
// writes; and the bibliographies (BibTeX, BibLaTeX, CSL JSON). Every pair /api/formats lists for
// the new sources is converted from a sample written here, and each output is read back by tools
// that are not pandoc (test/helpers/read_document.py in one batch: XML parsers for JATS, TEI and
// ICML, groff for man and ms, makeinfo for Texinfo, Python's html.parser for slides, zipfile for
// office files, poppler for PDF, Pillow for pictures): the sample's words there, and one slide per
// heading with its text. The new writers from the sources document-pairs.test.ts samples are
// proven there. Then sniffing, the `toc` option on the new writers, the pairs deliberately not
// offered, the hostile inputs of the family (include directives, images naming local files, a
// bibliography path), and the shared corpus's Markdown and LaTeX files.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { strFromU8, unzipSync } from 'fflate';
import { download, fetchCatalogue, progress, submit, submitOk, waitForJob, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { BODY, MARKER, recall, TITLE, wordsOf } from './helpers/documents.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

/** BODY with "quiet" in the markup's emphasis, so that inline parsing is on the path too. */
const stressed = (open: string, close = open) => BODY.replace('quiet', `${open}quiet${close}`);

/** The samples of the new readers: the shared title as a heading, and the shared sentence. */
const SAMPLES: Readonly<Record<string, { name: string; text: string }>> = {
  creole: { name: 'sample.creole', text: `= ${TITLE}\n\n${stressed('//')}\n` },
  dokuwiki: { name: 'sample.dokuwiki', text: `====== ${TITLE} ======\n\n${stressed('//')}\n` },
  tikiwiki: { name: 'sample.tikiwiki', text: `! ${TITLE}\n\n${stressed("''")}\n` },
  twiki: { name: 'sample.twiki', text: `---+ ${TITLE}\n\n${stressed('_')}\n` },
  vimwiki: { name: 'sample.vimwiki', text: `= ${TITLE} =\n\n${stressed('_')}\n` },
  muse: { name: 'sample.muse', text: `* ${TITLE}\n\n${stressed('<em>', '</em>')}\n` },
  // txt2tags: the first three lines are the header (left empty), then the body.
  t2t: { name: 'sample.t2t', text: `\n\n\n= ${TITLE} =\n\n${stressed('//')}\n` },
  haddock: { name: 'sample.haddock', text: `= ${TITLE}\n\n${stressed('/')}\n` },
  // Named .txt: its .TH line, not the name, makes it a man page.
  man: { name: 'quokkabird.txt', text: `.\\" a comment before the title line\n.TH QUOKKABIRD 1\n.SH ${TITLE}\n${BODY.replace(' quiet ', '\n.I quiet\n')}\n` },
  // Named .xml: its DOCTYPE, not the name, makes it JATS (an .xml is otherwise the data format's).
  // MultiMarkdown, told by its .mmd name; its pipe table syntax is checked below.
  mmd: { name: 'sample.mmd', text: `# ${TITLE}\n\n${stressed('*')}\n` },
  jats: {
    name: 'article.xml',
    text: `<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving and Interchange DTD v1.2 20190208//EN" "JATS-archivearticle1.dtd">\n<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="research-article" dtd-version="1.2"><front><article-meta><title-group><article-title>${TITLE}</article-title></title-group></article-meta></front><body><sec><title>${TITLE}</title><p>${stressed('<italic>', '</italic>')}</p></sec></body></article>\n`,
  },
};
const SAMPLE_WORDS = wordsOf(`${TITLE} ${BODY}`);

/** One entry in each bibliography format a user uploads (a BibLaTeX file is a .bib too: BIBLATEX below). */
const ENTRY = { key: 'quokka2021', title: 'Quokkabird swims across the quiet river', journal: 'Journal of Dawn Waters', authors: ['Heron', 'Brown'], year: '2021' };
const BIBLIOGRAPHIES: Readonly<Record<string, { name: string; text: string }>> = {
  bibtex: { name: 'refs.bib', text: `% exported by hand\n@article{${ENTRY.key},\n  author = {Heron, Seven and Brown, Small},\n  title = {${ENTRY.title}},\n  journal = {${ENTRY.journal}},\n  year = {${ENTRY.year}},\n  volume = {12},\n  pages = {3--14}\n}\n` },
  // Named .json, as Zotero exports it: its CSL fields make it a bibliography.
  csljson: { name: 'refs.json', text: JSON.stringify([{ id: ENTRY.key, type: 'article-journal', title: ENTRY.title, 'container-title': ENTRY.journal, author: [{ family: 'Heron', given: 'Seven' }, { family: 'Brown', given: 'Small' }], issued: { 'date-parts': [[2021, 3]] }, volume: '12', page: '3-14' }], null, 2) },
};
/** The entry with BibLaTeX's own fields (journaltitle, date): read as any .bib. */
const BIBLATEX = `@article{${ENTRY.key},\n  author = {Heron, Seven and Brown, Small},\n  title = {${ENTRY.title}},\n  journaltitle = {${ENTRY.journal}},\n  date = {${ENTRY.year}-03},\n  volume = {12},\n  pages = {3--14}\n}\n`;
/** What a reference list or a converted bibliography must show of the entry. */
const ENTRY_WORDS = wordsOf(`${ENTRY.title} ${ENTRY.journal} ${ENTRY.authors.join(' ')}`);

/** The new writers, by family; the old ones are document-pairs.test.ts's too. */
const SLIDES = new Set(['revealjs', 'slidy', 'dzslides', 'beamer']);
const AUTHORING = ['beamer', 'revealjs', 'slidy', 'dzslides', 'man', 'ms', 'texinfo', 'context', 'haddock'];
const INTERCHANGE = ['dokuwiki', 'zimwiki', 'xwiki', 'muse', 'markua', 'jats', 'tei', 'icml'];
const BIB_FORMATS = ['bibtex', 'biblatex', 'csljson'];
/** The Markdown dialects besides md and gfm (MultiMarkdown is read too, from .mmd). */
const MARKDOWN_DIALECTS = ['commonmark', 'mdstrict', 'mdextra', 'mmd'];
const REFERENCE_LISTS = ['md', 'html', 'docx', 'txt'];
/** Targets that are pictures of the document: no words to look for, but not blank (read_document.py). */
const PICTURES = new Set(['png', 'jpg', 'tiff', 'webp', 'zip']);
/** Sources that are read only through pandoc's own readers (the categories /api/formats shows). */
const CATEGORIES: Readonly<Record<string, string>> = {
  ...Object.fromEntries([...Object.keys(SAMPLES), ...AUTHORING, ...INTERCHANGE, ...BIB_FORMATS, ...MARKDOWN_DIALECTS].map((id) => [id, 'markup'])),
  revealjs: 'presentation', slidy: 'presentation', dzslides: 'presentation', beamer: 'presentation',
};

/**
 * The share of the sample's words every text output must hold. The samples are one heading and
 * one sentence, and every pair keeps them all today (measured): any loss is a failure.
 */
const MIN_RECALL = 1;

/** The service runs four jobs at once here; the test keeps six in flight, so that a job waits when a slot frees. */
const SERVICE_CONCURRENCY = 4;
const IN_FLIGHT = 6;

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let outputs: string;

before(async () => {
  [server, outputs] = await Promise.all([
    startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: String(SERVICE_CONCURRENCY) }),
    tempDir('convertd-markup-'),
  ]);
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  await server?.stop();
  await fs.rm(outputs, { recursive: true, force: true });
});

const targetsOf = (id: string) => catalogue.find((f) => f.id === id)?.targets ?? [];

interface Reading { text?: string; pages?: number | null; slides?: string[]; error?: string }

/** Reads many outputs in one Python process (read_document.py --batch): one answer per file. */
async function readAll(files: ReadonlyArray<readonly [string, string]>): Promise<Reading[]> {
  if (files.length === 0) return [];
  const child = spawn('/usr/bin/python3', [path.resolve('test/helpers/read_document.py'), '--batch'], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.end(files.map((entry) => JSON.stringify(entry)).join('\n') + '\n');
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk; });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  assert.equal(code, 0, 'read_document.py --batch failed');
  const answers = out.trim().split('\n').map((line) => JSON.parse(line) as Reading);
  assert.equal(answers.length, files.length);
  return answers;
}

/** Runs the jobs IN_FLIGHT at a time; each resolves to an error message or undefined. */
async function inFlight<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<string[]> {
  const failures: string[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        failures.push(`${JSON.stringify(item)}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
      }
    }
  }));
  return failures;
}

/**
 * One conversion that must succeed, polled every 25 ms: most of these jobs take tens of
 * milliseconds, and the usual 100 ms between polls would be most of the test's time.
 */
async function converted(data: Buffer, filename: string, target: string): Promise<Buffer> {
  const jobId = await submitOk(server.url, data, filename, target);
  const { final } = await waitForJob(server.url, jobId, { intervalMs: 25, timeoutMs: 180_000 });
  assert.equal(final.status, 'done', `job failed: ${JSON.stringify(final.error)}`);
  return (await download(server.url, final.download_url!)).bytes;
}

/** Submits with options; the final record and, when done, the output. */
async function convertWith(data: string | Buffer, filename: string, target: string, options: Record<string, string> = {}): Promise<{ record: ProgressRecord; bytes: Buffer }> {
  const body = new FormData();
  body.append('file', new Blob([typeof data === 'string' ? Buffer.from(data) : data]), filename);
  body.append('target', target);
  for (const [name, value] of Object.entries(options)) body.append(name, value);
  const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body });
  const answer = await response.json() as { job_id: string };
  assert.equal(response.status, 200, `submission refused: ${JSON.stringify(answer)}`);
  const { final } = await waitForJob(server.url, answer.job_id, { timeoutMs: 120_000 });
  if (final.status !== 'done') return { record: final, bytes: Buffer.alloc(0) };
  return { record: final, bytes: (await download(server.url, final.download_url!)).bytes };
}

/** The text of an output as a person would look for a leaked file in it: office packages unzipped. */
function visibleText(bytes: Buffer): string {
  if (bytes.subarray(0, 2).toString('latin1') !== 'PK') return bytes.toString('utf8');
  return Object.values(unzipSync(new Uint8Array(bytes))).map((entry) => strFromU8(entry, true)).join('\n');
}

test('the new formats are listed with their category, and the new readers reach every markup writer and the office targets', () => {
  for (const [id, category] of Object.entries(CATEGORIES)) {
    assert.equal(catalogue.find((f) => f.id === id)?.category, category, `${id} is listed as ${category}`);
  }
  const writers = [...AUTHORING, ...INTERCHANGE, ...MARKDOWN_DIALECTS, 'md', 'gfm', 'rst', 'org', 'html', 'docx', 'odt', 'epub', 'latex', 'txt', 'asciidoc', 'docbook', 'fb2', 'pdf', 'png'];
  for (const from of Object.keys(SAMPLES)) {
    const missing = writers.filter((to) => to !== from && !targetsOf(from).includes(to));
    assert.deepEqual(missing, [], `${from} lacks ${missing.join(' ')}`);
  }
  // The old readers (docx, odt and epub among them) reach every new writer.
  for (const from of ['md', 'rst', 'latex', 'html', 'docx', 'odt', 'epub']) {
    const missing = [...AUTHORING, ...INTERCHANGE, ...MARKDOWN_DIALECTS].filter((to) => to !== from && !targetsOf(from).includes(to));
    assert.deepEqual(missing, [], `${from} lacks ${missing.join(' ')}`);
  }
  // A bibliography reaches the other bibliography formats and its reference list, nothing else;
  // BibLaTeX is a target only (any .bib upload is read as BibTeX or BibLaTeX alike).
  assert.deepEqual(targetsOf('biblatex'), []);
  for (const from of ['bibtex', 'csljson']) {
    assert.deepEqual([...targetsOf(from)].sort(), [...BIB_FORMATS.filter((to) => to !== from), ...REFERENCE_LISTS].sort(), `${from}'s targets`);
  }
  // s5 and Slideous need their framework's files beside the page (none here); opendocument is an odt's content.xml alone.
  for (const id of ['s5', 'slideous', 'opendocument', 'plain', 'ris']) assert.equal(catalogue.find((f) => f.id === id), undefined, `${id} is not offered`);
});

test('pairs nobody needs are not offered: slides, man pages and Markdown dialects only from markup pandoc reads, no new writer from an ebook', () => {
  // Through LibreOffice (a Word 97, RTF or WordPerfect file) the document and wiki writers, not the authoring ones.
  for (const from of ['doc', 'rtf', 'wpd']) {
    for (const to of [...AUTHORING, ...MARKDOWN_DIALECTS]) assert.ok(!targetsOf(from).includes(to), `${from} → ${to} is offered`);
    for (const to of INTERCHANGE) assert.ok(targetsOf(from).includes(to), `${from} → ${to} is missing`);
  }
  // Through calibre (a Kindle or Palm book): none of them.
  for (const from of ['mobi', 'azw3', 'pdb']) {
    for (const to of [...AUTHORING, ...INTERCHANGE, ...MARKDOWN_DIALECTS]) assert.ok(!targetsOf(from).includes(to), `${from} → ${to} is offered`);
  }
});

test('uploads are told by their signature where the format has one, and by their name otherwise', async () => {
  const cases: Array<[string, string, string | undefined]> = [
    [SAMPLES.man!.text, 'page.txt', 'man'],
    [SAMPLES.jats!.text, 'article.xml', 'jats'],
    [BIBLIOGRAPHIES.bibtex!.text, 'refs.txt', 'bibtex'],
    [BIBLATEX, 'refs.bib', 'bibtex'],
    [BIBLATEX, 'refs.biblatex', 'bibtex'],
    [BIBLIOGRAPHIES.csljson!.text, 'refs.json', 'csljson'],
    // Data JSON with an id, a type and a title stays data; DocBook's <article> stays DocBook.
    [JSON.stringify([{ id: 1, type: 'book', title: 'Fish' }]), 'data.json', 'json'],
    ['<?xml version="1.0"?>\n<article xmlns="http://docbook.org/ns/docbook" version="5.0"><title>x</title></article>\n', 'book.dbk', 'docbook'],
    [SAMPLES.creole!.text, 'page.creole', 'creole'],
    [SAMPLES.mmd!.text, 'notes.mmd', 'mmd'],
  ];
  for (const [text, name, expected] of cases) {
    const jobId = await submitOk(server.url, Buffer.from(text), name, 'html');
    assert.equal((await progress(server.url, jobId)).body.source, expected, name);
  }
  // A .bib without an entry (CSS, say) is not taken for a bibliography.
  const answer = await submit(server.url, Buffer.from('@media screen {\n  body { margin: 0 }\n}\n'), 'style.bib', 'html');
  assert.equal(answer.status, 415);
});

describe('every pair of the new sources converts, checked by independent tools', { concurrency: 1 }, () => {
  test('the markup readers: each of their targets holds the sample\'s words, slides one per heading', { timeout: 20 * 60_000 }, async (t) => {
    const pairs = Object.entries(SAMPLES).flatMap(([from, sample]) => targetsOf(from).map((to) => ({ from, to, sample })));
    assert.ok(pairs.length >= 400, `only ${pairs.length} pairs`);
    t.diagnostic(`${pairs.length} pairs`);
    const made: Array<{ from: string; to: string; file: string }> = [];
    const failures = await inFlight(pairs, async ({ from, to, sample }) => {
      const bytes = await converted(Buffer.from(sample.text), sample.name, to);
      const file = path.join(outputs, `${from}-to-${to}.out`);
      await fs.writeFile(file, bytes);
      made.push({ from, to, file });
    });
    const readings = await readAll(made.map(({ file, to }) => [file, to] as const));
    for (const [index, { from, to }] of made.entries()) {
      const reading = readings[index]!;
      try {
        assert.equal(reading.error, undefined, `not a valid ${to}: ${reading.error}`);
        if (PICTURES.has(to)) continue;
        const found = recall(SAMPLE_WORDS, reading.text ?? '');
        assert.ok(found.recall >= MIN_RECALL, `recall ${found.recall.toFixed(2)}, missing ${found.missing.join(' ')}`);
        if (SLIDES.has(to)) {
          // One slide holds the heading and the sentence; any other is the title slide (JATS's article-title).
          const slides = reading.slides ?? [];
          const content = slides.filter((slide) => recall(wordsOf(BODY), slide).recall === 1);
          assert.equal(content.length, 1, `${slides.length} slides, ${content.length} with the sentence`);
          assert.ok(content[0]!.includes(TITLE), 'the heading is on the slide of its sentence');
          assert.ok(slides.length <= 2, `${slides.length} slides`);
        }
      } catch (error) {
        failures.push(`${from} → ${to}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
      }
    }
    assert.deepEqual(failures, [], `${failures.length} of ${pairs.length} pairs failed:\n${failures.join('\n')}`);
  });

  test('the bibliographies: each other\'s formats keep the entry and its fields, the reference lists render it', async () => {
    const sources = { ...BIBLIOGRAPHIES, biblatex: { name: 'biblatex.bib', text: BIBLATEX } };
    const pairs = Object.entries(sources).flatMap(([from, sample]) => targetsOf(from === 'biblatex' ? 'bibtex' : from).map((to) => ({ from, to, sample })));
    const made: Array<{ from: string; to: string; file: string; bytes: Buffer }> = [];
    const failures = await inFlight(pairs, async ({ from, to, sample }) => {
      const bytes = await converted(Buffer.from(sample.text), sample.name, to);
      const file = path.join(outputs, `${from}-to-${to}.out`);
      await fs.writeFile(file, bytes);
      made.push({ from, to, file, bytes });
    });
    const readings = await readAll(made.map(({ file, to }) => [file, to] as const));
    for (const [index, { from, to, bytes }] of made.entries()) {
      const reading = readings[index]!;
      try {
        assert.equal(reading.error, undefined, `not a valid ${to}: ${reading.error}`);
        const text = reading.text ?? '';
        const found = recall(ENTRY_WORDS, text);
        assert.equal(found.recall, 1, `missing ${found.missing.join(' ')}`);
        const source = bytes.toString('utf8');
        // BibTeX's year, BibLaTeX's date (pandoc writes `journal`, which BibLaTeX takes as journaltitle's alias).
        if (to === 'bibtex') assert.match(source, new RegExp(`@article\\{${ENTRY.key},[^@]*\\n  year = \\{2021\\}`), 'BibTeX\'s year field');
        if (to === 'biblatex') assert.match(source, new RegExp(`@article\\{${ENTRY.key},[^@]*\\n  date = \\{2021`), 'BibLaTeX\'s date field');
        if (to === 'csljson') {
          const [item] = JSON.parse(source) as Array<{ id: string; type: string; author: Array<{ family: string }>; issued: { 'date-parts': number[][] } }>;
          assert.deepEqual([item!.id, item!.type, item!.author.map((a) => a.family), item!.issued['date-parts'][0]![0]], [ENTRY.key, 'article-journal', ENTRY.authors, 2021]);
        } else {
          assert.match(text, /\b2021\b/, 'the year');
        }
        if (REFERENCE_LISTS.includes(to)) {
          // Rendered by citeproc (author-date): "Heron, Seven, and Small Brown. 2021. “Quokkabird …”", not the .bib's source.
          assert.match(text.replace(/\s+/g, ' '), /Heron, Seven, and Small Brown\. 2021/, 'a rendered reference');
          assert.doesNotMatch(text, /@article|"container-title"/, 'the source itself');
        }
      } catch (error) {
        failures.push(`${from} → ${to}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
      }
    }
    assert.deepEqual(failures, [], failures.join('\n'));
  });
});

test('toc gives each new writer that has one its table of contents, and none without it', async () => {
  const markdown = `# ${MARKER} one\n\nFirst part.\n\n# Second part\n\nMore text.\n`;
  /** What each writer prints for a table of contents (measured on pandoc 2.17's output). */
  const MARKS: Readonly<Record<string, RegExp>> = {
    beamer: /\\tableofcontents/, context: /\\completecontent/, texinfo: /^@contents$/m, ms: /^\.TC$/m,
    revealjs: /<nav role="doc-toc">/, slidy: /<div class="slide" id="TOC">/, dzslides: /<section id="TOC">/,
  };
  const failures = await inFlight(Object.keys(MARKS), async (to) => {
    const [withToc, without] = await Promise.all([convertWith(markdown, 'guide.md', to, { toc: 'true' }), convertWith(markdown, 'guide.md', to)]);
    assert.equal(withToc.record.status, 'done', JSON.stringify(withToc.record.error));
    assert.deepEqual(withToc.record.ignored_options ?? [], [], 'toc is applied');
    assert.match(withToc.bytes.toString('utf8'), MARKS[to]!, `${to} with toc`);
    assert.doesNotMatch(without.bytes.toString('utf8'), MARKS[to]!, `${to} without toc`);
  });
  assert.deepEqual(failures, [], failures.join('\n'));
});

test('a table\'s cells and caption reach every new writer (TEI and XWiki drop captions: a filter keeps them as a paragraph)', async () => {
  const markdown = `# ${MARKER}\n\n| Kind | Count |\n|------|-------|\n| trout | 2 |\n\n: Herons gather downstream\n`;
  const words = wordsOf(`${MARKER} Kind Count trout Herons gather downstream`);
  const targets = [...AUTHORING, ...INTERCHANGE, 'fb2'];
  const made: Array<{ to: string; file: string }> = [];
  const failures = await inFlight(targets, async (to) => {
    const bytes = await converted(Buffer.from(markdown), 'table.md', to);
    const file = path.join(outputs, `table-to-${to}.out`);
    await fs.writeFile(file, bytes);
    made.push({ to, file });
  });
  const readings = await readAll(made.map(({ file, to }) => [file, to] as const));
  for (const [index, { to }] of made.entries()) {
    const found = recall(words, readings[index]!.text ?? '');
    if (readings[index]!.error || found.recall < 1) failures.push(`${to}: ${readings[index]!.error ?? `missing ${found.missing.join(' ')}`}`);
  }
  assert.deepEqual(failures, [], failures.join('\n'));
});

/**
 * Renders each Markdown dialect output with Python-Markdown (not pandoc): as Markdown.pl's syntax
 * and with its `extra` extension (PHP Markdown Extra's tables). Prints, per file, the two HTML renderings.
 */
const RENDER_MARKDOWN = [
  'import sys, json, markdown',
  'for name in sys.argv[1:]:',
  '    text = open(name, encoding="utf-8").read()',
  '    print(json.dumps({"plain": markdown.markdown(text), "extra": markdown.markdown(text, extensions=["extra"])}))',
].join('\n');

test('the Markdown dialects keep the heading, emphasis and table in their own syntax, as another Markdown renderer reads them', async () => {
  const markdown = `# ${MARKER} heading\n\nSome *quiet* words.\n\n| Kind | Count |\n|------|-------|\n| trout | 2 |\n`;
  // The same document as MultiMarkdown read from .mmd: its pipe table must come through (as HTML
  // in the dialects without tables).
  const sources = [{ name: 'table.md', text: markdown, targets: MARKDOWN_DIALECTS }, { name: 'table.mmd', text: markdown, targets: ['commonmark', 'mdstrict'] }];
  const jobs = sources.flatMap((source) => source.targets.map((to) => ({ ...source, to })));
  const made: Array<{ from: string; to: string; file: string }> = [];
  const failures = await inFlight(jobs, async ({ name, text, to }) => {
    const bytes = await converted(Buffer.from(text), name, to);
    const file = path.join(outputs, `dialect-${name}-to-${to}.out`);
    await fs.writeFile(file, bytes);
    made.push({ from: name, to, file });
  });
  const child = spawn('/usr/bin/python3', ['-c', RENDER_MARKDOWN, ...made.map(({ file }) => file)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk; });
  assert.equal(await new Promise((resolve) => child.once('close', resolve)), 0, 'Python-Markdown failed');
  const renderings = out.trim().split('\n').map((line) => JSON.parse(line) as { plain: string; extra: string });
  for (const [index, { from, to }] of made.entries()) {
    const { plain, extra } = renderings[index]!;
    try {
      // PHP Markdown Extra's heading carries its id ({#…}), which `extra` reads as an attribute.
      assert.match(extra, new RegExp(`<h1[^>]*>${MARKER} heading</h1>`), 'the heading');
      assert.match(extra, /<em>quiet<\/em>/, 'the emphasis');
      // PHP Markdown Extra and MultiMarkdown have pipe tables: a table only
      // to a renderer that knows them. CommonMark and the original syntax have none: the table
      // is written as HTML, which any Markdown renderer passes through.
      const pipes = ['mdextra', 'mmd'].includes(to);
      assert.match(extra, /<th>Kind<\/th>[\s\S]*<td>trout<\/td>/, 'the table, with its header row');
      if (pipes) assert.doesNotMatch(plain, /<table/, 'a pipe table, not HTML');
      else assert.match(plain, /<table>[\s\S]*<td>trout<\/td>/, 'an HTML table');
    } catch (error) {
      failures.push(`${from} → ${to}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    }
  }
  assert.deepEqual(failures, [], failures.join('\n'));
});

/** A file every sandbox can read (the fonts' configuration is bound in): its content must never reach an output. */
const LOCAL_FILE = '/etc/fonts/fonts.conf';
/** Words of LOCAL_FILE that no sample holds. */
const LEAKED = /fontconfig|<dir>|<cachedir>/i;

test('include directives, images naming local files and bibliography paths bring no local file into any output', { timeout: 10 * 60_000 }, async () => {
  const hostile: ReadonlyArray<{ name: string; text: string; targets: readonly string[] }> = [
    // Read outside pandoc's --sandbox before this issue: man `.so`, txt2tags `%!include`, Muse `#include`, RST `include`, to odt, epub, ipynb and docx.
    { name: 'so.man', text: `.TH X 1\n.SH ${MARKER}\nText.\n.so ${LOCAL_FILE}\n.PP\nEnd.\n`, targets: ['odt', 'epub', 'ipynb', 'docx', 'md', 'fb2'] },
    { name: 'include.t2t', text: `\n\n\n${MARKER}\n\n%!include: ${LOCAL_FILE}\n\n%!include: ''${LOCAL_FILE}''\n`, targets: ['odt', 'epub', 'ipynb', 'docx', 'html'] },
    { name: 'include.muse', text: `${MARKER}\n\n#include ${LOCAL_FILE}\n\n<include file="${LOCAL_FILE}">\n`, targets: ['odt', 'epub', 'ipynb', 'docx', 'html'] },
    { name: 'include.rst', text: `${MARKER}\n${'='.repeat(MARKER.length)}\n\n.. include:: ${LOCAL_FILE}\n\n.. raw:: html\n   :file: ${LOCAL_FILE}\n`, targets: ['odt', 'epub', 'ipynb', 'dokuwiki', 'tei'] },
    // Images naming a local file, embedded by the FictionBook, docx, odt and epub writers.
    { name: 'image.dokuwiki', text: `${MARKER}\n\n{{${LOCAL_FILE}}}\n\n{{page>${LOCAL_FILE}}}\n`, targets: ['fb2', 'docx', 'odt', 'epub', 'icml'] },
    { name: 'image.creole', text: `${MARKER}\n\n{{${LOCAL_FILE}|picture}}\n`, targets: ['fb2', 'odt'] },
    // MultiMarkdown: its transclusion syntax ({{file}}, which pandoc does not implement) and an image naming a local file.
    { name: 'transclude.mmd', text: `${MARKER}\n\n{{${LOCAL_FILE}}}\n\n![picture](${LOCAL_FILE})\n`, targets: ['docx', 'odt', 'epub', 'mdstrict'] },
    { name: 'image.html', text: `<p>${MARKER}</p><img src="${LOCAL_FILE}"><img src="file://${LOCAL_FILE}"><img src="/proc/self/environ">`, targets: ['fb2', 'dzslides', 'revealjs', 'jats', 'epub'] },
    { name: 'graphic.xml', text: SAMPLES.jats!.text.replace('</p>', `</p><fig><graphic xlink:href="${LOCAL_FILE}"/></fig>`).replace('<body>', `<body><p>${MARKER}</p>`), targets: ['fb2', 'docx', 'odt'] },
    // LaTeX's \input into the new LaTeX-family writers.
    { name: 'input.tex', text: `\\documentclass{article}\n\\begin{document}\n${MARKER}\n\n\\input{${LOCAL_FILE}}\n\n\\include{${LOCAL_FILE.replace(/\.conf$/, '')}}\n\\end{document}\n`, targets: ['beamer', 'context', 'texinfo', 'man'] },
    // A bibliography's path in the metadata (citeproc runs only on bibliography uploads), and an entry naming a file.
    { name: 'cites.md', text: `---\nbibliography: ${LOCAL_FILE}\ncsl: ${LOCAL_FILE}\n---\n\n${MARKER} [@quokka2021].\n`, targets: ['html', 'docx', 'jats'] },
    { name: 'file.bib', text: `@string{x = "${MARKER}"}\n@misc{m, author = {Heron, Seven}, title = x, file = {${LOCAL_FILE}}, crossref = {${LOCAL_FILE}}}\n`, targets: ['html', 'docx', 'csljson', 'biblatex'] },
  ];
  const jobs = hostile.flatMap((sample) => sample.targets.map((to) => ({ ...sample, to })));
  const failures = await inFlight(jobs, async ({ name, text, to }) => {
    const { record, bytes } = await convertWith(text, name, to);
    if (record.status !== 'done') {
      assert.ok(['corrupt_input', 'conversion_failed'].includes(record.error?.code ?? ''), `${name} → ${to}: ${JSON.stringify(record.error)}`);
      return;
    }
    const shown = visibleText(bytes);
    assert.ok(shown.includes(MARKER), `${name} → ${to}: the document's own text is there`);
    assert.doesNotMatch(shown, LEAKED, `${name} → ${to}: ${LOCAL_FILE} reached the output`);
  });
  assert.deepEqual(failures, [], failures.join('\n'));
});

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
/** Corpus files (pandoc's own test documents) to new writers of each family: slides, typesetting sources, XML, wikis. */
const CORPUS_TARGETS: Readonly<Record<string, readonly string[]>> = { md: ['revealjs', 'texinfo', 'tei', 'dokuwiki'], tex: ['beamer', 'man', 'jats', 'icml'] };
/**
 * The least share of a corpus file's words (longer than three letters, as read_document.py reads
 * the source: a Markdown file raw, link addresses and all; LaTeX's prose) its outputs must hold.
 * Measured: 0.92 at worst (pandoc-tables.tex → man, JATS, ICML: its column specifications such as
 * `rlcl` read as words in the source); 0.85 keeps a margin without hiding a lost section.
 */
const CORPUS_MIN_RECALL = 0.85;
/** read_document.py's reading of each corpus family's source. */
const CORPUS_READERS: Readonly<Record<string, string>> = { md: 'txt', tex: 'tex' };

test('the shared corpus: Markdown and LaTeX documents keep their words in the new writers', { skip: !(await fs.stat(CORPUS).catch(() => undefined)) && 'no ../shared/corpus', timeout: 10 * 60_000 }, async (t) => {
  const jobs: Array<{ family: string; file: string; to: string }> = [];
  for (const [family, targets] of Object.entries(CORPUS_TARGETS)) {
    const files = await fs.readdir(path.join(CORPUS, family)).catch(() => [] as string[]);
    for (const file of files) for (const to of targets) jobs.push({ family, file, to });
  }
  const sources = [...new Set(jobs.map(({ family, file }) => `${family}/${file}`))];
  const sourceTexts = new Map((await readAll(sources.map((source) => [path.join(CORPUS, source), CORPUS_READERS[source.split('/')[0]!]!] as const))).map((reading, n) => [sources[n]!, reading.text ?? '']));
  const made: Array<{ source: string; to: string; file: string }> = [];
  const failures = await inFlight(jobs, async ({ family, file, to }) => {
    const bytes = await converted(await fs.readFile(path.join(CORPUS, family, file)), file, to);
    const out = path.join(outputs, `corpus-${file}-to-${to}`);
    await fs.writeFile(out, bytes);
    made.push({ source: `${family}/${file}`, to, file: out });
  });
  const readings = await readAll(made.map(({ file, to }) => [file, to] as const));
  for (const [index, { source, to }] of made.entries()) {
    const reading = readings[index]!;
    const words = [...new Set(wordsOf(sourceTexts.get(source) ?? ''))].filter((word) => word.length > 3);
    const found = recall(words, reading.text ?? '');
    t.diagnostic(`${source} → ${to}: recall ${found.recall.toFixed(2)}`);
    if (reading.error) failures.push(`${source} → ${to}: ${reading.error}`);
    else if (found.recall < CORPUS_MIN_RECALL) failures.push(`${source} → ${to}: recall ${found.recall.toFixed(2)}, missing ${found.missing.slice(0, 12).join(' ')}`);
  }
  assert.deepEqual(failures, [], failures.join('\n'));
});
