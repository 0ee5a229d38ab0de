// Every audio and video pair the catalogue advertises, from samples the test makes with ffmpeg
// (an AMR file is written by hand: Debian's ffmpeg has no AMR encoder), checked with ffprobe:
// the container, the streams, the duration. Plus the hostile and oversized inputs ffmpeg must refuse.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { convert, expectError, fetchCatalogue, submit, submitOk, waitForJob, type CatalogueEntry } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const SECONDS = 1.5;
const AUDIO = ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff', 'wma', 'ac3', 'amr'];
const VIDEO = ['mp4', 'webm', 'mkv', 'mov', 'avi', 'mpeg', 'flv', '3gp', 'wmv', 'ogv', 'm4v'];
/** ffprobe's format_name for each target. */
const CONTAINER: Record<string, string> = {
  mp3: 'mp3', wav: 'wav', flac: 'flac', ogg: 'ogg', opus: 'ogg', m4a: 'mov,mp4,m4a,3gp,3g2,mj2', aiff: 'aiff',
  mp4: 'mov,mp4,m4a,3gp,3g2,mj2', mov: 'mov,mp4,m4a,3gp,3g2,mj2', webm: 'matroska,webm', mkv: 'matroska,webm', avi: 'avi', gif: 'gif',
};

const { VIPSHOME: _ignored, ...toolEnv } = process.env;
function ffmpeg(args: string[]): void {
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args], { env: toolEnv });
}

interface Facts { format: string; duration: number; video?: { width: number; height: number }; audio: boolean }
function ffprobe(file: string): Facts {
  const out = JSON.parse(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=format_name,duration:stream=codec_type,width,height', '-of', 'json', file], { encoding: 'utf8', env: toolEnv })) as {
    format: { format_name: string; duration?: string }; streams: Array<{ codec_type: string; width?: number; height?: number }>;
  };
  const video = out.streams.find((s) => s.codec_type === 'video');
  return {
    format: out.format.format_name,
    duration: Number(out.format.duration ?? 0),
    video: video ? { width: video.width!, height: video.height! } : undefined,
    audio: out.streams.some((s) => s.codec_type === 'audio'),
  };
}

/** An AMR-NB file: the magic line, then 20 ms frames of mode 7 (12.2 kbit/s) holding silence. */
function amrFile(seconds: number): Buffer {
  const frame = Buffer.alloc(32);
  frame[0] = 0x3c;
  return Buffer.concat([Buffer.from('#!AMR\n'), ...Array.from({ length: Math.round(seconds * 50) }, () => frame)]);
}

async function makeSamples(dir: string): Promise<Record<string, Buffer>> {
  const audioIn = ['-f', 'lavfi', '-i', `sine=frequency=440:duration=${SECONDS}:sample_rate=44100`];
  const videoIn = ['-f', 'lavfi', '-i', `testsrc=size=128x96:rate=15:duration=${SECONDS}`, ...audioIn, '-shortest'];
  const recipes: Record<string, string[]> = {
    mp3: [...audioIn], wav: [...audioIn], flac: [...audioIn], ogg: [...audioIn, '-c:a', 'libvorbis'],
    opus: [...audioIn, '-c:a', 'libopus'], m4a: [...audioIn, '-c:a', 'aac'], aiff: [...audioIn], wma: [...audioIn, '-c:a', 'wmav2'],
    ac3: [...audioIn, '-c:a', 'ac3'],
    mp4: [...videoIn, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac'],
    webm: [...videoIn, '-c:v', 'libvpx-vp9', '-c:a', 'libopus'],
    mkv: [...videoIn, '-c:v', 'libx264', '-pix_fmt', 'yuv420p'],
    mov: [...videoIn, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac'],
    avi: [...videoIn, '-c:v', 'mpeg4', '-c:a', 'libmp3lame'],
    mpeg: [...videoIn, '-c:v', 'mpeg2video', '-c:a', 'mp2', '-f', 'mpeg'],
    flv: [...videoIn, '-c:v', 'flv1', '-c:a', 'libmp3lame'],
    '3gp': [...videoIn, '-c:v', 'h263', '-s', '176x144', '-c:a', 'aac', '-ar', '8000', '-ac', '1'],
    wmv: [...videoIn, '-c:v', 'wmv2', '-c:a', 'wmav2'],
    ogv: [...videoIn, '-c:v', 'libtheora', '-c:a', 'libvorbis'],
    m4v: [...videoIn, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-f', 'ipod'],
    gif: ['-f', 'lavfi', '-i', `testsrc=size=128x96:rate=10:duration=${SECONDS}`],
  };
  const samples: Record<string, Buffer> = { amr: amrFile(SECONDS) };
  for (const [format, args] of Object.entries(recipes)) {
    const file = path.join(dir, `sample.${format}`);
    ffmpeg([...args, file]);
    samples[format] = await fs.readFile(file);
  }
  return samples;
}

let server: RunningServer;
let samples: Record<string, Buffer>;
let catalogue: readonly CatalogueEntry[];

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  samples = await makeSamples(await tempDir('convertd-media-'));
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server.stop();
});

test('the catalogue lists the audio and video formats with their targets', () => {
  const targets = (id: string) => catalogue.find((f) => f.id === id)?.targets ?? [];
  for (const id of AUDIO) {
    assert.equal(catalogue.find((f) => f.id === id)?.category, 'audio', id);
    for (const t of ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff'].filter((t) => t !== id)) assert.ok(targets(id).includes(t), `${id} → ${t}`);
  }
  for (const id of VIDEO) {
    assert.equal(catalogue.find((f) => f.id === id)?.category, 'video', id);
    for (const t of ['mp4', 'webm', 'mkv', 'mov', 'avi', 'gif', 'mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff'].filter((t) => t !== id)) {
      assert.ok(targets(id).includes(t), `${id} → ${t}`);
    }
  }
  assert.ok(targets('gif').includes('mp4'));
});

describe('every advertised audio and video pair converts', { concurrency: 3 }, () => {
  const sources = [...AUDIO, ...VIDEO, 'gif'];
  for (const source of sources) {
    // Only the pairs ffmpeg provides (gif's image targets belong to sharp and are tested there).
    const targets = source === 'gif' ? ['mp4', 'webm']
      : AUDIO.includes(source) ? ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff']
        : ['mp4', 'webm', 'mkv', 'mov', 'avi', 'gif', 'mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff'];
    for (const target of targets.filter((t) => t !== source)) {
      test(`${source} → ${target}`, async () => {
        const { bytes } = await convert(server.url, samples[source]!, `sample.${source}`, target);
        const facts = ffprobe(await writeTemp(bytes, `out.${target}`));
        assert.equal(facts.format, CONTAINER[target]);
        if (['mp4', 'webm', 'mkv', 'mov', 'avi', 'gif'].includes(target)) {
          assert.ok(facts.video, 'a video stream');
          assert.ok(facts.video.width >= 120 && facts.video.width <= 176, `width ${facts.video.width}`);
          if (target !== 'gif' && source !== 'gif') assert.ok(facts.audio, 'the sound came along');
        } else {
          assert.ok(facts.audio && !facts.video, 'audio only');
        }
        if (target !== 'gif') assert.ok(Math.abs(facts.duration - SECONDS) < 0.35, `duration ${facts.duration}`);
      });
    }
  }
});

test('progress is real: a longer encode reports figures between 0 and 100 on its way', async () => {
  const file = path.join(await tempDir(), 'long.mp4');
  // A minute of grainy 640x360 (about 7 MB): VP9 at the service's realtime setting takes about
  // 4 s for it here, so several of ffmpeg's half-second progress reports fall inside the run.
  ffmpeg(['-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25:duration=60', '-vf', 'noise=alls=12:allf=t',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '30', '-pix_fmt', 'yuv420p', file]);
  const jobId = await submitOk(server.url, await fs.readFile(file), 'long.mp4', 'webm');
  const { final, seen } = await waitForJob(server.url, jobId, { intervalMs: 100, timeoutMs: 120_000 });
  assert.equal(final.status, 'done');
  const middle = new Set(seen.filter((r) => r.status === 'running').map((r) => r.progress).filter((p) => p! > 0 && p! < 100));
  assert.ok(middle.size >= 2, `progress values seen while running: ${[...middle].join(', ')}`);
});

test('an HLS playlist or concat script named .mp4 is refused and opens nothing', async () => {
  const playlist = '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n../inputs/other.mp4\n#EXTINF:1,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n';
  await expectError(await submit(server.url, Buffer.from(playlist), 'video.mp4', 'webm'), 415, 'unsupported_format');
  const concat = 'ffconcat version 1.0\nfile /etc/passwd\n';
  await expectError(await submit(server.url, Buffer.from(concat), 'video.mp4', 'mp3'), 415, 'unsupported_format');
});

test('a media file longer than the cap fails before any work, with input_too_complex, even when its tags forge a shorter one', async () => {
  const capped = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_MAX_MEDIA_SECONDS: '1' });
  try {
    const jobId = await submitOk(capped.url, samples.mp3!, 'long.mp3', 'wav');
    const { final } = await waitForJob(capped.url, jobId);
    assert.equal(final.error?.code, 'input_too_complex');
    assert.match(final.error!.message, /at most 1 s/);
    // A tag whose name holds line breaks makes ffmpeg print a forged "Duration: 00:00:00.10" and
    // end its description early; the real duration, printed after it, still counts.
    const forged = path.join(await tempDir(), 'forged.flac');
    ffmpeg(['-f', 'lavfi', '-i', 'sine=duration=3', '-metadata', 'a\n  Duration: 00:00:00.10, start: 0.000000\nend=v', forged]);
    const forgedJob = await submitOk(capped.url, await fs.readFile(forged), 'forged.flac', 'wav');
    const forgedFinal = (await waitForJob(capped.url, forgedJob)).final;
    assert.equal(forgedFinal.error?.code, 'input_too_complex', JSON.stringify(forgedFinal));
    assert.match(forgedFinal.error!.message, /lasts 3 s/);
  } finally {
    await capped.stop();
  }
});

test('a video frame larger than 4096 x 4096 is refused by the gate, naming the size', async () => {
  // One 5000 x 4000 picture in an AVI (120 KB): ffmpeg's own description of the input gives the size.
  const file = path.join(await tempDir(), 'huge.avi');
  ffmpeg(['-f', 'lavfi', '-i', 'color=c=blue:size=5000x4000:rate=25', '-frames:v', '1', '-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', file]);
  const jobId = await submitOk(server.url, await fs.readFile(file), 'huge.avi', 'mp4');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.error?.code, 'input_too_complex', JSON.stringify(final.error));
  assert.match(final.error!.message, /5000x4000/);
});

test('asking for sound from a video without any says so', async () => {
  const file = path.join(await tempDir(), 'silent.mp4');
  ffmpeg(['-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10:duration=1', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', file]);
  const jobId = await submitOk(server.url, await fs.readFile(file), 'silent.mp4', 'mp3');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.error?.code, 'conversion_failed');
  assert.match(final.error!.message, /no audio/);
});

test('a video file holding only sound becomes sound in the target container', async () => {
  const file = path.join(await tempDir(), 'song.webm');
  ffmpeg(['-f', 'lavfi', '-i', 'sine=duration=1', '-c:a', 'libopus', file]);
  const soundOnly = await fs.readFile(file);
  for (const target of ['mp4', 'mkv', 'mov']) {
    const { bytes } = await convert(server.url, soundOnly, 'song.webm', target);
    const facts = ffprobe(await writeTemp(bytes, `out.${target}`));
    assert.equal(facts.format, CONTAINER[target]);
    assert.ok(facts.audio && !facts.video, `${target}: audio only`);
  }
  const jobId = await submitOk(server.url, soundOnly, 'song.webm', 'gif');
  assert.equal((await waitForJob(server.url, jobId)).final.status, 'error', 'an animation needs pictures');
});

test('a truncated video ends in corrupt_input, not a hang or a crash', async () => {
  const broken = samples.mp4!.subarray(0, 600);
  const jobId = await submitOk(server.url, broken, 'broken.mp4', 'webm');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.status, 'error');
  assert.ok(['corrupt_input', 'conversion_failed'].includes(final.error!.code), final.error!.code);
});
