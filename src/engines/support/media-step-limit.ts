// The step limit of an engine whose work grows with the media it converts (ffmpeg): a fixed limit
// would be too short for a film and far too long for a clip (issue #32: a frame bomb held a core
// for the job's whole 15 minutes). Settings of the engine: CONVERTD_FFMPEG_STEP_SECONDS and
// CONVERTD_FFMPEG_SECONDS_PER_MEDIA_SECOND.

export interface MediaStepSettings {
  readonly stepBaseSeconds: number;
  readonly stepSecondsPerMediaSecond: number;
}

/**
 * The limit in seconds: the base, plus so much per second of media converted, or 10 s per MB of
 * input where the media declares no length; never past the step's own limit.
 */
export function mediaStepSeconds(settings: MediaStepSettings, media: { mediaSeconds: number | undefined; inputBytes: number; stepLimitMs: number }): number {
  const growth = media.mediaSeconds !== undefined ? media.mediaSeconds * settings.stepSecondsPerMediaSecond : 10 * media.inputBytes / 1_000_000;
  return Math.max(1, Math.ceil(Math.min(media.stepLimitMs / 1000, settings.stepBaseSeconds + growth)));
}
