// The Ghostscript engine's settings, read from the environment when the service starts (a bad value
// stops it with a message naming the variable). The README's configuration table lists them.
import { wholeNumberSetting } from '../module.ts';

export type GhostscriptSettings = {
  readonly postscriptSeconds: number;
};

export const SETTINGS = {
  // PostScript is a program: `{} loop` never ends, and a page of nested loops can run for hours.
  // Its run gets a limit of its own, far below the engine's (which a large PDF may need).
  postscriptSeconds: wholeNumberSetting({
    env: 'CONVERTD_GHOSTSCRIPT_POSTSCRIPT_SECONDS',
    description: 'Wall-clock limit of running an uploaded PostScript or EPS program',
    min: 1,
    max: 3600,
    default: 60,
  }),
};
