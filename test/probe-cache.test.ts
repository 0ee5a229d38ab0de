// The probe cache (src/engines/probe-cache.ts) with fake engines: a passed probe is recalled under
// the same conditions and only then, a failed one is probed again, and an engine that makes its
// own edges is restored from the facts it found.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { catalogueOf } from '../src/engines/assembly.ts';
import { ENGINE_MODULES } from '../src/engines/index.ts';
import { ProbeCache } from '../src/engines/probe-cache.ts';
import { EngineRegistry } from '../src/engines/registry.ts';
import type { ConversionEdge, Engine } from '../src/engines/types.ts';

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
    id: 'fake', edges: DECLARED, reportsProgress: false, probes: 0, warms: 0,
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
  await fs.writeFile(path.join(dir, 'fake.json'), '{"key":');
  const engine = fakeEngine(undefined);
  await EngineRegistry.start([engine], silent, formats, [], await ProbeCache.open(dir, conditions()));
  assert.equal(engine.probes, 1);
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

test('an engine that makes its edges from what its probe found is restored from those facts', async () => {
  const dir = await cacheDir();
  const made = (facts: unknown): ConversionEdge[] | undefined => (Array.isArray(facts) ? facts.map((to: string) => ({ from: 'png', to, cost: 2 })) : undefined);
  const withFacts = (found: string[]): Counted => {
    const engine = fakeEngine(made(found));
    return Object.assign(engine, { probeFacts: { found: () => found, edgesOf: made } });
  };
  await EngineRegistry.start([withFacts(['webp'])], silent, formats, [], await ProbeCache.open(dir, conditions()));
  const restored = withFacts([]);
  restored.probe = async () => {
    throw new Error('must not be probed');
  };
  const registry = await EngineRegistry.start([restored], silent, formats, [], await ProbeCache.open(dir, conditions()));
  assert.deepEqual(registry.targetsFor('png'), ['webp']);
  // An engine whose own edges are neither declared nor described by facts is probed every time.
  const opaqueDir = await cacheDir();
  const opaque = fakeEngine([{ from: 'png', to: 'gif', cost: 1 }]);
  await EngineRegistry.start([opaque], silent, formats, [], await ProbeCache.open(opaqueDir, conditions()));
  const opaqueAgain = fakeEngine([{ from: 'png', to: 'gif', cost: 1 }]);
  await EngineRegistry.start([opaqueAgain], silent, formats, [], await ProbeCache.open(opaqueDir, conditions()));
  assert.equal(opaqueAgain.probes, 1);
});
