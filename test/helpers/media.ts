// Independent checks of audio and video outputs: test/helpers/read_media.py (Debian's PyAV over
// Debian's libavformat and libavcodec, with ffprobe's field names and ffmpeg's resampling)
// describes a file (container, duration, frame size, frames counted by decoding, sample rate,
// channels) and decodes its sound to PCM, measured here (loudness, and how much of it is one
// tone). One long-lived process per test file (python-server.ts): the ffprobe and ffmpeg command
// lines it replaced cost about 0.2 s of CPU each to start, twice per output. The service's ffmpeg
// engine runs in its sandbox with its own arguments; this only reads.
import path from 'node:path';
import { PythonServer } from './python-server.ts';

interface MediaRequestOptions { probe?: boolean; count_frames?: boolean; picture_span?: boolean; sound?: boolean }
type MediaAnswer = Partial<ProbeJson> & { sound?: string; error?: string };
const reader = new PythonServer<[string, MediaRequestOptions], MediaAnswer>([path.join(import.meta.dirname, 'read_media.py'), '--serve'], 'read_media.py --serve');

async function readMedia(file: string, options: MediaRequestOptions): Promise<MediaAnswer> {
  const answer = await reader.request([path.resolve(file), options]);
  if (answer.error !== undefined) throw new Error(`read_media.py on ${file}: ${answer.error}`);
  return answer;
}

export interface MediaFacts {
  /** ffprobe's format_name ("mov,mp4,m4a,3gp,3g2,mj2", "ogg"...). */
  format: string;
  /** The container's duration in seconds (0 when it declares none). */
  duration: number;
  video?: {
    /** ffprobe's codec_name ("h264", "mpeg2video"...). */
    codec: string;
    width: number;
    height: number;
    /** Frames counted by decoding the stream (ffprobe -count_frames), when asked for. */
    frames?: number;
    /** Frames a second (r_frame_rate). */
    fps: number;
    /**
     * How long the picture lasts, when asked for: the first packet's timestamp to the last one's
     * end. Right for variable frame rates too, where frames over rate is not, and free of the
     * container's own figure (which counts subtitles and padding).
     */
    seconds?: number;
  };
  audio?: { sampleRate: number; channels: number; codec: string };
}

interface ProbeJson {
  format: { format_name: string; duration?: string };
  packets?: Array<{ codec_type: string; stream_index: number; pts_time?: string; duration_time?: string }>;
  streams: Array<{
    index: number; codec_type: string; codec_name?: string; width?: number; height?: number; r_frame_rate?: string;
    nb_read_frames?: string; sample_rate?: string; channels?: number;
  }>;
}

/**
 * Describes a media file as ffprobe would; `countFrames` decodes the video to count its frames,
 * `pictureSpan` lists the video packets (no decoding) to time the picture.
 */
export async function probeMedia(file: string, options: { countFrames?: boolean; pictureSpan?: boolean } = {}): Promise<MediaFacts> {
  const { format, streams, packets } = await readMedia(file, { count_frames: options.countFrames ?? false, picture_span: options.pictureSpan ?? false }) as ProbeJson;
  const video = streams.find((s) => s.codec_type === 'video');
  const audio = streams.find((s) => s.codec_type === 'audio');
  const [num, den] = (video?.r_frame_rate ?? '0/1').split('/').map(Number) as [number, number];
  return {
    format: format.format_name,
    duration: Number(format.duration ?? 0),
    video: video ? {
      codec: video.codec_name!, width: video.width!, height: video.height!, fps: den ? num / den : 0,
      frames: video.nb_read_frames === undefined ? undefined : Number(video.nb_read_frames),
      seconds: packets ? span(packets.filter((p) => p.stream_index === video.index)) : undefined,
    } : undefined,
    audio: audio ? { sampleRate: Number(audio.sample_rate), channels: audio.channels!, codec: audio.codec_name! } : undefined,
  };
}

/** First packet's timestamp to the last one's end (packets come in decoding order: min and max). */
function span(packets: NonNullable<ProbeJson['packets']>): number {
  let first = Infinity;
  let end = -Infinity;
  for (const packet of packets) {
    const time = Number(packet.pts_time);
    if (!Number.isFinite(time)) continue;
    const duration = Number(packet.duration_time);
    first = Math.min(first, time);
    end = Math.max(end, time + (Number.isFinite(duration) ? duration : 0));
  }
  return Number.isFinite(first) ? end - first : 0;
}

export interface Sound {
  /** Root mean square level of the first audio stream, in dB below full scale (-Infinity: digital silence). */
  rmsDb: number;
  /** Seconds of sound decoded. */
  seconds: number;
  /** Share (0..1) of the sound's power at `frequency` Hz (a pure tone there: about 1). */
  toneShare(frequency: number): number;
}

/** Sample rate the sound is decoded at for measuring: plenty for tones up to a few kHz. */
const MEASURE_RATE = 16_000;

/** Decodes the first audio stream to mono 16-bit PCM at MEASURE_RATE (as `ffmpeg -ac 1 -ar` does) and measures it. */
export async function decodeSound(file: string): Promise<Sound> {
  const stdout = Buffer.from((await readMedia(file, { probe: false, sound: true })).sound!, 'base64');
  const samples = new Float64Array(stdout.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = stdout.readInt16LE(i * 2) / 32768;
  let power = 0;
  for (const x of samples) power += x * x;
  power = samples.length ? power / samples.length : 0;
  return {
    rmsDb: 10 * Math.log10(power),
    seconds: samples.length / MEASURE_RATE,
    toneShare(frequency) {
      // One bin of the Fourier transform over the whole signal (Goertzel's recurrence): a sine of
      // amplitude A holds power A²/2, as does the bin, so their ratio is the tone's share.
      if (!samples.length || power === 0) return 0;
      const w = 2 * Math.PI * frequency / MEASURE_RATE;
      const coefficient = 2 * Math.cos(w);
      let s1 = 0;
      let s2 = 0;
      for (const x of samples) {
        const s = x + coefficient * s1 - s2;
        s2 = s1;
        s1 = s;
      }
      const magnitude2 = s1 * s1 + s2 * s2 - coefficient * s1 * s2;
      const tonePower = 2 * magnitude2 / (samples.length * samples.length);
      return tonePower / power;
    },
  };
}

