// Audio and video options (issue #29; api-contract.md, "Conversion options"), through HTTP with the
// real ffmpeg engine, each checked independently of it: ffprobe reads the codec, bit rate, sample
// rate, channels, duration, frame size and rate of every result (test/helpers/media.ts), ffmpeg
// decodes the sound to check it is still the source's tone. Short clips made here with ffmpeg's
// lavfi sources; the jobs run side by side. Plus the hostile values the submission refuses (422
// invalid_option), the ones only the running job can judge (a trim past the end), and the caps
// holding the trimmed span.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { download, expectError, fetchCatalogue, waitForJob, type ProgressRecord, type SubmitAnswer } from './helpers/client.ts';
import { decodeSound, probeMedia } from './helpers/media.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const execFileAsync = promisify(execFile);
const { VIPSHOME: _ignored, ...toolEnv } = process.env;

/** The clips: CLIP_SECONDS of a 320x240 test picture at 25 fps with a 440 Hz stereo tone at 44.1 kHz. */
const CLIP_SECONDS = 4;
const TONE_HZ = 440;
/** A trimmed result's duration may differ from the span asked for by this much (the brief's ±0.15 s: a frame, an audio frame's padding). */
const TRIM_TOLERANCE = 0.15;
/** A constant bit rate read back by ffprobe may differ from the one asked for by this share (container overhead, the last frame). */
const CBR_TOLERANCE = 0.1;
/** Opus is variable even when given a rate: the file's mean rate stays within this share of it. */
const VBR_TOLERANCE = 0.3;
/** Share of the sound's power that must still be the source's tone (about 1 for the source; garbage or a wrong rate far below). */
const TONE_SHARE = 0.8;

let server: RunningServer;
/** A service that converts at most CAPPED_SECONDS of media. */
let capped: RunningServer;
const CAPPED_SECONDS = 2;
let dir: string;
const samples: Record<string, Buffer> = {};

async function ffmpeg(args: string[]): Promise<void> {
  await execFileAsync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args], { env: toolEnv });
}

async function makeSamples(): Promise<void> {
  const picture = ['-f', 'lavfi', '-i', `testsrc2=size=320x240:rate=25:duration=${CLIP_SECONDS}`];
  const tone = ['-f', 'lavfi', '-i', `sine=frequency=${TONE_HZ}:sample_rate=44100:duration=${CLIP_SECONDS}`];
  const stereo = ['-ac', '2'];
  await Promise.all([
    ffmpeg([...picture, ...tone, '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', ...stereo, '-shortest', path.join(dir, 'clip.mp4')]),
    ffmpeg([...tone, ...stereo, '-c:a', 'pcm_s16le', path.join(dir, 'tone.wav')]),
    ffmpeg([...tone, ...stereo, '-c:a', 'libmp3lame', '-b:a', '128k', path.join(dir, 'tone.mp3')]),
    // An MPEG-4 file holding only sound: a video format without a picture.
    ffmpeg([...tone, ...stereo, '-c:a', 'aac', '-f', 'mp4', path.join(dir, 'sound.mp4')]),
  ]);
  for (const name of ['clip.mp4', 'tone.wav', 'tone.mp3', 'sound.mp4']) samples[name] = await fs.readFile(path.join(dir, name));
}

before(async () => {
  dir = await tempDir('convertd-options-media-');
  [server, capped] = await Promise.all([
    startServer({ CONVERTD_RATE_LIMITS: 'off' }),
    startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_MAX_MEDIA_SECONDS: String(CAPPED_SECONDS) }),
    makeSamples(),
  ]);
});
after(async () => {
  await Promise.all([server?.stop(), capped?.stop()]);
});

/** POST /api/convert with option parts. */
async function submitWith(base: string, sample: string, target: string, options: Record<string, string>): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([samples[sample]!]), sample);
  form.append('target', target);
  for (const [name, value] of Object.entries(options)) form.append(name, value);
  return fetch(`${base}/api/convert`, { method: 'POST', body: form });
}

/** Submits, waits; returns the final record (done or error). */
async function run(sample: string, target: string, options: Record<string, string>, base = server.url): Promise<{ final: ProgressRecord; seen: ProgressRecord[] }> {
  const response = await submitWith(base, sample, target, options);
  const body = await response.json() as SubmitAnswer;
  assert.equal(response.status, 200, `submission refused: ${JSON.stringify(body)}`);
  return waitForJob(base, body.job_id, { timeoutMs: 120_000 });
}

/** Converts and writes the result to a file; checks the record echoes the options. */
async function convertWith(sample: string, target: string, options: Record<string, string>): Promise<{ file: string; record: ProgressRecord }> {
  const { final } = await run(sample, target, options);
  assert.equal(final.status, 'done', `job failed: ${JSON.stringify(final.error)}`);
  assert.deepEqual(final.options, options, 'the record echoes the options in force');
  const { response, bytes } = await download(server.url, final.download_url!);
  assert.equal(response.status, 200);
  return { file: await writeTemp(bytes, `out.${target}`), record: final };
}

interface StreamFacts { codec_name: string; bit_rate?: string; sample_rate?: string; channels?: number; width?: number; height?: number; r_frame_rate?: string }

/** ffprobe's streams and format of a file (codec names and rates, which helpers/media.ts does not read). */
async function streams(file: string): Promise<{ audio?: StreamFacts; video?: StreamFacts; bitRate: number; duration: number }> {
  const { stdout } = await execFileAsync('ffprobe', ['-v', 'error', '-show_entries',
    'format=bit_rate,duration:stream=codec_type,codec_name,bit_rate,sample_rate,channels,width,height,r_frame_rate', '-of', 'json', file], { env: toolEnv });
  const parsed = JSON.parse(stdout) as { format: { bit_rate?: string; duration?: string }; streams: Array<StreamFacts & { codec_type: string }> };
  return {
    audio: parsed.streams.find((s) => s.codec_type === 'audio'),
    video: parsed.streams.find((s) => s.codec_type === 'video'),
    bitRate: Number(parsed.format.bit_rate ?? 0),
    duration: Number(parsed.format.duration ?? 0),
  };
}

function near(actual: number, expected: number, tolerance: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual}, expected ${expected} ± ${tolerance}`);
}

async function assertTone(file: string): Promise<void> {
  const sound = await decodeSound(file);
  assert.ok(sound.toneShare(TONE_HZ) > TONE_SHARE, `the sound is still the ${TONE_HZ} Hz tone (share ${sound.toneShare(TONE_HZ).toFixed(3)})`);
}

describe('discovery', () => {
  test('same-format targets are listed, and a pair lists its audio and video options', async () => {
    const catalogue = await fetchCatalogue(server.url);
    const targets = (id: string) => catalogue.find((f) => f.id === id)?.targets ?? [];
    for (const id of ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff', 'mp4', 'webm', 'mkv', 'mov', 'avi']) assert.ok(targets(id).includes(id), `${id} → ${id}`);

    const response = await fetch(`${server.url}/api/formats/mp4/mp4`);
    assert.equal(response.status, 200);
    const body = await response.json() as { steps: string[]; options: Array<{ name: string; values?: string[]; minimum?: number; maximum?: number }> };
    assert.deepEqual(body.steps, ['ffmpeg']);
    const byName = new Map(body.options.map((o) => [o.name, o]));
    for (const name of ['video_codec', 'crf', 'width', 'height', 'fit', 'fps', 'trim_start', 'trim_end', 'audio_codec', 'audio_bitrate', 'audio_frequency', 'audio_channels', 'remove_audio']) {
      assert.ok(byName.has(name), `mp4 → mp4 offers ${name}`);
    }
    assert.deepEqual(byName.get('video_codec')!.values, ['h264', 'h265', 'av1']);
    assert.equal(byName.get('width')!.maximum, 4096);

    const sound = await (await fetch(`${server.url}/api/formats/wav/mp3`)).json() as { options: Array<{ name: string }> };
    assert.deepEqual(sound.options.map((o) => o.name), ['audio_bitrate', 'audio_channels', 'audio_frequency', 'trim_end', 'trim_start']);
  });
});

describe('audio targets', { concurrency: 6 }, () => {
  test('wav → mp3 at 96 kbit/s, 22.05 kHz, mono', async () => {
    const { file } = await convertWith('tone.wav', 'mp3', { audio_bitrate: '96', audio_frequency: '22050', audio_channels: '1' });
    const { audio } = await streams(file);
    assert.equal(audio?.codec_name, 'mp3');
    near(Number(audio!.bit_rate), 96_000, 96_000 * CBR_TOLERANCE, 'bit rate');
    assert.equal(Number(audio!.sample_rate), 22_050);
    assert.equal(audio!.channels, 1);
    await assertTone(file);
  });

  test('wav → m4a with audio_codec alac, at 48 kHz', async () => {
    const { file } = await convertWith('tone.wav', 'm4a', { audio_codec: 'alac', audio_frequency: '48000' });
    const { audio } = await streams(file);
    assert.equal(audio?.codec_name, 'alac');
    assert.equal(Number(audio!.sample_rate), 48_000);
    assert.equal(audio!.channels, 2);
    await assertTone(file);
  });

  test('wav → ogg with audio_codec flac; vorbis at 96 kbit/s', async () => {
    const [flac, vorbis] = await Promise.all([
      convertWith('tone.wav', 'ogg', { audio_codec: 'flac' }),
      convertWith('tone.wav', 'ogg', { audio_bitrate: '96' }),
    ]);
    const [lossless, lossy] = await Promise.all([streams(flac.file), streams(vorbis.file)]);
    assert.equal(lossless.audio?.codec_name, 'flac');
    assert.equal(lossy.audio?.codec_name, 'vorbis');
    near(lossy.bitRate, 96_000, 96_000 * CBR_TOLERANCE, 'mean bit rate');
    await Promise.all([assertTone(flac.file), assertTone(vorbis.file)]);
  });

  test('wav → flac in six channels at 96 kHz', async () => {
    const { file } = await convertWith('tone.wav', 'flac', { audio_channels: '6', audio_frequency: '96000' });
    const { audio } = await streams(file);
    assert.equal(audio?.codec_name, 'flac');
    assert.equal(audio!.channels, 6);
    assert.equal(Number(audio!.sample_rate), 96_000);
  });

  test('wav → opus in mono', async () => {
    const { file } = await convertWith('tone.wav', 'opus', { audio_channels: '1', audio_bitrate: '32' });
    const facts = await streams(file);
    assert.equal(facts.audio?.codec_name, 'opus');
    assert.equal(facts.audio!.channels, 1);
    near(facts.bitRate, 32_000, 32_000 * VBR_TOLERANCE, 'mean bit rate');
  });

  test('mp3 → mp3 trimmed from 1 s to 2.5 s (a same-format target)', async () => {
    const { file } = await convertWith('tone.mp3', 'mp3', { trim_start: '1', trim_end: '00:00:02.5' });
    const sound = await decodeSound(file);
    near(sound.seconds, 1.5, TRIM_TOLERANCE, 'seconds of sound');
    assert.ok(sound.toneShare(TONE_HZ) > TONE_SHARE);
  });

  test('mp3 → wav: a lower bit rate gives a smaller mp3 (wav → mp3 at 32 against 192)', async () => {
    const [low, high] = await Promise.all([
      convertWith('tone.wav', 'mp3', { audio_bitrate: '32' }),
      convertWith('tone.wav', 'mp3', { audio_bitrate: '192' }),
    ]);
    const [lowSize, highSize] = await Promise.all([fs.stat(low.file), fs.stat(high.file)]).then((s) => s.map((x) => x.size));
    // 32/192 of the size, with the headers: well under half.
    assert.ok(lowSize! * 2 < highSize!, `${lowSize} bytes at 32 kbit/s against ${highSize} at 192`);
  });
});

describe('video targets', { concurrency: 6 }, () => {
  test('mp4 → mp4 trimmed to 1-3 s, 160 wide, 10 fps: the sound follows', async () => {
    const { file, record } = await convertWith('clip.mp4', 'mp4', { trim_start: '1', trim_end: '3', width: '160', fps: '10' });
    const facts = await probeMedia(file, { pictureSpan: true });
    assert.equal(facts.video!.width, 160);
    assert.equal(facts.video!.height, 120);
    near(facts.video!.fps, 10, 0.01, 'frames a second');
    near(facts.video!.seconds!, 2, TRIM_TOLERANCE, 'seconds of picture');
    near((await decodeSound(file)).seconds, 2, TRIM_TOLERANCE, 'seconds of sound');
    assert.equal(facts.audio?.codec, 'aac');
    assert.equal(record.progress, 100);
  });

  test('mp4 → webm with video_codec av1 and remove_audio: no sound at all', async () => {
    const { file } = await convertWith('clip.mp4', 'webm', { video_codec: 'av1', remove_audio: 'true', width: '128' });
    const facts = await streams(file);
    assert.equal(facts.video?.codec_name, 'av1');
    assert.equal(facts.audio, undefined, 'no audio stream');
    assert.equal(facts.video!.width, 128);
  });

  test('mp4 → mkv with h265, filled and cropped to 200x200', async () => {
    const { file } = await convertWith('clip.mp4', 'mkv', { video_codec: 'h265', width: '200', height: '200', fit: 'crop', trim_end: '1' });
    const facts = await streams(file);
    assert.equal(facts.video?.codec_name, 'hevc');
    assert.equal(facts.video!.width, 200);
    assert.equal(facts.video!.height, 200);
  });

  test('mp4 → mov fitted inside 200x200 keeps the aspect ratio; fit scale stretches, an odd size rounded to even', async () => {
    const [inside, stretched] = await Promise.all([
      convertWith('clip.mp4', 'mov', { width: '200', height: '200', trim_end: '1' }),
      convertWith('clip.mp4', 'mov', { width: '101', height: '50', fit: 'scale', trim_end: '1' }),
    ]);
    const [a, b] = await Promise.all([streams(inside.file), streams(stretched.file)]);
    assert.deepEqual([a.video!.width, a.video!.height], [200, 150]);
    assert.deepEqual([b.video!.width, b.video!.height], [100, 50]);
  });

  test('crf: 45 gives a far smaller h264 than 15', async () => {
    const [good, poor] = await Promise.all([
      convertWith('clip.mp4', 'mp4', { crf: '15', remove_audio: 'yes' }),
      convertWith('clip.mp4', 'mp4', { crf: '45', remove_audio: 'yes' }),
    ]);
    const [goodSize, poorSize] = (await Promise.all([fs.stat(good.file), fs.stat(poor.file)])).map((s) => s.size);
    // The test picture at crf 15 against 45: several times larger (measured about 10x).
    assert.ok(poorSize! * 3 < goodSize!, `${poorSize} bytes at crf 45 against ${goodSize} at 15`);
  });

  test('mp4 → mp4 with the sound as 96 kbit/s mp3 in mono', async () => {
    const { file } = await convertWith('clip.mp4', 'mp4', { audio_codec: 'mp3', audio_bitrate: '96', audio_channels: '1', trim_end: '2' });
    const { audio } = await streams(file);
    assert.equal(audio?.codec_name, 'mp3');
    assert.equal(audio!.channels, 1);
    near(Number(audio!.bit_rate), 96_000, 96_000 * CBR_TOLERANCE, 'bit rate');
    await assertTone(file);
  });

  test('mp4 → gif 100 wide at 5 fps, the first 2 seconds', async () => {
    const { file } = await convertWith('clip.mp4', 'gif', { width: '100', fps: '5', trim_end: '2' });
    const facts = await probeMedia(file, { countFrames: true });
    assert.equal(facts.video!.width, 100);
    assert.equal(facts.video!.height, 75);
    // Two seconds at 5 frames a second.
    assert.ok(Math.abs(facts.video!.frames! - 10) <= 1, `${facts.video!.frames} frames`);
  });

  test('mp4 → mp3: the sound of 0.5-2 s, in mono at 32 kHz', async () => {
    const { file } = await convertWith('clip.mp4', 'mp3', { trim_start: '0.5', trim_end: '2', audio_channels: '1', audio_frequency: '32000' });
    const { audio } = await streams(file);
    assert.equal(audio!.channels, 1);
    assert.equal(Number(audio!.sample_rate), 32_000);
    near((await decodeSound(file)).seconds, 1.5, TRIM_TOLERANCE, 'seconds of sound');
  });

  test('options that do not apply are ignored and listed', async () => {
    const { final } = await run('tone.wav', 'mp3', { audio_bitrate: '128', crf: '20', video_codec: 'h264' });
    assert.equal(final.status, 'done');
    assert.deepEqual(final.options, { audio_bitrate: '128' });
    assert.deepEqual([...final.ignored_options ?? []].sort(), ['crf', 'video_codec']);
  });
});

describe('hostile and impossible values', { concurrency: 6 }, () => {
  const refused: Array<[string, string, Record<string, string>, string]> = [
    ['a negative crf', 'mp4', { crf: '-1' }, 'crf'],
    ['a crf of 99', 'mp4', { crf: '99' }, 'crf'],
    ['an encoder\'s name as the codec', 'mp4', { video_codec: 'libx264' }, 'video_codec'],
    ['an argument as the codec', 'mkv', { video_codec: '-vf' }, 'video_codec'],
    ['a bit rate of 10^9', 'mp4', { audio_bitrate: '1000000000' }, 'audio_bitrate'],
    ['a bit rate in exponent form', 'mp4', { audio_bitrate: '1e9' }, 'audio_bitrate'],
    ['a trim that is not a time', 'mp4', { trim_start: 'abc' }, 'trim_start'],
    ['a trim with a filter in it', 'mp4', { trim_end: '2,scale=9999:9999' }, 'trim_end'],
    ['a trim that ends before it starts', 'mp4', { trim_start: '3', trim_end: '1' }, 'trim_end'],
    ['fps 0', 'mp4', { fps: '0' }, 'fps'],
    ['fps 10^5', 'webm', { fps: '100000' }, 'fps'],
    ['a width of a million', 'mp4', { width: '1000000' }, 'width'],
    ['three channels of mp3', 'mp3', { audio_channels: '3' }, 'audio_channels'],
    ['a sample rate of 1 MHz', 'mp3', { audio_frequency: '1000000' }, 'audio_frequency'],
    ['an unknown audio codec', 'mkv', { audio_codec: 'pcm_s32le' }, 'audio_codec'],
    ['a gif at 120 fps', 'gif', { fps: '120' }, 'fps'],
  ];
  for (const [what, target, options, option] of refused) {
    test(`${what} → 422 invalid_option`, async () => {
      const body = await expectError(await submitWith(server.url, 'clip.mp4', target, options), 422, 'invalid_option');
      assert.equal(body.error.option, option);
    });
  }

  test('a trim that starts past the end ends the job with invalid_option', async () => {
    const { final } = await run('clip.mp4', 'mp4', { trim_start: '10' });
    assert.equal(final.status, 'error');
    assert.equal(final.error?.code, 'invalid_option');
    assert.match(final.error!.message, /trim_start/);
  });

  test('a trim that ends past the end converts to the end', async () => {
    const { file } = await convertWith('tone.wav', 'wav', { trim_start: '3', trim_end: '60' });
    near((await decodeSound(file)).seconds, CLIP_SECONDS - 3, TRIM_TOLERANCE, 'seconds of sound');
  });

  test('a crf past the chosen encoder\'s range is refused with 422, naming that range', async () => {
    // 0-63 is the pair's range (AV1's); h264, mp4's default, stops at 51: the edge's own check says so at once.
    const body = await expectError(await submitWith(server.url, 'clip.mp4', 'mp4', { crf: '60' }), 422, 'invalid_option');
    assert.equal(body.error.option, 'crf');
    assert.equal(body.error.maximum, 51);
    const vp9 = await expectError(await submitWith(server.url, 'clip.mp4', 'webm', { crf: '60', video_codec: 'av1' }), 422, 'invalid_option').catch(() => undefined);
    assert.equal(vp9, undefined, 'av1 takes 60');
  });

  test('remove_audio on a file of sound alone ends the job with invalid_option', async () => {
    const { final } = await run('sound.mp4', 'mkv', { remove_audio: 'true' });
    assert.equal(final.status, 'error');
    assert.equal(final.error?.code, 'invalid_option');
  });

  test('the duration cap holds the trimmed span: too long whole, converted when trimmed under it', async () => {
    const [whole, trimmed] = await Promise.all([
      run('clip.mp4', 'mp3', {}, capped.url),
      run('clip.mp4', 'mp3', { trim_start: '1', trim_end: '2.5' }, capped.url),
    ]);
    assert.equal(whole.final.status, 'error');
    assert.equal(whole.final.error?.code, 'input_too_complex');
    assert.equal(trimmed.final.status, 'done', JSON.stringify(trimmed.final.error));
  });
});
