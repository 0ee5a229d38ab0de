// The LibreOffice engine's settings, read from the environment when the service starts (a bad
// value stops it with a message naming the variable). The README's configuration table lists them.
import { choiceSetting, wholeNumberSetting } from '../module.ts';

export interface LibreOfficeSettings {
  readonly poolSize: number;
  readonly maxJobs: number;
  readonly start: 'eager' | 'lazy';
  readonly queue: number;
}

export const SETTINGS = {
  poolSize: wholeNumberSetting({
    env: 'CONVERTD_LIBREOFFICE_POOL',
    description: 'Warm LibreOffice processes (about 300 MiB each once warm)',
    min: 1,
    max: 64,
    default: ({ cores }) => Math.min(4, cores),
    defaultText: 'the number of cores, at most 4',
  }),
  maxJobs: wholeNumberSetting({
    env: 'CONVERTD_LIBREOFFICE_MAX_JOBS',
    description: 'Conversions after which a LibreOffice process is replaced by a fresh one (started ahead of time)',
    min: 1,
    default: 100,
  }),
  start: choiceSetting({
    env: 'CONVERTD_LIBREOFFICE_START',
    description: '`eager` starts the pool with the service; `lazy` starts a process on its first job',
    values: ['eager', 'lazy'],
  }),
  queue: wholeNumberSetting({
    env: 'CONVERTD_LIBREOFFICE_QUEUE',
    description: 'Jobs that may wait for a free LibreOffice process; more fail at once',
    min: 0,
    default: 100,
  }),
};
