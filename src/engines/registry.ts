// Probes the engines at start and computes, from the declarations of those that passed, the
// public catalogue and the route planner. Nothing is advertised that did not pass its probe.
import type { Logger } from 'pino';
import type { FormatCatalogue } from '../formats/catalogue.ts';
import type { CatalogueEntry } from '../wire/shapes.ts';
import type { OptionSpec } from './options.ts';
import { RoutePlanner, type Route } from './planner.ts';
import type { ProbeCache } from './probe-cache.ts';
import type { ConversionEdge, Engine } from './types.ts';

function isOpenEach(spec: OptionSpec): boolean {
  return spec.name === 'each' && spec.type === 'enum' && spec.values.length === 0;
}

export interface EngineStatus {
  readonly engine: string;
  readonly ok: boolean;
  readonly edges: number;
  readonly reason?: string;
}

export class EngineRegistry {
  readonly planner: RoutePlanner;
  /** The /api/formats list, computed once: it only changes when engines do, at start. */
  readonly entries: readonly CatalogueEntry[];
  readonly statuses: readonly EngineStatus[];
  readonly formats: FormatCatalogue;
  private readonly engines: readonly Engine[];
  private readonly targetsBySource: ReadonlyMap<string, readonly string[]>;

  private constructor(
    working: ReadonlyArray<{ engine: Engine; edges: readonly ConversionEdge[] }>,
    statuses: EngineStatus[],
    formats: FormatCatalogue,
  ) {
    this.formats = formats;
    this.engines = working.map((w) => w.engine);
    this.statuses = statuses;
    // Only edges between formats the catalogue knows are usable: an engine cannot invent a format.
    const usable = working.map(({ engine, edges }) => ({
      engine,
      edges: edges.filter((e) => formats.get(e.from) && formats.get(e.to)),
    }));
    // An `each` declared with no values (an archive's members may become anything) offers every
    // format some working engine writes.
    const written = [...new Set(usable.flatMap(({ edges }) => edges.map((e) => e.to)))].sort();
    const known = usable.map(({ engine, edges }) => ({
      engine,
      edges: edges.map((e) => (e.options?.some(isOpenEach) ? { ...e, options: e.options.map((o) => (isOpenEach(o) ? { ...o, values: written } : o)) } : e)),
    }));
    this.planner = new RoutePlanner(known);

    const mentioned = new Set(known.flatMap(({ edges }) => edges.flatMap((e) => [e.from, e.to])));
    const targetsBySource = new Map<string, readonly string[]>();
    for (const id of mentioned) targetsBySource.set(id, this.planner.targets(id));
    this.targetsBySource = targetsBySource;
    this.entries = [...mentioned].sort().map((id) => {
      const format = formats.get(id)!;
      return {
        id,
        name: format.name,
        category: format.category,
        media_type: format.mediaType,
        extensions: format.extensions,
        targets: targetsBySource.get(id) ?? [],
      };
    });
  }

  /**
   * Probes the engines; `unavailable` are engines that could not even be created (assembly.ts),
   * reported beside those whose probe failed.
   */
  static async start(engines: readonly Engine[], log: Logger, formats: FormatCatalogue, unavailable: readonly EngineStatus[] = [], cache?: ProbeCache): Promise<EngineRegistry> {
    const results = await Promise.all(engines.map(async (engine) => {
      const started = performance.now();
      try {
        if (cache && engine.useKeptFiles) engine.useKeptFiles(await cache.keptFiles(engine));
        const recalled = await cache?.recall(engine);
        if (recalled) {
          // The probe passed under the same conditions before (probe-cache.ts): only start what it would have started.
          await engine.warm?.();
          log.info({ engine: engine.id, edges: recalled.length, ms: Math.round(performance.now() - started), cached: true }, 'engine probe passed');
          return { engine, edges: recalled, status: { engine: engine.id, ok: true, edges: recalled.length } };
        }
        const edges = (await engine.probe()) ?? engine.edges;
        await cache?.remember(engine, edges).catch((error: Error) => log.warn({ engine: engine.id, reason: error.message }, 'probe verdict not remembered'));
        log.info({ engine: engine.id, edges: edges.length, ms: Math.round(performance.now() - started) }, 'engine probe passed');
        return { engine, edges, status: { engine: engine.id, ok: true, edges: edges.length } };
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        log.warn({ engine: engine.id, reason }, 'engine probe failed: its formats are not advertised');
        // An engine that is not offered keeps no processes: a pool started for the probe (or
        // eagerly) would otherwise go on replacing processes that cannot live (Chromium under a
        // 192 MB engine memory limit did, found by test/resource-limits.test.ts).
        await engine.close?.().catch(() => undefined);
        return { engine, edges: [], status: { engine: engine.id, ok: false, edges: 0, reason } };
      }
    }));
    const working = results.filter((r) => r.status.ok);
    return new EngineRegistry(working, [...results.map((r) => r.status), ...unavailable], formats);
  }

  /** Whether the format is one an engine reads. */
  reads(source: string): boolean {
    return (this.targetsBySource.get(source)?.length ?? 0) > 0;
  }

  targetsFor(source: string): readonly string[] {
    return this.targetsBySource.get(source) ?? [];
  }

  /** The route a job takes: the cheapest, or with option names the cheapest of those supporting the most of them. */
  route(from: string, to: string, optionNames: readonly string[] = []): Route | undefined {
    return this.planner.route(from, to, optionNames);
  }

  /** Every option some working engine declares, once per name (the first declaration): for the API document. */
  allOptions(): OptionSpec[] {
    const byName = new Map<string, OptionSpec>();
    for (const engine of this.engines) {
      for (const edge of engine.edges) for (const spec of edge.options ?? []) if (!byName.has(spec.name)) byName.set(spec.name, spec);
    }
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The health of the engines that keep processes, by engine id. */
  health(): Record<string, { ok: boolean; detail: Readonly<Record<string, unknown>> }> {
    return Object.fromEntries(this.engines.flatMap((engine) => (engine.health ? [[engine.id, engine.health()]] : [])));
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.engines.map((e) => e.close?.()));
  }
}
