// Audio and video through Debian's ffmpeg. Safety first (docs/security.md#ffmpeg): ffmpeg
// probes by content, so an HLS playlist or a concat script uploaded as "video.mp4" would make it
// open other files. ffmpeg runs with `-protocol_whitelist file` and `-format_whitelist` (only
// demuxers that read nothing but the file itself), in the sandbox where only the job's own
// directory exists. Before it converts anything ffmpeg describes its input; the gate reads that
// description and stops ffmpeg unless the container is on the allow-list and the duration, frame
// size and frame count are within the caps (see convert). Progress is real: ffmpeg's `-progress`
// output against the input's duration. A FLAC file wider than ffmpeg 5.1 decodes (32-bit) goes
// through Debian's flac first (flac.ts), and a run that encoded nothing is a failure, never a result.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import { numberOption, type StepOptions } from '../options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { FFMPEG_FLAC_MAX_BITS, readStreamInfo, type FlacStreamInfo } from './flac.ts';
import { mediaStepSeconds } from '../support/media-step-limit.ts';
import { fragmentedMp4Seconds } from './fragments.ts';
import type { FfmpegSettings } from './settings.ts';
import { convertSubtitles, isSubtitleConversion, probeSubtitles, subtitleEdges } from './subtitles.ts';
import {
  audioArgs, checkTogether, convertedSeconds, crfFor, edgeOptions, ENCODER_OF, GIF_FPS, GIF_MAX_SECONDS, GIF_WIDTH, MAX_VIDEO_SIDE, pictureFilter,
  pictureSize, removeAudio, scaleFilter, trimOf, videoCodec, type VideoCodecId,
} from './options.ts';

// The containers of issue #30 (containers.ts) follow each list's first line. Read only: Monkey's
// Audio and DTS (ffmpeg has no encoder for the one, an experimental one for the other), RealMedia
// (its encoders are RealVideo 1/2 only), DV (ffmpeg writes it only at PAL or NTSC size and rate:
// every clip would be scaled and padded). The second lines (wave 2) are read only too: formats
// people receive and want out of (a camera's or an encoder's raw stream, a game's or a phone's
// sound, a speech corpus), not ones to make; as targets each would be one of every source's.
// The raw video streams hold no sound and declare no duration: no progress figure for them. The
// third lines (wave 3) are read only for the same reason: a console's or a toy's or an old game's
// sound, a broadcaster's (GXF) or a Windows Media Center recording (WTV), a Flash animation, a
// webcam's or an IP camera's Motion JPEG. GXF is also written by ffmpeg only at PAL or NTSC sizes.
// SWF and raw MJPEG declare no duration either.
const AUDIO_SOURCES = ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff', 'wma', 'ac3', 'amr',
  'aac', 'wv', 'ape', 'tta', 'mka', 'caf', 'au', 'voc', 'mp2', 'dts', 'spx', 'gsm', 'w64', 'weba',
  'eac3', 'adx', 'sox', 'ircam', 'nist', 'mmf',
  'ast', 'rso', 'aud'];
const AUDIO_TARGETS = ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff',
  'aac', 'wv', 'tta', 'mka', 'caf', 'au', 'voc', 'mp2', 'spx', 'gsm', 'w64', 'weba'];
const VIDEO_SOURCES = ['mp4', 'webm', 'mkv', 'mov', 'avi', 'mpeg', 'flv', '3gp', 'wmv', 'ogv', 'm4v',
  'ts', 'mxf', 'dv', 'vob', 'nut', 'f4v', 'rm', 'y4m',
  'h264', 'hevc', 'ivf', 'm2v',
  'gxf', 'wtv', 'swf', 'mjpeg'];
const VIDEO_TARGETS = ['mp4', 'webm', 'mkv', 'mov', 'avi', 'gif',
  'ts', 'mxf', 'vob', 'nut', 'f4v', 'y4m'];
/** Video containers that hold no sound: no audio target from them, and none of them writes it. */
const PICTURE_ONLY = new Set(['y4m', 'h264', 'hevc', 'ivf', 'm2v', 'mjpeg']);

/**
 * Demuxers ffmpeg may use: nothing that reads other files (hls, dash, concat, image2 sequences,
 * imf...). The second and third lines' were checked for it too (docs/security.md#ffmpeg): none of
 * them opens another file or URL (mov's external data references stay off, ffmpeg's default).
 * jpeg_pipe reads JPEG pictures from the one file, one after the other: it is image2's pipe form,
 * which has no file-name pattern (image2 itself, which has, stays off).
 */
const DEMUXERS = 'mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,mp3,wav,flac,ogg,aac,mpeg,flv,asf,aiff,ac3,amr,gif,'
  + 'wv,ape,tta,caf,au,voc,dts,gsm,w64,mpegts,mxf,dv,nut,rm,yuv4mpegpipe,'
  + 'eac3,adx,sox,ircam,nistsphere,mmf,h264,hevc,ivf,mpegvideo,'
  + 'gxf,wtv,swf,jpeg_pipe,ast,rso,wsaud';
/** Containers accepted, as ffmpeg names them (each a demuxer of the list above). */
const ACCEPTED_CONTAINERS = new Set([
  'mov,mp4,m4a,3gp,3g2,mj2', 'matroska,webm', 'avi', 'mp3', 'wav', 'flac', 'ogg', 'aac', 'mpeg', 'flv', 'asf', 'aiff', 'ac3', 'amr', 'gif',
  'wv', 'ape', 'tta', 'caf', 'au', 'voc', 'dts', 'gsm', 'w64', 'mpegts', 'mxf', 'dv', 'nut', 'rm', 'yuv4mpegpipe',
  'eac3', 'adx', 'sox', 'ircam', 'nistsphere', 'mmf', 'h264', 'hevc', 'ivf', 'mpegvideo',
  'gxf', 'wtv', 'swf', 'jpeg_pipe', 'ast', 'rso', 'wsaud',
]);

/**
 * ffmpeg's own verdict, at the end of a run, when no stream received a single packet: it still exits
 * 0 and leaves a file of headers alone (an MP3 of 227 bytes, say). Seen with 32-bit FLAC, which
 * ffmpeg 5.1 opens and describes but cannot decode (fftools/ffmpeg.c, print_final_stats). Not
 * anchored: later ffmpeg versions put the output's name before it ("[out#0/mp3 @ ...]").
 */
const EMPTY_OUTPUT = /Output file is empty, nothing was encoded/;

/** ffmpeg's words when an encoder does not open with the settings given. */
const ENCODER_REFUSED = /Error while opening encoder|Error initializing output stream/;
/** The options an encoder may refuse in combination (each is in range alone), named in that order. */
const REFUSABLE = ['audio_bitrate', 'audio_frequency', 'audio_channels', 'crf', 'fps', 'width', 'height', 'video_codec', 'audio_codec'];

/** The user's answer to a run that encoded nothing. */
function nothingEncoded(): ConvertdError {
  return new ConvertdError('conversion_failed',
    'ffmpeg read the file but decoded no audio or video from it: its streams use an encoding this service cannot decode (32-bit FLAC inside Ogg or Matroska, for one). Convert it to a common encoding (16- or 24-bit, or a plain .flac file) and upload it again.');
}

/** Share of a wide FLAC's progress that its decoding by flac takes (it runs far faster than ffmpeg's encoding). */
const FLAC_DECODE_SHARE = 0.1;

/** Largest video frame decoded: 4096 x 4096. */
const MAX_FRAME_PIXELS = 4096 * 4096;
/** Most frames a video may declare (four hours at 30 fps; a GIF frame bomb declares far more for its size). */
const MAX_FRAMES = 432_000;
/**
 * Every conversion, with its options (options.ts). `available` says whether this ffmpeg has a
 * codec's encoder: the probe narrows video_codec and audio_codec to those it lists. Each audio
 * target and each video target that is also a source converts to itself (a clip trimmed, a sound
 * re-encoded at another bit rate): a route of its own, never a link of a longer one.
 *
 * Every edge ends its route: ffmpeg converts each pair it reads directly, so a chain of two ffmpeg
 * runs only loses quality. And the planner, given options, prefers the route supporting most of
 * them: without this, wav → mp3 with audio_codec would go wav → m4a (alac) → mp3, and the
 * discovery endpoint would list audio_codec for mp3, which holds one codec.
 */
function edges(available: (codec: string) => boolean = () => true): ConversionEdge[] {
  const list: ConversionEdge[] = [];
  const add = (from: string, to: string, cost: number, chainable = true) => {
    list.push({ from, to, cost, ...(chainable ? {} : { chainable: false }), endsRoute: true, options: edgeOptions(from, to, available), checkOptions: (options) => checkTogether(to, options) });
  };
  for (const from of AUDIO_SOURCES) {
    for (const to of AUDIO_TARGETS) if (to !== from) add(from, to, 2);
  }
  for (const from of VIDEO_SOURCES) {
    // video → gif leaves the video family: only for an uploaded video, never mid-route.
    for (const to of VIDEO_TARGETS) if (to !== from) add(from, to, to === 'webm' ? 12 : 8, to !== 'gif');
    if (!PICTURE_ONLY.has(from)) for (const to of AUDIO_TARGETS) add(from, to, 3);
  }
  // An animated GIF becomes a video worth the name.
  // Only for an uploaded GIF: chained, it would make videos (and then sound) out of still images.
  for (const to of ['mp4', 'webm']) add('gif', to, to === 'webm' ? 12 : 8, false);
  // Each format to itself, last (the engine table lists targets in the order of the edges).
  for (const format of AUDIO_TARGETS) add(format, format, 2);
  for (const format of VIDEO_TARGETS.filter((t) => VIDEO_SOURCES.includes(t))) add(format, format, format === 'webm' ? 12 : 8);
  return list;
}

/** What the gate and the encoder settings need to know of an input. */
interface MediaFacts {
  container: string;
  duration: number;
  /** Frames the video stream holds: its frame rate times the duration. */
  frames: number;
  video?: { width: number; height: number };
  hasAudio: boolean;
  /**
   * A mono sound whose decoder leaves the channel layout unnamed (ffmpeg 5.1's TTA and Speex
   * decoders): the AAC encoder refuses it ("Unsupported channel layout") unless told it is mono.
   */
  unnamedMono?: boolean;
}

const MUXER: Record<string, string> = {
  mp3: 'mp3', wav: 'wav', flac: 'flac', ogg: 'ogg', opus: 'opus', m4a: 'ipod', aiff: 'aiff',
  mp4: 'mp4', webm: 'webm', mkv: 'matroska', mov: 'mov', avi: 'avi', gif: 'gif',
  aac: 'adts', wv: 'wv', tta: 'tta', mka: 'matroska', caf: 'caf', au: 'au', voc: 'voc', mp2: 'mp2', spx: 'spx', gsm: 'gsm', w64: 'w64', weba: 'webm',
  ts: 'mpegts', mxf: 'mxf', vob: 'vob', nut: 'nut', f4v: 'f4v', y4m: 'yuv4mpegpipe',
};

/** x264 preset by length: quality for short clips, speed for long ones (the job has a time limit). */
function x264Preset(seconds: number): string {
  if (seconds <= 60) return 'medium';
  if (seconds <= 600) return 'fast';
  return 'veryfast';
}

/** x265 is several times slower than x264 at the same preset: one step faster at each length. */
function x265Preset(seconds: number): string {
  if (seconds <= 60) return 'fast';
  if (seconds <= 600) return 'veryfast';
  return 'ultrafast';
}

/**
 * AV1 through libaom in its realtime mode at its fastest (cpu-used 8): about as fast as x265's
 * "fast" on two cores. SVT-AV1, faster still, refuses pictures under 64 pixels a side (Debian's
 * 1.4 says "bad parameter"), which a resized clip may well be.
 */
const AV1_SPEED: readonly string[] = ['-usage', 'realtime', '-cpu-used', '8', '-row-mt', '1'];

/**
 * VP9's speed, the same for every clip: libvpx's realtime deadline with cpu-used 8. libvpx at its
 * defaults runs about 16x slower than realtime here, and "good" with cpu-used 4 encodes about 30
 * megapixels a second on two cores (30 s of 720p in 27 s, measured bare). Realtime with
 * cpu-used 8 is four to nine times faster than "good" at an SSIM within 0.002 of it, on the
 * corpus's clips as on a 20 s 1080p phone clip of 25 MB (10 s instead of 53 s); its files are
 * 20-45% larger. One setting for all also means the arguments never wait on the input's
 * description, so a clip with a picture never makes ffmpeg start twice for WebM (BENCHMARKS.md,
 * changes 36 and 38).
 */
export const VP9_SPEED: readonly string[] = ['-deadline', 'realtime', '-cpu-used', '8'];

/** Even dimensions, which 4:2:0 encoders require. */
const EVEN = 'scale=trunc(iw/2)*2:trunc(ih/2)*2';

/**
 * The video encoder's arguments: the codec at its rate factor (the option's, or its default), 4:2:0
 * pictures, and the picture's filters (frame rate, size; or just even sides). Everything is built
 * from numbers and this file's words.
 */
function videoArgs(to: string, codec: VideoCodecId, seconds: number, options: StepOptions): string[] {
  const crf = crfFor(codec, options);
  const filter = ['-vf', pictureFilter(options, true, EVEN)];
  switch (codec) {
    case 'h264': return ['-c:v', 'libx264', '-preset', x264Preset(seconds), '-crf', String(crf ?? 23), '-pix_fmt', 'yuv420p', ...filter];
    case 'h265': return ['-c:v', 'libx265', '-preset', x265Preset(seconds), '-crf', String(crf ?? 28), '-x265-params', 'log-level=error',
      '-pix_fmt', 'yuv420p', ...(to === 'mp4' || to === 'mov' ? ['-tag:v', 'hvc1'] : []), ...filter];
    case 'vp9': return ['-c:v', 'libvpx-vp9', ...VP9_SPEED, '-row-mt', '1', '-crf', String(crf ?? 33), '-b:v', '0', '-pix_fmt', 'yuv420p', ...filter];
    case 'av1': return ['-c:v', 'libaom-av1', ...AV1_SPEED, '-crf', String(crf ?? 35), '-b:v', '0', '-pix_fmt', 'yuv420p', ...filter];
    case 'mpeg4': return ['-c:v', 'mpeg4', '-q:v', '4', ...filter];
    // MPEG-2 at a fixed quantiser near DVD quality; 4:2:0 as MXF's D-10 and DVD's profiles are.
    case 'mpeg2': return ['-c:v', 'mpeg2video', '-q:v', '3', '-pix_fmt', 'yuv420p', ...filter];
    // Lossless: every size and the source's pixel format (FFV1 takes them all).
    case 'ffv1': return ['-c:v', 'ffv1', '-vf', pictureFilter(options, false, 'null')];
    // YUV4MPEG2 holds planar YUV (4:2:0 is what every reader of it takes); its muxer takes ffmpeg's
    // decoded frames as they are (wrapped_avframe), not rawvideo packets.
    case 'raw': return ['-c:v', 'wrapped_avframe', '-pix_fmt', 'yuv420p', '-vf', pictureFilter(options, false, 'null')];
  }
}

/** MP4's encoders for a clip of `seconds` without options (exported for the benchmark's bare command). */
export function mp4Encoders(seconds: number): string[] {
  return [...videoArgs('mp4', 'h264', seconds, {}), ...audioArgs('mp4', {})];
}

/** WebM's encoders, whatever the clip (exported for the benchmark's bare command). */
export const WEBM_ENCODERS: readonly string[] = [...videoArgs('webm', 'vp9', 1, {}), ...audioArgs('webm', {})];

/** Video targets that take a file with only sound: the sound alone, in that container. */
const AUDIO_IN_VIDEO_CONTAINER = new Set(['mp4', 'mov', 'mkv', 'webm', 'avi', 'ts', 'nut']);

/** What ffmpeg starts with before it has described its input: a short clip with a picture and sound. */
const SHORT_CLIP: MediaFacts = { container: '', duration: 1, frames: 0, video: { width: 2, height: 2 }, hasAudio: true };

/** Seconds the job converts (the trimmed span), never throwing: the gate refuses a trim past the end. */
/** The facts with the length measured rather than declared (the frame count follows it). */
function withDuration(facts: MediaFacts, duration: number): MediaFacts {
  return { ...facts, duration, frames: facts.duration > 0 ? Math.round(facts.frames * duration / facts.duration) : facts.frames };
}

function spanSeconds(facts: MediaFacts, options: StepOptions): number {
  const { start, end } = trimOf(options);
  return Math.max(0, Math.min(end ?? facts.duration, facts.duration) - start);
}

/** Decoders that leave a mono stream's layout unnamed, as ffmpeg names them in its description. */
const UNNAMED_MONO_DECODERS = new Set(['tta', 'speex']);

/**
 * The encoder's arguments: a sound target's are the same whatever the input holds (but for a mono
 * sound whose layout is unnamed, named here; audio_channels names it otherwise).
 */
function encoderArgs(to: string, facts: MediaFacts, options: StepOptions = {}): string[] {
  const noOtherStreams = ['-vn', '-sn', '-dn'];
  const sound = () => [...audioArgs(to, options), ...(facts.unnamedMono && options.audio_channels === undefined ? ['-af', 'aformat=channel_layouts=mono'] : [])];
  if (AUDIO_TARGETS.includes(to)) return [...noOtherStreams, ...sound()];
  if (!facts.video && AUDIO_IN_VIDEO_CONTAINER.has(to)) {
    return ['-map', '0:a:0', ...noOtherStreams, ...sound(), ...(to === 'mp4' ? ['-movflags', '+faststart'] : [])];
  }
  const mute = removeAudio(options);
  const videoMap = ['-map', '0:v:0', ...(mute ? [] : ['-map', '0:a:0?']), '-sn', '-dn'];
  const audio = () => (mute ? ['-an'] : sound());
  const video = () => videoArgs(to, videoCodec(to, options), spanSeconds(facts, options), options);
  switch (to) {
    case 'mp4': return [...videoMap, ...video(), ...audio(), '-movflags', '+faststart'];
    case 'mov': return [...videoMap, ...video(), ...audio(), '-movflags', '+faststart'];
    case 'mkv': return [...videoMap, ...video(), ...audio()];
    case 'webm': return [...videoMap, ...video(), ...audio()];
    case 'avi': return [...videoMap, ...video(), ...audio()];
    case 'ts': return [...videoMap, ...video(), ...audio()];
    case 'f4v': return [...videoMap, ...video(), ...audio()];
    case 'vob': return [...videoMap, ...video(), ...audio()];
    case 'nut': return [...videoMap, ...video(), ...audio()];
    // MXF's muxer knows the broadcast frame rates only; "unofficial" lets it keep any other (a
    // 15 fps clip stays 15 fps, which ffmpeg and the players built on it read).
    case 'mxf': return [...videoMap, ...video(), ...audio(), '-strict', 'unofficial'];
    case 'y4m': return ['-map', '0:v:0', '-an', '-sn', '-dn', ...video()];
    case 'gif': {
      // The first GIF_MAX_SECONDS (encode's -t), GIF_FPS frames a second, at most GIF_WIDTH wide, unless asked otherwise.
      const fps = numberOption(options, 'fps') ?? GIF_FPS;
      const size = scaleFilter(options, false, 'lanczos') ?? `scale='min(${GIF_WIDTH},iw)':-2:flags=lanczos`;
      return [
        '-map', '0:v:0', '-an', '-sn', '-dn',
        '-vf', `fps=${String(fps)},${size},split[a][b];[a]palettegen=stats_mode=diff[p];[b][p]paletteuse=dither=bayer:bayer_scale=3`,
        '-loop', '0',
      ];
    }
    default: throw new ConvertdError('conversion_failed', `ffmpeg does not write ${to}.`);
  }
}

/** What the probe learns of this ffmpeg: its encoders, and the subtitle formats it writes well. */
interface FfmpegFacts {
  readonly encoders: readonly string[];
  readonly subtitleTargets: readonly string[];
}

function isFfmpegFacts(facts: unknown): facts is FfmpegFacts {
  const candidate = facts as Partial<FfmpegFacts> | null;
  return typeof candidate === 'object' && candidate !== null
    && Array.isArray(candidate.encoders) && candidate.encoders.every((e) => typeof e === 'string')
    && Array.isArray(candidate.subtitleTargets) && candidate.subtitleTargets.every((t) => typeof t === 'string');
}

/** The edges this ffmpeg offers: codecs beyond each target's default only where it has their encoder. */
function edgesFound(facts: FfmpegFacts): ConversionEdge[] {
  const encoders = new Set(facts.encoders);
  return [...edges((codec) => encoders.has(ENCODER_OF[codec] ?? '')), ...subtitleEdges(facts.subtitleTargets)];
}

export class FfmpegEngine implements Engine {
  readonly id = 'ffmpeg';
  readonly edges = [...edges(), ...subtitleEdges()];
  readonly reportsProgress = true;
  private readonly context: EngineContext<FfmpegSettings>;

  constructor(context: EngineContext<FfmpegSettings>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 1 + inputBytes / 1_000_000;
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    return withScratchDir(async (dir) => {
      const result = await run('/usr/bin/ffmpeg', [
        '-nostdin', '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=duration=0.2',
        '-c:a', 'libmp3lame', '-f', 'mp3', '-y', 'file:probe.mp3',
      ], { cwd: dir, timeoutMs: 20_000 });
      ensureSuccess(result, 'ffmpeg');
      // The gate reads ffmpeg's description of its input: prove that it reads this ffmpeg's.
      const limits = { timeoutMs: 20_000, maxOutputBytes: 10 * 1024 * 1024, maxImagePixels: 1, maxMediaSeconds: 60 };
      const request = { input: path.join(dir, 'probe.mp3'), output: path.join(dir, 'probe.wav'), from: 'mp3', to: 'wav', workDir: dir, limits, signal: AbortSignal.timeout(20_000), onProgress: () => undefined, options: {} };
      const seen = await this.encode(request, encoderArgs('wav', SHORT_CLIP), () => 0, request.signal, () => undefined);
      if (seen?.container !== 'mp3' || !seen.hasAudio || !(seen.duration > 0)) {
        throw new Error(`ffmpeg's description of its input could not be read (${JSON.stringify(seen)})`);
      }
      // The codecs offered beyond each target's default are those this build has encoders for.
      const listing = await run('/usr/bin/ffmpeg', ['-nostdin', '-hide_banner', '-encoders'], { cwd: dir, timeoutMs: 20_000, captureStdout: true });
      ensureSuccess(listing, 'ffmpeg');
      const encoders = listing.stdout.split('\n').flatMap((line) => /^ [VAS][A-Z.]{5} (\S+)/.exec(line)?.[1] ?? []);
      if (!encoders.includes('libmp3lame')) throw new Error('ffmpeg\'s list of encoders could not be read');
      this.found = { encoders, subtitleTargets: await probeSubtitles(this.context, dir) };
      return edgesFound(this.found);
    });
  }

  private found: FfmpegFacts | undefined;

  /** The encoders and subtitle writers found are the probe's facts: the edges are made from them (probe-cache.ts). */
  readonly probeMemory = {
    found: (): unknown => this.found,
    restore: async (facts: unknown): Promise<readonly ConversionEdge[] | undefined> => (isFfmpegFacts(facts) ? edgesFound(facts) : undefined),
  };

  /**
   * One ffmpeg run per conversion, usually. ffmpeg describes its input (container, duration,
   * streams, frame size) before it converts anything; the gate (admit) reads that description and
   * stops ffmpeg with its verdict when it refuses. ffmpeg starts with the arguments a short clip
   * with a picture would get (a sound target's are the same whatever the input); an input that
   * needs others (a long one, or one without a picture) makes it start again with them. A
   * separate ffprobe beside it cost about 90 ms of CPU per job just loading its libraries
   * (BENCHMARKS.md). ffmpeg is held to the demuxer and protocol allow-lists, sandbox and limits
   * either way, and a run whose input description was never read does not count as a success.
   */
  async convert(request: ConvertRequest): Promise<void> {
    if (isSubtitleConversion(request)) return convertSubtitles(this.context, request);
    const flac = request.from === 'flac' ? await readStreamInfo(request.input) : undefined;
    if (flac && flac.bitsPerSample > FFMPEG_FLAC_MAX_BITS) return this.convertWideFlac(request, flac);
    return this.convertWithFfmpeg(request);
  }

  /**
   * FLAC wider than ffmpeg decodes: Debian's flac (1.4) decodes it to WAV in the job's directory,
   * sandboxed and limited like ffmpeg, then ffmpeg converts that WAV. The WAV is PCM of the same
   * width, so its size is known from STREAMINFO before anything runs and is held to the output cap
   * (the job's disk is a shared budget). Progress: the decoding is the first FLAC_DECODE_SHARE, the
   * encoding the rest, so the figures only grow.
   */
  private async convertWideFlac(request: ConvertRequest, info: FlacStreamInfo): Promise<void> {
    const { input, workDir, limits, signal } = request;
    const duration = info.sampleRate > 0 ? info.totalSamples / info.sampleRate : 0;
    // The caps hold the part converted (see admit); the decoding of the whole is held by the output cap below.
    const seconds = convertedSeconds(duration, request.options);
    if (seconds > limits.maxMediaSeconds) {
      throw new ConvertdError('input_too_complex', `The media lasts ${Math.round(seconds)} s; this service converts at most ${limits.maxMediaSeconds} s.`);
    }
    const size = (bytes: number) => (bytes >= 1024 * 1024 ? `${Math.floor(bytes / 1024 / 1024)} MB` : `${Math.floor(bytes / 1024)} KB`);
    const pcmBytes = info.totalSamples * info.channels * Math.ceil(info.bitsPerSample / 8);
    const tooLarge = new ConvertdError('input_too_complex',
      `The ${info.bitsPerSample}-bit FLAC file decodes to more than ${size(limits.maxOutputBytes)} of samples, the most this service decodes for it: send a shorter file, or a 16- or 24-bit one.`);
    if (pcmBytes > limits.maxOutputBytes) throw tooLarge;
    const decoded = path.join(workDir, 'decoded.wav');
    try {
      const result = await this.context.run('/usr/bin/flac', ['--decode', '--silent', '--force', `--output-name=${path.basename(decoded)}`, path.basename(input)], {
        cwd: workDir,
        timeoutMs: limits.timeoutMs,
        signal,
        // The header and a stream of unknown length (totalSamples 0) stop at the cap too.
        limits: { fileSizeBytes: limits.maxOutputBytes + 64 * 1024, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      });
      signal.throwIfAborted();
      if (result.signal === 'SIGXFSZ') throw tooLarge;
      if (result.exitCode !== 0) {
        const detail = lastErrorLine(result.stderr);
        throw new ConvertdError('corrupt_input', `The FLAC file could not be decoded${detail ? ` (${detail})` : ''}: it may be damaged or truncated.`);
      }
      request.onProgress(FLAC_DECODE_SHARE);
      await this.convertWithFfmpeg({
        ...request, input: decoded, from: 'wav',
        onProgress: (fraction) => request.onProgress(FLAC_DECODE_SHARE + (1 - FLAC_DECODE_SHARE) * fraction),
      });
    } finally {
      await fs.rm(decoded, { force: true });
    }
  }

  /**
   * ffmpeg's own limit for one conversion: a base, and more for each second of media converted
   * (the part a trim keeps; a GIF is cut at its own bound); for media that declares no length
   * (raw streams, some GIFs) the input's size stands in. Never beyond what the step has left.
   */
  private stepLimitSeconds(facts: MediaFacts, inputBytes: number, { to, options, limits }: ConvertRequest): number {
    return mediaStepSeconds(this.context.settings, {
      mediaSeconds: facts.duration > 0 ? Math.min(spanSeconds(facts, options), to === 'gif' ? GIF_MAX_SECONDS : Infinity) : undefined,
      inputBytes,
      stepLimitMs: limits.timeoutMs,
    });
  }

  private async convertWithFfmpeg(request: ConvertRequest): Promise<void> {
    const { to, options } = request;
    const guess = encoderArgs(to, SHORT_CLIP, options);
    const restart = new Error('started again with the arguments the input needs');
    let facts: MediaFacts | undefined;
    const inputBytes = (await fs.stat(request.input)).size;
    // A fragmented MP4's header may declare any length: its fragments say how long it really is.
    const fragmentSeconds = await fragmentedMp4Seconds(request.input).catch(() => undefined);
    /** One run, stopped by the gate's refusal (or, on the first run, by other arguments needed), or by its step limit. */
    const run = async (encoder: string[], mayRestart: boolean) => {
      const verdict = new AbortController();
      let limit: NodeJS.Timeout | undefined;
      const onInput = (described: MediaFacts, first: boolean) => {
        const found = fragmentSeconds !== undefined && described.container.startsWith('mov,mp4') ? withDuration(described, fragmentSeconds) : described;
        try {
          this.admit(found, request);
        } catch (error) {
          verdict.abort(error);
          return;
        }
        facts = found;
        if (mayRestart && first && encoderArgs(to, found, options).join('\0') !== encoder.join('\0')) {
          verdict.abort(restart);
          return;
        }
        // The step limit, from what the input says it holds (again if a later description says more).
        const seconds = this.stepLimitSeconds(found, inputBytes, request);
        clearTimeout(limit);
        limit = setTimeout(() => verdict.abort(new ConvertdError('timeout',
          `ffmpeg took longer than its limit of ${seconds} s for this media (${found.duration > 0 ? `${Math.round(spanSeconds(found, options))} s long` : 'no declared length'}): send a shorter or simpler file.`)), seconds * 1000);
        limit.unref();
      };
      try {
        // Progress is against the part converted: the trimmed span.
        await this.encode(request, encoder, () => (facts ? spanSeconds(facts, options) : 0), AbortSignal.any([request.signal, verdict.signal]), onInput);
      } catch (error) {
        throw verdict.signal.aborted && !request.signal.aborted ? verdict.signal.reason : error;
      } finally {
        clearTimeout(limit);
      }
    };
    try {
      await run(guess, true);
    } catch (error) {
      if (error !== restart) throw error;
      await run(encoderArgs(to, facts!, options), false);
    }
  }

  /**
   * The gate: allowed container, duration and size caps, the streams the target needs, and the
   * options that can only be checked against the input (a trim past its end, a picture too large).
   * With a trim, the duration cap holds the part converted (a three-hour recording may give a
   * ten-second clip: ffmpeg seeks to it), and the frame cap the frames up to the trim's end
   * (some containers, an animated GIF, are decoded from their start to reach it).
   */
  private admit(facts: MediaFacts, { to, limits, options }: ConvertRequest): void {
    if (!ACCEPTED_CONTAINERS.has(facts.container)) {
      throw new ConvertdError('unsupported_format', `The file's container (${facts.container || 'unknown'}) is not one this service converts.`);
    }
    const seconds = convertedSeconds(facts.duration, options);
    const trimmed = options.trim_start !== undefined || options.trim_end !== undefined;
    if (seconds > limits.maxMediaSeconds) {
      throw new ConvertdError('input_too_complex', trimmed
        ? `The part to convert lasts ${Math.round(seconds)} s; this service converts at most ${limits.maxMediaSeconds} s.`
        : `The media lasts ${Math.round(facts.duration)} s; this service converts at most ${limits.maxMediaSeconds} s.`);
    }
    if (facts.video && facts.video.width * facts.video.height > MAX_FRAME_PIXELS) {
      throw new ConvertdError('input_too_complex', `The video is ${facts.video.width}x${facts.video.height}; this service converts at most 4096x4096.`);
    }
    const { start } = trimOf(options);
    const frames = trimmed && facts.duration > 0 ? Math.round(facts.frames * Math.min(1, (start + seconds) / facts.duration)) : facts.frames;
    if (frames > MAX_FRAMES) {
      throw new ConvertdError('input_too_complex', `The video holds about ${frames} frames (frame rate times duration); this service converts at most ${MAX_FRAMES}.`);
    }
    const size = facts.video && VIDEO_TARGETS.includes(to) ? pictureSize(facts.video, options) : undefined;
    if (size && (size.width > MAX_VIDEO_SIDE || size.height > MAX_VIDEO_SIDE)) {
      const option = options.width !== undefined ? 'width' : 'height';
      throw new ConvertdError('invalid_option', `Option "${option}": the video is ${facts.video!.width}x${facts.video!.height}, and the size asked for makes it ${size.width}x${size.height}; at most ${MAX_VIDEO_SIDE} a side.`,
        { option, reason: `the picture would be past ${MAX_VIDEO_SIDE} pixels a side`, maximum: MAX_VIDEO_SIDE });
    }
    if (removeAudio(options) && !facts.video && VIDEO_TARGETS.includes(to)) {
      throw new ConvertdError('invalid_option', 'Option "remove_audio": the file has only sound; without it nothing would be left.', { option: 'remove_audio', reason: 'the file has no video' });
    }
    if (to === 'gif' && !facts.video) throw new ConvertdError('conversion_failed', 'The file has no video stream to make an animation from.');
    if (VIDEO_TARGETS.includes(to) && !facts.video && !AUDIO_IN_VIDEO_CONTAINER.has(to)) {
      throw new ConvertdError('conversion_failed', `The file has no video stream, and ${to} is written with one.`);
    }
    if (!facts.video && !facts.hasAudio) throw new ConvertdError('conversion_failed', 'The file has neither a video nor an audio stream.');
    if (!VIDEO_TARGETS.includes(to) && !facts.hasAudio) throw new ConvertdError('conversion_failed', 'The file has no audio stream to extract.');
  }

  /**
   * One ffmpeg run; progress is -progress's output time against the expected duration (0: none).
   * `onInput` gets ffmpeg's description of the input as soon as it is complete, and again whenever
   * a later line makes it worse (see InputDescription); the last is also returned.
   */
  private async encode(request: ConvertRequest, encoder: string[], expectedSeconds: () => number, signal: AbortSignal,
    onInput: (facts: MediaFacts, first: boolean) => void): Promise<MediaFacts | undefined> {
    const { input, output, to, workDir, limits, options } = request;
    // A trim: ffmpeg seeks the input to its start (and decodes from the keyframe before it, so the
    // cut is exact), and writes at most its length; the caps' length and GIF's own bound the rest.
    const { start, end } = trimOf(options);
    const length = Math.min(limits.maxMediaSeconds, end !== undefined ? end - start : Infinity, to === 'gif' ? GIF_MAX_SECONDS : Infinity);
    const args = [
      // "info" is the level at which ffmpeg describes its input; -nostats keeps the rest quiet.
      '-nostdin', '-hide_banner', '-loglevel', 'info', '-nostats', '-progress', 'pipe:1',
      '-protocol_whitelist', 'file', '-format_whitelist', DEMUXERS,
      ...(start > 0 ? ['-ss', String(start)] : []),
      '-i', `file:${path.basename(input)}`,
      '-threads', '2',
      '-t', String(length),
      '-fs', String(limits.maxOutputBytes),
      ...encoder,
      '-f', MUXER[to]!, '-y', `file:${path.basename(output)}`,
    ];
    const description = new InputDescription();
    let encodedNothing = false;
    let seen: MediaFacts | undefined;
    const deliver = () => {
      if (!description.complete) return;
      const facts = description.read();
      if (seen && JSON.stringify(facts) === JSON.stringify(seen)) return;
      const first = !seen;
      seen = facts;
      onInput(facts, first);
    };
    const result = await this.context.run('/usr/bin/ffmpeg', args, {
      cwd: workDir,
      timeoutMs: limits.timeoutMs,
      signal,
      limits: { fileSizeBytes: limits.maxOutputBytes + 1024 * 1024, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      onStdoutLine: (line) => {
        // -progress prints key=value blocks about twice a second; out_time_us is in microseconds.
        const match = /^out_time_us=(\d+)$/.exec(line);
        const expected = Math.min(expectedSeconds(), to === 'gif' ? GIF_MAX_SECONDS : Infinity);
        if (match && expected > 0) request.onProgress(Number(match[1]) / 1e6 / expected);
      },
      onStderrLine: (line) => {
        if (EMPTY_OUTPUT.test(line)) encodedNothing = true;
        description.add(line);
        deliver();
      },
    });
    description.end();
    deliver();
    // Refused on the last lines: ffmpeg had already finished, its output is not wanted.
    signal.throwIfAborted();
    if (!seen) {
      // ffmpeg could not open the input: that is the file's answer.
      const detail = lastErrorLine(result.stderr);
      if (result.exitCode === null) ensureSuccess(result, 'ffmpeg');
      if (/not on whitelist/i.test(result.stderr)) {
        throw new ConvertdError('unsupported_format', 'The file is a media playlist or script, not a media file this service converts.');
      }
      throw new ConvertdError('corrupt_input', `The media file could not be read${detail ? ` (${detail})` : ''}: it may be damaged or truncated.`);
    }
    // Before the exit status: with some containers (Ogg) ffmpeg also exits 1, saying only
    // "Conversion failed!", and this is the clearer answer.
    if (encodedNothing) {
      // A trim that starts past the last packet of a file whose container declared no duration.
      if (start > 0) throw new ConvertdError('invalid_option', `Option "trim_start": the media ends before ${start} s.`, { option: 'trim_start', reason: 'at or past the end' });
      throw nothingEncoded();
    }
    if (result.exitCode !== 0 && ENCODER_REFUSED.test(result.stderr)) {
      // An encoder that will not open with the settings asked for (libvorbis at a bit rate its
      // modes do not reach for this rate and channel count): the options' fault, not the file's.
      const option = REFUSABLE.find((name) => options[name] !== undefined);
      if (option) {
        const detail = lastErrorLine(result.stderr.split('\n').filter((line) => !/Error (initializing|while opening)|Conversion failed/.test(line)).join('\n'));
        throw new ConvertdError('invalid_option', `Option "${option}": the encoder refused the settings asked for${detail ? ` (${detail})` : ''}.`, { option, reason: 'refused by the encoder' });
      }
    }
    ensureSuccess(result, 'ffmpeg');
    return seen;
  }
}

/**
 * ffmpeg's description of its first input, as it prints it at "info" level before converting:
 *   Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'file:input.mp4':
 *     Duration: 00:00:02.00, start: 0.000000, bitrate: 47 kb/s
 *     Stream #0:0[0x1](und): Video: h264 (High) (avc1 / 0x31637661), yuv420p(progressive), 320x240 [SAR 1:1 DAR 4:3], 25 fps, 25 tbr, 12800 tbn (default)
 *     Stream #0:1[0x2](und): Audio: aac (LC) (mp4a / 0x6134706D), 44100 Hz, mono, fltp, 69 kb/s (default)
 * The facts are those ffprobe gives, but for the frame count: the frame rate times the duration.
 * The description is complete at the first line after its streams that is not indented. But the
 * file's tags (title, comment...) are printed inside it, and a tag's name may hold line breaks that
 * imitate these lines. So every later line of ffmpeg's output is read too, and the facts
 * are the worst of what was found: the longest duration, the largest picture, the highest frame
 * rate. A forged line can only make them worse, and the gate, told again, stops ffmpeg.
 */
class InputDescription {
  private started = false;
  private container = '';
  private duration = 0;
  private video: MediaFacts['video'];
  private frameRate = 0;
  private hasAudio = false;
  private unnamedMono = false;
  private streams = 0;
  complete = false;

  add(line: string): void {
    if (!this.started) {
      const input = /^Input #0, (.+), from '/.exec(line);
      if (!input) return;
      this.started = true;
      this.container = input[1]!;
      return;
    }
    // Complete at the first line that is not indented once a stream was described (a forged
    // line break in a tag before the streams does not end it).
    if (this.streams > 0 && !/^\s/.test(line)) this.complete = true;
    const time = /^\s+Duration: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)/.exec(line);
    if (time) this.duration = Math.max(this.duration, Number(time[1]) * 3600 + Number(time[2]) * 60 + Number(time[3]));
    const stream = /^\s+Stream #0:\d+\S*: (Video|Audio|Subtitle|Data|Attachment): (.*)$/.exec(line);
    if (stream) this.streams++;
    if (stream?.[1] === 'Audio') {
      // The first sound is the one converted ("tta, 44100 Hz, mono, s16").
      const [codec, , layout] = topLevelParts(stream[2]!);
      if (!this.hasAudio && UNNAMED_MONO_DECODERS.has(codec?.split(' ')[0] ?? '') && layout === 'mono') this.unnamedMono = true;
      this.hasAudio = true;
    }
    if (stream?.[1] !== 'Video') return;
    const parts = topLevelParts(stream[2]!);
    const size = parts.map((part) => /^(\d+)x(\d+)(?: |$)/.exec(part)).find(Boolean);
    if (!size || Number(size[1]) === 0 || Number(size[2]) === 0) return;
    const [width, height] = [Number(size[1]), Number(size[2])];
    if (!this.video || width * height > this.video.width * this.video.height) this.video = { width, height };
    const rate = parts.map((part) => /^([\d.]+)(k?) fps$/.exec(part)).find(Boolean);
    if (rate) this.frameRate = Math.max(this.frameRate, Number(rate[1]) * (rate[2] ? 1000 : 1));
  }

  /** ffmpeg ended: a description it began is complete. */
  end(): void {
    if (this.started) this.complete = true;
  }

  read(): MediaFacts {
    const { container, duration, video, hasAudio } = this;
    return { container, duration, frames: Math.round(this.frameRate * duration), video, hasAudio, ...(this.unnamedMono ? { unnamedMono: true } : {}) };
  }
}

/** "a, b (c, d), e" → ["a", "b (c, d)", "e"]: commas inside brackets do not separate. */
function topLevelParts(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of text) {
    if (char === '(' || char === '[') depth++;
    if (char === ')' || char === ']') depth = Math.max(0, depth - 1);
    if (char === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else {
      current += char;
    }
  }
  parts.push(current.trim());
  return parts;
}
