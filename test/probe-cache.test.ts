// The probe cache (src/engines/probe-cache.ts): with fake engines, a passed probe is recalled under
// the same conditions and only then, a failed one is probed again, and an engine whose probe
// leaves state restores it from the facts it found; with the real service, a start that recalled
// its probes offers and does the same as one that ran them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { catalogueOf } from '../src/engines/assembly.ts';
import { ENGINE_MODULES } from '../src/engines/index.ts';
import { ProbeCache } from '../src/engines/probe-cache.ts';
import { EngineRegistry } from '../src/engines/registry.ts';
import type { ConversionEdge, Engine } from '../src/engines/types.ts';
import { convert, fetchCatalogue } from './helpers/client.ts';
import { TEXT_SAMPLES } from './helpers/documents.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const silent = pino({ level: 'silent' });
const formats = catalogueOf(ENGINE_MODULES);
const DECLARED: readonly ConversionEdge[] = [{ from: 'png', to: 'jpg', cost: 1 }, { from: 'png', to: 'webp', cost: 1 }, { from: 'jpg', to: 'png', cost: 1 }];

interface Counted extends Engine {
  probes: number;
  warms: number;
}

/** An engine whose probe passes with `passing` of its declared edges (all when undefined), or throws. */
function fakeEngine(passing: readonly ConversionEdge[] | undefined | Error): Counted {
  const engine: Counted = {
    id: 'fake', edges: DECLARED, reportsProgress: false, probes: 0, warms: 0, probeMemory: 'edges',
    estimateSeconds: () => 1,
    convert: async () => undefined,
    probe: async () => {
      engine.probes++;
      if (passing instanceof Error) throw passing;
      return passing;
    },
    warm: async () => {
      engine.warms++;
    },
  };
  return engine;
}

const conditions = (settings: Record<string, unknown> = { pool: 2 }, machine: Record<string, unknown> = { sandbox: 'auto' }) => ({ settings: new Map([['fake', settings]]), machine });

async function cacheDir(): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), 'convertd-probe-cache-'));
}

test('a passed probe is recalled at the next start: the same edges, warm() instead of the probe', async () => {
  const dir = await cacheDir();
  const first = fakeEngine([DECLARED[0]!, DECLARED[2]!]);
  const started = await EngineRegistry.start([first], silent, formats, [], await ProbeCache.open(dir, conditions()));
  assert.equal(first.probes, 1);
  assert.deepEqual(started.targetsFor('png'), ['jpg']);

  const second = fakeEngine(new Error('must not be probed'));
  const again = await EngineRegistry.start([second], silent, formats, [], await ProbeCache.open(dir, conditions()));
  assert.equal(second.probes, 0, 'not probed again');
  assert.equal(second.warms, 1, 'its pools started');
  assert.deepEqual(again.targetsFor('png'), ['jpg'], 'only the edges that passed, not every declared one');
  assert.equal(again.statuses[0]?.ok, true);
});

test('other settings, another sandbox or a changed file make a remembered probe stale', async () => {
  const dir = await cacheDir();
  await EngineRegistry.start([fakeEngine(undefined)], silent, formats, [], await ProbeCache.open(dir, conditions()));
  for (const changed of [conditions({ pool: 3 }), conditions({ pool: 2 }, { sandbox: 'off' })]) {
    const engine = fakeEngine(undefined);
    await EngineRegistry.start([engine], silent, formats, [], await ProbeCache.open(dir, changed));
    assert.equal(engine.probes, 1, `probed again under ${JSON.stringify([...changed.settings.values(), changed.machine])}`);
  }
  // The file itself, damaged: probed again rather than trusted.
  const [remembered] = (await readdir(dir)).filter((name) => name.startsWith('fake-') && name.endsWith('.json')).sort();
  assert.ok(remembered, 'a verdict was written');
  for (const name of (await readdir(dir)).filter((name) => name.startsWith('fake-'))) await fs.writeFile(path.join(dir, name), '{"key":');
  const engine = fakeEngine(undefined);
  await EngineRegistry.start([engine], silent, formats, [], await ProbeCache.open(dir, conditions()));
  assert.equal(engine.probes, 1);
});

test('services started under different settings keep their own verdicts: alternating starts are recalled, not probed again', async () => {
  const dir = await cacheDir();
  const variants = [conditions(), conditions({ pool: 3 }), conditions({ pool: 2 }, { sandbox: 'off' })];
  for (const variant of variants) {
    const engine = fakeEngine(undefined);
    await EngineRegistry.start([engine], silent, formats, [], await ProbeCache.open(dir, variant));
    assert.equal(engine.probes, 1, 'the first start under these conditions probes');
  }
  for (const variant of [...variants].reverse()) {
    const engine = fakeEngine(new Error('must not be probed'));
    await EngineRegistry.start([engine], silent, formats, [], await ProbeCache.open(dir, variant));
    assert.equal(engine.probes, 0, `recalled under ${JSON.stringify([...variant.settings.values(), variant.machine])}`);
  }
  assert.equal((await readdir(dir)).filter((name) => name.startsWith('fake-')).length, 3, 'one file per set of conditions');
});

test('stale verdicts do not pile up: an engine keeps the newest 64, and the newest is still recalled', async () => {
  const dir = await cacheDir();
  for (let pool = 1; pool <= 70; pool++) {
    await EngineRegistry.start([fakeEngine(undefined)], silent, formats, [], await ProbeCache.open(dir, conditions({ pool })));
  }
  assert.equal((await readdir(dir)).filter((name) => name.startsWith('fake-')).length, 64);
  const engine = fakeEngine(new Error('must not be probed'));
  await EngineRegistry.start([engine], silent, formats, [], await ProbeCache.open(dir, conditions({ pool: 70 })));
  assert.equal(engine.probes, 0);
});

test('a failed probe is not remembered: the next start probes again, and does not advertise the engine meanwhile', async () => {
  const dir = await cacheDir();
  const failing = fakeEngine(new Error('tool missing'));
  const started = await EngineRegistry.start([failing], silent, formats, [], await ProbeCache.open(dir, conditions()));
  assert.equal(started.statuses[0]?.ok, false);
  assert.deepEqual(started.targetsFor('png'), []);
  const next = fakeEngine(new Error('still missing'));
  await EngineRegistry.start([next], silent, formats, [], await ProbeCache.open(dir, conditions()));
  assert.equal(next.probes, 1);
});

test('an engine whose probe leaves state restores it from the facts it found; one that does not say is probed every time', async () => {
  const dir = await cacheDir();
  const made = (facts: unknown): ConversionEdge[] | undefined => (Array.isArray(facts) ? facts.map((to: string) => ({ from: 'png', to, cost: 2 })) : undefined);
  const withFacts = (found: string[]): Counted & { restored: unknown } => {
    const engine = Object.assign(fakeEngine(made(found)), { restored: undefined as unknown });
    return Object.assign(engine, {
      probeMemory: {
        found: () => found,
        restore: async (facts: unknown) => {
          engine.restored = facts;
          return made(facts);
        },
      },
    });
  };
  await EngineRegistry.start([withFacts(['webp'])], silent, formats, [], await ProbeCache.open(dir, conditions()));
  const restored = withFacts([]);
  restored.probe = async () => {
    throw new Error('must not be probed');
  };
  const registry = await EngineRegistry.start([restored], silent, formats, [], await ProbeCache.open(dir, conditions()));
  assert.deepEqual(registry.targetsFor('png'), ['webp']);
  assert.deepEqual(restored.restored, ['webp'], 'its state restored from the facts');

  // No probeMemory: the probe may keep state the cache knows nothing of.
  const silentDir = await cacheDir();
  for (let start = 0; start < 2; start++) {
    const { probeMemory: _none, ...unsaid } = fakeEngine(undefined);
    const engine = { ...unsaid, probes: 0 } as Counted;
    engine.probe = async () => {
      engine.probes++;
    };
    await EngineRegistry.start([engine], silent, formats, [], await ProbeCache.open(silentDir, conditions()));
    assert.equal(engine.probes, 1, `start ${start + 1} probed`);
  }
  // 'edges' with an edge the probe made rather than picked: not remembered either.
  const madeDir = await cacheDir();
  for (let start = 0; start < 2; start++) {
    const engine = fakeEngine([{ from: 'png', to: 'gif', cost: 1 }]);
    await EngineRegistry.start([engine], silent, formats, [], await ProbeCache.open(madeDir, conditions()));
    assert.equal(engine.probes, 1, `start ${start + 1} probed`);
  }
});

test('an engine keeps files across starts in one directory per engine and software, whatever the settings; older software\'s are removed', async () => {
  const dir = await cacheDir();
  const given: string[] = [];
  const keeper = (): Counted => Object.assign(fakeEngine(undefined), { useKeptFiles: (kept: string) => given.push(kept) });
  // An earlier version of the software left its files: they are stale now.
  const stale = path.join(dir, 'fake-files-0123456789abcdef01234567');
  await fs.mkdir(stale);
  // A start killed while it copied its files left them half made; one still copying is left alone.
  const killedPid = 2 ** 22 + 1; // above Linux's highest process id
  const abandoned = path.join(dir, `fake-files-0123456789abcdef01234567.${killedPid}.tmp`);
  const copying = path.join(dir, `fake-files-0123456789abcdef01234567.${process.pid}.tmp`);
  await fs.mkdir(abandoned);
  await fs.mkdir(copying);
  for (const settings of [{ pool: 2 }, { pool: 3 }, { pool: 2 }]) {
    await EngineRegistry.start([keeper()], silent, formats, [], await ProbeCache.open(dir, conditions(settings)));
  }
  assert.equal(given.length, 3, 'given before each start\'s probe or recall');
  assert.equal(new Set(given).size, 1, `the same directory under other settings: ${given.join(' ')}`);
  assert.match(path.basename(given[0]!), /^fake-files-[0-9a-f]{24}$/);
  assert.equal(path.dirname(given[0]!), dir);
  await assert.rejects(fs.stat(stale), 'the older software\'s files are removed');
  await assert.rejects(fs.stat(abandoned), 'a killed start\'s half-made copy is removed');
  await fs.stat(copying);
  // An engine without useKeptFiles is given none, and another engine's files are not touched.
  const others = path.join(dir, 'other-files-0123456789abcdef01234567');
  await fs.mkdir(others);
  await EngineRegistry.start([fakeEngine(undefined)], silent, formats, [], await ProbeCache.open(dir, conditions()));
  await EngineRegistry.start([keeper()], silent, formats, [], await ProbeCache.open(dir, conditions()));
  await fs.stat(others);
});

test('a service whose probes were recalled offers and does what a probed one does (catalogue, options, 7-Zip fallback, PDF/A intent, LaTeX\'s fonts)', async () => {
  const dir = await cacheDir();
  const base = { CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off' };
  const probed = await startServer({ ...base, CONVERTD_PROBE_CACHE_DIR: dir });
  const described = async (server: RunningServer) => {
    const pairs = ['wav/mp4', 'mkv/webm', 'srt/vtt', '7z/zip', 'pdf/pdfa', 'eps/pdf', 'png/avif', 'docx/pdf'];
    const options = await Promise.all(pairs.map(async (pair) => (await fetch(`${server.url}/api/formats/${pair}`)).text()));
    return { catalogue: await fetchCatalogue(server.url), options };
  };
  const expected = await described(probed);
  await probed.stop();
  const entries = await readdir(dir);
  assert.deepEqual(entries.filter((name) => name.endsWith('.json')).map((name) => name.replace(/-[0-9a-f]{24}\.json$/, '')).sort(), ENGINE_MODULES.map((module) => module.id).sort(), 'every engine remembered, once');
  // LaTeX's font database, kept beside the verdicts for later starts under any settings.
  const kept = entries.filter((name) => /^latex-files-[0-9a-f]{24}$/.test(name));
  assert.equal(kept.length, 1, `one kept font database: ${entries.join(' ')}`);
  assert.ok((await readdir(path.join(dir, kept[0]!, 'texmf-cache'), { recursive: true })).some((name) => name.endsWith('.luc') || name.endsWith('.lua') || name.endsWith('.gz')), 'it holds luaotfload\'s files');

  const recalled = await startServer({ ...base, CONVERTD_PROBE_CACHE_DIR: dir });
  try {
    assert.ok(recalled.logs.some((line) => line.includes('"cached":true')), 'the probes were recalled');
    assert.deepEqual(await described(recalled), expected);
    // State the probes leave behind, restored: the 7-Zip fallback (archives) and the PDF/A prologue (ghostscript).
    const work = await tempDir();
    await writeFile(path.join(work, 'note.txt'), 'kept through Deflate64\n');
    execFileSync('7zz', ['a', '-bd', '-m0=Deflate64', 'deflate64.7z', 'note.txt'], { cwd: work, stdio: 'ignore' });
    const { bytes: zip } = await convert(recalled.url, await readFile(path.join(work, 'deflate64.7z')), 'deflate64.7z', 'zip');
    const member = execFileSync('python3', ['-c', 'import io, sys, zipfile; sys.stdout.write(zipfile.ZipFile(io.BytesIO(sys.stdin.buffer.read())).read("note.txt").decode())'], { input: zip, encoding: 'utf8' });
    assert.equal(member, 'kept through Deflate64\n');
    // LaTeX, whose font database a recalled probe leaves to the first job: Japanese in real glyphs.
    const { bytes: typeset } = await convert(recalled.url, Buffer.from('\\documentclass{article}\n\\begin{document}\nRecalled 日本語\n\\end{document}\n'), 'note.tex', 'pdf');
    await writeFile(path.join(work, 'typeset.pdf'), typeset);
    assert.match(execFileSync('pdftotext', [path.join(work, 'typeset.pdf'), '-']).toString('utf8'), /Recalled\s+日本語/);
    assert.match(execFileSync('pdffonts', [path.join(work, 'typeset.pdf')]).toString('utf8'), /Noto\S*CJK/i, 'the Japanese is set in the fallback face');
    assert.ok(recalled.logs.some((line) => line.includes('"event":"latex_fonts_kept"')) && !recalled.logs.some((line) => line.includes('kept font database')), `the kept font database served the first job:\n${recalled.logs.filter((line) => /latex|LaTeX/.test(line)).join('\n')}`);
    const { bytes: pdf } = await convert(recalled.url, Buffer.from(TEXT_SAMPLES.md!), 'note.md', 'pdf');
    const { bytes: pdfa } = await convert(recalled.url, pdf, 'note.pdf', 'pdfa');
    await writeFile(path.join(work, 'out.pdf'), pdfa);
    const qdf = execFileSync('qpdf', ['--qdf', '--object-streams=disable', 'out.pdf', '-'], { cwd: work }).toString('latin1');
    assert.match(qdf, /\/OutputIntents\s*\[/, 'the PDF/A carries its output intent');
  } finally {
    await recalled.stop();
  }
});
