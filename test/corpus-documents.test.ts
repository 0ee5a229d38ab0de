// Real-world documents from ../shared/corpus (office files, PDFs, markup, ebooks) through a few
// targets each. Skipped when the corpus is absent (a fresh clone has no ../shared). Prints which
// pairs failed and why; every failure must be a documented job error (never a 500 or a hang),
// every success an output that independent tools read, and most pairs must succeed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { download, submit, waitForJob, type ErrorBody, type SubmitAnswer } from './helpers/client.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
const TARGETS: Record<string, string[]> = {
  doc: ['pdf', 'docx'], docx: ['pdf', 'odt', 'md'], odt: ['pdf', 'docx'], rtf: ['pdf', 'docx'],
  xls: ['pdf', 'xlsx'], xlsx: ['pdf', 'ods'], ods: ['pdf', 'xlsx'],
  ppt: ['pdf', 'pptx'], pptx: ['pdf', 'png'], odp: ['pdf', 'pptx'],
  pdf: ['png', 'txt', 'pdfa'], md: ['html', 'docx', 'pdf'], rst: ['html', 'docx'], html: ['pdf', 'md'], tex: ['html', 'docx'],
  epub: ['mobi', 'docx', 'pdf'], mobi: ['epub', 'txt'],
};
const DOCUMENTED_JOB_ERRORS = ['corrupt_input', 'input_too_complex', 'conversion_failed', 'timeout', 'output_too_large', 'encrypted_input'];

const present = fs.existsSync(CORPUS);
const files = (dir: string) => (fs.existsSync(path.join(CORPUS, dir)) ? fs.readdirSync(path.join(CORPUS, dir)).map((f) => path.join(CORPUS, dir, f)) : []);

describe('corpus: real-world documents', { skip: present ? false : 'no ../shared/corpus here' }, () => {
  let server: RunningServer;
  const report: string[] = [];
  let succeeded = 0;
  let tried = 0;
  before(async () => { server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off' }); });
  after(async () => {
    await server.stop();
    process.stdout.write(`document corpus: ${succeeded} of ${tried} pairs converted\n  ${report.join('\n  ')}\n`);
  });

  async function run(file: string, target: string): Promise<void> {
    tried++;
    const name = `${path.basename(path.dirname(file))}/${path.basename(file)} → ${target}`;
    const response = await submit(server.url, fs.readFileSync(file), path.basename(file), target);
    assert.ok([200, 415, 422].includes(response.status), `${name}: status ${response.status}`);
    if (response.status !== 200) {
      const body = await response.json() as ErrorBody;
      report.push(`${name}: refused (${body.error.code}: ${body.error.message})`);
      return;
    }
    const { job_id: jobId } = await response.json() as SubmitAnswer;
    const { final } = await waitForJob(server.url, jobId, { timeoutMs: 180_000 });
    if (final.status === 'error') {
      report.push(`${name}: ${final.error!.code} (${final.error!.message})`);
      assert.ok(DOCUMENTED_JOB_ERRORS.includes(final.error!.code), `${name}: undocumented code ${final.error!.code}`);
      return;
    }
    const { bytes } = await download(server.url, final.download_url!);
    const output = await writeTemp(bytes, `out.${target}`);
    execFileSync('/usr/bin/python3', [path.resolve('test/helpers/read_document.py'), output, target], { stdio: ['ignore', 'pipe', 'pipe'] });
    succeeded++;
  }

  for (const [family, targets] of Object.entries(TARGETS)) {
    for (const file of files(family)) {
      for (const target of targets) {
        test(`${family}/${path.basename(file)} → ${target}`, { timeout: 200_000 }, () => run(file, target));
      }
    }
  }
  for (const file of files('corrupt').filter((f) => /\.(docx|pdf)$/i.test(f))) {
    test(`corrupt/${path.basename(file)} ends in a documented error or converts what is readable`, { timeout: 200_000 }, () => run(file, path.extname(file) === '.pdf' ? 'png' : 'pdf'));
  }
  test('most real-world documents convert', () => {
    assert.ok(tried > 0);
    assert.ok(succeeded / tried >= 0.8, `only ${succeeded} of ${tried} pairs converted:\n${report.join('\n')}`);
  });
});
