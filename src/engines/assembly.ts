// Everything derived from the list of engine modules (engines/index.ts): the format catalogue, the
// engines' settings, the engines themselves (each created with its context, in an order that puts
// the providers of capabilities before their users), and the Debian packages to install.
import path from 'node:path';
import type { Logger } from 'pino';
import { ConfigError } from '../config.ts';
import { FormatCatalogue } from '../formats/catalogue.ts';
import { ProcessPool } from '../process/pool/index.ts';
import { createNodePool } from '../process/pool/node-program.ts';
import { runProcess, setCommonEnvironment } from '../process/runner.ts';
import { withScratchDir } from '../process/scratch.ts';
import type { Capabilities, CapabilityName } from './capabilities.ts';
import { FONT_ENVIRONMENT } from './support/fonts/index.ts';
import type { EngineContext, EngineModule, MachineFacts, RunProgram } from './module.ts';
import type { EngineStatus } from './registry.ts';
import type { Engine } from './types.ts';

/**
 * An engine module of any settings. `create` is a method, so TypeScript compares its parameter
 * bivariantly and a module with settings of its own fits here.
 */
export type AnyEngineModule = EngineModule<Record<string, unknown>>;

/** The catalogue of every format the listed modules add. */
export function catalogueOf(modules: readonly AnyEngineModule[]): FormatCatalogue {
  return new FormatCatalogue(modules.flatMap((module) => module.formats));
}

/** Every Debian package the listed engines need, once each, in list order. */
export function debianPackagesOf(modules: readonly AnyEngineModule[]): string[] {
  return [...new Set(modules.flatMap((module) => module.packages.debian))];
}

/** Each module's settings, read from the environment; a bad value throws ConfigError naming its variable. */
export function readEngineSettings(modules: readonly AnyEngineModule[], env: NodeJS.ProcessEnv, machine: MachineFacts): Map<string, Record<string, unknown>> {
  const settings = new Map<string, Record<string, unknown>>();
  for (const module of modules) {
    const values: Record<string, unknown> = {};
    for (const [name, spec] of Object.entries(module.settings ?? {})) values[name] = spec.read(env[spec.env], machine);
    settings.set(module.id, values);
  }
  return settings;
}

/** Checks that CONVERTD_ENGINE_TIMEOUTS names only engines of the list. */
export function checkEngineNames(modules: readonly AnyEngineModule[], timeouts: Readonly<Record<string, number>>): void {
  const unknown = Object.keys(timeouts).filter((id) => !modules.some((module) => module.id === id));
  if (unknown.length > 0) {
    throw new ConfigError(`CONVERTD_ENGINE_TIMEOUTS names no engine "${unknown.join('", "')}": use ${modules.map((m) => m.id).join(', ')}`);
  }
}

/** What every engine's context shares; each engine adds its own id, settings and state directory. */
export interface EngineEnvironment {
  readonly log: Logger;
  readonly concurrency: number;
  readonly maxOutputBytes: number;
  readonly runsJobs: boolean;
  /** When a worker's Node pools start their processes (CONVERTD_POOL_START); an API node's never do. */
  readonly poolStart?: 'eager' | 'lazy';
  /** Where pooled processes live: `<stateRoot>/<engine id>/`, emptied when its pool starts. */
  readonly stateRoot: string;
}

export interface CreatedEngines {
  readonly engines: readonly Engine[];
  /** Modules whose create() failed (a capability nobody offers, say): reported like a failed probe. */
  readonly failed: readonly EngineStatus[];
}

/**
 * Creates the listed engines. A module that needs a capability is created after the modules that
 * provide it; a module whose create() throws is left out and reported, the others carry on.
 */
export function createEngines(modules: readonly AnyEngineModule[], settings: ReadonlyMap<string, Record<string, unknown>>, environment: EngineEnvironment): CreatedEngines {
  // Every engine that draws text finds the same fonts and substitutes, sandboxed or not.
  setCommonEnvironment(FONT_ENVIRONMENT);
  const offered = new Map<CapabilityName, unknown>();
  const engines: Engine[] = [];
  const failed: EngineStatus[] = [];
  const providers = new Set(modules.flatMap((module) => module.provides ?? []));
  const pending = [...modules];
  const ready = (module: AnyEngineModule) => (module.needs ?? []).every((need) => offered.has(need) || !providers.has(need));
  while (pending.length > 0) {
    // The first module whose needs are met; if none is (a cycle), the first, whose use() then fails.
    const index = Math.max(0, pending.findIndex(ready));
    const module = pending.splice(index, 1)[0]!;
    try {
      const engine = module.create(contextFor(module, settings.get(module.id) ?? {}, environment, offered));
      if (engine.id !== module.id) throw new Error(`its engine calls itself "${engine.id}"`);
      for (const capability of module.provides ?? []) {
        const offer = engine.capabilities?.[capability];
        if (!offer) throw new Error(`it declares "${capability}" but its engine does not offer it`);
        offered.set(capability, offer);
      }
      engines.push(engine);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      environment.log.warn({ engine: module.id, reason }, 'engine could not be created: its formats are not advertised');
      failed.push({ engine: module.id, ok: false, edges: 0, reason });
    }
  }
  return { engines, failed };
}

/** `run` with `environment` added to every run's variables (the run's own win). */
function withEnvironment(run: RunProgram, environment: Readonly<Record<string, string>>): RunProgram {
  if (Object.keys(environment).length === 0) return run;
  return (program, args, options) => run(program, args, { ...options, env: { ...environment, ...options.env } });
}

function contextFor(module: AnyEngineModule, settings: Record<string, unknown>, environment: EngineEnvironment, offered: ReadonlyMap<CapabilityName, unknown>): EngineContext<Record<string, unknown>> {
  const { log, concurrency, maxOutputBytes, runsJobs } = environment;
  const stateDir = path.join(environment.stateRoot, module.id);
  return {
    id: module.id,
    settings,
    log,
    run: withEnvironment(runProcess, module.environment?.() ?? {}),
    withScratchDir: (work) => withScratchDir(module.id, work),
    pools: {
      create: (program, options) => new ProcessPool(program, { ...options, stateDir, log }),
      node: (program, options) => createNodePool(program, {
        size: options?.size ?? concurrency,
        ...(options?.maxJobsPerProcess === undefined ? {} : { maxJobsPerProcess: options.maxJobsPerProcess }),
        start: runsJobs ? environment.poolStart ?? 'eager' : 'lazy',
        stateDir,
        maxOutputBytes,
      }, log),
    },
    concurrency,
    maxOutputBytes,
    runsJobs,
    use<K extends CapabilityName>(capability: K): Capabilities[K] {
      if (!(module.needs ?? []).includes(capability)) throw new Error(`${module.id} uses "${capability}" without listing it in its needs`);
      const offer = offered.get(capability);
      if (!offer) throw new Error(`no engine offers "${capability}", which ${module.id} needs`);
      return offer as Capabilities[K];
    },
  };
}
