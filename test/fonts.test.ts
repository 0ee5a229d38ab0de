// Fonts: every advertised pair, from fonts the test builds from nothing with fontTools'
// FontBuilder (test/helpers/make_fonts.py); each output is read back with fontTools: its wrapper
// (flavor), its outline kind, its character map and its family name.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { convert, fetchCatalogue, submitOk, waitForJob } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const PYTHON = '/usr/bin/python3';
let server: RunningServer;
const fonts: Record<string, Buffer> = {};

interface FontFacts { flavor: string | null; cff: boolean; glyphForA: string | null; family: string }
function readFont(file: string): FontFacts {
  const script = [
    'import json, sys', 'from fontTools.ttLib import TTFont',
    'f = TTFont(sys.argv[1])',
    'print(json.dumps({"flavor": f.flavor, "cff": "CFF " in f, "glyphForA": f.getBestCmap().get(65), "family": f["name"].getDebugName(1)}))',
  ].join('\n');
  return JSON.parse(execFileSync(PYTHON, ['-c', script, file], { encoding: 'utf8' })) as FontFacts;
}

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  const dir = await tempDir('convertd-fonts-');
  execFileSync(PYTHON, [path.resolve('test/helpers/make_fonts.py'), dir]);
  fonts.ttf = await fs.readFile(path.join(dir, 'sample.ttf'));
  fonts.otf = await fs.readFile(path.join(dir, 'sample.otf'));
  // WOFF and WOFF2 samples wrap the CFF font, so that every advertised target is reachable.
  for (const flavor of ['woff', 'woff2']) {
    execFileSync(PYTHON, ['-c', `from fontTools.ttLib import TTFont; f = TTFont("${dir}/sample.otf"); f.flavor = "${flavor}"; f.save("${dir}/sample.${flavor}")`]);
    fonts[flavor] = await fs.readFile(path.join(dir, `sample.${flavor}`));
  }
});
after(async () => { await server.stop(); });

test('every advertised font pair converts and keeps its glyphs and names', async () => {
  const catalogue = await fetchCatalogue(server.url);
  const pairs = catalogue.filter((f) => f.category === 'font').flatMap((f) => f.targets.map((t) => [f.id, t] as const));
  assert.ok(pairs.length >= 11, `font pairs: ${pairs.map((p) => p.join('→')).join(' ')}`);
  for (const [source, target] of pairs) {
    const { bytes } = await convert(server.url, fonts[source]!, `sample.${source}`, target);
    const facts = readFont(await writeTemp(bytes, `out.${target}`));
    assert.equal(facts.flavor, target === 'woff' || target === 'woff2' ? target : null, `${source} → ${target}: wrapper`);
    if (target === 'ttf') assert.equal(facts.cff, false, `${source} → ttf has TrueType outlines`);
    if (target === 'otf') assert.equal(facts.cff, true, `${source} → otf has CFF outlines`);
    assert.equal(facts.glyphForA, 'A', `${source} → ${target}: the character map survived`);
    assert.equal(facts.family, 'ConvertdTest', `${source} → ${target}: the names survived`);
  }
});

test('a WOFF of TrueType outlines asked for as OTF fails and says why', async () => {
  const dir = await tempDir();
  await fs.writeFile(path.join(dir, 'in.ttf'), fonts.ttf!);
  execFileSync(PYTHON, ['-c', `from fontTools.ttLib import TTFont; f = TTFont("${dir}/in.ttf"); f.flavor = "woff"; f.save("${dir}/tt.woff")`]);
  const jobId = await submitOk(server.url, await fs.readFile(path.join(dir, 'tt.woff')), 'tt.woff', 'otf');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.error?.code, 'conversion_failed');
  assert.match(final.error!.message, /TrueType outlines: choose ttf/);
});

test('a damaged font ends in corrupt_input', async () => {
  const broken = Buffer.concat([fonts.ttf!.subarray(0, 12), Buffer.alloc(300, 0x41)]);
  const jobId = await submitOk(server.url, broken, 'broken.ttf', 'woff2');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.status, 'error');
  assert.ok(['corrupt_input', 'conversion_failed'].includes(final.error!.code), final.error!.code);
});
