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
import { decodeSound, probeMedia } from './helpers/media.ts';
import { fileMime, writeTemp } from './helpers/tools.ts';

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
const files = (dir: string) => (fs.existsSync(path.join(CORPUS, dir)) ? fs.readdirSync(path.join(CORPUS, dir)).map((f) => path.join(CORPUS, dir, f)) : []);

describe('corpus: real-world files', { skip: present ? false : 'no ../shared/corpus here' }, () => {
  let server: RunningServer;
  const report: string[] = [];
  before(async () => { server = await startServer({ CONVERTD_RATE_LIMITS: 'off' }); });
  after(async () => {
    await server.stop();
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
        if (MEDIA_FAMILIES.has(family)) await assertMediaKept(file, result, target);
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
