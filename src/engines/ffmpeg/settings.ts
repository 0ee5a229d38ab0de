// The ffmpeg engine's settings, read from the environment when the service starts (a bad value
// stops it with a message naming the variable). The README's configuration table lists them.
import { wholeNumberSetting } from '../module.ts';

export type FfmpegSettings = {
  readonly stepBaseSeconds: number;
  readonly stepSecondsPerMediaSecond: number;
};

// ffmpeg's work grows with the media's length, so its step limit does too: a fixed limit would be
// too short for a film or far too long for a clip (issue #32: a frame bomb held a core for the
// job's whole 15 minutes). The job's own limit still applies on top.
export const SETTINGS = {
  stepBaseSeconds: wholeNumberSetting({
    env: 'CONVERTD_FFMPEG_STEP_SECONDS',
    description: 'ffmpeg\'s wall-clock limit of one conversion before the media\'s length is counted (a file that declares no length gets this plus 10 s per MB)',
    min: 1,
    max: 86_400,
    default: 60,
  }),
  stepSecondsPerMediaSecond: wholeNumberSetting({
    env: 'CONVERTD_FFMPEG_SECONDS_PER_MEDIA_SECOND',
    description: 'Seconds ffmpeg\'s limit grows by for each second of media converted (4: a conversion may run at a quarter of real time)',
    min: 0,
    max: 3600,
    default: 4,
  }),
};
