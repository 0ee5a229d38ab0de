// ffmpeg's step limit (src/engines/support/media-step-limit.ts): it grows with the media's
// length, stands in the input's size where no length is declared, and never passes the step's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mediaStepSeconds } from '../src/engines/support/media-step-limit.ts';

const defaults = { stepBaseSeconds: 60, stepSecondsPerMediaSecond: 4 };
const FIFTEEN_MINUTES = 900_000;

test('a clip gets about a minute, an hour of film the whole step, and the limit grows with the part converted', () => {
  assert.equal(mediaStepSeconds(defaults, { mediaSeconds: 1, inputBytes: 10_000, stepLimitMs: FIFTEEN_MINUTES }), 64);
  assert.equal(mediaStepSeconds(defaults, { mediaSeconds: 120, inputBytes: 10_000, stepLimitMs: FIFTEEN_MINUTES }), 540);
  assert.equal(mediaStepSeconds(defaults, { mediaSeconds: 3600, inputBytes: 10_000, stepLimitMs: FIFTEEN_MINUTES }), 900);
  assert.equal(mediaStepSeconds({ stepBaseSeconds: 1, stepSecondsPerMediaSecond: 0 }, { mediaSeconds: 120, inputBytes: 10_000, stepLimitMs: FIFTEEN_MINUTES }), 1);
});

test('media that declares no length is held by its size: 10 s a megabyte over the base', () => {
  assert.equal(mediaStepSeconds(defaults, { mediaSeconds: undefined, inputBytes: 0, stepLimitMs: FIFTEEN_MINUTES }), 60);
  assert.equal(mediaStepSeconds(defaults, { mediaSeconds: undefined, inputBytes: 25_000_000, stepLimitMs: FIFTEEN_MINUTES }), 310);
  assert.equal(mediaStepSeconds(defaults, { mediaSeconds: undefined, inputBytes: 25_000_000, stepLimitMs: 30_000 }), 30);
});
