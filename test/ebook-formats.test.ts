// The ebook formats calibre reads and writes beyond epub, mobi, azw3, fb2 and pdb (issue #30):
// every pair /api/formats lists with one of them converts through the HTTP API, and each output
// is read back by code that is not calibre's (test/helpers/read_ebook.py: PalmDOC, BBeB, Rocket
// eBook, Bambook, TCR and zipped HTML/text/PML readers written from the formats' layouts, and
// read_document.py's readers for the formats of today): the sample's words are there, and a
// comic's pages are there as pictures. The samples are made here: the book by pandoc, the older
// formats from it by ebook-convert run directly (not through the service), the comics as ZIP and
// 7-Zip files of pictures written here, the DjVu by djvulibre (c44, djvused). Real LRF and comic
// files of the shared corpus too (skipped when ../shared is absent). DjVu's other targets (its
// pages as PDF, TIFF and PNG, its text layer as txt) are the djvulibre engine's:
// djvu-formats.test.ts.
// Hostile uploads: HTML inside an HTMLZ or TXTZ that names local files and URLs, comic archives
// whose members escape or link outside.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { strToU8, unzipSync, zipSync } from 'fflate';
import { download, fetchCatalogue, progress, submitOk, waitForJob, type CatalogueEntry } from './helpers/client.ts';
import { BODY, MARKER, recall, TITLE, wordsOf } from './helpers/documents.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
const READER = path.resolve(import.meta.dirname, 'helpers', 'read_ebook.py');

/** The ebooks of today, which document-pairs.test.ts converts among themselves and to documents. */
const MODERN = ['epub', 'mobi', 'azw3', 'fb2'];
const MODERN_TARGETS = ['epub', 'mobi', 'azw3', 'fb2', 'docx', 'txt', 'pdf'];
/** A DjVu's reflowable books, calibre's; its PDF and text are djvulibre's (djvu-formats.test.ts). */
const DJVU_TARGETS = ['epub', 'mobi', 'azw3', 'fb2', 'docx'];
/** What this file adds: the older formats written from the ebooks of today... */
const LEGACY_WRITES = ['htmlz', 'txtz', 'pmlz', 'lrf', 'pdb', 'rb', 'snb', 'tcr'];
/** ...the older formats read into them... */
const LEGACY_READS = ['lit', 'lrf', 'rb', 'tcr', 'pml', 'pmlz', 'txtz', 'htmlz', 'djvu'];
/** Those told by their first bytes: uploaded with a name that says nothing, so the content must decide. */
const SIGNED = new Set(['lit', 'lrf', 'rb', 'tcr', 'djvu']);
/** ...and comics, into the formats that show pictures as pages. */
const COMICS = ['cbz', 'cb7', 'cbc'];
const COMIC_TARGETS = ['azw3', 'epub', 'mobi', 'pdf'];

/**
 * The least share of the sample's words an output must hold. Every pair keeps them all today
 * (measured: recall 1.0 everywhere); 0.95 lets one word of twenty come out split at a line end,
 * never a lost sentence.
 */
const MIN_RECALL = 0.95;
/**
 * How alike a comic page and its picture in the output must be: the Pearson correlation of the
 * two, grey and reduced to 32x32. calibre's pictures of the test's gradients measured 0.9999;
 * two different pages of the sample measure below 0.1 (or -1: one is the other's negative).
 */
const MIN_PAGE_CORRELATION = 0.95;
/**
 * The same for the corpus's scanned comic pages (JPEG), which calibre also sharpens and
 * normalises: its two Captain Science pages measured 0.95 and 0.86.
 */
const MIN_CORPUS_PAGE_CORRELATION = 0.8;
/** A page of the DjVu sample carries this text layer, and nothing else in it is text. */
const DJVU_WORDS = ['Quokkabird', 'swims', 'across', 'the', 'river'];

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let work: string;
let beacon: http.Server;
const beaconHits: string[] = [];

const targetsOf = (id: string) => catalogue.find((f) => f.id === id)?.targets ?? [];

const { VIPSHOME: _vipsHome, ...toolEnv } = process.env;
function run(program: string, args: string[], cwd: string, input?: string): Buffer {
  return execFileSync(program, args, { cwd, env: toolEnv, input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], timeout: 180_000, maxBuffer: 64 * 1024 * 1024 });
}

/** ebook-convert run directly, as a test tool; concurrent runs, so that the samples take a few seconds. */
function ebookConvert(from: string, to: string, cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('ebook-convert', [from, to], { cwd, env: toolEnv, timeout: 180_000 }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`ebook-convert ${from} ${to}: ${stderr.slice(-500)}`));
      else resolve();
    });
  });
}

/**
 * Three comic pages, portrait (calibre splits a landscape page in two), each a diagonal grey
 * gradient running another way: no border a trim could take, and every two of them unalike.
 */
function comicPages(): Buffer[] {
  const script = `
import io, sys, numpy as np
from PIL import Image
w, h = 64, 96
x = np.arange(w)[None, :] / (w - 1); y = np.arange(h)[:, None] / (h - 1)
for v in ((x + y) / 2, ((1 - x) + y) / 2, (x + (1 - y)) / 2):
    out = io.BytesIO(); Image.fromarray((v * 255).astype(np.uint8)).convert("RGB").save(out, "PNG")
    sys.stdout.buffer.write(len(out.getvalue()).to_bytes(4, "big") + out.getvalue())
`;
  const data = execFileSync('/usr/bin/python3', ['-c', script]);
  const pages: Buffer[] = [];
  for (let at = 0; at < data.length;) {
    const length = data.readUInt32BE(at);
    pages.push(data.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return pages;
}

interface Samples { books: Record<string, Buffer>; pagePaths: string[]; pages: Buffer[] }
let samplesMade: Promise<Samples> | undefined;
/** Every sample, made once. */
function samples(): Promise<Samples> {
  samplesMade ??= (async () => {
    const dir = work;
    await fs.writeFile(path.join(dir, 'book.md'), `# ${TITLE}\n\n${BODY}\n`);
    run('pandoc', ['--from', 'markdown', '--to', 'epub3', '--metadata', `title=${MARKER}`, '--output', 'book.epub', 'book.md'], dir);
    const made = ['mobi', 'azw3', 'fb2', 'lit', 'lrf', 'rb', 'tcr', 'pmlz', 'txtz', 'htmlz'];
    // Two at a time: the machine has two cores.
    for (let i = 0; i < made.length; i += 2) await Promise.all(made.slice(i, i + 2).map((format) => ebookConvert('book.epub', `book.${format}`, dir)));
    const books: Record<string, Buffer> = { epub: await fs.readFile(path.join(dir, 'book.epub')) };
    for (const format of made) books[format] = await fs.readFile(path.join(dir, `book.${format}`));
    // PML as eReader's own tools write it: a heading, codes for bold and the chapter, paragraphs.
    books.pml = Buffer.from(`\\x\\B${TITLE}\\B\\x\n\n\\p${BODY.replace('quiet', '\\iquiet\\i')}\n`);

    const pages = comicPages();
    const pagePaths = await Promise.all(pages.map(async (page, n) => {
      const file = path.join(dir, `page${n + 1}.png`);
      await fs.writeFile(file, page);
      return file;
    }));
    books.cbz = Buffer.from(zipSync(Object.fromEntries(pages.map((page, n) => [`pages/${String(n + 1).padStart(2, '0')}.png`, page]))));
    run('7z', ['a', '-bd', '-y', 'comic.cb7', ...pagePaths.map((p) => path.basename(p))], dir);
    books.cb7 = await fs.readFile(path.join(dir, 'comic.cb7'));
    // A collection: comics inside a ZIP, and comics.txt naming them in order with their titles.
    books.cbc = Buffer.from(zipSync({ 'one.cbz': books.cbz, 'comics.txt': strToU8('one.cbz:The first issue\n') }));

    // DjVu: a page made by c44 from the first comic page, with a hidden text layer set by djvused.
    run('/usr/bin/python3', ['-c', 'from PIL import Image; Image.open("page1.png").save("page1.ppm")'], dir);
    run('c44', ['page1.ppm', 'book.djvu'], dir);
    const words = DJVU_WORDS.map((word, n) => `(word ${n * 12} 40 ${n * 12 + 11} 52 "${word}")`).join(' ');
    run('djvused', ['book.djvu', '-s'], dir, `select 1\nset-txt\n(page 0 0 64 96 (line 0 40 64 52 ${words}))\n.\n`);
    books.djvu = await fs.readFile(path.join(dir, 'book.djvu'));
    return { books, pagePaths, pages };
  })();
  return samplesMade;
}

before(async () => {
  work = await tempDir('convertd-ebooks-');
  beacon = http.createServer((request, response) => {
    beaconHits.push(request.url ?? '');
    response.end('x');
  });
  await new Promise<void>((resolve) => beacon.listen(0, '127.0.0.1', resolve));
  [server] = await Promise.all([
    startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '2', CONVERTD_MAX_ATTEMPTS: '1' }),
    samples(),
  ]);
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  await server?.stop();
  beacon?.close();
  if (work) await fs.rm(work, { recursive: true, force: true });
});

/** One job through the API: the result's bytes, or the error record. */
async function job(data: Uint8Array, filename: string, target: string): Promise<{ bytes?: Buffer; error?: { code: string; message: string }; source: string }> {
  const jobId = await submitOk(server.url, data, filename, target);
  const { final } = await waitForJob(server.url, jobId, { timeoutMs: 300_000 });
  if (final.status !== 'done') return { error: final.error, source: final.source };
  return { bytes: (await download(server.url, final.download_url!)).bytes, source: final.source };
}

interface Reading { text?: string; pictures?: number; matches?: number[]; error?: string }
/** One Python start reads every output (read_ebook.py). */
function readAll(jobs: ReadonlyArray<{ path: string; format: string; pages?: readonly string[] }>): Reading[] {
  const result = spawnSync('/usr/bin/python3', [READER], { input: JSON.stringify(jobs), encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as Reading[];
}

/** Runs `work` over `items`, `width` at a time (the service runs two jobs; two more wait their turn). */
async function pool<T>(items: readonly T[], width: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await each(items[next++]!);
  }));
}

test('the catalogue offers the new formats where users want them, and no further', () => {
  const sorted = (list: readonly string[]) => [...list].sort();
  for (const from of MODERN) {
    for (const to of LEGACY_WRITES) assert.ok(targetsOf(from).includes(to), `${from} → ${to} missing`);
  }
  // The older formats are read into the ebooks of today and written from them: routes of their own.
  for (const from of LEGACY_READS.filter((format) => format !== 'djvu')) assert.deepEqual(sorted(targetsOf(from)), sorted(MODERN_TARGETS), from);
  for (const to of DJVU_TARGETS) assert.ok(targetsOf('djvu').includes(to), `djvu → ${to} missing`);
  for (const from of COMICS) assert.deepEqual(sorted(targetsOf(from)), COMIC_TARGETS, from);
  // Not from documents through an EPUB, nor from Markdown.
  for (const from of ['docx', 'md', 'html', 'odt', 'pdb']) {
    for (const to of LEGACY_WRITES) assert.ok(!targetsOf(from).includes(to) || to === from, `${from} → ${to} offered`);
  }
  // Left out (engine.ts says why): no reader of SNB or CHM (calibre's fail), of CBR (non-free unrar), no LIT, OEB or RTF writer of calibre.
  assert.equal(catalogue.find((f) => f.id === 'snb')?.targets.length ?? 0, 0, 'snb is written, not read');
  for (const id of ['cbr', 'chm']) assert.equal(catalogue.find((f) => f.id === id), undefined, id);
  assert.ok(!targetsOf('epub').includes('lit') && !targetsOf('epub').includes('oeb'));
  for (const id of [...LEGACY_READS, ...LEGACY_WRITES, ...COMICS].filter((format) => format !== 'djvu')) assert.equal(catalogue.find((f) => f.id === id)?.category, 'ebook', id);
});

test('a ZIP named .cbz is a comic; named .zip, it is an archive', async () => {
  const { books } = await samples();
  const asZip = await submitOk(server.url, books.cbz!, 'comic.zip', 'tar');
  assert.equal((await progress(server.url, asZip)).body.source, 'zip');
  await waitForJob(server.url, asZip);
});

test('a comic page stays as drawn: in colour, uncropped, even of flat colours (calibre greys, trims and fails on such pages unless told not to)', { timeout: 300_000 }, async () => {
  // A 360 × 400 page made by ImageMagick (a test tool here): flat red above, flat blue below, a
  // white disc between and a white band down its left side. calibre's default border trimming
  // cut such a band away, and on a page of flat colours it found no page at all.
  const dir = await tempDir();
  execFileSync('convert', ['-size', '300x200', 'xc:#e02020', '-size', '300x200', 'xc:#2020e0', '-append',
    '-fill', 'white', '-draw', 'circle 150,200 150,240', '-background', 'white', '-gravity', 'east', '-extent', '360x400', `PNG24:${path.join(dir, 'page-1.png')}`]);
  const comic = Buffer.from(zipSync({ 'page-1.png': new Uint8Array(await fs.readFile(path.join(dir, 'page-1.png'))) }));
  /**
   * The box of what is not white in a picture (the page's coloured part, wherever the reader placed
   * it) and the mean red, green and blue of that box's top and bottom quarters, read by Pillow.
   */
  const read = (picture: string) => JSON.parse(execFileSync('/usr/bin/python3', ['-c', [
    'import json,sys', 'from PIL import Image, ImageOps, ImageStat',
    'im=Image.open(sys.argv[1]).convert("RGB")',
    'l,u,r,b=ImageOps.invert(im.convert("L")).point(lambda v: 255 if v > 40 else 0).getbbox()', 'q=(b-u)//4',
    'print(json.dumps({"box":[l,u,r,b],"top":ImageStat.Stat(im.crop((l,u,r,u+q))).mean,"bottom":ImageStat.Stat(im.crop((l,b-q,r,b))).mean}))',
  ].join('\n'), picture]).toString()) as { box: [number, number, number, number]; top: number[]; bottom: number[] };
  for (const target of ['pdf', 'epub']) {
    const jobId = await submitOk(server.url, comic, 'colour.cbz', target);
    const { final } = await waitForJob(server.url, jobId, { timeoutMs: 240_000 });
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    const output = path.join(dir, `colour.${target}`);
    await fs.writeFile(output, (await download(server.url, final.download_url!)).bytes);
    let picture = path.join(dir, `${target}-page.png`);
    if (target === 'pdf') {
      execFileSync('pdftoppm', ['-png', '-r', '40', '-f', '1', '-l', '1', '-singlefile', output, picture.slice(0, -4)]);
    } else {
      // The page's picture: the largest one that is not the cover calibre draws of its own.
      const [name, bytes] = Object.entries(unzipSync(new Uint8Array(await fs.readFile(output)))).filter(([entry]) => /\.(jpe?g|png)$/i.test(entry) && !/cover/i.test(entry)).sort((a, b) => b[1].length - a[1].length)[0]!;
      picture = path.join(dir, `epub-page${path.extname(name)}`);
      await fs.writeFile(picture, bytes);
    }
    const { box: [left, upper, right, lower], top, bottom } = read(picture);
    if (target === 'epub') {
      // The coloured part is 300 × 400 as drawn, with the band's 60 pixels (a fifth of its width)
      // still to its left. Trimmed, the band was gone; stretched to the reader's screen, the part
      // came out 0.65 as wide as high.
      const [width, height] = [right - left, lower - upper];
      assert.ok(Math.abs(width / height - 0.75) < 0.03, `epub: the page keeps its proportions (its coloured part ${width} x ${height})`);
      assert.ok(Math.abs(left / width - 0.2) < 0.05, `epub: the page keeps its white band (${left} pixels left of ${width})`);
    }
    assert.ok(top[0]! > 150 && top[2]! < 90, `${target}: the top is red (${top.map(Math.round).join(', ')})`);
    assert.ok(bottom[2]! > 150 && bottom[0]! < 90, `${target}: the bottom is blue (${bottom.map(Math.round).join(', ')})`);
  }
});

test('every listed pair with a new ebook format converts, checked by readers that are not calibre', { timeout: 900_000 }, async (t) => {
  const { books, pagePaths } = await samples();
  const words = wordsOf(`${TITLE} ${BODY}`);
  interface Pair { from: string; to: string; data: Buffer; words: readonly string[]; comic: boolean }
  const pairs: Pair[] = [];
  for (const from of MODERN) {
    for (const to of targetsOf(from).filter((target) => LEGACY_WRITES.includes(target))) pairs.push({ from, to, data: books[from]!, words, comic: false });
  }
  for (const from of LEGACY_READS) {
    const expected = from === 'djvu' ? wordsOf(DJVU_WORDS.join(' ')) : words;
    for (const to of targetsOf(from).filter((target) => from !== 'djvu' || DJVU_TARGETS.includes(target))) pairs.push({ from, to, data: books[from]!, words: expected, comic: false });
  }
  for (const from of COMICS) for (const to of targetsOf(from)) pairs.push({ from, to, data: books[from]!, words: [], comic: true });
  t.diagnostic(`${pairs.length} pairs`);

  const failures: string[] = [];
  const outputs: Array<{ pair: Pair; path: string }> = [];
  await pool(pairs, 4, async (pair) => {
    // The signed formats under a name that says nothing: their content decides (sniff.ts).
    const { bytes, error, source } = await job(pair.data, SIGNED.has(pair.from) ? 'upload.bin' : `sample.${pair.from}`, pair.to);
    if (source !== pair.from) failures.push(`${pair.from} → ${pair.to}: the upload was taken as ${source}`);
    if (!bytes) {
      failures.push(`${pair.from} → ${pair.to}: ${JSON.stringify(error)}`);
      return;
    }
    const file = path.join(work, `out-${pair.from}.${pair.to}`);
    await fs.writeFile(file, bytes);
    outputs.push({ pair, path: file });
  });
  const readings = readAll(outputs.map(({ pair, path: file }) => ({ path: file, format: pair.to, ...(pair.comic ? { pages: pagePaths } : {}) })));
  outputs.forEach(({ pair }, n) => {
    const reading = readings[n]!;
    const name = `${pair.from} → ${pair.to}`;
    if (reading.error) return failures.push(`${name}: not a valid ${pair.to}: ${reading.error}`);
    if (pair.comic) {
      // A collection of one comic; every page of it must be a picture of the output.
      const low = reading.matches!.map((m, page) => [page + 1, m] as const).filter(([, m]) => m < MIN_PAGE_CORRELATION);
      if (low.length > 0) failures.push(`${name}: pages ${low.map(([page, m]) => `${page} (${m.toFixed(2)})`).join(', ')} missing among ${reading.pictures} pictures`);
      return;
    }
    const found = recall(pair.words, reading.text ?? '');
    if (found.recall < MIN_RECALL) failures.push(`${name}: recall ${found.recall.toFixed(2)}, missing ${found.missing.join(' ')}`);
  });
  assert.deepEqual(failures, [], `${failures.length} of ${pairs.length} pairs failed:\n${failures.join('\n')}`);
});

test("progress is calibre's own, relayed from its warm helper: a book's PDF reports figures between 0 and 100 on its way", async () => {
  const { books } = await samples();
  const jobId = await submitOk(server.url, books.epub!, 'book.epub', 'pdf');
  const { final, seen } = await waitForJob(server.url, jobId, { intervalMs: 50, timeoutMs: 300_000 });
  assert.equal(final.status, 'done', JSON.stringify(final));
  const middle = new Set(seen.filter((r) => r.status === 'running').map((r) => r.progress).filter((p) => p! > 0 && p! < 100));
  assert.ok(middle.size >= 2, `progress values seen while running: ${[...middle].join(', ')}`);
});

test('a DjVu without a text layer fails, saying so', async () => {
  const { bytes, error } = await job(await scanOnlyDjvu(), 'scan.djvu', 'epub');
  assert.equal(bytes, undefined);
  assert.equal(error?.code, 'conversion_failed');
  assert.match(error?.message ?? '', /no text layer/);
});

/** The DjVu sample's picture without its text. */
async function scanOnlyDjvu(): Promise<Buffer> {
  await samples();
  run('c44', ['page1.ppm', 'scan.djvu'], work);
  return fs.readFile(path.join(work, 'scan.djvu'));
}

test('HTML inside an HTMLZ or TXTZ that names local files and URLs gets none of them into the book', async (t) => {
  const local = {
    picture: '/usr/share/calibre/images/default_cover.png',
    text: '/usr/share/common-licenses/GPL-3',
  };
  assert.ok(existsSync(local.picture) && existsSync(local.text), 'the files the hostile book names exist on this machine');
  const url = `http://127.0.0.1:${(beacon.address() as AddressInfo).port}`;
  const html = `<html><head><title>${MARKER}</title><link rel="stylesheet" href="file:///proc/self/environ"><link rel="stylesheet" href="${url}/style.css"></head><body>
<h1>${TITLE}</h1><p>${BODY}</p>
<img src="${local.picture}"><img src="file://${local.picture}"><img src="../../../../..${local.picture}"><img src="${url}/beacon.png">
<iframe src="/proc/version"></iframe><object data="/etc/passwd"></object>
<p><a href="${local.text}">licence</a> <a href="file:///proc/self/status">status</a> <a href="../../../../../etc/hostname">host</a></p></body></html>`;
  const markdown = `# ${TITLE}\n\n${BODY}\n\n![cover](${local.picture})\n\n![remote](${url}/txt.png)\n\n[licence](${local.text})\n`;
  const uploads: Array<[string, Buffer]> = [
    ['hostile.htmlz', Buffer.from(zipSync({ 'index.html': strToU8(html) }))],
    ['hostile.txtz', Buffer.from(zipSync({ 'index.txt': strToU8(markdown) }))],
  ];
  const forbidden = [/GNU GENERAL PUBLIC LICENSE/i, /Linux version/, /PATH=/, /TracerPid/, /root:x:0:0/];
  const pictureSize = (await fs.stat(local.picture)).size;
  for (const [name, data] of uploads) {
    // pdf: rendered by Qt WebEngine (Chromium), which would follow file: URLs of its own accord.
    for (const target of ['epub', 'txt', 'pdf']) {
      const { bytes, error } = await job(data, name, target);
      t.diagnostic(`${name} → ${target}: ${bytes ? 'done' : error!.code}`);
      if (!bytes) {
        assert.ok(['conversion_failed', 'corrupt_input'].includes(error!.code), JSON.stringify(error));
        continue;
      }
      const texts: string[] = [];
      if (target === 'epub') {
        const entries = unzipSync(new Uint8Array(bytes));
        const pictures = Object.entries(entries).filter(([entry]) => /\.(png|jpe?g|gif|svg)$/i.test(entry) && !/cover/i.test(entry));
        assert.deepEqual(pictures.map(([entry]) => entry), [], `${name} → epub holds pictures it cannot have come by honestly`);
        // calibre makes a cover picture of its own (title and author drawn); the machine's cover file never is it.
        for (const [entry, content] of Object.entries(entries)) {
          if (/cover/i.test(entry) && /\.(png|jpe?g)$/i.test(entry)) assert.notEqual(content.length, pictureSize, `${entry} is ${local.picture}`);
          texts.push(Buffer.from(content).toString('latin1'));
        }
      } else if (target === 'pdf') {
        const file = path.join(work, `${name}.pdf`);
        await fs.writeFile(file, bytes);
        texts.push(run('pdftotext', ['-enc', 'UTF-8', file, '-'], work).toString('utf8'));
      } else {
        texts.push(bytes.toString('utf8'));
      }
      const all = texts.join('\n');
      assert.ok(all.includes(MARKER), `${name} → ${target} lost the book's own words`);
      for (const pattern of forbidden) assert.doesNotMatch(all, pattern, `${name} → ${target}`);
    }
  }
  assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
});

test('comic archives whose members escape or link outside give only their own pages', { timeout: 300_000 }, async (t) => {
  const { pages, pagePaths } = await samples();
  const marker = `convertd-escape-${process.pid}-${Date.now()}`;
  const escaping = Buffer.from(zipSync({
    '01.png': pages[0]!,
    [`../../../../../../tmp/${marker}.png`]: pages[1]!,
    [`/tmp/${marker}-absolute.png`]: pages[2]!,
  }));
  // A 7-Zip comic whose second page is a symbolic link to a picture of the machine.
  const linkDir = path.join(work, 'linked');
  await fs.mkdir(linkDir, { recursive: true });
  await fs.copyFile(pagePaths[0]!, path.join(linkDir, '01.png'));
  await fs.symlink('/usr/share/calibre/images/default_cover.png', path.join(linkDir, '02.png'));
  run('7z', ['a', '-bd', '-y', '-snl', path.join(work, 'linked.cb7'), '01.png', '02.png'], linkDir);
  const linked = await fs.readFile(path.join(work, 'linked.cb7'));
  assert.match(run('7z', ['l', '-slt', path.join(work, 'linked.cb7')], work).toString(), /Attributes = \S* l/, 'the link is stored as a link');

  const outputs: Array<{ path: string; format: string; pages: string[] }> = [];
  for (const [name, data] of [['escaping.cbz', escaping], ['linked.cb7', linked]] as const) {
    const { bytes, error } = await job(data, name, 'epub');
    t.diagnostic(`${name} → epub: ${bytes ? 'done' : error!.code}`);
    if (!bytes) {
      // The 7-Zip comic's link is refused by py7zr as it unpacks (engine.ts says so as unsafe_input).
      assert.equal(error!.code, name === 'linked.cb7' ? 'unsafe_input' : error!.code);
      assert.ok(['unsafe_input', 'corrupt_input', 'conversion_failed'].includes(error!.code), JSON.stringify(error));
      continue;
    }
    const file = path.join(work, `${name}.epub`);
    await fs.writeFile(file, bytes);
    outputs.push({ path: file, format: 'epub', pages: [pagePaths[0]!, '/usr/share/calibre/images/default_cover.png'] });
  }
  for (const reading of readAll(outputs)) {
    assert.equal(reading.error, undefined);
    assert.ok(reading.matches![0]! >= MIN_PAGE_CORRELATION, 'the comic\'s own page is there');
    assert.ok(reading.matches![1]! < MIN_PAGE_CORRELATION, `the machine's picture came in through a link (${reading.matches![1]})`);
  }
  // Nothing was written where the names point, on the host.
  assert.ok(!existsSync(`/tmp/${marker}.png`) && !existsSync(`/tmp/${marker}-absolute.png`));
  assert.deepEqual(readdirSync(os.tmpdir()).filter((entry) => entry.startsWith(marker)), []);
});

// The shared corpus: real files of formats the samples above cover.
const corpusDir = (family: string) => path.join(CORPUS, family);
const corpusFiles = (family: string) => existsSync(corpusDir(family)) ? readdirSync(corpusDir(family)).sort().map((name) => path.join(corpusDir(family), name)) : [];

test('corpus: real LRF and comic files', { skip: !existsSync(CORPUS) && 'no ../shared/corpus', timeout: 600_000 }, async () => {
  const failures: string[] = [];
  for (const file of corpusFiles('lrf')) {
    const { bytes, error } = await job(await fs.readFile(file), path.basename(file), 'txt');
    if (!bytes) failures.push(`${path.basename(file)}: ${JSON.stringify(error)}`);
    else if (bytes.toString('utf8').trim().length < 10) failures.push(`${path.basename(file)}: no text`);
  }
  for (const file of corpusFiles('cbz')) {
    const { bytes, error } = await job(await fs.readFile(file), path.basename(file), 'epub');
    if (!bytes) {
      failures.push(`${path.basename(file)}: ${JSON.stringify(error)}`);
      continue;
    }
    // Every picture of the comic (the macOS resource forks aside) is a page of the book.
    const members = Object.entries(unzipSync(new Uint8Array(await fs.readFile(file))))
      .filter(([name]) => /\.(png|jpe?g|gif)$/i.test(name) && !name.startsWith('__MACOSX'));
    const pages = await Promise.all(members.map(async ([name, content], n) => {
      const page = path.join(work, `corpus-page-${path.basename(file)}-${n}${path.extname(name)}`);
      await fs.writeFile(page, content);
      return page;
    }));
    const out = path.join(work, `corpus-${path.basename(file)}.epub`);
    await fs.writeFile(out, bytes);
    const [reading] = readAll([{ path: out, format: 'epub', pages }]);
    if (reading!.error) failures.push(`${path.basename(file)}: ${reading!.error}`);
    else if (reading!.matches!.some((m) => m < MIN_CORPUS_PAGE_CORRELATION)) failures.push(`${path.basename(file)}: pages ${JSON.stringify(reading!.matches)}`);
  }
  assert.deepEqual(failures, []);
});
