// Every audio and video pair the catalogue advertises, from samples the test makes with ffmpeg
// (an AMR file is written by hand: Debian's ffmpeg has no AMR encoder), checked independently of
// the engine (test/helpers/media.ts: ffprobe, and ffmpeg decoding the sound to PCM measured here):
// the container, the duration, the frame size and frame count, the sample rate and channels, and
// that the sound is still there (loud enough, and still the source's 440 Hz tone). Plus 32-bit FLAC
// (through Debian's flac), a file ffmpeg decodes nothing from, and the hostile and oversized
// inputs ffmpeg must refuse.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { convert, expectError, fetchCatalogue, submit, submitOk, waitForJob, type CatalogueEntry } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { decodeSound, probeMedia, type MediaFacts } from './helpers/media.ts';
import { writeTemp } from './helpers/tools.ts';

const SECONDS = 1.5;
/** The samples' tone: lavfi's sine at its default amplitude of 1/8 (about -21 dBFS RMS). */
const TONE_HZ = 440;
/** Sound counts as present above this RMS level: the tone is near -21 dB, silence or hiss far below. */
const SOUND_DB = -40;
/**
 * Share of the decoded sound's power that must still be the 440 Hz tone: about 1 for the source;
 * lossy encoders at the service's bitrates keep well above this, and a wrong rate or garbage
 * falls far below.
 */
const TONE_SHARE = 0.8;
/** Frames counted in an output may differ from the source's by one (a frame at the cut). */
const FRAME_COUNT_TOLERANCE = 1;
/**
 * The sound's duration is the length of its decoded PCM (what a player plays), against the
 * source's decoded the same way; the duration a container declares is an estimate (an MP3's counts
 * LAME's padding, an Ogg file made from ASF starts at the ASF preroll). Allowed difference: at
 * least AUDIO_DURATION_TOLERANCE, or the codec's slack below when longer at the sound's rate.
 */
const AUDIO_DURATION_TOLERANCE = 0.05;
/** Samples of a frame: AAC's, and MP3's (MPEG-1 from 32 kHz up, MPEG-2/2.5 below). */
const AAC_FRAME = 1024;
const mp3Frame = (rate: number) => (rate >= 32_000 ? 1152 : 576);
/** LAME's encoder delay in samples (576 + 529 of decoder delay), which AVI keeps. */
const LAME_DELAY = 1105;
/**
 * Samples a target's sound may gain on its source: the last frame's padding in AAC (MP4, MOV, M4A
 * trim the priming by an edit list) and MP3 (the LAME tag trims the rest); Matroska does not trim
 * AAC's priming (one more frame), AVI not LAME's delay. Opus (20 ms frames, pre-skip trimmed),
 * Vorbis, FLAC, WAV, AIFF fit in AUDIO_DURATION_TOLERANCE.
 */
function soundSlackSeconds(target: string, rate: number): number {
  const samples: Record<string, number> = {
    m4a: AAC_FRAME, mp4: AAC_FRAME, mov: AAC_FRAME, mkv: 2 * AAC_FRAME, mp3: mp3Frame(rate), avi: LAME_DELAY + mp3Frame(rate),
  };
  return Math.max(AUDIO_DURATION_TOLERANCE, (samples[target] ?? 0) / rate);
}
const AUDIO_TARGETS = ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff'];
const VIDEO_TARGETS = ['mp4', 'webm', 'mkv', 'mov', 'avi', 'gif'];
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
const execFileAsync = promisify(execFile);
/** ffmpeg without blocking: the samples are made side by side, while the service starts. */
async function ffmpegAsync(args: string[]): Promise<void> {
  await execFileAsync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args], { env: toolEnv });
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
  await Promise.all(Object.entries(recipes).map(async ([format, args]) => {
    const file = path.join(dir, `sample.${format}`);
    await ffmpegAsync([...args, file]);
    samples[format] = await fs.readFile(file);
  }));
  // 32-bit FLAC (FLAC 1.4's widest), which ffmpeg 5.1 opens but decodes nothing from: Debian's
  // flac encodes it from a 32-bit WAV, as a plain .flac and inside Ogg.
  const wideWav = path.join(dir, 'wide.wav');
  await ffmpegAsync([...audioIn, '-c:a', 'pcm_s32le', wideWav]);
  await Promise.all(([['wide.flac', []], ['wide.oga', ['--ogg']]] as const).map(async ([name, extra]) => {
    await execFileAsync('flac', ['--silent', '--force', ...extra, '-o', path.join(dir, name), wideWav], { env: toolEnv });
    samples[name] = await fs.readFile(path.join(dir, name));
  }));
  return samples;
}

/** The sample rate the engine's encoder for `target` writes from a source at `rate`. */
function expectedRate(target: string, rate: number): number {
  // Opus always decodes at 48 kHz, whatever it was encoded from (RFC 7845 5.1: the input rate in
  // its header is a note for players); WebM's sound is Opus too. Every other target keeps the rate.
  return target === 'opus' || target === 'webm' ? 48_000 : rate;
}

/**
 * What a user relies on in a converted file, against the source's own facts: the duration (one
 * video frame, or AUDIO_DURATION_TOLERANCE), the picture's size and frame count, the sound's rate
 * and channels, and the sound itself (loud enough, still the tone; `tone` false for a source whose
 * sound is silence).
 */
async function assertKeeps(file: string, target: string, source: Source, tone = true): Promise<void> {
  const isVideo = VIDEO_TARGETS.includes(target);
  const [facts, sound] = await Promise.all([
    probeMedia(file, { countFrames: isVideo }),
    source.audio && target !== 'gif' ? decodeSound(file) : undefined,
  ]);
  assert.equal(facts.format, CONTAINER[target]);
  if (isVideo) {
    assert.ok(facts.video, 'a video stream');
    assert.deepEqual([facts.video.width, facts.video.height], [source.video!.width, source.video!.height], 'frame size kept');
  } else {
    assert.ok(!facts.video, 'audio only');
  }
  if (isVideo && target !== 'gif') {
    // The picture's duration is its frames over its rate: both kept (the GIF target has its own
    // rate, README: only its size is kept).
    assert.ok(Math.abs(facts.video!.frames! - source.video!.frames!) <= FRAME_COUNT_TOLERANCE,
      `frames ${facts.video!.frames} (source ${source.video!.frames})`);
    assert.equal(facts.video!.fps, source.video!.fps, 'frame rate kept');
  }
  if (target === 'gif') {
    assert.ok(!facts.audio, 'an animation has no sound');
    return;
  }
  if (!source.audio) {
    assert.ok(!facts.audio, 'no sound made up');
    return;
  }
  assert.ok(facts.audio, 'the sound came along');
  assert.equal(facts.audio.channels, source.audio.channels, 'channels kept');
  assert.equal(facts.audio.sampleRate, expectedRate(target, source.audio.sampleRate), 'sample rate');
  assert.ok(sound);
  const slack = soundSlackSeconds(target, source.audio.sampleRate);
  assert.ok(Math.abs(sound.seconds - source.soundSeconds!) <= slack + 1e-4,
    `the sound lasts ${sound.seconds.toFixed(4)} s, the source's ${source.soundSeconds!.toFixed(4)} s (allowed: ${slack.toFixed(3)} s)`);
  if (!tone) return;
  assert.ok(sound.rmsDb > SOUND_DB, `sound at ${sound.rmsDb.toFixed(1)} dBFS: silent`);
  const share = sound.toneShare(TONE_HZ);
  assert.ok(share >= TONE_SHARE, `${(share * 100).toFixed(1)}% of the sound is the ${TONE_HZ} Hz tone`);
}

let server: RunningServer;
let samples: Record<string, Buffer>;
/** A sample's facts (ffprobe, frames counted) and its decoded sound's length. */
type Source = MediaFacts & { soundSeconds?: number };
const sourceFacts: Record<string, Source> = {};
let catalogue: readonly CatalogueEntry[];

before(async () => {
  const dir = await tempDir('convertd-media-');
  [server, samples] = await Promise.all([startServer({ CONVERTD_RATE_LIMITS: 'off' }), makeSamples(dir)]);
  await Promise.all(Object.keys(samples).map(async (name) => {
    const file = path.join(dir, name.includes('.') ? name : `sample.${name}`);
    if (name === 'amr') await fs.writeFile(file, samples.amr!);
    const facts = await probeMedia(file, { countFrames: true });
    // ffmpeg 5.1 decodes nothing of 32-bit FLAC: its sound is measured on the WAV it was made from.
    const soundFile = name.startsWith('wide.') ? path.join(dir, 'wide.wav') : file;
    sourceFacts[name] = { ...facts, soundSeconds: facts.audio ? (await decodeSound(soundFile)).seconds : undefined };
  }));
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

describe('every advertised audio and video pair converts', { concurrency: 4 }, () => {
  const sources = [...AUDIO, ...VIDEO, 'gif'];
  for (const source of sources) {
    // Only the pairs ffmpeg provides (gif's image targets belong to sharp and are tested there).
    const targets = source === 'gif' ? ['mp4', 'webm']
      : AUDIO.includes(source) ? ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff']
        : ['mp4', 'webm', 'mkv', 'mov', 'avi', 'gif', 'mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff'];
    // A format to itself too: a route of its own (re-encoded, the options applied), listed in the catalogue.
    for (const target of targets) {
      test(`${source} → ${target}`, async () => {
        const { bytes } = await convert(server.url, samples[source]!, `sample.${source}`, target);
        // The AMR sample's frames hold silence (no AMR encoder here to make a tone with).
        await assertKeeps(await writeTemp(bytes, `out.${target}`), target, sourceFacts[source]!, source !== 'amr');
      });
    }
  }
});

describe('32-bit FLAC converts to every audio target, through Debian\'s flac', { concurrency: 3 }, () => {
  test('the sample really is 32-bit FLAC', async () => {
    const out = await writeTemp(samples['wide.flac']!, 'wide.flac');
    const stream = JSON.parse(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'stream=codec_name,bits_per_raw_sample', '-of', 'json', out],
      { encoding: 'utf8', env: toolEnv })) as { streams: Array<{ codec_name: string; bits_per_raw_sample: string }> };
    assert.deepEqual(stream.streams, [{ codec_name: 'flac', bits_per_raw_sample: '32' }]);
  });
  for (const target of AUDIO_TARGETS.filter((t) => t !== 'flac')) {
    test(`32-bit flac → ${target}`, async () => {
      const { bytes } = await convert(server.url, samples['wide.flac']!, 'wide.flac', target);
      await assertKeeps(await writeTemp(bytes, `out.${target}`), target, sourceFacts['wide.flac']!);
    });
  }
});

test('a file ffmpeg opens but decodes nothing from fails with a clear error, never an empty "done"', async () => {
  // 32-bit FLAC inside Ogg: ffmpeg 5.1 describes it, encodes nothing, and says "Output file is
  // empty"; the engine's detour through flac is for plain .flac files only (README).
  for (const target of ['mp3', 'wav']) {
    const jobId = await submitOk(server.url, samples['wide.oga']!, 'wide.oga', target);
    const { final } = await waitForJob(server.url, jobId);
    assert.equal(final.status, 'error', JSON.stringify(final));
    assert.equal(final.error?.code, 'conversion_failed');
    assert.match(final.error!.message, /decoded no audio or video/);
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
  // The output cap (64 KB) is far above what the refused jobs below would write: it is there for the
  // 32-bit FLAC whose decoded samples exceed it.
  const capped = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_MAX_MEDIA_SECONDS: '1', CONVERTD_MAX_OUTPUT_BYTES: String(64 * 1024) });
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
    // A 32-bit FLAC is held to the cap by its STREAMINFO, before flac decodes anything.
    const wideJob = await submitOk(capped.url, samples['wide.flac']!, 'wide.flac', 'mp3');
    const wideFinal = (await waitForJob(capped.url, wideJob)).final;
    assert.equal(wideFinal.error?.code, 'input_too_complex', JSON.stringify(wideFinal));
    assert.match(wideFinal.error!.message, /lasts 2 s/);
    // Half a second of it (88 KB of 32-bit samples) is within the duration cap, not the output cap.
    const dir = await tempDir();
    await ffmpegAsync(['-f', 'lavfi', '-i', 'sine=duration=0.5:sample_rate=44100', '-c:a', 'pcm_s32le', path.join(dir, 'short.wav')]);
    await execFileAsync('flac', ['--silent', '--force', '-o', path.join(dir, 'short.flac'), path.join(dir, 'short.wav')], { env: toolEnv });
    const shortJob = await submitOk(capped.url, await fs.readFile(path.join(dir, 'short.flac')), 'short.flac', 'mp3');
    const shortFinal = (await waitForJob(capped.url, shortJob)).final;
    assert.equal(shortFinal.error?.code, 'input_too_complex', JSON.stringify(shortFinal));
    assert.match(shortFinal.error!.message, /32-bit FLAC file decodes to more than 64 KB/);
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
    const out = await writeTemp(bytes, `out.${target}`);
    const [facts, sound] = await Promise.all([probeMedia(out), decodeSound(out)]);
    assert.equal(facts.format, CONTAINER[target]);
    assert.ok(facts.audio && !facts.video, `${target}: audio only`);
    assert.ok(sound.rmsDb > SOUND_DB, `${target}: sound at ${sound.rmsDb.toFixed(1)} dBFS`);
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
