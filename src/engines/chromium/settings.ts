// The chromium engine's settings, read from the environment when the service starts (a bad value
// stops it with a message naming the variable). The README's configuration table lists them.
import { wholeNumberSetting } from '../module.ts';

export interface ChromiumSettings {
  readonly poolSize: number;
  readonly maxJobs: number;
}

export const SETTINGS = {
  poolSize: wholeNumberSetting({
    env: 'CONVERTD_CHROMIUM_POOL',
    description: 'Warm Chromium browsers, each in its own sandboxed helper process (about 150-250 MiB each)',
    min: 1,
    max: 64,
    default: ({ cores }) => Math.min(2, cores),
    defaultText: 'the number of cores, at most 2',
  }),
  maxJobs: wholeNumberSetting({
    env: 'CONVERTD_CHROMIUM_MAX_JOBS',
    description: 'Pages a Chromium browser renders before it is replaced by a fresh one (started ahead of time)',
    min: 1,
    max: 100_000,
    default: 100,
  }),
};
