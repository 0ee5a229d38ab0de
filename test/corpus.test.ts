// Real-world files from ../shared/corpus (public projects' sample files) through the service:
// images, drawings, audio, video, fonts, archives and data. Archive outputs must list the source's
// members, data outputs hold the source's records (both read with Python), and an API response in
// JSON must reach a PDF as a listing of its values.
// Skipped when the corpus is absent (a fresh clone has no ../shared). Valid images must convert;
// files from corrupt/ must end in a documented error, never a crash or a hang.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { download, submit, waitForJob, type ErrorBody, type SubmitAnswer } from './helpers/client.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { decodeSound, probeMedia } from './helpers/media.ts';
import { fileMime, writeTemp } from './helpers/tools.ts';
import { startSvgRenderer, type SvgRenderer } from './helpers/browser-render.ts';
import { compareImage } from './helpers/images.ts';

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
/** Each corpus family and the target it is tried with. */
const TARGETS: Record<string, string> = {
  png: 'webp', jpg: 'png', webp: 'png', avif: 'jpg', gif: 'png', tiff: 'jpg', heic: 'jpg', heif: 'jpg', bmp: 'png', ico: 'png', psd: 'png', svg: 'png', svgz: 'png',
  mp3: 'ogg', wav: 'mp3', flac: 'mp3', ogg: 'mp3', m4a: 'mp3',
  mp4: 'webm', webm: 'mp4', mkv: 'mp4', mov: 'mp4', avi: 'mp4',
  ttf: 'woff2', otf: 'woff2', woff: 'ttf', woff2: 'woff',
  zip: '7z', '7z': 'zip', 'tar.gz': 'zip',
  csv: 'json', json: 'yaml', yaml: 'json', xml: 'json', xlsx: 'csv', ods: 'csv',
  eps: 'pdf',
};
/**
 * Data families: the output must hold the source's records, both read by Python
 * (test/helpers/read_data.py, values as text).
 */
const DATA = new Set(['csv', 'json', 'yaml', 'xml', 'xlsx', 'ods']);
/** Archive families: the output must list the source's members (test/helpers/list_archive.py: names, directories, sizes, SHA-256). */
const ARCHIVES = new Set(['zip', '7z', 'tar.gz']);
/** Of the corpus API response's 100 tweets, how many must reach its PDF listing whole (97 do; 3 differ in extraction only). */
const TWEETS_WHOLE_AT_LEAST = 95;
const python = (script: string, ...args: string[]) => execFileSync('/usr/bin/python3', [path.resolve('test/helpers', script), ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
/**
 * What a checker reads from a corpus file, read once: a source is compared with each of its
 * outputs, and the corpus does not change during a run (a large font's facts take seconds).
 */
const sourceReadings = new Map<string, string>();
function readSource(read: (...args: string[]) => string, ...args: string[]): string {
  const key = JSON.stringify([read.name, ...args]);
  let reading = sourceReadings.get(key);
  if (reading === undefined) sourceReadings.set(key, reading = read(...args));
  return reading;
}
const FAMILIES = Object.keys(TARGETS);
const MIME: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp', mp3: 'audio/mpeg', ogg: 'audio/ogg', mp4: 'video/mp4', webm: 'video/webm',
  woff2: 'font/woff2', woff: 'font/woff', ttf: 'font/sfnt', zip: 'application/zip', '7z': 'application/x-7z-compressed',
  pdf: 'application/pdf',
};
/**
 * EPS files (Ghostscript's PostScript reading): the PDF has one page, the size of the file's
 * %%BoundingBox when it declares itself EPS (a file without the EPSF header line is read as a
 * PostScript document, on its paper), and poppler draws something on it.
 */
function assertEpsKept(source: string, pdf: string): void {
  const info = execFileSync('pdfinfo', [pdf], { encoding: 'utf8' });
  assert.equal(Number(/^Pages:\s*(\d+)/m.exec(info)?.[1]), 1, 'one page');
  const head = fs.readFileSync(source, 'latin1').slice(0, 4096);
  const box = /^%%BoundingBox:\s*(-?\d+)\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)/m.exec(head);
  if (/^%!PS-Adobe-\d\.\d EPSF-/.test(head) && box) {
    const [x1, y1, x2, y2] = box.slice(1).map(Number) as [number, number, number, number];
    const size = /Page size:\s*([\d.]+) x ([\d.]+)/.exec(info)!;
    assert.deepEqual([Math.round(Number(size[1])), Math.round(Number(size[2]))], [x2 - x1, y2 - y1], 'the page is the bounding box');
  }
  // The darkest of the page's pixels, rendered by poppler at 36 dpi: a blank page's is white.
  const darkest = execFileSync('/usr/bin/python3', ['-c', [
    'import subprocess, sys, io', 'from PIL import Image',
    'png = subprocess.run(["pdftoppm", "-png", "-r", "36", "-f", "1", "-l", "1", sys.argv[1]], capture_output=True, check=True).stdout',
    'print(min(Image.open(io.BytesIO(png)).convert("L").getdata()))',
  ].join('\n'), pdf], { encoding: 'utf8' });
  assert.ok(Number(darkest) < 200, `the page is blank (darkest grey ${darkest.trim()})`);
}
/** Fonts: the output must keep the source's characters and glyphs, read with fontTools (test/helpers/read_font.py). */
const FONT_FAMILIES = new Set(['ttf', 'otf', 'woff', 'woff2']);
/** Font units a glyph's outline bounds may move when its outlines are redrawn as CFF (fonts.test.ts says why). */
const FONT_OUTLINE_TOLERANCE_UNITS = 1;
interface FontFacts {
  outlines: string | null;
  cmap: Record<string, string>;
  glyphCount: number;
  advances: Record<string, number>;
  bounds: Record<string, number[] | null>;
  areas: Record<string, number>;
}
const readFont = (file: string) => execFileSync('/usr/bin/python3', [path.resolve('test/helpers/read_font.py'), file], { encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'ignore'] });
const fontFacts = (file: string) => JSON.parse(readFont(file)) as FontFacts;
const sourceFontFacts = (file: string) => JSON.parse(readSource(readFont, file)) as FontFacts;
/** OTS (ots-sanitize), the font validator browsers use: every corpus font passes it, so must each output. */
function assertFontValid(file: string, where: string): void {
  const result = spawnSync('ots-sanitize', [file], { encoding: 'utf8' });
  assert.equal(result.status, 0, `${where}: OTS refuses the output: ${result.stderr}${result.stdout}`);
}
/** The same characters mapped to the same glyphs, as many glyphs, the same advance widths. */
function assertFontKept(source: FontFacts, output: FontFacts, where: string): void {
  assert.deepEqual(output.cmap, source.cmap, `${where}: the character map`);
  assert.equal(output.glyphCount, source.glyphCount, `${where}: glyph count`);
  assert.deepEqual(output.advances, source.advances, `${where}: advance widths`);
}
const DOCUMENTED_JOB_ERRORS = ['corrupt_input', 'input_too_complex', 'conversion_failed', 'timeout', 'output_too_large'];
/**
 * Image families: the output must be the source's picture, both decoded by Pillow or Debian's vips
 * (test/helpers/compare_images.py; the first frame or page, an icon's largest image), and an SVG
 * against Chromium's rendering of it (test/helpers/browser-render.ts), since the engines' and
 * ImageMagick's SVG renderer is the same librsvg.
 */
const IMAGE_FAMILIES = new Set(['png', 'jpg', 'webp', 'avif', 'gif', 'tiff', 'heic', 'heif', 'bmp', 'ico', 'psd', 'svg', 'svgz']);
/**
 * Mean SSIM of the luma, flattened onto white (1 = the same picture): real photos through the
 * engines' lossy settings, JPEG q85 and WebP q82 here (AVIF q55 scored 0.94 on a 12-megapixel
 * photo, BENCHMARKS.md change 37); a different picture scores far lower.
 */
const IMAGE_SSIM_AT_LEAST = 0.85;

// Audio and video: what a converted file keeps of its source, measured on both by Debian's
// ffprobe and ffmpeg (test/helpers/media.ts), never by the engine.
const MEDIA_FAMILIES = new Set(['mp3', 'wav', 'flac', 'ogg', 'm4a', 'mp4', 'webm', 'mkv', 'mov', 'avi']);
/**
 * Seconds the sound (its decoded length) and the picture (first packet to last packet's end) may
 * differ from the source's: a codec frame or two (MP3 at 16 kHz: 72 ms a frame), or a video
 * frame, with room. Not the container's figure: an MP3 without a frame index declares a length
 * guessed from its bitrate (37.5 s for mp3/mm-layer3-he-44khz.mp3's 10.7 s), a Matroska file
 * counts its subtitles.
 */
const MEDIA_DURATION_TOLERANCE = 0.1;
/** dB the sound's RMS level may move: lossy encoding changes it by tenths; a lost or broken sound by tens. */
const SOUND_LEVEL_TOLERANCE_DB = 3;

async function assertMediaKept(source: string, output: string, target: string): Promise<void> {
  const toVideo = ['mp4', 'webm', 'mkv', 'mov', 'avi'].includes(target);
  // Every measure at once (each is its own ffprobe or ffmpeg run); a file without sound has none to decode.
  const sound = (file: string) => decodeSound(file).catch(() => undefined);
  const [before, after, heard, made] = await Promise.all([
    probeMedia(source, { pictureSpan: toVideo }), probeMedia(output, { pictureSpan: toVideo }), sound(source), sound(output),
  ]);
  if (before.audio) {
    // Where the source has sound, it is still there: as long, as loud.
    assert.ok(after.audio && heard && made, 'the sound came along');
    assert.ok(Math.abs(made.seconds - heard.seconds) <= MEDIA_DURATION_TOLERANCE, `sound lasts ${made.seconds} s, the source's ${heard.seconds} s`);
    assert.ok(Math.abs(made.rmsDb - heard.rmsDb) <= SOUND_LEVEL_TOLERANCE_DB, `sound at ${made.rmsDb.toFixed(1)} dBFS, the source's at ${heard.rmsDb.toFixed(1)}`);
  }
  if (!toVideo || !before.video) return;
  assert.ok(after.video, 'a picture');
  // Frame size kept; 4:2:0 encoders need even sizes, so an odd one loses its last row or column.
  const even = (n: number) => n - (n % 2);
  assert.deepEqual([after.video.width, after.video.height], [even(before.video.width), even(before.video.height)], 'frame size');
  const [shown, drawn] = [before.video.seconds!, after.video.seconds!];
  assert.ok(Math.abs(drawn - shown) <= MEDIA_DURATION_TOLERANCE, `picture lasts ${drawn} s, the source's ${shown} s`);
}

const present = fs.existsSync(CORPUS);
/**
 * Word and Excel 2003 XML documents (`<?mso-application progid="Word.Document"?>`): in the corpus's
 * xml folder, but documents, recognised as such since issue #30 (LibreOffice reads them); tested
 * as documents below, not as data.
 */
const WORD_2003_XML = /progid="Word\.Document"|<w:wordDocument/;
const EXCEL_2003_XML = /progid="Excel\.Sheet"|"urn:schemas-microsoft-com:office:spreadsheet"/;
const office2003Kind = (file: string) => {
  const head = fs.readFileSync(file, 'latin1').slice(0, 4096);
  return WORD_2003_XML.test(head) ? 'wordml' : EXCEL_2003_XML.test(head) ? 'spreadsheetml' : undefined;
};
const isOffice2003Xml = (file: string) => file.endsWith('.xml') && office2003Kind(file) !== undefined;
/** The elements holding a Word 2003 document's text (w:t) and an Excel 2003 workbook's cell values (ss:Data). */
const OFFICE_XML_TEXT = 'import sys, xml.etree.ElementTree as E\nprint(" ".join(e.text or "" for e in E.parse(sys.argv[1]).iter() if e.tag.endswith(("}t", "}Data"))))';
const files = (dir: string) => (fs.existsSync(path.join(CORPUS, dir)) ? fs.readdirSync(path.join(CORPUS, dir)).map((f) => path.join(CORPUS, dir, f)) : []);
/** The least share of an Office 2003 XML document's words its PDF must hold (as corpus-documents.test.ts asks of real files). */
const OFFICE_XML_MIN_RECALL = 0.8;

// Two files at a time, as the service runs two jobs at once: one in flight left a core idle.
describe('corpus: real-world files', { skip: present ? false : 'no ../shared/corpus here', concurrency: 2 }, () => {
  let server: RunningServer;
  const report: string[] = [];
  let chromium: Promise<SvgRenderer> | undefined; // started by the first SVG
  before(async () => { server = await startServer({ CONVERTD_RATE_LIMITS: 'off' }); });
  after(async () => {
    await server.stop();
    await (await chromium)?.close();
    if (report.length) process.stdout.write(`corpus report:\n  ${report.join('\n  ')}\n`);
  });

  for (const family of FAMILIES) {
    for (const file of files(family).filter((f) => !isOffice2003Xml(f))) {
      const target = TARGETS[family]!;
      test(`${family}/${path.basename(file)} → ${target}`, async () => {
        const response = await submit(server.url, fs.readFileSync(file), path.basename(file), target);
        if (response.status === 415) {
          // A variant of the family the engines cannot decode (an animated AVIF, say): refused
          // up front, with a message naming what it is.
          const body = await response.json() as ErrorBody;
          report.push(`${family}/${path.basename(file)} → ${target}: refused (${body.error.message})`);
          assert.equal(body.error.code, 'unsupported_format');
          assert.match(body.error.message, /looks like/);
          return;
        }
        assert.equal(response.status, 200, await response.clone().text());
        const { job_id: jobId } = await response.json() as SubmitAnswer;
        const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
        report.push(`${family}/${path.basename(file)} → ${target}: ${final.status}${final.error ? ` (${final.error.code}: ${final.error.message})` : ''}`);
        assert.equal(final.status, 'done', JSON.stringify(final.error));
        const { bytes } = await download(server.url, final.download_url!);
        const result = await writeTemp(bytes, `out.${target}`);
        if (FONT_FAMILIES.has(family)) {
          assertFontKept(sourceFontFacts(file), fontFacts(result), `${path.basename(file)} → ${target}`);
          assertFontValid(result, `${path.basename(file)} → ${target}`);
        }
        if (DATA.has(family)) {
          // A record's values as text (csv holds nothing else: true is "true", 36 is "36"), nested
          // values as they are; a source workbook's formulas are read as their cached results.
          const records = (reading: string) => (JSON.parse(reading) as Array<Record<string, unknown>>)
            .map((record) => Object.fromEntries(Object.entries(record).map(([key, value]) => [key, typeof value === 'object' && value !== null ? value : String(value)])));
          assert.deepEqual(records(python('read_data.py', result, target, '--typed')), records(readSource(python, 'read_data.py', file, family, '--formulas', '--typed')), 'the same records as the source');
        } else if (ARCHIVES.has(family)) {
          assert.deepEqual(JSON.parse(python('list_archive.py', result, target)), JSON.parse(readSource(python, 'list_archive.py', file, family)), 'the same members as the source');
        } else {
          assert.equal(fileMime(result), MIME[target]);
        }
        if (MEDIA_FAMILIES.has(family)) await assertMediaKept(file, result, target);
        if (family === 'eps') assertEpsKept(file, result);
        if (IMAGE_FAMILIES.has(family)) {
          let reference = file;
          if (family === 'svg' || family === 'svgz') {
            // Chromium draws it at the size librsvg gave it (the PNG header's width and height);
            // an svgz inflated by Node's zlib first.
            const drawing = family === 'svg' ? file : await writeTemp(gunzipSync(fs.readFileSync(file)), 'drawing.svg');
            chromium ??= startSvgRenderer();
            reference = await (await chromium).render({ file: drawing, width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) });
          }
          const comparison = await compareImage({ reference, output: result });
          report.push(`  same picture: SSIM ${comparison.ssim?.toFixed(4)}, ${comparison.output.width}x${comparison.output.height}`);
          assert.deepEqual([comparison.output.width, comparison.output.height], [comparison.reference!.width, comparison.reference!.height], 'the size of the source');
          assert.ok(comparison.ssim! >= IMAGE_SSIM_AT_LEAST, `SSIM ${comparison.ssim} below ${IMAGE_SSIM_AT_LEAST}`);
        }
      });
    }
  }

  // Most web fonts hold TrueType outlines: as OTF they are redrawn as CFF, exactly (fonts.test.ts).
  // Each real TrueType-outline font must keep its glyphs' shapes (bounds) and reverse its contours.
  for (const file of ['ttf', 'woff', 'woff2'].flatMap((family) => files(family))) {
    test(`${path.basename(path.dirname(file))}/${path.basename(file)} → otf keeps its outlines`, async (t) => {
      const source = sourceFontFacts(file);
      if (source.outlines !== 'truetype') { t.skip('CFF outlines already: nothing to redraw'); return; }
      const response = await submit(server.url, fs.readFileSync(file), path.basename(file), 'otf');
      assert.equal(response.status, 200, await response.clone().text());
      const { job_id: jobId } = await response.json() as SubmitAnswer;
      const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
      report.push(`${path.basename(file)} → otf: ${final.status}${final.error ? ` (${final.error.code}: ${final.error.message})` : ''}`);
      assert.equal(final.status, 'done', JSON.stringify(final.error));
      const outputFile = await writeTemp((await download(server.url, final.download_url!)).bytes, 'out.otf');
      const output = fontFacts(outputFile);
      const where = `${path.basename(file)} → otf`;
      assertFontValid(outputFile, where);
      assert.equal(output.outlines, 'cff', `${where}: CFF outlines`);
      assertFontKept(source, output, where);
      for (const [glyph, box] of Object.entries(source.bounds)) {
        const other = output.bounds[glyph];
        assert.equal(Boolean(other), Boolean(box), `${where}: ${glyph} has an outline in both or neither`);
        if (box && other) assert.ok(box.every((value, i) => Math.abs(other[i]! - value) <= FONT_OUTLINE_TOLERANCE_UNITS), `${where}: ${glyph} bounds ${JSON.stringify(other)} vs ${JSON.stringify(box)}`);
        const [before, after] = [source.areas[glyph]!, output.areas[glyph]!];
        if (before !== 0) assert.equal(Math.sign(after), -Math.sign(before), `${where}: ${glyph} contours reversed`);
      }
    });
  }

  test('json/nativejson-twitter.json (an API response, 12,346 values) → pdf: a listing holding its values', { skip: fs.existsSync(path.join(CORPUS, 'json/nativejson-twitter.json')) ? false : 'not in this corpus' }, async () => {
    const source = path.join(CORPUS, 'json/nativejson-twitter.json');
    const response = await submit(server.url, fs.readFileSync(source), 'nativejson-twitter.json', 'pdf');
    assert.equal(response.status, 200, await response.clone().text());
    const { final } = await waitForJob(server.url, ((await response.json()) as SubmitAnswer).job_id, { timeoutMs: 180_000 });
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    const pdf = await writeTemp((await download(server.url, final.download_url!)).bytes, 'twitter.pdf');
    const words = new Set(execFileSync('pdftotext', [pdf, '-'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }).split(/\s+/));
    // Every screen name and every id_str (text: the numeric ids pass through a double, see README).
    const tree = JSON.parse(fs.readFileSync(source, 'utf8')) as { statuses: Array<{ id_str: string; text: string; user: { screen_name: string } }> };
    const expected = tree.statuses.flatMap((status) => [status.id_str, status.user.screen_name]);
    assert.equal(expected.length, 200);
    assert.deepEqual(expected.filter((word) => !words.has(word)), [], 'values missing from the PDF');
    // Each tweet's whole text, all its lines, drawn in its cell: a listing row as tall as its wrapped
    // value (97 of the 100 lost their last lines when rows kept the default height). Whitespace is
    // ignored, as the PDF wraps lines anew; a few texts differ in extraction only (pdftotext reads
    // the full-width tilde and some symbols as other characters).
    const drawn = execFileSync('pdftotext', [pdf, '-'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }).replace(/\s+/g, '');
    const whole = tree.statuses.filter((status) => drawn.includes(status.text.replace(/\s+/g, ''))).length;
    assert.ok(whole >= TWEETS_WHOLE_AT_LEAST, `only ${whole} of ${tree.statuses.length} tweets' texts are whole in the PDF`);
  });

  for (const file of files('xml').filter(isOffice2003Xml)) {
    test(`xml/${path.basename(file)} is a Word or Excel 2003 document: its PDF holds its words`, async () => {
      const response = await submit(server.url, fs.readFileSync(file), path.basename(file), 'pdf');
      assert.equal(response.status, 200, await response.clone().text());
      const { job_id: jobId } = await response.json() as SubmitAnswer;
      const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
      assert.equal(final.source, office2003Kind(file));
      assert.equal(final.status, 'done', JSON.stringify(final.error));
      const pdf = await writeTemp((await download(server.url, final.download_url!)).bytes, 'out.pdf');
      // The document's words: its text runs or cell values, read by Python's XML parser (not the
      // base64 of its pictures).
      const source = execFileSync('/usr/bin/python3', ['-c', OFFICE_XML_TEXT, file], { encoding: 'utf8' });
      // Words of three letters or more, and numbers (a workbook may hold nothing else), as tokens.
      const tokens = (text: string) => new Set(text.toLowerCase().match(/\p{L}{3,}|\p{N}+/gu) ?? []);
      const words = tokens(source);
      const text = tokens(execFileSync('pdftotext', [pdf, '-'], { encoding: 'utf8' }));
      const found = [...words].filter((word) => text.has(word)).length;
      report.push(`xml/${path.basename(file)} → pdf: ${found} of ${words.size} words`);
      assert.ok(words.size > 0 && found / words.size >= OFFICE_XML_MIN_RECALL, `${found} of ${words.size} words in the PDF`);
    });
  }

  for (const file of files('corrupt').filter((f) => /\.(png|jpe?g|gif|webp|tiff?|avif)$/i.test(f))) {
    test(`corrupt/${path.basename(file)} ends in a documented error or converts what is readable`, async () => {
      const response = await submit(server.url, fs.readFileSync(file), path.basename(file), 'webp');
      assert.ok([200, 415].includes(response.status), `status ${response.status}`);
      if (response.status !== 200) return;
      const { job_id: jobId } = await response.json() as SubmitAnswer;
      const { final } = await waitForJob(server.url, jobId, { timeoutMs: 60_000 });
      report.push(`corrupt/${path.basename(file)}: ${final.status}${final.error ? ` (${final.error.code})` : ''}`);
      if (final.status === 'error') assert.ok(DOCUMENTED_JOB_ERRORS.includes(final.error!.code), final.error!.code);
    });
  }
});
