// Remembers which edges of an engine passed its start-up probe, so that a service started again on
// the same machine, with the same engines, code and settings (its own time limit among them),
// need not convert its probe samples again (ffmpeg, ImageMagick, vips, pandoc and the rest: ten
// seconds and more of CPU at every start; the warm pools still start, through warm()). Off
// unless CONVERTD_PROBE_CACHE_DIR names a directory: the test suite starts the service ~90 times,
// under some forty sets of settings, and sets it; an operator may too, for faster restarts.
//
// What makes a remembered verdict stale is in its key, never guessed: the engine's id and settings,
// the sandbox and limits its probe ran under, PATH, every source file of the service, and the
// identity (size, mtime) of the Debian and npm package databases, which change with any install or
// upgrade. Only passes are remembered: a failed probe runs again at the next start. An engine
// opts in with `probeMemory` (types.ts): a probe that leaves state behind (ghostscript's PDF/A
// prologue, whether 7-Zip works) must say how to restore it, or it is probed at every start.
// Files a probe makes that depend on the installed software only, whatever the settings (LaTeX's
// font database), live beside the verdicts in a directory per engine and software (keptFiles).
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ConversionEdge, Engine } from './types.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
/** Files whose identity changes when installed software does. */
const SOFTWARE_RECORDS = ['/var/lib/dpkg/status', path.join(ROOT, 'node_modules', '.package-lock.json')];
/** Verdicts kept per engine, one per set of conditions (the test suite starts the service under some forty). */
const KEPT_PER_ENGINE = 64;

/** What a probe's verdict depends on besides the engine: the same values give the same verdict. */
export interface ProbeConditions {
  readonly settings: ReadonlyMap<string, Record<string, unknown>>;
  /** The sandbox, limits and anything else the engines' processes start with. */
  readonly machine: Readonly<Record<string, unknown>>;
}

interface Remembered {
  readonly key: string;
  /** Indexes into the engine's declared edges of those that passed ('edges'). */
  readonly edges?: readonly number[];
  /** Or the facts its probe found, from which the engine restores its state and edges. */
  readonly facts?: unknown;
}

export class ProbeCache {
  private readonly dir: string;
  private readonly fingerprint: string;
  /** The installed software and the service's code only: what an engine's kept files depend on. */
  private readonly software: string;
  private readonly settings: ProbeConditions['settings'];

  private constructor(dir: string, fingerprint: string, software: string, settings: ProbeConditions['settings']) {
    this.dir = dir;
    this.fingerprint = fingerprint;
    this.software = software;
    this.settings = settings;
  }

  static async open(dir: string, conditions: ProbeConditions): Promise<ProbeCache> {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const software = createHash('sha256');
    for (const record of SOFTWARE_RECORDS) {
      const stat = await fs.stat(record).catch(() => undefined);
      software.update(`${record}:${stat ? `${stat.size}:${stat.mtimeMs}` : 'absent'}\n`);
    }
    for (const file of await sourceFiles(path.join(ROOT, 'src'))) {
      software.update(`${path.relative(ROOT, file)}\n`);
      software.update(await fs.readFile(file));
    }
    const softwareDigest = software.digest('hex');
    const fingerprint = createHash('sha256').update(JSON.stringify({ machine: conditions.machine, path: process.env.PATH ?? '', uid: process.getuid?.() })).update(softwareDigest).digest('hex');
    return new ProbeCache(dir, fingerprint, softwareDigest, conditions.settings);
  }

  /**
   * Where an engine keeps files across starts (Engine.useKeptFiles): one directory per engine and
   * version of the software, whatever the settings (the test suite's forty sets share LaTeX's font
   * database). The engine makes it; those of older software are removed here.
   */
  async keptFiles(engine: Engine): Promise<string> {
    const prefix = `${engine.id}-files-`;
    const name = `${prefix}${this.software.slice(0, 24)}`;
    const stale = (await fs.readdir(this.dir)).filter((entry) => {
      if (!entry.startsWith(prefix) || entry === name) return false;
      const rest = entry.slice(prefix.length);
      if (/^[0-9a-f]+$/.test(rest)) return true;
      // A copy being made (<name>.<pid>.tmp, renamed when whole) by a start that was killed meanwhile.
      const staging = /^[0-9a-f]+\.(\d+)\.tmp$/.exec(rest);
      return staging !== null && !isRunning(Number(staging[1]));
    });
    await Promise.all(stale.map((entry) => fs.rm(path.join(this.dir, entry), { recursive: true, force: true })));
    return path.join(this.dir, name);
  }

  private keyOf(engine: Engine): string {
    return createHash('sha256').update(this.fingerprint).update(engine.id).update(JSON.stringify(this.settings.get(engine.id) ?? {})).digest('hex');
  }

  /**
   * One file per engine and key: services started with other settings side by side (the test
   * suite's, with their own limits and sandboxes) each keep their verdict instead of overwriting
   * one another's, which made every engine probe again whenever the last start's settings differed.
   */
  private fileOf(engine: Engine): string {
    return path.join(this.dir, `${engine.id}-${this.keyOf(engine).slice(0, 24)}.json`);
  }

  /** An engine's remembered verdicts beyond the newest KEPT_PER_ENGINE removed: stale keys (an upgrade, an old setting) never pile up. */
  private async prune(engine: Engine): Promise<void> {
    // The engine's id, then only hex: not another engine whose id starts with this one's, nor a .tmp file.
    const names = (await fs.readdir(this.dir)).filter((name) => name.startsWith(`${engine.id}-`) && /^[0-9a-f]+\.json$/.test(name.slice(engine.id.length + 1)));
    if (names.length <= KEPT_PER_ENGINE) return;
    const dated = await Promise.all(names.map(async (name) => ({ name, mtime: (await fs.stat(path.join(this.dir, name)).catch(() => undefined))?.mtimeMs ?? 0 })));
    dated.sort((a, b) => b.mtime - a.mtime);
    await Promise.all(dated.slice(KEPT_PER_ENGINE).map(({ name }) => fs.rm(path.join(this.dir, name), { force: true })));
  }

  /**
   * The edges that passed the last probe under the same conditions, with the engine's state
   * restored; undefined when there was none (or the engine's probes are not remembered).
   */
  async recall(engine: Engine): Promise<readonly ConversionEdge[] | undefined> {
    const memory = engine.probeMemory;
    if (!memory) return undefined;
    const text = await fs.readFile(this.fileOf(engine), 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    let remembered: Remembered;
    try {
      remembered = JSON.parse(text) as Remembered;
    } catch {
      return undefined;
    }
    if (remembered.key !== this.keyOf(engine)) return undefined;
    if (memory !== 'edges') return 'facts' in remembered ? memory.restore(remembered.facts) : undefined;
    if (!Array.isArray(remembered.edges)) return undefined;
    const edges = remembered.edges.map((index) => engine.edges[index]);
    return edges.every((edge) => edge !== undefined) ? edges as ConversionEdge[] : undefined;
  }

  /** Notes a passed probe, as the engine's probeMemory says; nothing for an engine without one. */
  async remember(engine: Engine, passed: readonly ConversionEdge[]): Promise<void> {
    const memory = engine.probeMemory;
    let remembered: Remembered;
    if (memory === 'edges') {
      const indexes = passed.map((edge) => engine.edges.indexOf(edge));
      // An edge the probe made rather than picked cannot be named by its index.
      if (indexes.some((index) => index < 0)) return;
      remembered = { key: this.keyOf(engine), edges: indexes };
    } else if (memory) {
      remembered = { key: this.keyOf(engine), facts: memory.found() };
    } else {
      return;
    }
    const file = this.fileOf(engine);
    const temporary = `${file}.${process.pid}.tmp`;
    // Written whole, then renamed: a service starting beside this one reads the old or the new.
    await fs.writeFile(temporary, JSON.stringify(remembered));
    await fs.rename(temporary, file);
    await this.prune(engine);
  }
}

/** Whether a process of this id exists (signal 0 checks without sending anything). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}
