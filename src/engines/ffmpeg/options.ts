// The conversion options of audio and video targets (api-contract.md, "Conversion options"), and how
// each parsed value becomes ffmpeg arguments. Every argument below is built from numbers and from
// this file's own words (encoder names, channel layouts): a client's text never reaches ffmpeg.
// The defaults are the encoder settings a job without options has always had, argument for
// argument (encoderArgs in engine.ts compares equal), so a client that sends none sees no change.
import { ConvertdError } from '../../errors.ts';
import { booleanOption, enumOption, narrow, numberOption, OPTIONS, type OptionSpec, type StepOptions } from '../options.ts';
import { requestedSize } from '../support/raster-options.ts';

/** One audio encoder as offered to clients (the enum word of audio_codec) and how ffmpeg runs it. */
interface AudioCodec {
  readonly encoder: string;
  /** Bit rates in kbit/s the encoder takes (lossy ones only); undefined: lossless, audio_bitrate does not apply. */
  readonly bitrate?: { readonly minimum: number; readonly maximum: number };
  /** The sample rates it writes; undefined: any from 8 kHz to 192 kHz. Another rate becomes the nearest of these. */
  readonly rates?: readonly number[];
  readonly maxChannels: number;
  /** Channel layouts that differ from LAYOUTS for this encoder (ALAC's own four- and eight-channel orders). */
  readonly layouts?: Readonly<Record<number, string>>;
}

/** MPEG audio's rates (MPEG-1, 2 and 2.5), which LAME writes and nothing between. */
const MP3_RATES = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];
/** The rates an AAC header can name (ISO 14496-3, samplingFrequencyIndex) that ffmpeg's encoder takes. */
const AAC_RATES = [7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000];
/** Opus codes at these rates only (RFC 6716); a decoder always plays it at 48 kHz. */
const OPUS_RATES = [8000, 12000, 16000, 24000, 48000];
/** MPEG-1 and MPEG-2 layer II (ISO 11172-3, 13818-3): what ffmpeg's mp2 encoder takes. */
const MP2_RATES = [16000, 22050, 24000, 32000, 44100, 48000];
/** AC-3's rates (ATSC A/52). */
const AC3_RATES = [32000, 44100, 48000];
/** Speex's narrow, wide and ultra-wide bands. */
const SPEEX_RATES = [8000, 16000, 32000];

export const AUDIO_CODECS = {
  mp3: { encoder: 'libmp3lame', bitrate: { minimum: 8, maximum: 320 }, rates: MP3_RATES, maxChannels: 2 },
  aac: { encoder: 'aac', bitrate: { minimum: 16, maximum: 320 }, rates: AAC_RATES, maxChannels: 8 },
  // libopus takes 6-510 kbit/s; 8 is the contract's floor for audio_bitrate.
  opus: { encoder: 'libopus', bitrate: { minimum: 8, maximum: 510 }, rates: OPUS_RATES, maxChannels: 8 },
  // libvorbis refuses rates its modes do not cover (under about 45 kbit/s for 44.1 kHz stereo, or
  // over about 240 for mono): the job then ends with invalid_option, naming the bit rate.
  vorbis: { encoder: 'libvorbis', bitrate: { minimum: 32, maximum: 500 }, maxChannels: 8 },
  flac: { encoder: 'flac', maxChannels: 8 },
  alac: { encoder: 'alac', maxChannels: 8, layouts: { 4: '4.0', 8: '7.1(wide)' } },
  pcm_s16le: { encoder: 'pcm_s16le', maxChannels: 8 },
  pcm_s16be: { encoder: 'pcm_s16be', maxChannels: 8 },
  // The encoders of the containers added for issue #30 (containers.ts).
  wavpack: { encoder: 'wavpack', maxChannels: 8 },
  tta: { encoder: 'tta', maxChannels: 8 },
  mp2: { encoder: 'mp2', bitrate: { minimum: 32, maximum: 384 }, rates: MP2_RATES, maxChannels: 2 },
  ac3: { encoder: 'ac3', bitrate: { minimum: 32, maximum: 640 }, rates: AC3_RATES, maxChannels: 6 },
  // Speex is a speech codec: narrow-, wide- and ultra-wideband, mono or stereo.
  speex: { encoder: 'libspeex', rates: SPEEX_RATES, maxChannels: 2 },
  gsm: { encoder: 'libgsm', rates: [8000], maxChannels: 1 },
} as const satisfies Record<string, AudioCodec>;
export type AudioCodecId = keyof typeof AUDIO_CODECS;

/**
 * Channel layouts by count, in the order Vorbis and Opus define for 1-8 channels (libopus refuses
 * ffmpeg's default layouts for 3 and 4, "2.1" and "4.0"); AAC, FLAC and PCM take them as they are.
 */
const LAYOUTS: Readonly<Record<number, string>> = { 1: 'mono', 2: 'stereo', 3: '3.0', 4: 'quad', 5: '5.0', 6: '5.1', 7: '6.1', 8: '7.1' };

/** What each audio-holding target offers, its first codec the default, with today's settings when no option asks otherwise. */
interface AudioTarget {
  readonly codecs: readonly AudioCodecId[];
  /** The arguments of a job without audio options (exactly as before options existed). */
  readonly defaults: readonly string[];
  /** Bit rate used when the client changes the codec or the rate but gives no bit rate, by codec. */
  readonly bitrate: Partial<Record<AudioCodecId, number>>;
  /**
   * Arguments the container needs whatever the options (MXF's 48 kHz, GSM's 8 kHz mono): the
   * target then offers no audio_frequency.
   */
  readonly fixed?: readonly string[];
}

const AUDIO_TARGETS: Record<string, AudioTarget> = {
  mp3: { codecs: ['mp3'], defaults: ['-c:a', 'libmp3lame', '-q:a', '2'], bitrate: {} },
  wav: { codecs: ['pcm_s16le'], defaults: ['-c:a', 'pcm_s16le'], bitrate: {} },
  flac: { codecs: ['flac'], defaults: ['-c:a', 'flac'], bitrate: {} },
  // Not Opus: an Ogg file of Opus is the opus format (its own target), and the service checks
  // that a result is the format asked for.
  ogg: { codecs: ['vorbis', 'flac'], defaults: ['-c:a', 'libvorbis', '-q:a', '5'], bitrate: {} },
  opus: { codecs: ['opus'], defaults: ['-c:a', 'libopus', '-b:a', '128k'], bitrate: { opus: 128 } },
  m4a: { codecs: ['aac', 'alac'], defaults: ['-c:a', 'aac', '-b:a', '192k'], bitrate: { aac: 192 } },
  aiff: { codecs: ['pcm_s16be'], defaults: ['-c:a', 'pcm_s16be'], bitrate: {} },
  mp4: { codecs: ['aac', 'mp3'], defaults: ['-c:a', 'aac', '-b:a', '160k'], bitrate: { aac: 160 } },
  mov: { codecs: ['aac', 'alac'], defaults: ['-c:a', 'aac', '-b:a', '160k'], bitrate: { aac: 160 } },
  mkv: { codecs: ['aac', 'opus', 'vorbis', 'flac', 'mp3'], defaults: ['-c:a', 'aac', '-b:a', '160k'], bitrate: { aac: 160, opus: 128 } },
  webm: { codecs: ['opus', 'vorbis'], defaults: ['-c:a', 'libopus', '-b:a', '128k'], bitrate: { opus: 128 } },
  avi: { codecs: ['mp3'], defaults: ['-c:a', 'libmp3lame', '-q:a', '4'], bitrate: {} },
  // The containers added for issue #30 (containers.ts).
  aac: { codecs: ['aac'], defaults: ['-c:a', 'aac', '-b:a', '192k'], bitrate: { aac: 192 } },
  wv: { codecs: ['wavpack'], defaults: ['-c:a', 'wavpack'], bitrate: {} },
  tta: { codecs: ['tta'], defaults: ['-c:a', 'tta'], bitrate: {} },
  // Matroska audio: lossless by default, like the container's other lossless-first targets.
  mka: { codecs: ['flac', 'opus', 'vorbis', 'aac', 'mp3'], defaults: ['-c:a', 'flac'], bitrate: { opus: 128, aac: 192 } },
  caf: { codecs: ['alac', 'pcm_s16be'], defaults: ['-c:a', 'alac'], bitrate: {} },
  au: { codecs: ['pcm_s16be'], defaults: ['-c:a', 'pcm_s16be'], bitrate: {} },
  voc: { codecs: ['pcm_s16le'], defaults: ['-c:a', 'pcm_s16le'], bitrate: {} },
  // 160 kbit/s: the most MPEG-2's low rates (16-24 kHz) allow, and plenty at MPEG-1's.
  mp2: { codecs: ['mp2'], defaults: ['-c:a', 'mp2', '-b:a', '160k'], bitrate: { mp2: 160 } },
  spx: { codecs: ['speex'], defaults: ['-c:a', 'libspeex'], bitrate: {} },
  gsm: { codecs: ['gsm'], defaults: ['-c:a', 'libgsm'], bitrate: {}, fixed: ['-ar', '8000', '-ac', '1'] },
  w64: { codecs: ['pcm_s16le'], defaults: ['-c:a', 'pcm_s16le'], bitrate: {} },
  weba: { codecs: ['opus'], defaults: ['-c:a', 'libopus', '-b:a', '128k'], bitrate: { opus: 128 } },
  ts: { codecs: ['aac', 'mp3', 'ac3'], defaults: ['-c:a', 'aac', '-b:a', '160k'], bitrate: { aac: 160, ac3: 192 } },
  f4v: { codecs: ['aac'], defaults: ['-c:a', 'aac', '-b:a', '160k'], bitrate: { aac: 160 } },
  // MXF (SMPTE 377) takes PCM at 48 kHz only.
  mxf: { codecs: ['pcm_s16le'], defaults: ['-c:a', 'pcm_s16le'], bitrate: {}, fixed: ['-ar', '48000'] },
  vob: { codecs: ['ac3', 'mp2'], defaults: ['-c:a', 'ac3', '-b:a', '192k'], bitrate: { ac3: 192, mp2: 160 } },
  // NUT, ffmpeg's own container, as a lossless intermediate (FFV1 pictures, FLAC sound).
  nut: { codecs: ['flac'], defaults: ['-c:a', 'flac'], bitrate: {} },
};

/** What a codec gives when neither a bit rate nor the target's own setting says: its encoder's quality scale. */
const QUALITY_DEFAULT: Partial<Record<AudioCodecId, string[]>> = { mp3: ['-q:a', '2'], vorbis: ['-q:a', '5'] };

/** The audio options names, for the argument builders. */
const AUDIO_OPTION_NAMES = ['audio_codec', 'audio_bitrate', 'audio_frequency', 'audio_channels'];

// ---------------------------------------------------------------------------------------------
// Video

interface VideoCodec {
  readonly crf?: { readonly maximum: number; readonly default: number };
}

/** The encoders behind video_codec, with their constant rate factor's range and default. */
const VIDEO_CODECS = {
  h264: { crf: { maximum: 51, default: 23 } },
  h265: { crf: { maximum: 51, default: 28 } },
  vp9: { crf: { maximum: 63, default: 33 } },
  av1: { crf: { maximum: 63, default: 35 } },
  // AVI's MPEG-4 part 2 has a quantiser, not a rate factor; so have MPEG-2 (MXF, VOB), and
  // FFV1 (NUT) and raw pictures (Y4M) are lossless.
  mpeg4: {},
  mpeg2: {},
  ffv1: {},
  raw: {},
} as const satisfies Record<string, VideoCodec>;
export type VideoCodecId = keyof typeof VIDEO_CODECS;

/** The ffmpeg encoder each video and audio codec needs (what the probe looks for in `ffmpeg -encoders`). */
export const ENCODER_OF: Readonly<Record<string, string>> = {
  h264: 'libx264', h265: 'libx265', vp9: 'libvpx-vp9', av1: 'libaom-av1', mpeg4: 'mpeg4', mpeg2: 'mpeg2video', ffv1: 'ffv1', raw: 'wrapped_avframe',
  ...Object.fromEntries(Object.entries(AUDIO_CODECS).map(([id, codec]) => [id, codec.encoder])),
};

const VIDEO_TARGETS: Record<string, readonly VideoCodecId[]> = {
  mp4: ['h264', 'h265', 'av1'],
  mov: ['h264', 'h265'],
  mkv: ['h264', 'h265', 'vp9', 'av1'],
  webm: ['vp9', 'av1'],
  avi: ['mpeg4'],
  ts: ['h264', 'h265'],
  f4v: ['h264'],
  mxf: ['mpeg2'],
  vob: ['mpeg2'],
  nut: ['ffv1'],
  y4m: ['raw'],
};

/** Video targets that hold no sound. */
const PICTURE_ONLY = new Set(['y4m']);

/** Largest side of a video frame written (the gate's 4096 x 4096 decoding cap, both ways). */
export const MAX_VIDEO_SIDE = 4096;
/** Animated GIF: browsers play at most 50 frames a second (delays are in hundredths, and under 2 are raised). */
const GIF_MAX_FPS = 50;
/** Video frame rates offered: a slideshow's one a second to 120. */
const VIDEO_MIN_FPS = 1;

// ---------------------------------------------------------------------------------------------
// Declarations

const TRIM: OptionSpec[] = [OPTIONS.trim_start, OPTIONS.trim_end];

/** Appended to OPTIONS for the contract's "a way to drop the sound". */
const REMOVE_AUDIO = OPTIONS.remove_audio;

function audioSpecs(target: string, available: (codec: string) => boolean): OptionSpec[] {
  const spec = AUDIO_TARGETS[target]!;
  const codecs = spec.codecs.filter((codec, index) => index === 0 || available(codec));
  const entries = codecs.map((id) => [id, AUDIO_CODECS[id] as AudioCodec] as const);
  const specs: OptionSpec[] = [];
  if (codecs.length > 1) {
    const lossless = entries.filter(([, codec]) => !codec.bitrate).map(([id]) => id);
    specs.push(narrow(OPTIONS.audio_codec, {
      values: codecs, default: codecs[0],
      description: `Audio encoder: ${codecs.join(', ')} (default ${codecs[0]}).${lossless.length ? ` Lossless, without audio_bitrate: ${lossless.join(', ')}.` : ''}`,
    }));
  }
  const lossy = entries.filter(([, codec]) => codec.bitrate);
  if (lossy.length > 0) {
    const minimum = Math.min(...lossy.map(([, c]) => c.bitrate!.minimum));
    const maximum = Math.max(...lossy.map(([, c]) => c.bitrate!.maximum));
    const ranges = lossy.map(([id, c]) => `${id} ${c.bitrate!.minimum}-${c.bitrate!.maximum}`).join(', ');
    const fallback = spec.bitrate[codecs[0]!];
    specs.push(narrow(OPTIONS.audio_bitrate, {
      minimum, maximum, ...(fallback === undefined ? {} : { default: fallback }),
      description: `Audio bit rate in kbit/s, constant (${ranges}).${fallback === undefined ? ` Default: ${codecs[0]} at variable bit rate, quality ${QUALITY_DEFAULT[codecs[0]!]?.[1] ?? '-'} of the encoder's scale.` : ''}`,
    }));
  }
  // Opus is always decoded at 48 kHz whatever was encoded: asking for a rate in an .opus file
  // would change nothing a player or ffprobe sees, so the target does not offer it.
  if (target !== 'opus' && !spec.fixed?.includes('-ar')) {
    const listed = entries.filter(([, c]) => c.rates).map(([id, c]) => `${id}: ${c.rates!.map((r) => r / 1000).join(', ')} kHz`);
    specs.push(narrow(OPTIONS.audio_frequency, {
      description: `Sample rate in Hz (default: the source's).${listed.length ? ` Encoders with fixed rates take the nearest they have (${listed.join('; ')}).` : ''}`,
    }));
  }
  const maxChannels = Math.max(...entries.map(([, c]) => c.maxChannels));
  specs.push(narrow(OPTIONS.audio_channels, {
    maximum: maxChannels,
    description: `Number of audio channels, 1 mono, 2 stereo, up to ${maxChannels}${entries.some(([, c]) => c.maxChannels < maxChannels) ? ` (${entries.filter(([, c]) => c.maxChannels < maxChannels).map(([id, c]) => `${id} up to ${c.maxChannels}`).join(', ')})` : ''} (default: the source's, up to what the encoder holds).`,
  }));
  return specs;
}

function sizeSpecs(): OptionSpec[] {
  return [
    narrow(OPTIONS.width, { maximum: MAX_VIDEO_SIDE, description: `Width of the picture in pixels, up to ${MAX_VIDEO_SIDE}; given alone, the height follows the aspect ratio. Video encoders need even sizes: an odd one is rounded down.` }),
    narrow(OPTIONS.height, { maximum: MAX_VIDEO_SIDE, description: `Height of the picture in pixels, up to ${MAX_VIDEO_SIDE}; given alone, the width follows the aspect ratio. Video encoders need even sizes: an odd one is rounded down.` }),
    OPTIONS.fit,
  ];
}

function videoSpecs(target: string, available: (codec: string) => boolean, withAudio: boolean): OptionSpec[] {
  const codecs = VIDEO_TARGETS[target]!.filter((codec, index) => index === 0 || available(codec));
  const specs: OptionSpec[] = [];
  if (codecs.length > 1) {
    specs.push(narrow(OPTIONS.video_codec, { values: codecs, default: codecs[0], description: `Video encoder: ${codecs.join(', ')} (default ${codecs[0]}).` }));
  }
  const withCrf = codecs.filter((c) => 'crf' in VIDEO_CODECS[c]);
  if (withCrf.length > 0) {
    const crf = (c: VideoCodecId) => (VIDEO_CODECS[c] as VideoCodec).crf!;
    specs.push(narrow(OPTIONS.crf, {
      maximum: Math.max(...withCrf.map((c) => crf(c).maximum)),
      default: crf(withCrf[0]!).default,
      description: `Constant rate factor: lower is better and larger (${withCrf.map((c) => `${c} 0-${crf(c).maximum}, default ${crf(c).default}`).join('; ')}). A value past the chosen encoder's range ends the job with invalid_option.`,
    }));
  }
  specs.push(...sizeSpecs(), narrow(OPTIONS.fps, { minimum: VIDEO_MIN_FPS, description: 'Frames per second of the result (default: the source\'s); frames are dropped or repeated to match.' }), ...TRIM);
  if (withAudio) specs.push(...audioSpecs(target, available), REMOVE_AUDIO);
  return specs;
}

/**
 * The options of one edge of the engine. `available` says whether this ffmpeg has a codec's
 * encoder (the probe reads `ffmpeg -encoders`); a target's first codec is its default, needed anyway.
 */
export function edgeOptions(from: string, to: string, available: (codec: string) => boolean = () => true): OptionSpec[] {
  if (to === 'gif') {
    return [...sizeSpecs(), narrow(OPTIONS.fps, { minimum: VIDEO_MIN_FPS, maximum: GIF_MAX_FPS, default: GIF_FPS, description: `Frames per second of the animation, up to ${GIF_MAX_FPS} (default ${GIF_FPS}).` }), ...TRIM];
  }
  if (VIDEO_TARGETS[to]) return videoSpecs(to, available, from !== 'gif' && !PICTURE_ONLY.has(to));
  if (AUDIO_TARGETS[to]) return [...audioSpecs(to, available), ...TRIM];
  return [];
}

// ---------------------------------------------------------------------------------------------
// Arguments

/** Animated GIF output's default rate and width (the first GIF_MAX_SECONDS of the result). */
export const GIF_FPS = 10;
export const GIF_WIDTH = 480;
export const GIF_MAX_SECONDS = 30;

function invalid(option: string, message: string, details: Record<string, unknown> = {}): ConvertdError {
  return new ConvertdError('invalid_option', `Option "${option}": ${message}`, { option, reason: message, ...details });
}

function nearest(rates: readonly number[], rate: number): number {
  return rates.reduce((best, r) => (Math.abs(r - rate) < Math.abs(best - rate) ? r : best));
}

/** The rate the encoder writes for the one asked for. */
function sampleRate(codec: AudioCodecId, rate: number): number {
  const rates = (AUDIO_CODECS[codec] as AudioCodec).rates;
  if (rates) return nearest(rates, rate);
  // FLAC's header names rates up to 65535 Hz, or multiples of 10 Hz beyond (RFC 9639, 9.1.2).
  if (codec === 'flac' && rate > 65_535) return Math.round(rate / 10) * 10;
  return rate;
}

/** Whether any audio option was given. */
export function hasAudioOptions(options: StepOptions): boolean {
  return AUDIO_OPTION_NAMES.some((name) => options[name] !== undefined);
}

/** Audio encoder arguments for a target (without -map/-vn): its defaults when no audio option is given. */
export function audioArgs(target: string, options: StepOptions): string[] {
  const spec = AUDIO_TARGETS[target];
  if (!spec) throw new ConvertdError('conversion_failed', `ffmpeg does not write sound in ${target}.`);
  if (!hasAudioOptions(options)) return [...spec.defaults, ...spec.fixed ?? []];
  const codecId = enumOption<AudioCodecId>(options, 'audio_codec') ?? spec.codecs[0]!;
  const codec: AudioCodec = AUDIO_CODECS[codecId];
  const args = ['-c:a', codec.encoder];
  const bitrate = numberOption(options, 'audio_bitrate');
  if (codec.bitrate) {
    if (bitrate !== undefined) {
      if (bitrate < codec.bitrate.minimum || bitrate > codec.bitrate.maximum) {
        throw invalid('audio_bitrate', `${codecId} takes ${codec.bitrate.minimum}-${codec.bitrate.maximum} kbit/s, not ${bitrate}.`, codec.bitrate);
      }
      args.push('-b:a', `${bitrate}k`);
      // libvorbis takes -b:a alone as a nominal rate and spends far less on simple sound (a third
      // of it on a pure tone); with the same minimum and maximum it holds the rate asked for.
      if (codecId === 'vorbis') args.push('-minrate', `${bitrate}k`, '-maxrate', `${bitrate}k`);
    } else if (codecId === spec.codecs[0] && spec.defaults.length > 2) {
      // The target's own setting for its default codec (an MP3's VBR quality, an M4A's 192k).
      args.push(...spec.defaults.slice(2));
    } else {
      const fallback = spec.bitrate[codecId];
      args.push(...(fallback !== undefined ? ['-b:a', `${fallback}k`] : QUALITY_DEFAULT[codecId] ?? []));
    }
  }
  const rate = numberOption(options, 'audio_frequency');
  if (rate !== undefined) args.push('-ar', String(sampleRate(codecId, rate)));
  const channels = numberOption(options, 'audio_channels');
  if (channels !== undefined) {
    if (channels > codec.maxChannels) throw invalid('audio_channels', `${codecId} holds at most ${codec.maxChannels} channels.`, { maximum: codec.maxChannels });
    // A layout, not only a count: the encoders refuse some of ffmpeg's default layouts (see LAYOUTS).
    args.push('-af', `aformat=channel_layouts=${codec.layouts?.[channels] ?? LAYOUTS[channels]!}`);
  }
  return [...args, ...spec.fixed ?? []];
}

/** The picture's filters: frame rate, then size (even for 4:2:0 encoders), or `fallback` when neither is asked. */
export function pictureFilter(options: StepOptions, even: boolean, fallback: string): string {
  const filters: string[] = [];
  const fps = numberOption(options, 'fps');
  if (fps !== undefined) filters.push(`fps=${fps}`);
  const size = scaleFilter(options, even);
  filters.push(size ?? fallback);
  return filters.join(',');
}

/** Rounds down to even (at least 2): yuv420p halves the chroma both ways. */
function evenDown(value: number): number {
  return Math.max(2, value - (value % 2));
}

/** The scale (and crop) filter for width/height/fit, or undefined when neither is given. */
export function scaleFilter(options: StepOptions, even: boolean, flags = ''): string | undefined {
  const size = requestedSize(options);
  if (!size) return undefined;
  const side = (value: number) => (even ? evenDown(value) : value);
  // -2 / -1: the other side follows the aspect ratio (rounded to even for -2).
  const free = even ? -2 : -1;
  const scaler = flags ? `:flags=${flags}` : '';
  const { width, height, fit } = size;
  if (width === undefined) return `scale=${free}:${side(height!)}${scaler}`;
  if (height === undefined) return `scale=${side(width)}:${free}${scaler}`;
  const [w, h] = [side(width), side(height)];
  switch (fit) {
    case 'scale': return `scale=${w}:${h}${scaler},setsar=1`;
    case 'crop': return `scale=${w}:${h}:force_original_aspect_ratio=increase${scaler},crop=${w}:${h},setsar=1`;
    default: return `scale=${w}:${h}:force_original_aspect_ratio=decrease${even ? ':force_divisible_by=2' : ''}${scaler}`;
  }
}

/** The size of the picture written, for the gate's frame cap (undefined: the source's). */
export function pictureSize(source: { width: number; height: number }, options: StepOptions): { width: number; height: number } | undefined {
  const size = requestedSize(options);
  if (!size) return undefined;
  const { width, height, fit } = size;
  if (width !== undefined && height !== undefined) {
    if (fit !== 'max') return { width, height };
    const scale = Math.min(width / source.width, height / source.height);
    return { width: Math.round(source.width * scale), height: Math.round(source.height * scale) };
  }
  if (width !== undefined) return { width, height: Math.round(source.height * width / source.width) };
  return { width: Math.round(source.width * height! / source.height), height: height! };
}

/** The video codec of a target: the option's, or the target's first. */
export function videoCodec(target: string, options: StepOptions): VideoCodecId {
  return enumOption<VideoCodecId>(options, 'video_codec') ?? VIDEO_TARGETS[target]?.[0] ?? 'h264';
}

/** The rate factor asked for, checked against the chosen encoder's range; undefined: its default. */
export function crfFor(codec: VideoCodecId, options: StepOptions): number | undefined {
  const crf = numberOption(options, 'crf');
  const range = (VIDEO_CODECS[codec] as VideoCodec).crf;
  if (crf === undefined || !range) return undefined;
  if (crf > range.maximum) throw invalid('crf', `${codec} takes a rate factor of 0-${range.maximum}, not ${crf}.`, { minimum: 0, maximum: range.maximum });
  return crf;
}

/** Options that bound each other, checked at submission: a crf past the range of the codec chosen (or the target's default one). */
export function checkTogether(target: string, options: StepOptions): void {
  if (VIDEO_TARGETS[target]) crfFor(videoCodec(target, options), options);
}

export function removeAudio(options: StepOptions): boolean {
  return booleanOption(options, 'remove_audio') === true;
}

/** The span asked for by trim_start/trim_end, in seconds of the source. */
export function trimOf(options: StepOptions): { start: number; end: number | undefined } {
  return { start: numberOption(options, 'trim_start') ?? 0, end: numberOption(options, 'trim_end') };
}

/**
 * Seconds of the source a job converts: the trimmed span, cut at the source's end. Throws
 * invalid_option when trim_start is at or past the end (known once ffmpeg has described the input).
 */
export function convertedSeconds(duration: number, options: StepOptions): number {
  const { start, end } = trimOf(options);
  // A duration of 0 is one the container does not declare: nothing to check against.
  if (duration <= 0) return end === undefined ? 0 : end - start;
  if (start >= duration) {
    throw invalid('trim_start', `the media lasts ${duration.toFixed(2)} s; ${start} s is at or past its end.`, { maximum: Math.floor(duration * 1000) / 1000 });
  }
  return Math.min(end ?? duration, duration) - start;
}
