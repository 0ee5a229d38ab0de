// Option values are hostile text: each is parsed into its type here (engines/options.ts) before a
// job is accepted, and an engine only ever sees the parsed value. Checked directly: the parsers
// are exact, and every HTTP case would only repeat them more slowly (test/options-api.test.ts
// checks the same refusals through the API).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConvertdError } from '../src/errors.ts';
import { checkOptions, narrow, OPTIONS, pageRuns, parseOption, refuseFalse, selectPages, type OptionSpec } from '../src/engines/options.ts';

function refused(spec: OptionSpec, raw: string): Record<string, unknown> {
  try {
    parseOption(spec, raw);
  } catch (error) {
    assert.ok(error instanceof ConvertdError, `${spec.name}=${JSON.stringify(raw)} threw ${String(error)}`);
    assert.equal(error.code, 'invalid_option');
    assert.equal(error.details.option, spec.name);
    assert.equal(typeof error.details.reason, 'string');
    return error.details;
  }
  assert.fail(`${spec.name}=${JSON.stringify(raw).slice(0, 60)} was accepted`);
}

test('numbers: plain decimals within bounds, and the bounds are in the refusal', () => {
  assert.equal(parseOption(OPTIONS.quality, '80'), 80);
  assert.equal(parseOption(OPTIONS.quality, ' 7 '), 7);
  assert.equal(parseOption(OPTIONS.fps, '29.97'), 29.97);
  for (const raw of ['0', '101', '-5', '1e2', '0x10', '80abc', 'Infinity', 'NaN', '8.5', '', '  ', '9'.repeat(40)]) {
    const details = refused(OPTIONS.quality, raw);
    assert.equal(details.minimum, 1);
    assert.equal(details.maximum, 100);
  }
  refused(OPTIONS.fps, '100000');
  refused(OPTIONS.fps, '0');
  refused(OPTIONS.width, '1000000');
});

test('booleans, enums and narrowed specs', () => {
  assert.equal(parseOption(OPTIONS.strip, 'false'), false);
  assert.equal(parseOption(OPTIONS.strip, 'TRUE'), true);
  assert.equal(parseOption(OPTIONS.strip, '1'), true);
  refused(OPTIONS.strip, 'maybe');
  assert.equal(parseOption(OPTIONS.fit, 'Crop'), 'crop');
  assert.deepEqual(refused(OPTIONS.fit, 'zoom').values, ['max', 'crop', 'scale']);
  const codecs = narrow(OPTIONS.video_codec, { values: ['h264', 'vp9'] });
  assert.equal(parseOption(codecs, 'vp9'), 'vp9');
  // A value shaped like an engine argument is just a word that is not on the list.
  refused(codecs, 'libx264');
  refused(codecs, '-c:v copy');
  assert.equal(narrow(OPTIONS.quality, { default: 40 }).default, 40);
  assert.equal((OPTIONS.quality as OptionSpec).default, undefined, 'narrowing copies, never changes the shared spec');
});

test('control characters, huge values and argument-like text are refused', () => {
  for (const raw of ['80\u0000', '80\n--help', '\r80', 'a\u007f']) refused(OPTIONS.quality, raw);
  refused(OPTIONS.sheet, 'Sheet1\u0000');
  refused(OPTIONS.sheet, 'x'.repeat(1024 * 1024));
  refused(OPTIONS.background, 'red');
  refused(OPTIONS.background, '#12345');
  refused(OPTIONS.background, '--fill=#fff');
  assert.deepEqual(parseOption(OPTIONS.background, '#0F8'), { kind: 'rgb', r: 0, g: 255, b: 136 });
  assert.deepEqual(parseOption(OPTIONS.background, '00ff00'), { kind: 'rgb', r: 0, g: 255, b: 0 });
  assert.equal(parseOption(OPTIONS.delimiter, ';'), ';');
  for (const raw of [',,', 'a', 'tab', '\t']) refused(OPTIONS.delimiter, raw);
});

test('page ranges: the contract syntax, bounded in numbers and parts', () => {
  assert.deepEqual(parseOption(OPTIONS.page_range, '1-3,5'), { kind: 'pages', spans: [{ from: 1, to: 3 }, { from: 5, to: 5 }] });
  assert.deepEqual(parseOption(OPTIONS.page_range, '2-'), { kind: 'pages', spans: [{ from: 2, to: undefined }] });
  assert.deepEqual(parseOption(OPTIONS.page_range, ' 4 - 6 , 9 '), { kind: 'pages', spans: [{ from: 4, to: 6 }, { from: 9, to: 9 }] });
  for (const raw of ['0', '5-2', '1-99999999', 'abc', '1;rm -rf /', '-3', '1,,2', Array.from({ length: 1000 }, (_, i) => String(i + 1)).join(','), '1-1000001']) {
    refused(OPTIONS.page_range, raw);
  }
  const ranges = parseOption(OPTIONS.page_range, '2-3,3,7-') as Parameters<typeof selectPages>[0];
  assert.deepEqual(selectPages(ranges, 8), [2, 3, 7, 8]);
  assert.deepEqual(pageRuns([2, 3, 7, 8, 10]), [{ first: 2, last: 3 }, { first: 7, last: 8 }, { first: 10, last: 10 }]);
  assert.throws(() => selectPages(parseOption(OPTIONS.page_range, '50') as Parameters<typeof selectPages>[0], 3),
    (error: unknown) => error instanceof ConvertdError && error.code === 'invalid_option' && error.details.maximum === 3);
});

test('trim points: seconds or clock time, minutes and seconds below 60, bounded', () => {
  assert.equal(parseOption(OPTIONS.trim_start, '12.5'), 12.5);
  assert.equal(parseOption(OPTIONS.trim_start, '01:02:03.250'), 3723.25);
  assert.equal(parseOption(OPTIONS.trim_end, '1:30'), 90);
  assert.equal(parseOption(OPTIONS.trim_end, '90'), 90);
  for (const raw of ['1:75', 'abc', '-1', '1:2:3:4', '99999999', '1.2.3']) refused(OPTIONS.trim_start, raw);
});

test('options that bound each other are checked together', () => {
  const specs = [OPTIONS.width, OPTIONS.height, OPTIONS.trim_start, OPTIONS.trim_end];
  assert.deepEqual(checkOptions(specs, { width: '100', height: '50' }, { maxImagePixels: 10_000 }), { width: 100, height: 50 });
  assert.throws(() => checkOptions(specs, { width: '200', height: '100' }, { maxImagePixels: 10_000 }), /pixels/);
  assert.throws(() => checkOptions(specs, { trim_start: '10', trim_end: '5' }, { maxImagePixels: 1 }), /trim_end/);
  assert.deepEqual(checkOptions(specs, { unknown: 'x' }, { maxImagePixels: 1 }), {}, 'names without a spec are the caller\'s to ignore');
});

test('refuseFalse: an option that turns an edge on refuses false (the cheaper route\'s default), lets true and absence through', () => {
  assert.doesNotThrow(() => refuseFalse({}, 'ocr', 'a picture PDF', 'for a searchable PDF'));
  assert.doesNotThrow(() => refuseFalse({ ocr: true }, 'ocr', 'a picture PDF', 'for a searchable PDF'));
  assert.throws(() => refuseFalse({ ocr: false }, 'ocr', 'a picture PDF', 'for a searchable PDF'), (error: unknown) => {
    assert.ok(error instanceof ConvertdError);
    assert.equal(error.code, 'invalid_option');
    assert.equal(error.message, 'Option "ocr": false is what the conversion does without it (a picture PDF): leave the option out, or send ocr=true for a searchable PDF.');
    assert.deepEqual(error.details, { option: 'ocr', reason: 'false is the default route: leave the option out', values: [true] });
    return true;
  });
});
