// Real-world files from ../shared/corpus (public projects' sample files) through the service:
// images, drawings, audio, video and fonts.
// Skipped when the corpus is absent (a fresh clone has no ../shared). Valid images must convert;
// files from corrupt/ must end in a documented error, never a crash or a hang.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { download, submit, waitForJob, type ErrorBody, type SubmitAnswer } from './helpers/client.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { fileMime, writeTemp } from './helpers/tools.ts';
import { startSvgRenderer, type SvgRenderer } from './helpers/browser-render.ts';
import { compareImage } from './helpers/images.ts';

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
/** Each corpus family and the target it is tried with. */
const TARGETS: Record<string, string> = {
  png: 'webp', jpg: 'png', webp: 'png', avif: 'jpg', gif: 'png', tiff: 'jpg', heic: 'jpg', bmp: 'png', ico: 'png', psd: 'png', svg: 'png',
  mp3: 'ogg', wav: 'mp3', flac: 'mp3', ogg: 'mp3', m4a: 'mp3',
  mp4: 'webm', webm: 'mp4', mkv: 'mp4', mov: 'mp4', avi: 'mp4',
  ttf: 'woff2', otf: 'woff2', woff: 'ttf', woff2: 'woff',
  zip: '7z', '7z': 'zip', 'tar.gz': 'zip',
  csv: 'json', json: 'yaml', yaml: 'json', xml: 'json', xlsx: 'csv', ods: 'csv',
};
/** Outputs checked by parsing them with Python (test/helpers/read_data.py) rather than by type. */
const PARSED = new Set(['json', 'yaml', 'csv']);
const FAMILIES = Object.keys(TARGETS);
const MIME: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp', mp3: 'audio/mpeg', ogg: 'audio/ogg', mp4: 'video/mp4', webm: 'video/webm',
  woff2: 'font/woff2', woff: 'font/woff', ttf: 'font/sfnt', zip: 'application/zip', '7z': 'application/x-7z-compressed',
};
const DOCUMENTED_JOB_ERRORS = ['corrupt_input', 'input_too_complex', 'conversion_failed', 'timeout', 'output_too_large'];
/**
 * Image families: the output must be the source's picture, both decoded by Pillow or Debian's vips
 * (test/helpers/compare_images.py; the first frame or page, an icon's largest image), and an SVG
 * against Chromium's rendering of it (test/helpers/browser-render.ts), since the engines' and
 * ImageMagick's SVG renderer is the same librsvg.
 */
const IMAGE_FAMILIES = new Set(['png', 'jpg', 'webp', 'avif', 'gif', 'tiff', 'heic', 'bmp', 'ico', 'psd', 'svg']);
/**
 * Mean SSIM of the luma, flattened onto white (1 = the same picture): real photos through the
 * engines' lossy settings, JPEG q85 and WebP q82 here (AVIF q55 scored 0.94 on a 12-megapixel
 * photo, BENCHMARKS.md change 37); a different picture scores far lower.
 */
const IMAGE_SSIM_AT_LEAST = 0.85;

const present = fs.existsSync(CORPUS);
const files = (dir: string) => (fs.existsSync(path.join(CORPUS, dir)) ? fs.readdirSync(path.join(CORPUS, dir)).map((f) => path.join(CORPUS, dir, f)) : []);

describe('corpus: real-world files', { skip: present ? false : 'no ../shared/corpus here' }, () => {
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
    for (const file of files(family)) {
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
        if (PARSED.has(target)) {
          execFileSync('/usr/bin/python3', [path.resolve('test/helpers/read_data.py'), result, target], { stdio: ['ignore', 'pipe', 'pipe'] });
        } else {
          assert.equal(fileMime(result), MIME[target]);
        }
        if (IMAGE_FAMILIES.has(family)) {
          let reference = file;
          if (family === 'svg') {
            // Chromium draws it at the size librsvg gave it (the PNG header's width and height).
            chromium ??= startSvgRenderer();
            reference = await (await chromium).render({ file, width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) });
          }
          const comparison = await compareImage({ reference, output: result });
          report.push(`  same picture: SSIM ${comparison.ssim?.toFixed(4)}, ${comparison.output.width}x${comparison.output.height}`);
          assert.deepEqual([comparison.output.width, comparison.output.height], [comparison.reference!.width, comparison.reference!.height], 'the size of the source');
          assert.ok(comparison.ssim! >= IMAGE_SSIM_AT_LEAST, `SSIM ${comparison.ssim} below ${IMAGE_SSIM_AT_LEAST}`);
        }
      });
    }
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
