// The audio and video containers of issue #30 (src/engines/ffmpeg/containers.ts): every pair the
// catalogue advertises with one of them as source or target, from samples ffmpeg makes here
// (an AMR file and a NIST SPHERE one are written by hand; Monkey's Audio, which nothing here
// writes, comes from the shared corpus), checked independently of the engine
// (test/helpers/media.ts: ffprobe, and ffmpeg decoding the sound to PCM measured here): the
// container and codecs written, the picture's size and frame count, the sample rate and channels,
// the sound's length, and that it is still the source's 440 Hz tone. Plus the corpus files of
// these families, and the hostile class of ffmpeg: demuxers steered to open other files.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { convert, download, expectError, fetchCatalogue, submit, submitOk, waitForJob, type CatalogueEntry } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { decodeSound, probeMedia, type MediaFacts } from './helpers/media.ts';
import { writeTemp } from './helpers/tools.ts';

const SECONDS = 1;
/** DV holds 720x576 pictures only: a shorter clip keeps its sample (and its conversions) small. */
const DV_SECONDS = 0.6;
const TONE_HZ = 440;
/** The animated GIF target's widest picture without options (README: 480 px). */
const GIF_WIDTH = 480;
/** Sound counts as present above this RMS level: lavfi's sine is near -21 dBFS, silence far below. */
const SOUND_DB = -40;
/**
 * Share of the decoded sound's power that must still be the 440 Hz tone: about 1 for the source,
 * above 0.95 for the new lossy encoders at the service's settings (measured on this 1 s tone at
 * 44.1 kHz: ADTS AAC 0.957, MP2 0.982, Speex 0.983, GSM 0.986, AC-3 0.990); a wrong rate, noise or
 * another file's sound falls far below.
 */
const TONE_SHARE = 0.8;
/** Frames counted in an output may differ from the source's by one (a frame at the cut). */
const FRAME_COUNT_TOLERANCE = 1;
/**
 * The sound's decoded length against the source's, decoded the same way: within
 * AUDIO_DURATION_TOLERANCE, or the codec's padding below when more. Samples of padding a target
 * may add at its end or start, from the codecs' frame sizes (every pair here is within them): AAC's priming and last frame where the
 * container keeps them (ADTS, TS, Matroska: two 1024-sample frames), MP2 and MP3 a frame of 1152
 * (and LAME's delay in AVI), AC-3 (VOB) a frame of 1536, Speex a 20 ms frame at its rate.
 */
const AUDIO_DURATION_TOLERANCE = 0.05;
const PADDING_SAMPLES: Record<string, number> = {
  aac: 2048, ts: 2048, mkv: 2048, m4a: 1024, mp4: 1024, mov: 1024, f4v: 1024, mp3: 1152, mp2: 1152, avi: 1105 + 1152, vob: 1536 * 2,
};

const AUDIO_TARGETS = ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff', 'aac', 'wv', 'tta', 'mka', 'caf', 'au', 'voc', 'mp2', 'spx', 'gsm', 'w64', 'weba'];
const VIDEO_TARGETS = ['mp4', 'webm', 'mkv', 'mov', 'avi', 'gif', 'ts', 'mxf', 'vob', 'nut', 'f4v', 'y4m'];
const OLD_AUDIO = ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff', 'wma', 'ac3', 'amr'];
const OLD_VIDEO = ['mp4', 'webm', 'mkv', 'mov', 'avi', 'mpeg', 'flv', '3gp', 'wmv', 'ogv', 'm4v'];
/** Wave 2's formats (read only, see engine.ts): sounds, then elementary video streams. */
const WAVE2_AUDIO = ['eac3', 'adx', 'sox', 'ircam', 'nist', 'mmf'];
const WAVE2_VIDEO = ['h264', 'hevc', 'ivf', 'm2v'];
/** Wave 3's, read only too: AST, RSO, Westwood AUD; GXF, WTV, SWF, raw Motion JPEG. */
const WAVE3_AUDIO = ['ast', 'rso', 'aud'];
const WAVE3_VIDEO = ['gxf', 'wtv', 'swf', 'mjpeg'];
const NEW_AUDIO = ['aac', 'wv', 'ape', 'tta', 'mka', 'caf', 'au', 'voc', 'mp2', 'dts', 'spx', 'gsm', 'w64', 'weba', ...WAVE2_AUDIO, ...WAVE3_AUDIO];
const NEW_VIDEO = ['ts', 'mxf', 'dv', 'vob', 'nut', 'f4v', 'rm', 'y4m', ...WAVE2_VIDEO, ...WAVE3_VIDEO];
/** Read only: no encoder (ape), an experimental one (dts), RealVideo 1/2 only (rm), PAL/NTSC sizes only (dv); waves 2 and 3. */
const READ_ONLY = ['ape', 'dts', 'rm', 'dv', ...WAVE2_AUDIO, ...WAVE2_VIDEO, ...WAVE3_AUDIO, ...WAVE3_VIDEO];
/** Video formats that hold no sound: no audio targets from them. */
const PICTURE_ONLY = new Set(['y4m', ...WAVE2_VIDEO, 'mjpeg']);
const NEW = new Set([...NEW_AUDIO, ...NEW_VIDEO]);

/** ffprobe's format_name for each target. */
const MP4 = 'mov,mp4,m4a,3gp,3g2,mj2';
const CONTAINER: Record<string, string> = {
  mp3: 'mp3', wav: 'wav', flac: 'flac', ogg: 'ogg', opus: 'ogg', m4a: MP4, aiff: 'aiff', aac: 'aac', wv: 'wv', tta: 'tta', mka: 'matroska,webm',
  caf: 'caf', au: 'au', voc: 'voc', mp2: 'mp3', spx: 'ogg', gsm: 'gsm', w64: 'w64', weba: 'matroska,webm',
  mp4: MP4, mov: MP4, webm: 'matroska,webm', mkv: 'matroska,webm', avi: 'avi', gif: 'gif', ts: 'mpegts', mxf: 'mxf', vob: 'mpeg', nut: 'nut', f4v: MP4,
  y4m: 'yuv4mpegpipe',
};
/** The audio codec each target writes by default (ffprobe's codec_name). */
const AUDIO_CODEC: Record<string, string> = {
  mp3: 'mp3', wav: 'pcm_s16le', flac: 'flac', ogg: 'vorbis', opus: 'opus', m4a: 'aac', aiff: 'pcm_s16be', aac: 'aac', wv: 'wavpack', tta: 'tta',
  mka: 'flac', caf: 'alac', au: 'pcm_s16be', voc: 'pcm_s16le', mp2: 'mp2', spx: 'speex', gsm: 'gsm', w64: 'pcm_s16le', weba: 'opus',
  mp4: 'aac', mov: 'aac', webm: 'opus', mkv: 'aac', avi: 'mp3', ts: 'aac', mxf: 'pcm_s16le', vob: 'ac3', nut: 'flac', f4v: 'aac',
};
/** The video codec each new video target writes by default. */
const VIDEO_CODEC: Record<string, string> = { ts: 'h264', f4v: 'h264', mxf: 'mpeg2video', vob: 'mpeg2video', nut: 'ffv1', y4m: 'rawvideo' };

/** The rates an encoder with fixed ones writes (ffmpeg picks the nearest to the source's). */
const FIXED_RATES: Record<string, readonly number[]> = {
  opus: [48_000], weba: [48_000], webm: [48_000], mxf: [48_000], gsm: [8000], spx: [8000, 16_000, 32_000],
  mp2: [16_000, 22_050, 24_000, 32_000, 44_100, 48_000], vob: [32_000, 44_100, 48_000],
};
function expectedRate(target: string, rate: number): number {
  const rates = FIXED_RATES[target];
  return rates ? rates.reduce((best, r) => (Math.abs(r - rate) < Math.abs(best - rate) ? r : best)) : rate;
}

const { VIPSHOME: _ignored, ...toolEnv } = process.env;
const execFileAsync = promisify(execFile);
async function ffmpeg(args: string[]): Promise<void> {
  await execFileAsync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args], { env: toolEnv });
}

/** An AMR-NB file: the magic line, then 20 ms frames of mode 7 (12.2 kbit/s) holding silence. */
function amrFile(seconds: number): Buffer {
  const frame = Buffer.alloc(32);
  frame[0] = 0x3c;
  return Buffer.concat([Buffer.from('#!AMR\n'), ...Array.from({ length: Math.round(seconds * 50) }, () => frame)]);
}

/** NIST SPHERE: its 1024-byte text header (fields as NIST's sph_convert writes them), then 16-bit little-endian PCM. */
function nistFile(pcm: Buffer, rate: number): Buffer {
  const header = ['NIST_1A', '   1024', `sample_count -i ${pcm.length / 2}`, `sample_rate -i ${rate}`, 'channel_count -i 1',
    'sample_n_bytes -i 2', 'sample_byte_format -s2 01', 'sample_coding -s3 pcm', 'end_head', ''].join('\n');
  return Buffer.concat([Buffer.from(header.padEnd(1024, ' '), 'latin1'), pcm]);
}

/** A 16-bit number's bytes, big-endian. */
const u16 = (value: number) => [value >> 8, value & 0xff];

/** The shared corpus (absent outside this machine: its tests are skipped). */
const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
const APE_DIR = path.join(CORPUS, 'ape');
const APE_SAMPLE = existsSync(APE_DIR) ? readdirSync(APE_DIR).find((name) => name.endsWith('.ape')) : undefined;

/** Each sample's file name (its extension is the name the service sees) and how ffmpeg makes it. */
function recipes(): Record<string, { name: string; args: string[] }> {
  const tone = (rate = 44_100, seconds = SECONDS) => ['-f', 'lavfi', '-i', `sine=frequency=${TONE_HZ}:duration=${seconds}:sample_rate=${rate}`];
  const clip = (extra: string[] = []) => ['-f', 'lavfi', '-i', `testsrc=size=160x120:rate=15:duration=${SECONDS}`, ...tone(), '-shortest', ...extra];
  const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];
  const picture = ['-f', 'lavfi', '-i', `testsrc=size=160x120:rate=15:duration=${SECONDS}`];
  const list: Record<string, string[]> = {
    // The containers as the service had them.
    mp3: tone(), wav: tone(), flac: tone(), ogg: [...tone(), '-c:a', 'libvorbis'], opus: [...tone(), '-c:a', 'libopus'],
    m4a: [...tone(), '-c:a', 'aac'], aiff: tone(), wma: [...tone(), '-c:a', 'wmav2'], ac3: [...tone(), '-c:a', 'ac3'],
    mp4: clip([...x264, '-c:a', 'aac']), webm: clip(['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-c:a', 'libopus']),
    mkv: clip([...x264, '-c:a', 'aac']), mov: clip([...x264, '-c:a', 'aac']), avi: clip(['-c:v', 'mpeg4', '-c:a', 'libmp3lame']),
    mpeg: clip(['-c:v', 'mpeg2video', '-c:a', 'mp2', '-f', 'mpeg']), flv: clip(['-c:v', 'flv1', '-c:a', 'libmp3lame']),
    '3gp': ['-f', 'lavfi', '-i', `testsrc=size=176x144:rate=15:duration=${SECONDS}`, ...tone(8000), '-shortest', '-c:v', 'h263', '-c:a', 'aac', '-ac', '1'],
    wmv: clip(['-c:v', 'wmv2', '-c:a', 'wmav2']), ogv: clip(['-c:v', 'libtheora', '-c:a', 'libvorbis']), m4v: clip([...x264, '-c:a', 'aac', '-f', 'ipod']),
    // The new audio containers.
    aac: [...tone(), '-c:a', 'aac', '-f', 'adts'], wv: [...tone(), '-c:a', 'wavpack'], tta: [...tone(), '-c:a', 'tta'],
    mka: [...tone(), '-c:a', 'flac', '-f', 'matroska'], caf: [...tone(), '-c:a', 'alac'], au: [...tone(), '-c:a', 'pcm_s16be'],
    voc: [...tone(), '-c:a', 'pcm_s16le'], mp2: [...tone(), '-c:a', 'mp2', '-f', 'mp2'],
    // ffmpeg's DTS encoder is experimental: good enough to make a sample, not to offer as a target.
    dts: [...tone(48_000), '-c:a', 'dca', '-strict', '-2', '-f', 'dts'], spx: [...tone(16_000), '-c:a', 'libspeex'],
    gsm: [...tone(8000), '-c:a', 'libgsm', '-f', 'gsm'], w64: [...tone(), '-c:a', 'pcm_s16le', '-f', 'w64'], weba: [...tone(), '-c:a', 'libopus', '-f', 'webm'],
    // The new video containers.
    ts: clip([...x264, '-c:a', 'aac', '-f', 'mpegts']),
    mxf: clip(['-c:v', 'mpeg2video', '-c:a', 'pcm_s16le', '-ar', '48000', '-strict', 'unofficial']),
    dv: ['-f', 'lavfi', '-i', `testsrc=size=720x576:rate=25:duration=${DV_SECONDS}`, ...tone(48_000, DV_SECONDS), '-shortest',
      '-c:v', 'dvvideo', '-pix_fmt', 'yuv420p', '-c:a', 'pcm_s16le', '-ac', '2', '-f', 'dv'],
    vob: clip(['-c:v', 'mpeg2video', '-c:a', 'ac3', '-f', 'vob']),
    nut: clip(['-c:v', 'mpeg4', '-c:a', 'pcm_s16le', '-f', 'nut']),
    f4v: clip([...x264, '-c:a', 'aac', '-f', 'f4v']),
    rm: clip(['-c:v', 'rv20', '-c:a', 'ac3', '-f', 'rm']),
    y4m: [...picture, '-pix_fmt', 'yuv420p', '-f', 'yuv4mpegpipe'],
    // Wave 2: sounds ffmpeg writes (NIST SPHERE, which it does not, is made by hand: nistFile)...
    eac3: [...tone(), '-c:a', 'eac3', '-f', 'eac3'], adx: [...tone(), '-c:a', 'adpcm_adx', '-f', 'adx'], sox: [...tone(), '-f', 'sox'],
    ircam: [...tone(), '-c:a', 'pcm_s16le', '-f', 'ircam'],
    // SMAF's muxer takes its own few rates (8 kHz among them) and Yamaha's ADPCM.
    mmf: [...tone(8000), '-c:a', 'adpcm_yamaha', '-f', 'mmf'],
    // ...and elementary video streams, pictures alone.
    h264: [...picture, ...x264, '-f', 'h264'],
    hevc: [...picture, '-c:v', 'libx265', '-preset', 'ultrafast', '-x265-params', 'log-level=error', '-pix_fmt', 'yuv420p', '-f', 'hevc'],
    ivf: [...picture, '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-f', 'ivf'],
    m2v: [...picture, '-c:v', 'mpeg2video', '-f', 'mpeg2video'],
    // Wave 3: a GameCube stream (16-bit PCM), Lego's 8-bit sound at 8 kHz, Westwood's IMA ADPCM...
    ast: [...tone(), '-f', 'ast'], rso: [...tone(8000), '-f', 'rso'], aud: [...tone(), '-c:a', 'adpcm_ima_ws', '-f', 'wsaud'],
    // ...GXF (written by ffmpeg at PAL size only, as DV), WTV, SWF (Sorenson Spark and MP3), and JPEG pictures one after another.
    gxf: ['-f', 'lavfi', '-i', `testsrc=size=720x576:rate=25:duration=${DV_SECONDS}`, ...tone(48_000, DV_SECONDS), '-shortest',
      '-c:v', 'mpeg2video', '-pix_fmt', 'yuv420p', '-c:a', 'pcm_s16le', '-f', 'gxf'],
    wtv: clip(['-c:v', 'mpeg2video', '-c:a', 'mp2', '-f', 'wtv']),
    swf: clip(['-c:v', 'flv1', '-c:a', 'libmp3lame', '-f', 'swf']),
    mjpeg: [...picture, '-c:v', 'mjpeg', '-f', 'mjpeg'],
  };
  const all = Object.fromEntries(Object.entries(list).map(([id, args]) => [id, { name: `sample.${id}`, args }]));
  // A Blu-ray/AVCHD transport stream (192-byte packets), under its usual name: read as ts.
  all.m2ts = { name: 'sample.m2ts', args: clip([...x264, '-c:a', 'aac', '-f', 'mpegts', '-mpegts_m2ts_mode', '1']) };
  return all;
}

/** A sample: its bytes, the name it is uploaded under, the format the service must read it as, and its facts. */
interface Sample { bytes: Buffer; name: string; format: string; facts: MediaFacts; soundSeconds?: number }

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
const samples: Record<string, Sample> = {};
/** Samples made at once, while the server starts. */
const SAMPLES_AT_ONCE = 4;

async function describeSample(key: string, file: string, format: string): Promise<void> {
  const facts = await probeMedia(file, { countFrames: true });
  samples[key] = {
    bytes: await fs.readFile(file), name: path.basename(file), format, facts,
    soundSeconds: facts.audio ? (await decodeSound(file)).seconds : undefined,
  };
}

before(async () => {
  const dir = await tempDir('convertd-media-formats-');
  const make = async () => {
    // A few at a time: fifty ffmpeg runs at once on two cores are no faster, and starve the jobs of other tests.
    const queue = Object.entries(recipes());
    await Promise.all(Array.from({ length: SAMPLES_AT_ONCE }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const [key, { name, args }] = next;
        const file = path.join(dir, name);
        await ffmpeg([...args, file]);
        await describeSample(key, file, key === 'm2ts' ? 'ts' : key);
      }
    }));
    await fs.writeFile(path.join(dir, 'sample.amr'), amrFile(SECONDS));
    await describeSample('amr', path.join(dir, 'sample.amr'), 'amr');
    const pcm = path.join(dir, 'tone.raw');
    await ffmpeg(['-f', 'lavfi', '-i', `sine=frequency=${TONE_HZ}:duration=${SECONDS}:sample_rate=16000`, '-f', 's16le', pcm]);
    await fs.writeFile(path.join(dir, 'sample.sph'), nistFile(await fs.readFile(pcm), 16_000));
    await describeSample('nist', path.join(dir, 'sample.sph'), 'nist');
    if (APE_SAMPLE) await describeSample('ape', path.join(APE_DIR, APE_SAMPLE), 'ape');
  };
  // The server first, then the samples: made beside its start, they kept it from starting within its
  // minute on a busy machine. It is kept as soon as it runs, so that `after` stops it even if a sample failed.
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  await make();
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server?.stop();
});

const targetsOf = (id: string) => catalogue.find((f) => f.id === id)?.targets ?? [];

test('the catalogue lists the new containers with their category and the targets they reach', () => {
  for (const id of NEW) {
    const entry = catalogue.find((f) => f.id === id);
    assert.ok(entry, `${id} is listed`);
    assert.equal(entry.category, NEW_AUDIO.includes(id) ? 'audio' : 'video', id);
  }
  const expected = (id: string) => {
    const sound = PICTURE_ONLY.has(id) ? [] : AUDIO_TARGETS;
    const pictures = NEW_VIDEO.includes(id) || OLD_VIDEO.includes(id) ? VIDEO_TARGETS : [];
    return [...sound, ...pictures].filter((t) => t !== id || !READ_ONLY.includes(id)).sort();
  };
  for (const id of [...NEW, ...OLD_AUDIO, ...OLD_VIDEO]) {
    // The subtitle tracks a container may hold are subtitle-pairs.test.ts's.
    const mediaTargets = targetsOf(id).filter((t) => catalogue.find((f) => f.id === t)?.category !== 'subtitle');
    assert.deepEqual([...mediaTargets].sort(), expected(id), `${id}'s targets`);
  }
  // Read only: never a target.
  for (const id of READ_ONLY) assert.ok(!catalogue.some((f) => f.targets.includes(id)), `${id} is not a target`);
});

/** What a user relies on in a converted file, against the source's facts. */
async function assertKeeps(file: string, target: string, source: Sample, tone: boolean): Promise<void> {
  const isVideo = VIDEO_TARGETS.includes(target);
  const [facts, sound] = await Promise.all([
    probeMedia(file, { countFrames: isVideo }),
    source.facts.audio && target !== 'y4m' && target !== 'gif' ? decodeSound(file) : undefined,
  ]);
  assert.equal(facts.format, CONTAINER[target], 'container');
  if (isVideo) {
    assert.ok(facts.video, 'a video stream');
    if (VIDEO_CODEC[target]) assert.equal(facts.video.codec, VIDEO_CODEC[target], 'video codec');
    const { width, height } = source.facts.video!;
    // An animation is at most GIF_WIDTH wide (README), its height following, rounded to even.
    const size = target === 'gif' && width > GIF_WIDTH ? [GIF_WIDTH, 2 * Math.round(height * GIF_WIDTH / width / 2)] : [width, height];
    assert.deepEqual([facts.video.width, facts.video.height], size, 'frame size kept');
    if (target !== 'gif') {
      assert.ok(Math.abs(facts.video.frames! - source.facts.video!.frames!) <= FRAME_COUNT_TOLERANCE,
        `frames ${facts.video.frames} (source ${source.facts.video!.frames})`);
      assert.equal(facts.video.fps, source.facts.video!.fps, 'frame rate kept');
    }
  } else {
    assert.ok(!facts.video, 'audio only');
  }
  if (target === 'y4m' || target === 'gif' || !source.facts.audio) {
    assert.ok(!facts.audio, 'no sound');
    return;
  }
  assert.ok(facts.audio, 'the sound came along');
  assert.equal(facts.audio.codec, AUDIO_CODEC[target], 'audio codec');
  assert.equal(facts.audio.channels, target === 'gsm' ? 1 : source.facts.audio.channels, 'channels');
  assert.equal(facts.audio.sampleRate, expectedRate(target, source.facts.audio.sampleRate), 'sample rate');
  assert.ok(sound);
  const slack = Math.max(AUDIO_DURATION_TOLERANCE, (PADDING_SAMPLES[target] ?? 0) / facts.audio.sampleRate);
  assert.ok(Math.abs(sound.seconds - source.soundSeconds!) <= slack + 1e-4,
    `the sound lasts ${sound.seconds.toFixed(4)} s, the source's ${source.soundSeconds!.toFixed(4)} s (allowed: ${slack.toFixed(3)} s)`);
  if (!tone) return;
  assert.ok(sound.rmsDb > SOUND_DB, `sound at ${sound.rmsDb.toFixed(1)} dBFS: silent`);
  const share = sound.toneShare(TONE_HZ);
  assert.ok(share >= TONE_SHARE, `${(share * 100).toFixed(1)}% of the sound is the ${TONE_HZ} Hz tone`);
}

/** Every ffmpeg pair with a new container on either side: the old-to-old ones are media-pairs.test.ts's. */
function pairs(): Array<[string, string]> {
  const list: Array<[string, string]> = [];
  for (const source of [...OLD_AUDIO, ...NEW_AUDIO, ...OLD_VIDEO, ...NEW_VIDEO]) {
    const sound = PICTURE_ONLY.has(source) ? [] : AUDIO_TARGETS;
    const targets = [...sound, ...(OLD_AUDIO.includes(source) || NEW_AUDIO.includes(source) ? [] : VIDEO_TARGETS)];
    for (const target of targets) {
      if (source === target && READ_ONLY.includes(source)) continue;
      if (NEW.has(source) || NEW.has(target)) list.push([source, target]);
    }
  }
  return list;
}

describe('every advertised pair of the new containers converts and keeps the content', { concurrency: 4 }, () => {
  for (const [source, target] of pairs()) {
    const corpusOnly = source === 'ape';
    test(`${source} → ${target}`, { skip: corpusOnly && !APE_SAMPLE ? 'no corpus' : false }, async () => {
      const sample = samples[source]!;
      const { record, bytes } = await convert(server.url, sample.bytes, sample.name, target);
      assert.equal(record.source, sample.format, 'read as the format it is');
      // The AMR sample holds silence; the corpus's Monkey's Audio file is a second of silence too.
      await assertKeeps(await writeTemp(bytes, `out.${target}`), target, sample, source !== 'amr' && source !== 'ape');
    });
  }
  // A transport stream with Blu-ray's 192-byte packets, named .m2ts, is read as ts.
  for (const target of ['mp4', 'wav']) {
    test(`m2ts → ${target}`, async () => {
      const sample = samples.m2ts!;
      const { record, bytes } = await convert(server.url, sample.bytes, sample.name, target);
      assert.equal(record.source, 'ts');
      await assertKeeps(await writeTemp(bytes, `out.${target}`), target, sample, true);
    });
  }
});

/** The corpus's files of these families: each read as its format, and its picture and sound kept. */
const CORPUS_FAMILIES = ['aac', 'ape', 'mka', 'mxf', 'ts', 'wv'];
/** A corpus file's sound after conversion: as loud as the source's within this (lossless WAV: equal up to dither). */
const CORPUS_LEVEL_DB = 1;

describe('the shared corpus of the new containers converts', { concurrency: 2 }, () => {
  for (const family of CORPUS_FAMILIES) {
    const dir = path.join(CORPUS, family);
    const files = existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(`.${family}`)) : [];
    if (files.length === 0) test(`corpus ${family}`, { skip: 'no corpus' }, () => undefined);
    for (const name of files) {
      test(`corpus ${family}/${name}`, async () => {
        const file = path.join(dir, name);
        const bytes = await fs.readFile(file);
        const source = await probeMedia(file, { countFrames: true });
        // Pictures to MP4 (frames and size kept), sound to WAV (its length and level kept).
        if (source.video) {
          const { record, bytes: out } = await convert(server.url, bytes, name, 'mp4');
          assert.equal(record.source, family);
          const facts = await probeMedia(await writeTemp(out, 'out.mp4'), { countFrames: true });
          assert.deepEqual([facts.video?.width, facts.video?.height], [source.video.width, source.video.height]);
          assert.ok(Math.abs(facts.video!.frames! - source.video.frames!) <= FRAME_COUNT_TOLERANCE, `frames ${facts.video!.frames} of ${source.video.frames}`);
        }
        if (source.audio) {
          const { record, bytes: out } = await convert(server.url, bytes, name, 'wav');
          assert.equal(record.source, family);
          const [mine, theirs] = await Promise.all([decodeSound(await writeTemp(out, 'out.wav')), decodeSound(file)]);
          assert.ok(Math.abs(mine.seconds - theirs.seconds) <= AUDIO_DURATION_TOLERANCE, `${mine.seconds} s of ${theirs.seconds} s`);
          if (theirs.rmsDb > SOUND_DB) assert.ok(Math.abs(mine.rmsDb - theirs.rmsDb) <= CORPUS_LEVEL_DB, `${mine.rmsDb} dB, the source ${theirs.rmsDb} dB`);
          else assert.ok(mine.rmsDb <= SOUND_DB, 'a silent file stays silent');
        }
      });
    }
  }
});

describe('hostile: the new containers cannot steer ffmpeg into reading other files', { concurrency: 2 }, () => {
  const playlist = '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\ninput.mp4\n#EXTINF:1,\n../inputs/other.ts\n#EXTINF:1,\nfile:/etc/passwd\n#EXT-X-ENDLIST\n';
  const concat = 'ffconcat version 1.0\nfile /etc/passwd\nfile ../inputs/other.mxf\n';

  test('a playlist or concat script named as one of them is refused at submission', async () => {
    for (const ext of ['ts', 'm2ts', 'mts', 'mxf', 'vob', 'nut', 'f4v', 'dv', 'y4m', 'rm', 'wv', 'tta', 'mka', 'weba', 'caf', 'au', 'w64', 'gsm', 'dts', 'spx', 'aac',
      'eac3', 'ec3', 'adx', 'sox', 'sf', 'ircam', 'nist', 'sph', 'mmf', 'h264', '264', 'avc', 'hevc', 'h265', '265', 'ivf', 'm2v', 'm1v',
      'ast', 'rso', 'aud', 'gxf', 'wtv', 'swf', 'mjpeg', 'mjpg']) {
      for (const [label, text] of [['hls', playlist], ['concat', concat]] as const) {
        const body = await expectError(await submit(server.url, Buffer.from(text), `video.${ext}`, 'mp4'), 415, 'unsupported_format');
        assert.ok(body, `${label} as .${ext}`);
      }
    }
  });

  test('a playlist behind one of their signatures fails as a damaged file, never a result', async () => {
    // The sniffer takes these as the format their first bytes say; ffmpeg, held to its demuxer
    // allow-list, finds no media in them (hls and concat are not on it) and the job ends in a
    // documented error: nothing another file holds reaches an output.
    const heads: Record<string, Buffer> = {
      tta: Buffer.from('TTA1'), au: Buffer.from('.snd'), dts: Buffer.from([0x7f, 0xfe, 0x80, 0x01]),
      nut: Buffer.from('nut/multimedia container\0'), y4m: Buffer.from('YUV4MPEG2 '), dv: Buffer.from([0x1f, 0x07, 0x00, 0xbf]),
      adx: Buffer.concat([Buffer.from([0x80, 0x00, 0x00, 0x0a, 0, 0, 0, 0]), Buffer.from('(c)CRI')]), sox: Buffer.from('.SoX'),
      ircam: Buffer.from([0x64, 0xa3, 0x01, 0x00]), nist: Buffer.from('NIST_1A\n   1024\n'), mmf: Buffer.from('MMMD'),
      h264: Buffer.from([0, 0, 0, 1, 0x67, 0x42]), hevc: Buffer.from([0, 0, 0, 1, 0x40, 0x01]), ivf: Buffer.from('DKIF'),
      ast: Buffer.from('STRM'), gxf: Buffer.from([0, 0, 0, 0, 1, 0xbc, 0, 0, 1, 0x58, 0, 0, 0, 0, 0xe1, 0xe2]),
      wtv: Buffer.from([0xb7, 0xd8, 0x00, 0x20, 0x37, 0x49, 0xda, 0x11, 0xa6, 0x4e, 0x00, 0x07, 0xe9, 0x5e, 0xad, 0x8d]), swf: Buffer.from('FWS\x06'),
      // Westwood AUD's header (22.05 kHz, IMA ADPCM) and first chunk's marker.
      aud: Buffer.from([0x22, 0x56, 0x10, 0, 0, 0, 0x40, 0, 0, 0, 0, 99, 0x10, 0, 0x40, 0, 0xaf, 0xde, 0, 0]),
      // RSO's header: 8-bit PCM, the size of what follows, 8 kHz.
      rso: Buffer.from([0x01, 0x00, ...u16(Buffer.byteLength(`\n${playlist}${concat}`)), 0x1f, 0x40, 0, 0]),
      mjpeg: Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
    };
    /** The formats whose header is followed by bare samples: how many a byte makes, at the header's rate. */
    const SAMPLES_PER_BYTE: Record<string, { perByte: number; rate: number }> = { rso: { perByte: 1, rate: 8000 }, aud: { perByte: 2, rate: 22_050 } };
    await Promise.all(Object.entries(heads).map(async ([format, head]) => {
      const response = await submit(server.url, Buffer.concat([head, Buffer.from(`\n${playlist}${concat}`)]), `x.${format}`, PICTURE_ONLY.has(format) ? 'mkv' : 'wav');
      const answer = await response.json() as { ok: boolean; job_id?: string; error?: { code: string } };
      if (!answer.ok) {
        assert.equal(answer.error?.code, 'unsupported_format', format);
        return;
      }
      const { final } = await waitForJob(server.url, answer.job_id!);
      const samples = SAMPLES_PER_BYTE[format];
      if (samples) {
        // RSO's and AUD's headers are followed by bare samples (8-bit PCM; IMA ADPCM, two a byte):
        // whatever follows is sound. The result is at most the upload's own bytes as sound, and nothing else.
        assert.equal(final.status, 'done', JSON.stringify(final));
        const { bytes } = await download(server.url, final.download_url!);
        const sound = await decodeSound(await writeTemp(bytes, 'out.wav'));
        const most = Buffer.byteLength(`\n${playlist}${concat}`) * samples.perByte / samples.rate;
        assert.ok(sound.seconds > 0 && sound.seconds <= most + 0.002, `${format}: ${sound.seconds} s of at most ${most} s`);
        return;
      }
      assert.equal(final.status, 'error', `${format}: ${JSON.stringify(final)}`);
      assert.ok(['corrupt_input', 'unsupported_format', 'conversion_failed'].includes(final.error!.code), `${format}: ${final.error!.code}`);
    }));
    // A transport stream's sync bytes every 188 bytes with a playlist in the packets: still no media.
    const packets = Buffer.alloc(188 * 8, 0x20);
    for (let at = 0; at < packets.length; at += 188) {
      packets[at] = 0x47;
      packets.write(playlist.slice(0, 180), at + 4);
    }
    const jobId = await submitOk(server.url, packets, 'x.ts', 'wav');
    const { final } = await waitForJob(server.url, jobId);
    assert.equal(final.status, 'error', JSON.stringify(final));
  });

  test('raw GSM is not mistaken for text that happens to fit its frames', async () => {
    // 33-byte units of UTF-8 Cyrillic ("а" is D0 B0) and a space: every frame would start with 0xD0.
    const text = Buffer.from(`${'а'.repeat(16)} `.repeat(20));
    await expectError(await submit(server.url, text, 'note.gsm', 'wav'), 415, 'unsupported_format');
  });
});
