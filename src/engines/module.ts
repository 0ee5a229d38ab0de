// What an engine module is: one folder under src/engines/<tool>/ whose index.ts exports one
// descriptor (defineEngine) carrying everything about the engine: the Debian and npm packages it
// needs, the formats it adds to the catalogue, its settings (read from the environment and checked
// at start), the capabilities it offers to other engines or needs from them, and create(), which
// receives what the engine uses (the process runner, the pool supervisor, scratch directories,
// other engines by capability) instead of importing it. The list in engines/index.ts names the
// modules; the catalogue, the setup script's and the Dockerfile's packages, /metrics' pool gauges,
// /readyz and docs/architecture.md's engine table are all derived from it (engines/assembly.ts).
// docs/architecture.md "Adding an engine" walks through writing one.
import type { Logger } from 'pino';
import { ConfigError } from '../config.ts';
import type { FormatDefinition } from '../formats/catalogue.ts';
import type { ProcessPool, PooledProgram, PoolOptions } from '../process/pool/index.ts';
import type { NodePoolOptions, NodeProgramOptions } from '../process/pool/node-program.ts';
import type { RunOptions, RunResult } from '../process/runner.ts';
import type { Capabilities, CapabilityName } from './capabilities.ts';
import type { Engine } from './types.ts';

/** One setting of an engine, read from an environment variable and checked when the service starts. */
export interface EngineSetting<T> {
  /** The variable, CONVERTD_<ENGINE>_<NAME>; the README documents each one (a test checks it). */
  readonly env: string;
  readonly description: string;
  /** The default in words, for the docs ("4, or the number of cores if fewer"). */
  readonly defaultText: string;
  /** Parses the variable's value (undefined or blank: the default); throws ConfigError naming the variable. */
  read(raw: string | undefined, machine: MachineFacts): T;
}

export interface MachineFacts {
  readonly cores: number;
}

/** The settings an engine declares, by the names its code reads them under. */
export type SettingSpecs<S> = { readonly [K in keyof S]: EngineSetting<S[K]> };

/** Starts a program through the one process runner (src/process/runner.ts): sandbox, limits, group kill. */
export type RunProgram = (program: string, args: readonly string[], options: RunOptions) => Promise<RunResult>;

/** The warm-process supervisor (src/process/pool/), for engines that are slow to start. */
export interface PoolSupervisor {
  /** A pool of helper processes speaking JSON lines; `stateDir` and `log` are the engine's own. */
  create(program: PooledProgram, options: Omit<PoolOptions, 'stateDir' | 'log'>): ProcessPool;
  /**
   * A pool of Node processes running one of our modules (its `handlers`) in the sandbox: one
   * process per concurrent job (unless `size` says fewer), started at once where jobs run, each
   * replaced after `maxJobsPerProcess` conversions (1000 unless set).
   */
  node(program: NodeProgramOptions, options?: Partial<Pick<NodePoolOptions, 'size' | 'maxJobsPerProcess'>>): ProcessPool;
}

/** What create() receives. Engines take effects from here, never by importing the process layer. */
export interface EngineContext<S> {
  readonly id: string;
  readonly settings: S;
  readonly log: Logger;
  readonly run: RunProgram;
  /** Runs `work` in a fresh scratch directory the engine's sandboxed user may write (start-up probes). */
  withScratchDir<T>(work: (dir: string) => Promise<T>): Promise<T>;
  readonly pools: PoolSupervisor;
  /** Jobs run at once: the size of a pool that serves one job per process. */
  readonly concurrency: number;
  readonly maxOutputBytes: number;
  /** False on an API node, which converts nothing: its pools must not start processes. */
  readonly runsJobs: boolean;
  /** Another engine's capability (capabilities.ts); the module must list it in `needs`. */
  use<K extends CapabilityName>(capability: K): Capabilities[K];
}

export interface EnginePackages {
  /** Debian packages the engine's programs come from (installed by scripts/setup.mjs and the Dockerfile). */
  readonly debian: readonly string[];
  /** npm packages its code loads (already dependencies in package.json; listed for the docs). */
  readonly npm?: readonly string[];
}

export interface EngineModule<S = Record<string, never>> {
  /** Short stable name: logs, metrics, CONVERTD_ENGINE_TIMEOUTS; equal to the folder's name. */
  readonly id: string;
  /** What the engine runs and how, in a line, for docs/architecture.md's engine table. */
  readonly summary: string;
  readonly packages: EnginePackages;
  /** Formats this engine adds to the catalogue (each format is added by exactly one module). */
  readonly formats: readonly FormatDefinition[];
  readonly settings?: SettingSpecs<S>;
  /** Capabilities its engine offers other engines (the engine returns them in `capabilities`). */
  readonly provides?: readonly CapabilityName[];
  /** Capabilities it uses from other engines: the engines offering them are created first. */
  readonly needs?: readonly CapabilityName[];
  /**
   * Variables every program this engine starts through `context.run` gets, beside the runner's
   * clean environment (a run's own `env` wins): what makes the engine's programs cheaper or safer
   * to start wherever they run, not settings a user chooses (those are `settings`).
   */
  readonly environment?: () => Readonly<Record<string, string>>;
  create(context: EngineContext<S>): Engine;
}

/** Declares an engine module; the identity, for the types. */
export function defineEngine<S = Record<string, never>>(module: EngineModule<S>): EngineModule<S> {
  return module;
}

/** A whole-number setting within bounds. */
export function wholeNumberSetting(spec: {
  env: string;
  description: string;
  min: number;
  max?: number;
  default: number | ((machine: MachineFacts) => number);
  defaultText?: string;
}): EngineSetting<number> {
  const max = spec.max ?? Number.MAX_SAFE_INTEGER;
  return {
    env: spec.env,
    description: spec.description,
    defaultText: spec.defaultText ?? String(spec.default),
    read(raw, machine) {
      if (raw === undefined || raw.trim() === '') return typeof spec.default === 'function' ? spec.default(machine) : spec.default;
      const value = Number(raw);
      if (!Number.isInteger(value) || value < spec.min || value > max) {
        throw new ConfigError(`${spec.env}: "${raw}" must be a whole number from ${spec.min} to ${max}`);
      }
      return value;
    },
  };
}

/** A setting that takes one of a few words; the first is the default. */
export function choiceSetting<T extends string>(spec: { env: string; description: string; values: readonly [T, ...T[]] }): EngineSetting<T> {
  const [fallback] = spec.values;
  return {
    env: spec.env,
    description: spec.description,
    defaultText: fallback,
    read(raw) {
      const value = (raw ?? '').trim().toLowerCase();
      if (value === '') return fallback;
      const found = spec.values.find((choice) => choice === value);
      if (!found) throw new ConfigError(`${spec.env}: "${raw}" must be ${spec.values.map((v, i) => `"${v}"${i === 0 ? ' (the default)' : ''}`).join(' or ')}`);
      return found;
    },
  };
}
