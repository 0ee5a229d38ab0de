// Audio and video through Debian's ffmpeg. Safety first (shared/security.md section 2): ffmpeg
// probes by content, so an HLS playlist or a concat script uploaded as "video.mp4" would make it
// open other files. Every input is probed with ffprobe and accepted only when its container
// is on an allow-list; both tools run with `-protocol_whitelist file` and `-format_whitelist`, in
// the sandbox where only the job's own directory exists. Duration and resolution caps are checked
// on the probe, which runs beside ffmpeg's start and stops it when it refuses (see convert).
// Progress is real: ffmpeg's `-progress` output against the probed duration.
import path from 'node:path';
import { ConvertdError } from '../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE, runProcess } from '../process/runner.ts';
import { withProbeDir } from './probe-dir.ts';
import type { ConversionEdge, ConvertRequest, Engine } from './types.ts';

const AUDIO_SOURCES = ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff', 'wma', 'ac3', 'amr'];
const AUDIO_TARGETS = ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff'];
const VIDEO_SOURCES = ['mp4', 'webm', 'mkv', 'mov', 'avi', 'mpeg', 'flv', '3gp', 'wmv', 'ogv', 'm4v'];
const VIDEO_TARGETS = ['mp4', 'webm', 'mkv', 'mov', 'avi', 'gif'];

/** Demuxers ffmpeg may use: nothing that reads other files (hls, concat, image2 sequences...). */
const DEMUXERS = 'mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,mp3,wav,flac,ogg,aac,mpeg,flv,asf,aiff,ac3,amr,gif';
/** ffprobe's format_name values accepted (each a demuxer of the list above). */
const ACCEPTED_CONTAINERS = new Set([
  'mov,mp4,m4a,3gp,3g2,mj2', 'matroska,webm', 'avi', 'mp3', 'wav', 'flac', 'ogg', 'aac', 'mpeg', 'flv', 'asf', 'aiff', 'ac3', 'amr', 'gif',
]);

/** Largest video frame decoded: 4096 x 4096. */
const MAX_FRAME_PIXELS = 4096 * 4096;
/** Most frames a video may declare (four hours at 30 fps; a GIF frame bomb declares far more for its size). */
const MAX_FRAMES = 432_000;
/** Animated GIF output: the first GIF_MAX_SECONDS, GIF_FPS frames a second, at most GIF_WIDTH wide. */
const GIF_MAX_SECONDS = 30;
const GIF_FPS = 10;
const GIF_WIDTH = 480;

function edges(): ConversionEdge[] {
  const list: ConversionEdge[] = [];
  for (const from of AUDIO_SOURCES) {
    for (const to of AUDIO_TARGETS) if (to !== from) list.push({ from, to, cost: 2 });
  }
  for (const from of VIDEO_SOURCES) {
    for (const to of VIDEO_TARGETS) {
      // video → gif leaves the video family: only for an uploaded video, never mid-route.
      if (to !== from) list.push({ from, to, cost: to === 'webm' ? 12 : 8, chainable: to !== 'gif' });
    }
    for (const to of AUDIO_TARGETS) list.push({ from, to, cost: 3 });
  }
  // An animated GIF becomes a video worth the name.
  // Only for an uploaded GIF: chained, it would make videos (and then sound) out of still images.
  for (const to of ['mp4', 'webm']) list.push({ from: 'gif', to, cost: to === 'webm' ? 12 : 8, chainable: false });
  return list;
}

interface Probe {
  container: string;
  duration: number;
  /** Frames the video stream declares, where the container says. */
  frames: number;
  video?: { width: number; height: number };
  hasAudio: boolean;
}

const MUXER: Record<string, string> = {
  mp3: 'mp3', wav: 'wav', flac: 'flac', ogg: 'ogg', opus: 'opus', m4a: 'ipod', aiff: 'aiff',
  mp4: 'mp4', webm: 'webm', mkv: 'matroska', mov: 'mov', avi: 'avi', gif: 'gif',
};

/** x264 preset by length: quality for short clips, speed for long ones (the job has a time limit). */
function x264Preset(seconds: number): string {
  if (seconds <= 60) return 'medium';
  if (seconds <= 600) return 'fast';
  return 'veryfast';
}

/** Even dimensions, which 4:2:0 encoders require. */
const EVEN = 'scale=trunc(iw/2)*2:trunc(ih/2)*2';

/** A video container asked for a file that has only sound: the sound alone, in that container. */
const AUDIO_ONLY_IN_VIDEO_CONTAINER: Record<string, string[]> = {
  mp4: ['-c:a', 'aac', '-b:a', '160k', '-movflags', '+faststart'],
  mov: ['-c:a', 'aac', '-b:a', '160k'],
  mkv: ['-c:a', 'aac', '-b:a', '160k'],
  webm: ['-c:a', 'libopus', '-b:a', '128k'],
  avi: ['-c:a', 'libmp3lame', '-q:a', '4'],
};

/** Encoders of the sound targets: the same whatever the input holds. */
const SOUND_ENCODERS: Record<string, string[]> = {
  mp3: ['-vn', '-sn', '-dn', '-c:a', 'libmp3lame', '-q:a', '2'],
  wav: ['-vn', '-sn', '-dn', '-c:a', 'pcm_s16le'],
  flac: ['-vn', '-sn', '-dn', '-c:a', 'flac'],
  ogg: ['-vn', '-sn', '-dn', '-c:a', 'libvorbis', '-q:a', '5'],
  opus: ['-vn', '-sn', '-dn', '-c:a', 'libopus', '-b:a', '128k'],
  m4a: ['-vn', '-sn', '-dn', '-c:a', 'aac', '-b:a', '192k'],
  aiff: ['-vn', '-sn', '-dn', '-c:a', 'pcm_s16be'],
};

/** What ffmpeg assumes before the probe answers: a short clip with a picture and sound. */
const SHORT_CLIP: Probe = { container: '', duration: 1, frames: 0, video: { width: 2, height: 2 }, hasAudio: true };

/** The encoder's arguments: a sound target's are the same whatever the probe says. */
function encoderArgs(to: string, probe: Probe): string[] {
  const sound = SOUND_ENCODERS[to];
  if (sound) return sound;
  const audioOnly = AUDIO_ONLY_IN_VIDEO_CONTAINER[to];
  if (!probe.video && audioOnly) return ['-map', '0:a:0', '-vn', '-sn', '-dn', ...audioOnly];
  const h264 = ['-c:v', 'libx264', '-preset', x264Preset(probe.duration), '-crf', '23', '-pix_fmt', 'yuv420p', '-vf', EVEN];
  const aac = ['-c:a', 'aac', '-b:a', '160k'];
  const videoMap = ['-map', '0:v:0', '-map', '0:a:0?', '-sn', '-dn'];
  switch (to) {
    case 'mp4': return [...videoMap, ...h264, ...aac, '-movflags', '+faststart'];
    case 'mov': return [...videoMap, ...h264, ...aac, '-movflags', '+faststart'];
    case 'mkv': return [...videoMap, ...h264, ...aac];
    case 'webm': {
      // VP9 at libvpx's defaults runs about 16x slower than realtime here (shared/stack.md): "good"
      // with cpu-used 4 for short clips, the realtime mode for long ones.
      const speed = probe.duration <= 30 ? ['-deadline', 'good', '-cpu-used', '4'] : ['-deadline', 'realtime', '-cpu-used', '8'];
      return [...videoMap, '-c:v', 'libvpx-vp9', ...speed, '-row-mt', '1', '-crf', '33', '-b:v', '0', '-pix_fmt', 'yuv420p', '-vf', EVEN, '-c:a', 'libopus', '-b:a', '128k'];
    }
    case 'avi': return [...videoMap, '-c:v', 'mpeg4', '-q:v', '4', '-vf', EVEN, '-c:a', 'libmp3lame', '-q:a', '4'];
    case 'gif': return [
      '-map', '0:v:0', '-an', '-sn', '-dn', '-t', String(GIF_MAX_SECONDS),
      '-vf', `fps=${GIF_FPS},scale='min(${GIF_WIDTH},iw)':-2:flags=lanczos,split[a][b];[a]palettegen=stats_mode=diff[p];[b][p]paletteuse=dither=bayer:bayer_scale=3`,
      '-loop', '0',
    ];
    default: throw new ConvertdError('conversion_failed', `ffmpeg does not write ${to}.`);
  }
}

export class FfmpegEngine implements Engine {
  readonly id = 'ffmpeg';
  readonly edges = edges();
  readonly reportsProgress = true;

  estimateSeconds(inputBytes: number): number {
    return 1 + inputBytes / 1_000_000;
  }

  async probe(): Promise<void> {
    await withProbeDir('ffmpeg', async (dir) => {
      const result = await runProcess('/usr/bin/ffmpeg', [
        '-nostdin', '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=duration=0.2',
        '-c:a', 'libmp3lame', '-f', 'mp3', '-y', 'file:probe.mp3',
      ], { cwd: dir, timeoutMs: 20_000 });
      ensureSuccess(result, 'ffmpeg');
      const probe = await this.inspect(path.join(dir, 'probe.mp3'), dir, 20_000);
      if (probe.container !== 'mp3' || !probe.hasAudio) throw new Error('ffprobe did not read back what ffmpeg wrote');
    });
  }

  /** ffprobe, with the same allow-lists as the conversion. */
  private async inspect(input: string, workDir: string, timeoutMs: number, signal?: AbortSignal): Promise<Probe> {
    const result = await runProcess('/usr/bin/ffprobe', [
      '-v', 'error', '-protocol_whitelist', 'file', '-format_whitelist', DEMUXERS,
      '-show_entries', 'format=format_name,duration:stream=codec_type,width,height,duration,nb_frames',
      '-of', 'json', `file:${path.basename(input)}`,
    ], { cwd: workDir, timeoutMs, signal, captureStdout: true });
    // Killed from outside (not by its limits, which the runner reports itself): the file is not to blame.
    if (result.exitCode === null) ensureSuccess(result, 'ffprobe');
    if (result.exitCode !== 0) {
      const detail = lastErrorLine(result.stderr);
      if (/not on whitelist/i.test(detail)) {
        throw new ConvertdError('unsupported_format', 'The file is a media playlist or script, not a media file this service converts.');
      }
      throw new ConvertdError('corrupt_input', `The media file could not be read${detail ? ` (${detail})` : ''}: it may be damaged or truncated.`);
    }
    const parsed = JSON.parse(result.stdout) as {
      format?: { format_name?: string; duration?: string };
      streams?: Array<{ codec_type?: string; width?: number; height?: number; duration?: string; nb_frames?: string }>;
    };
    const streams = parsed.streams ?? [];
    const video = streams.find((s) => s.codec_type === 'video' && s.width && s.height);
    const durations = [parsed.format?.duration, ...streams.map((s) => s.duration)].map(Number).filter((d) => Number.isFinite(d) && d > 0);
    return {
      container: parsed.format?.format_name ?? '',
      duration: durations.length ? Math.max(...durations) : 0,
      frames: Number(video?.nb_frames) || 0,
      video: video ? { width: video.width!, height: video.height! } : undefined,
      hasAudio: streams.some((s) => s.codec_type === 'audio'),
    };
  }

  /**
   * ffmpeg starts beside ffprobe instead of after it: both tools take about a tenth of a second
   * just to load their libraries, which was most of a short clip's time. It starts with the
   * arguments a short clip with a picture would get (a sound target's are the same whatever the
   * input). When the probe answers, an input it refuses stops ffmpeg with the probe's answer; an
   * input that needs other arguments (a long one, or one without a picture) makes ffmpeg start
   * again with them; otherwise the first run goes on. ffmpeg is held to the same demuxer and
   * protocol allow-lists, sandbox and limits either way.
   */
  async convert(request: ConvertRequest): Promise<void> {
    const guess = encoderArgs(request.to, SHORT_CLIP);
    const stopped = new AbortController();
    let expected = 0;
    const first = this.encode(request, guess, () => expected, AbortSignal.any([request.signal, stopped.signal]));
    first.catch(() => undefined); // awaited below, after the probe's verdict
    let probe: Probe;
    try {
      probe = await this.inspect(request.input, request.workDir, request.limits.timeoutMs, request.signal);
      this.admit(probe, request);
    } catch (error) {
      stopped.abort(error);
      await first.catch(() => undefined);
      throw error;
    }
    const args = encoderArgs(request.to, probe);
    if (args.join('\0') === guess.join('\0')) {
      expected = probe.duration;
      await first;
      return;
    }
    stopped.abort(new Error('started again with the arguments the probe asks for'));
    await first.catch(() => undefined);
    expected = probe.duration;
    await this.encode(request, args, () => expected, request.signal);
  }

  /** The probe's gate: allowed container, duration and size caps, the streams the target needs. */
  private admit(probe: Probe, { to, limits }: ConvertRequest): void {
    if (!ACCEPTED_CONTAINERS.has(probe.container)) {
      throw new ConvertdError('unsupported_format', `The file's container (${probe.container || 'unknown'}) is not one this service converts.`);
    }
    if (probe.duration > limits.maxMediaSeconds) {
      throw new ConvertdError('input_too_complex', `The media lasts ${Math.round(probe.duration)} s; this service converts at most ${limits.maxMediaSeconds} s.`);
    }
    if (probe.video && probe.video.width * probe.video.height > MAX_FRAME_PIXELS) {
      throw new ConvertdError('input_too_complex', `The video is ${probe.video.width}x${probe.video.height}; this service converts at most 4096x4096.`);
    }
    if (probe.frames > MAX_FRAMES) {
      throw new ConvertdError('input_too_complex', `The video declares ${probe.frames} frames; this service converts at most ${MAX_FRAMES}.`);
    }
    if (to === 'gif' && !probe.video) throw new ConvertdError('conversion_failed', 'The file has no video stream to make an animation from.');
    if (!probe.video && !probe.hasAudio) throw new ConvertdError('conversion_failed', 'The file has neither a video nor an audio stream.');
    if (!VIDEO_TARGETS.includes(to) && !probe.hasAudio) throw new ConvertdError('conversion_failed', 'The file has no audio stream to extract.');
  }

  /** One ffmpeg run; progress is -progress's output time against the expected duration (0: none). */
  private async encode(request: ConvertRequest, encoder: string[], expectedSeconds: () => number, signal: AbortSignal): Promise<void> {
    const { input, output, to, workDir, limits } = request;
    const args = [
      '-nostdin', '-hide_banner', '-loglevel', 'error', '-nostats', '-progress', 'pipe:1',
      '-protocol_whitelist', 'file', '-format_whitelist', DEMUXERS,
      '-i', `file:${path.basename(input)}`,
      '-threads', '2',
      '-t', String(limits.maxMediaSeconds),
      '-fs', String(limits.maxOutputBytes),
      ...encoder,
      '-f', MUXER[to]!, '-y', `file:${path.basename(output)}`,
    ];
    const result = await runProcess('/usr/bin/ffmpeg', args, {
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
    });
    ensureSuccess(result, 'ffmpeg');
  }
}
