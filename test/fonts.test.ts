// Fonts: every advertised pair, from fonts the test builds from nothing with fontTools'
// FontBuilder (test/helpers/make_fonts.py): a TrueType font, a CFF one, and WOFF and WOFF2
// wrappings of each (most web fonts wrap TrueType outlines). Each output is read back
// (test/helpers/read_font.py): with fontTools, its wrapper, outline kind, character map, glyph
// count, advance widths, names and each glyph's outline bounds and direction; rendered by
// FreeType next to its source, pixel for pixel; and validated by OTS (ots-sanitize), the
// sanitiser Chrome and Firefox run on every web font before using it.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { convert, fetchCatalogue, submitOk, waitForJob } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const PYTHON = '/usr/bin/python3';
const execFileAsync = promisify(execFile);
const READ_FONT = path.resolve('test/helpers/read_font.py');
/**
 * How far a glyph's outline bounds may move, in font units (1/1000 em here): TrueType → CFF is
 * exact but for rounding the new control points to whole units (half a unit at most); CFF →
 * TrueType approximates each cubic with quadratics within 1 unit (cu2qu's tolerance).
 */
const OUTLINE_TOLERANCE_UNITS = 1;
/**
 * The share of the source's inked pixels that may differ (by more than half their coverage) when
 * FreeType renders the same text with the output at 200 px to the em: a unit is 0.2 px there, so
 * only a sliver of edge pixels can flip; a lost, shifted or inside-out glyph flips thousands.
 */
const MAX_RENDER_DIFFERENCE = 0.002;
/** The text rendered: every glyph with an outline, the composite degree sign among them. */
const RENDERED_TEXT = 'AaoAo°';

let server: RunningServer;
/** The samples of each source format: the outlines they hold and their bytes. */
const samples: Record<string, Array<{ outlines: 'truetype' | 'cff'; bytes: Buffer; file: string; facts: FontFacts }>> = {};

interface FontFacts {
  flavor: string | null;
  outlines: 'cff' | 'cff2' | 'truetype' | null;
  tables: string[];
  cmap: Record<string, string>;
  glyphCount: number;
  advances: Record<string, number>;
  family: string;
  bounds: Record<string, [number, number, number, number] | null>;
  areas: Record<string, number>;
  /** With a source: FreeType's rendering of RENDERED_TEXT with both fonts, compared. */
  render?: { ink: number; differing: number };
}
/** A font's facts, and with `source` how its rendering compares with the source's. */
async function readFont(file: string, source?: string): Promise<FontFacts> {
  const { stdout } = await execFileAsync(PYTHON, [READ_FONT, file, ...(source ? [source, RENDERED_TEXT] : [])], { encoding: 'utf8' });
  return JSON.parse(stdout) as FontFacts;
}

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  const dir = await tempDir('convertd-fonts-');
  execFileSync(PYTHON, [path.resolve('test/helpers/make_fonts.py'), dir]);
  const add = async (format: string, outlines: 'truetype' | 'cff', file: string) => {
    (samples[format] ??= []).push({ outlines, bytes: await fs.readFile(file), file, facts: await readFont(file) });
  };
  await add('ttf', 'truetype', path.join(dir, 'sample.ttf'));
  await add('otf', 'cff', path.join(dir, 'sample.otf'));
  for (const flavor of ['woff', 'woff2']) {
    for (const [outlines, source] of [['truetype', 'sample.ttf'], ['cff', 'sample.otf']] as const) {
      const file = path.join(dir, `${outlines}.${flavor}`);
      execFileSync(PYTHON, ['-c', 'import sys; from fontTools.ttLib import TTFont; f = TTFont(sys.argv[1]); f.flavor = sys.argv[2]; f.save(sys.argv[3])', path.join(dir, source), flavor, file]);
      await add(flavor, outlines, file);
    }
  }
});
after(async () => { await server.stop(); });

test('every advertised font pair converts and keeps the characters, glyphs, widths and outlines', async () => {
  const catalogue = await fetchCatalogue(server.url);
  const pairs = catalogue.filter((f) => f.category === 'font').flatMap((f) => f.targets.map((t) => [f.id, t] as const));
  // Each of the four formats becomes each of the three others.
  assert.equal(pairs.length, 12, `font pairs: ${pairs.map((p) => p.join('→')).join(' ')}`);
  const jobs = pairs.flatMap(([source, target]) => samples[source]!.map((sample) => ({ source, target, sample })));
  await Promise.all(jobs.map(async ({ source, target, sample }) => {
    const where = `${source} (${sample.outlines}) → ${target}`;
    const { bytes } = await convert(server.url, sample.bytes, `sample.${source}`, target);
    const outputFile = await writeTemp(bytes, `out.${target}`);
    const [before, after] = [sample.facts, await readFont(outputFile, sample.file)];
    assert.equal(after.flavor, target === 'woff' || target === 'woff2' ? target : null, `${where}: wrapper`);
    const outlines = target === 'ttf' ? 'truetype' : target === 'otf' ? 'cff' : sample.outlines;
    assert.equal(after.outlines, outlines, `${where}: outline kind`);
    if (outlines === 'cff') {
      for (const table of ['glyf', 'loca', 'fpgm', 'prep', 'cvt ']) assert.ok(!after.tables.includes(table), `${where}: no TrueType table ${table}`);
    }
    assert.deepEqual(after.cmap, before.cmap, `${where}: the character map`);
    assert.equal(after.glyphCount, before.glyphCount, `${where}: glyph count`);
    assert.deepEqual(after.advances, before.advances, `${where}: advance widths`);
    assert.equal(after.family, 'ConvertdTest', `${where}: the names`);
    for (const [glyph, box] of Object.entries(before.bounds)) {
      const other = after.bounds[glyph];
      if (!box) { assert.equal(other, null, `${where}: ${glyph} stays empty`); continue; }
      assert.ok(other, `${where}: ${glyph} lost its outline`);
      box.forEach((value, i) => assert.ok(Math.abs(other[i]! - value) <= OUTLINE_TOLERANCE_UNITS, `${where}: ${glyph} bounds ${JSON.stringify(other)} vs ${JSON.stringify(box)}`));
      // TrueType outer contours run clockwise, PostScript ones counter-clockwise: a change of
      // outline kind reverses every contour, so the signed area changes sign.
      const flips = outlines !== sample.outlines;
      assert.equal(Math.sign(after.areas[glyph]!), Math.sign(before.areas[glyph]!) * (flips ? -1 : 1), `${where}: ${glyph} contour direction`);
    }
    await execFileAsync('ots-sanitize', [outputFile]).catch((error: { stdout?: string; stderr?: string }) => {
      assert.fail(`${where}: OTS refuses the output: ${error.stderr ?? ''}${error.stdout ?? ''}`);
    });
    const { ink, differing } = after.render!;
    assert.ok(ink > 10_000, `${where}: the text renders (${ink} pixels)`);
    assert.ok(differing <= ink * MAX_RENDER_DIFFERENCE, `${where}: FreeType renders ${differing} of ${ink} pixels differently`);
  }));
});

test('a variable TrueType font asked for as OTF fails and says why', async () => {
  // A variable font with one axis whose only master is the default: enough to be one (fvar, gvar).
  const dir = await tempDir();
  const script = [
    'import sys', 'from fontTools.ttLib import TTFont', 'from fontTools.fontBuilder import FontBuilder',
    'f = TTFont(sys.argv[1]); fb = FontBuilder(font=f)',
    'fb.setupFvar([("wght", 100, 400, 900, "Weight")], [])',
    'fb.setupGvar({name: [] for name in f.getGlyphOrder()})',
    'f.flavor = "woff2"; f.save(sys.argv[2])',
  ].join('\n');
  execFileSync(PYTHON, ['-c', script, samples.ttf![0]!.file, path.join(dir, 'variable.woff2')]);
  const jobId = await submitOk(server.url, await fs.readFile(path.join(dir, 'variable.woff2')), 'variable.woff2', 'otf');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.error?.code, 'conversion_failed');
  assert.match(final.error!.message, /variable TrueType fonts cannot be converted to OTF here: choose ttf, woff or woff2/);
});

test('a damaged font ends in corrupt_input', async () => {
  const broken = Buffer.concat([samples.ttf![0]!.bytes.subarray(0, 12), Buffer.alloc(300, 0x41)]);
  const jobId = await submitOk(server.url, broken, 'broken.ttf', 'woff2');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.status, 'error');
  assert.ok(['corrupt_input', 'conversion_failed'].includes(final.error!.code), final.error!.code);
});
