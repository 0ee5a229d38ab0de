// Fonts: every advertised pair, from fonts the test builds from nothing with fontTools'
// FontBuilder (test/helpers/make_fonts.py): a TrueType font, a CFF one, and WOFF and WOFF2
// wrappings of each (most web fonts wrap TrueType outlines). Each output is read back
// (test/helpers/read_font.py): with fontTools, its wrapper, outline kind, character map, glyph
// count, advance widths, names and each glyph's outline bounds and direction; rendered by
// FreeType next to its source, pixel for pixel; and validated by OTS (ots-sanitize), the
// sanitiser Chrome and Firefox run on every web font before using it. TTX (fontTools' XML form)
// is made of each sample by fontTools, and read back as XML by Python's own parser.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { convert, fetchCatalogue, progress, submitOk, waitForJob } from './helpers/client.ts';
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
  // TTX, fontTools' XML dump of each: its upload is the XML, its facts and rendering those of the
  // binary font it was dumped from (FreeType reads no XML).
  for (const [outlines, source] of [['truetype', 'sample.ttf'], ['cff', 'sample.otf']] as const) {
    const xml = path.join(dir, `${outlines}.ttx`);
    execFileSync(PYTHON, ['-c', 'import sys; from fontTools.ttLib import TTFont; TTFont(sys.argv[1]).saveXML(sys.argv[2])', path.join(dir, source), xml]);
    (samples.ttx ??= []).push({ outlines, bytes: await fs.readFile(xml), file: path.join(dir, source), facts: samples[source === 'sample.ttf' ? 'ttf' : 'otf']![0]!.facts });
  }
});

/**
 * What a TTX output says, read with Python's own XML parser (not fontTools): its glyph order, the
 * Unicode character map, advance widths, family name, outline kind, and each TrueType glyph's
 * bounds as its <TTGlyph> attributes give them.
 */
const READ_TTX = [
  'import sys, json, xml.etree.ElementTree as ET',
  'root = ET.parse(sys.argv[1]).getroot()',
  'assert root.tag == "ttFont", root.tag',
  'order = [g.get("name") for g in root.find("GlyphOrder")]',
  'cmap = {}',
  'for table in root.find("cmap"):',
  '    if table.get("platformID") == "3" and table.get("platEncID") in ("1", "10"):',
  '        cmap.update({str(int(m.get("code"), 16)): m.get("name") for m in table.findall("map")})',
  'advances = {m.get("name"): int(m.get("width")) for m in root.find("hmtx").findall("mtx")}',
  'family = next(r.text.strip() for r in root.find("name") if r.get("nameID") == "1" and r.get("platformID") == "3")',
  'glyf = root.find("glyf")',
  'bounds = {g.get("name"): [int(g.get(k)) for k in ("xMin", "yMin", "xMax", "yMax")] if g.get("xMin") is not None else None for g in (glyf if glyf is not None else [])}',
  'charstrings = root.findall("CFF/CFFFont/CharStrings/CharString")',
  'outlines = "truetype" if glyf is not None else "cff" if root.find("CFF") is not None else None',
  'print(json.dumps({"order": order, "cmap": cmap, "advances": advances, "family": family, "outlines": outlines, "bounds": bounds, "charstrings": len(charstrings)}))',
].join('\n');
interface TtxFacts { order: string[]; cmap: Record<string, string>; advances: Record<string, number>; family: string; outlines: string | null; bounds: Record<string, number[] | null>; charstrings: number }

/** A font dumped to TTX: the XML holds the source's glyphs, characters, widths, names and outlines. */
async function checkTtx(where: string, file: string, before: FontFacts): Promise<void> {
  const { stdout } = await execFileAsync(PYTHON, ['-c', READ_TTX, file], { encoding: 'utf8' });
  const ttx = JSON.parse(stdout) as TtxFacts;
  assert.equal(ttx.order.length, before.glyphCount, `${where}: glyph count`);
  assert.deepEqual(ttx.cmap, before.cmap, `${where}: the character map`);
  assert.deepEqual(ttx.advances, before.advances, `${where}: advance widths`);
  assert.equal(ttx.family, 'ConvertdTest', `${where}: the names`);
  assert.equal(ttx.outlines, before.outlines, `${where}: outline kind`);
  if (ttx.outlines === 'cff') {
    assert.equal(ttx.charstrings, before.glyphCount, `${where}: one charstring per glyph`);
    return;
  }
  // TrueType glyphs carry their bounding box (of points, the curves' control points included:
  // the box may only be as large or larger than the curves' own extremes read_font.py reports).
  for (const [glyph, box] of Object.entries(before.bounds)) {
    const other = ttx.bounds[glyph];
    if (!box) { assert.equal(other ?? null, null, `${where}: ${glyph} stays empty`); continue; }
    assert.ok(other, `${where}: ${glyph} lost its outline`);
    const [x0, y0, x1, y1] = other;
    assert.ok(x0! <= box[0]! + OUTLINE_TOLERANCE_UNITS && y0! <= box[1]! + OUTLINE_TOLERANCE_UNITS && x1! >= box[2]! - OUTLINE_TOLERANCE_UNITS && y1! >= box[3]! - OUTLINE_TOLERANCE_UNITS, `${where}: ${glyph} box ${JSON.stringify(other)} does not hold ${JSON.stringify(box)}`);
  }
}
after(async () => { await server.stop(); });

test('every advertised font pair converts and keeps the characters, glyphs, widths and outlines', async () => {
  const catalogue = await fetchCatalogue(server.url);
  const pairs = catalogue.filter((f) => f.category === 'font').flatMap((f) => f.targets.map((t) => [f.id, t] as const));
  // Each of the five formats becomes each of the four others.
  assert.equal(pairs.length, 20, `font pairs: ${pairs.map((p) => p.join('→')).join(' ')}`);
  const jobs = pairs.flatMap(([source, target]) => samples[source]!.map((sample) => ({ source, target, sample })));
  await Promise.all(jobs.map(async ({ source, target, sample }) => {
    const where = `${source} (${sample.outlines}) → ${target}`;
    const { bytes } = await convert(server.url, sample.bytes, `sample.${source}`, target);
    const outputFile = await writeTemp(bytes, `out.${target}`);
    if (target === 'ttx') return checkTtx(where, outputFile, sample.facts);
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

test('a TTX is told by its <ttFont> root, whatever its name', async () => {
  for (const name of ['font.ttx', 'font.xml', 'font.txt']) {
    const jobId = await submitOk(server.url, samples.ttx![0]!.bytes, name, 'ttf');
    assert.equal((await progress(server.url, jobId)).body.source, 'ttx', name);
    assert.equal((await waitForJob(server.url, jobId)).final.status, 'done', name);
  }
});

test('hostile TTX: entity expansion (a billion laughs) ends in corrupt_input, an external entity reads no file', async () => {
  const xml = samples.ttx![0]!.bytes.toString('utf8');
  const declaration = '<?xml version="1.0" encoding="UTF-8"?>\n';
  assert.ok(xml.startsWith(declaration));
  // Ten entities each ten times the one before: 10^10 characters if expanded.
  const entities = ['<!ENTITY l0 "laughlaugh">', ...Array.from({ length: 9 }, (_, i) => `<!ENTITY l${i + 1} "${`&l${i};`.repeat(10)}">`)];
  const laughs = xml.replace(declaration, `${declaration}<!DOCTYPE ttFont [\n${entities.join('\n')}\n]>\n`).replace('<GlyphOrder>', '<GlyphOrder>&l9;');
  const laughsJob = await submitOk(server.url, Buffer.from(laughs), 'laughs.ttx', 'ttf');
  const { final: laughed } = await waitForJob(server.url, laughsJob);
  assert.equal(laughed.error?.code, 'corrupt_input', JSON.stringify(laughed.error));
  // An external entity naming a local file, used as the family name: expat resolves none, so the
  // name is the document's own text alone.
  const external = xml.replace(declaration, `${declaration}<!DOCTYPE ttFont [<!ENTITY leak SYSTEM "file:///etc/passwd">]>\n`).replaceAll('ConvertdTest', 'Convertd&leak;Test');
  const { bytes } = await convert(server.url, Buffer.from(external), 'external.ttx', 'ttf');
  const facts = await readFont(await writeTemp(bytes, 'external.ttf'));
  assert.equal(facts.family, 'ConvertdTest', 'the family name holds nothing of /etc/passwd');
  assert.doesNotMatch(bytes.toString('latin1'), /root:/);
});
