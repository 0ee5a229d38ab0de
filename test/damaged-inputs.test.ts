// Empty, truncated and corrupt files of every family (issue 5). A sample of each family is made
// here (with the tools, or by the service from a text sample), then cut to its first half, cut to
// its first 16 bytes, and corrupted (a run of bytes in its middle overwritten). Each damaged file
// is refused at submission with a documented code, or its job ends done or in error with a
// documented job code: never internal_error, never a hang, never a crash; afterwards the service
// converts a good file of every family. (An empty file is 400 missing_file: api-contract.)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { strToU8, zipSync } from 'fflate';
import { JOB_ERROR_CODES } from '../src/errors.ts';
import { convert, submit, waitForJob, type ErrorBody, type SubmitAnswer } from './helpers/client.ts';
import { handmadeDocx, MARKER, TEXT_SAMPLES } from './helpers/documents.ts';
import { sampleImage } from './helpers/fixtures.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

let server: RunningServer;
/** name → [sample, target] */
const samples = new Map<string, [Buffer, string]>();

/** What a damaged file may end in: any documented job error but internal_error and interrupted. */
const ACCEPTABLE_JOB_ERRORS = new Set<string>(JOB_ERROR_CODES.filter((code) => code !== 'internal_error'));
ACCEPTABLE_JOB_ERRORS.delete('interrupted');
/** What a damaged file may be refused with at submission. */
const ACCEPTABLE_REFUSALS = new Set(['unsupported_format', 'unsupported_target']);

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_MAX_ATTEMPTS: '1' });
  const dir = await tempDir('convertd-damaged-');
  const { VIPSHOME: _ignored, ...env } = process.env;
  const ffmpeg = (args: string[]) => execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', ...args], { cwd: dir, env });
  ffmpeg(['-f', 'lavfi', '-i', 'sine=frequency=440:duration=2', 'sample.wav']);
  ffmpeg(['-f', 'lavfi', '-i', 'sine=frequency=440:duration=2', 'sample.mp3']);
  ffmpeg(['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10:duration=2', '-pix_fmt', 'yuv420p', 'sample.mp4']);
  execFileSync('bsdtar', ['-c', '-z', '-f', 'sample.tar.gz', 'sample.wav'], { cwd: dir });
  for (const format of ['png', 'jpg', 'gif', 'webp', 'tiff']) samples.set(`sample.${format}`, [await sampleImage(format), format === 'png' ? 'webp' : 'png']);
  samples.set('sample.svg', [Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="30"><rect width="40" height="30" fill="#2a6"/><text x="2" y="20">Hi</text></svg>'), 'png']);
  samples.set('sample.docx', [handmadeDocx({ text: MARKER }), 'pdf']);
  samples.set('sample.fodt', [Buffer.from(TEXT_SAMPLES.fodt!), 'pdf']);
  samples.set('sample.md', [Buffer.from(TEXT_SAMPLES.md!), 'html']);
  // Made by the service from text samples: a PDF, an EPUB and a workbook.
  samples.set('sample.pdf', [(await convert(server.url, Buffer.from(TEXT_SAMPLES.fodt!), 'sample.fodt', 'pdf')).bytes, 'png']);
  samples.set('sample.epub', [(await convert(server.url, Buffer.from(TEXT_SAMPLES.md!), 'sample.md', 'epub')).bytes, 'txt']);
  samples.set('sample.xlsx', [(await convert(server.url, Buffer.from('name,count\ntrout,5\n'), 'sample.csv', 'xlsx')).bytes, 'csv']);
  samples.set('sample.json', [Buffer.from(JSON.stringify([{ name: MARKER, count: 2 }, { name: 'trout', count: 5 }])), 'csv']);
  samples.set('sample.csv', [Buffer.from('name,count\ntrout,5\nsalmon,3\n'), 'json']);
  samples.set('sample.wav', [await fs.readFile(path.join(dir, 'sample.wav')), 'mp3']);
  samples.set('sample.mp3', [await fs.readFile(path.join(dir, 'sample.mp3')), 'wav']);
  samples.set('sample.mp4', [await fs.readFile(path.join(dir, 'sample.mp4')), 'webm']);
  samples.set('sample.zip', [Buffer.from(zipSync({ 'a.txt': strToU8(`${MARKER}\n`.repeat(200)), 'b/c.txt': strToU8('more\n') })), 'tar']);
  samples.set('sample.tar.gz', [await fs.readFile(path.join(dir, 'sample.tar.gz')), 'zip']);
  samples.set('sample.ttf', [await fs.readFile('/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf'), 'woff2']);
  await fs.rm(dir, { recursive: true, force: true });
});

after(async () => {
  await server?.stop();
});

function damaged(sample: Buffer): Array<[string, Buffer]> {
  const corrupt = Buffer.from(sample);
  const from = Math.floor(sample.length / 3);
  corrupt.fill(0x5a, from, from + Math.max(16, Math.min(4096, Math.floor(sample.length / 4))));
  return [['first half', sample.subarray(0, Math.floor(sample.length / 2))], ['first 16 bytes', sample.subarray(0, 16)], ['corrupted middle', corrupt]];
}

test('every family: a truncated or corrupted file ends in a documented answer, never internal_error or a hang', { timeout: 600_000 }, async () => {
  const outcomes: string[] = [];
  for (const [name, [sample, target]] of samples) {
    for (const [how, bytes] of damaged(sample)) {
      const response = await submit(server.url, bytes, name, target);
      const body = await response.json() as SubmitAnswer | ErrorBody;
      if (!body.ok) {
        assert.ok(ACCEPTABLE_REFUSALS.has(body.error.code) || (body.error.code === 'missing_file' && bytes.length === 0),
          `${name} (${how}) refused with ${response.status} ${body.error.code}`);
        outcomes.push(`${name} (${how}): refused, ${body.error.code}`);
        continue;
      }
      const { final } = await waitForJob(server.url, body.job_id, { timeoutMs: 180_000 });
      if (final.status === 'error') {
        assert.ok(ACCEPTABLE_JOB_ERRORS.has(final.error!.code), `${name} (${how}) → ${target}: ${JSON.stringify(final.error)}`);
        assert.ok(final.error!.message.length > 10, 'the message says what happened');
      } else {
        assert.equal(final.status, 'done');
      }
      outcomes.push(`${name} (${how}): ${final.status}${final.error ? `, ${final.error.code}` : ''}`);
    }
  }
  // Most damaged files are refused or fail; the count guards against a suite that accepts anything unread.
  assert.ok(outcomes.filter((o) => !o.endsWith(': done')).length >= samples.size, outcomes.join('\n'));
});

test('afterwards, a good file of every family converts', { timeout: 300_000 }, async () => {
  for (const [name, [sample, target]] of samples) {
    const { record } = await convert(server.url, sample, name, target);
    assert.equal(record.status, 'done', `${name} → ${target}`);
  }
});
