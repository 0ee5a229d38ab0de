// The engine modules and what is derived from their list (src/engines/index.ts): an engine is one
// folder plus one line in the list, imported from nowhere else; engines take effects from their
// context; the catalogue, the packages (setup script and Dockerfile alike), the settings and
// docs/architecture.md's engine table all come from the list. Static and unit checks: no service
// is started here (the pair tests convert through the real service).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { ConfigError } from '../src/config.ts';
import { catalogueOf, createEngines, debianPackagesOf, readEngineSettings, type AnyEngineModule } from '../src/engines/assembly.ts';
import { ENGINE_MODULES } from '../src/engines/index.ts';
import { defineEngine, type RunProgram } from '../src/engines/module.ts';
import type { ConversionEdge, Engine } from '../src/engines/types.ts';
import { makeModulesHome, systemModulesDirectory } from '../src/engines/support/vips-modules.ts';
import { PROCESS_PACKAGES } from '../src/process/packages.ts';
import { ARCHITECTURE_DOC, engineTable, withTable } from '../scripts/engine-table.ts';
import { optionsTable, README, withOptionsTable } from '../scripts/options-table.ts';
import { detailTable, formatRows, FORMATS_DOC, readmeTable, withDetailTable, withReadmeTable } from '../scripts/formats-table.ts';
import { packagesToInstall } from '../scripts/packages.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const ENGINES_DIR = path.join(ROOT, 'src', 'engines');
/** Code several engines share; not an engine. */
const SHARED_ENGINE_CODE = new Set(['support']);
const silent = pino({ level: 'silent' });

function filesUnder(dir: string, pattern = /\.(ts|mjs|js)$/): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(full, pattern);
    return pattern.test(entry.name) ? [full] : [];
  });
}

const engineFolders = readdirSync(ENGINES_DIR).filter((name) => statSync(path.join(ENGINES_DIR, name)).isDirectory() && !SHARED_ENGINE_CODE.has(name));

/** Relative module specifiers a file imports (static, dynamic and re-exports), with whether each is type-only. */
function importsOf(file: string): Array<{ specifier: string; typeOnly: boolean; names: string }> {
  const source = readFileSync(file, 'utf8');
  const found: Array<{ specifier: string; typeOnly: boolean; names: string }> = [];
  for (const match of source.matchAll(/^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]/gm)) {
    found.push({ specifier: match[4]!, typeOnly: Boolean(match[2]), names: match[3]! });
  }
  for (const match of source.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push({ specifier: match[1]!, typeOnly: false, names: '' });
  return found.filter(({ specifier }) => specifier.startsWith('.'));
}

/** The engine folder a path is in, if any. */
function engineFolderOf(file: string): string | undefined {
  const relative = path.relative(ENGINES_DIR, file);
  if (relative.startsWith('..') || !relative.includes(path.sep)) return undefined;
  const folder = relative.split(path.sep)[0]!;
  return engineFolders.includes(folder) ? folder : undefined;
}

test('every folder under src/engines/ is one engine module in the list, under its own id, one line each', () => {
  assert.deepEqual(ENGINE_MODULES.map((module) => module.id).sort(), [...engineFolders].sort());
  const list = readFileSync(path.join(ENGINES_DIR, 'index.ts'), 'utf8');
  for (const folder of engineFolders) {
    const lines = list.split('\n').filter((line) => line.includes(`'./${folder}/index.ts'`));
    assert.equal(lines.length, 1, `src/engines/index.ts names ${folder}/ on one line`);
  }
});

test('an engine folder is imported from nowhere but the list (and from inside itself)', () => {
  const list = path.join(ENGINES_DIR, 'index.ts');
  const files = ['src', 'test', 'scripts'].flatMap((dir) => filesUnder(path.join(ROOT, dir)));
  const outside: string[] = [];
  for (const file of files) {
    const own = engineFolderOf(file);
    for (const { specifier } of importsOf(file)) {
      const target = engineFolderOf(path.resolve(path.dirname(file), specifier));
      if (target && target !== own && !(file === list && (specifier === `./${target}/index.ts` || /^\.\/ffmpeg\/engine\.ts$/.test(specifier)))) {
        outside.push(`${path.relative(ROOT, file)} imports ${specifier}`);
      }
    }
  }
  assert.deepEqual(outside, []);
  // The check itself sees imports: the list imports every folder.
  assert.equal(importsOf(list).filter(({ specifier }) => /^\.\/[^/]+\/index\.ts$/.test(specifier)).length, engineFolders.length);
});

test('engines take the runner, scratch directories and pools from their context, never from the process layer', () => {
  const offending: string[] = [];
  for (const file of filesUnder(ENGINES_DIR).filter((f) => engineFolderOf(f) || f.includes(`${path.sep}support${path.sep}`))) {
    for (const { specifier, typeOnly, names } of importsOf(file)) {
      const target = path.resolve(path.dirname(file), specifier);
      const inProcess = path.relative(path.join(ROOT, 'src', 'process'), target);
      if (inProcess.startsWith('..')) continue;
      const effectful = /^(scratch|sandbox|cgroups|launchers)\.ts$/.test(inProcess)
        || (inProcess.startsWith(`pool${path.sep}`) && !typeOnly && !/^\s*\{?\s*type\b/.test(names) && /\b(ProcessPool|createNodePool)\b/.test(names))
        || (inProcess === 'runner.ts' && /\brunProcess\b/.test(names));
      if (effectful) offending.push(`${path.relative(ROOT, file)} imports ${names.trim()} from ${specifier}`);
    }
  }
  assert.deepEqual(offending, []);
});

test('the catalogue is the formats the modules add: each added once, each converted by some engine', () => {
  const catalogue = catalogueOf(ENGINE_MODULES);
  const ids = ENGINE_MODULES.flatMap((module) => module.formats.map((format) => format.id));
  assert.equal(catalogue.all().length, ids.length);
  const { engines, failed } = createEngines(ENGINE_MODULES, readEngineSettings(ENGINE_MODULES, {}, { cores: 2 }), {
    log: silent, concurrency: 1, maxOutputBytes: 1, runsJobs: false, stateRoot: os.tmpdir(),
  });
  assert.deepEqual(failed, []);
  const edges = engines.flatMap((engine) => engine.edges);
  for (const edge of edges) {
    assert.ok(catalogue.get(edge.from) && catalogue.get(edge.to), `${edge.from} → ${edge.to}: both formats are added by a module`);
  }
  const converted = new Set(edges.flatMap((edge) => [edge.from, edge.to]));
  assert.deepEqual(catalogue.all().map((format) => format.id).filter((id) => !converted.has(id)), [], 'no format is added that no engine reads or writes');
  // Two modules adding one format would make the catalogue refuse to start.
  assert.throws(() => catalogueOf([...ENGINE_MODULES, ENGINE_MODULES[0]!]), /two formats have the id/);
});

test('scripts/setup.mjs and the Dockerfile install the same packages, from the list', () => {
  const expected = [...PROCESS_PACKAGES, ...debianPackagesOf(ENGINE_MODULES)];
  assert.ok(expected.includes('cgroup-tools') && expected.includes('libreoffice-nogui'));
  assert.deepEqual(packagesToInstall(false), [...new Set(expected)]);
  for (const module of ENGINE_MODULES) {
    for (const name of module.packages.debian) assert.ok(packagesToInstall(false).includes(name), `${module.id}'s ${name} is installed`);
  }

  // The setup script asks scripts/packages.ts and names no package of its own.
  const setup = readFileSync(path.join(ROOT, 'scripts', 'setup.mjs'), 'utf8');
  assert.match(setup, /scripts', 'packages\.ts'/);
  for (const name of packagesToInstall(true)) assert.doesNotMatch(setup, new RegExp(`['"]${name}['"]`), `setup.mjs names ${name}`);

  // The Dockerfile installs, besides what bootstraps the build, exactly what scripts/packages.ts prints.
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const bootstrap = new Set(['ca-certificates', 'tini', 'nodejs', 'npm']);
  const literal = [...dockerfile.matchAll(/apt-get install ([^&\n]*)/g)]
    .flatMap((match) => match[1]!.split(/\s+/))
    .filter((word) => word && !word.startsWith('-') && !word.startsWith('$'));
  assert.deepEqual(literal.filter((word) => !bootstrap.has(word)), [], 'the Dockerfile names no engine package');
  assert.match(dockerfile, /node_modules\/\.bin\/node scripts\/packages\.ts > \/tmp\/packages\.txt/);
  assert.match(dockerfile, /xargs --arg-file=\/tmp\/packages\.txt apt-get install/);
  assert.match(dockerfile, /COPY scripts\/packages\.ts/);
});

test('every engine setting is read from its variable, checked at start and documented in the README', () => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const settings = ENGINE_MODULES.flatMap((module) => Object.values(module.settings ?? {}));
  assert.ok(settings.length > 0);
  for (const setting of settings) assert.ok(readme.includes(`\`${setting.env}\``), `README documents ${setting.env}`);

  const defaults = readEngineSettings(ENGINE_MODULES, {}, { cores: 2 }).get('libreoffice');
  assert.deepEqual(defaults, { poolSize: 2, maxJobs: 100, start: 'eager', queue: 100 });
  const set = readEngineSettings(ENGINE_MODULES, { CONVERTD_LIBREOFFICE_POOL: '3', CONVERTD_LIBREOFFICE_START: 'LAZY' }, { cores: 8 }).get('libreoffice');
  assert.equal(set?.poolSize, 3);
  assert.equal(set?.start, 'lazy');
  assert.throws(() => readEngineSettings(ENGINE_MODULES, { CONVERTD_LIBREOFFICE_POOL: '0' }, { cores: 2 }), (error: unknown) => error instanceof ConfigError && /CONVERTD_LIBREOFFICE_POOL: "0"/.test(error.message));
  assert.throws(() => readEngineSettings(ENGINE_MODULES, { CONVERTD_LIBREOFFICE_START: 'soon' }, { cores: 2 }), /CONVERTD_LIBREOFFICE_START: "soon" must be "eager" \(the default\) or "lazy"/);
});

test("docs/architecture.md's engine table is the one generated from the list", () => {
  const doc = readFileSync(ARCHITECTURE_DOC, 'utf8');
  const generated = engineTable();
  const start = doc.indexOf(generated.split('\n')[0]!);
  const current = doc.slice(start, start + doc.slice(start).indexOf(generated.split('\n').at(-1)!) + generated.split('\n').at(-1)!.length);
  assert.equal(current, generated, 'run `node scripts/engine-table.ts --write`');
  assert.equal(withTable(doc, generated), doc);
  for (const module of ENGINE_MODULES) assert.ok(doc.includes(`| \`${module.id}/\` |`));
});

test("README's options table is the one generated from the engines' declarations", () => {
  const doc = readFileSync(README, 'utf8');
  assert.equal(withOptionsTable(doc, optionsTable()), doc, 'run `node scripts/options-table.ts --write`');
  assert.ok(doc.includes('| `sharp` | `quality` |'));
});

test("README's formats table and docs/formats.md are the ones generated from the engines' declarations", () => {
  const rows = formatRows();
  const readme = readFileSync(README, 'utf8');
  assert.equal(withReadmeTable(readme, readmeTable(rows)), readme, 'run `node scripts/formats-table.ts --write`');
  const detail = readFileSync(FORMATS_DOC, 'utf8');
  assert.equal(withDetailTable(detail, detailTable(rows)), detail, 'run `node scripts/formats-table.ts --write`');
  // Every format some engine reads or writes is on the map, under its category.
  for (const row of rows) assert.ok(readme.includes(`\`${row.format.id}\``) && detail.includes(`| \`${row.format.id}\` |`), row.format.id);
});

/** A module whose engine converts nothing, for the assembly's own rules. */
function fakeModule(id: string, options: { provides?: ['raster-images']; needs?: ['raster-images']; offers?: boolean; created: string[] }): AnyEngineModule {
  return defineEngine({
    id,
    summary: 'fake',
    packages: { debian: [] },
    formats: [],
    provides: options.provides,
    needs: options.needs,
    create: (context) => {
      if (options.needs) context.use('raster-images');
      options.created.push(id);
      const edges: ConversionEdge[] = [];
      const engine: Engine = {
        id, edges, reportsProgress: false, estimateSeconds: () => 1, probe: async () => undefined, convert: async () => undefined,
        ...(options.offers ? { capabilities: { 'raster-images': { reencode: async () => undefined, flattenOntoWhite: async () => undefined, greymap: async () => undefined } } } : {}),
      };
      return engine;
    },
  }) as AnyEngineModule;
}

const environment = { log: silent, concurrency: 1, maxOutputBytes: 1, runsJobs: false, stateRoot: os.tmpdir() };

test('an engine that needs a capability is created after the one providing it, whatever the order of the list', () => {
  const created: string[] = [];
  const modules = [fakeModule('user', { needs: ['raster-images'], created }), fakeModule('provider', { provides: ['raster-images'], offers: true, created })];
  const result = createEngines(modules, new Map(), environment);
  assert.deepEqual(created, ['provider', 'user']);
  assert.deepEqual(result.engines.map((engine) => engine.id), ['provider', 'user']);
  assert.deepEqual(result.failed, []);
});

test('an engine whose capability nobody offers is reported unavailable; the others are created', () => {
  const created: string[] = [];
  const result = createEngines([fakeModule('user', { needs: ['raster-images'], created }), fakeModule('other', { created })], new Map(), environment);
  assert.deepEqual(result.engines.map((engine) => engine.id), ['other']);
  assert.equal(result.failed.length, 1);
  assert.equal(result.failed[0]?.engine, 'user');
  assert.match(result.failed[0]?.reason ?? '', /no engine offers "raster-images"/);
});

test('a module that declares a capability its engine does not offer, or uses one it did not list, is refused', () => {
  const created: string[] = [];
  const liar = createEngines([fakeModule('liar', { provides: ['raster-images'], offers: false, created })], new Map(), environment);
  assert.match(liar.failed[0]?.reason ?? '', /declares "raster-images" but its engine does not offer it/);
  const sneaky = defineEngine({
    id: 'sneaky', summary: 'fake', packages: { debian: [] }, formats: [],
    create: (context) => {
      context.use('raster-images');
      throw new Error('unreachable');
    },
  }) as AnyEngineModule;
  const result = createEngines([fakeModule('provider', { provides: ['raster-images'], offers: true, created }), sneaky], new Map(), environment);
  assert.match(result.failed[0]?.reason ?? '', /uses "raster-images" without listing it in its needs/);
});

test("a module's environment reaches every program its engine runs; a run's own variables win", async () => {
  let run: RunProgram | undefined;
  const module = defineEngine({
    id: 'with-environment', summary: 'fake', packages: { debian: [] }, formats: [],
    environment: () => ({ CONVERTD_FAKE_SHARED: 'module', CONVERTD_FAKE_OWN: 'module' }),
    create: (context) => {
      run = context.run;
      return { id: 'with-environment', edges: [], probe: async () => [], convert: async () => undefined } as unknown as Engine;
    },
  }) as AnyEngineModule;
  const { failed } = createEngines([module], new Map(), environment);
  assert.deepEqual(failed, []);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'convertd-environment-'));
  try {
    const result = await run!('/usr/bin/env', [], { cwd: dir, timeoutMs: 10_000, captureStdout: true, env: { CONVERTD_FAKE_OWN: 'run' } });
    assert.match(result.stdout, /^CONVERTD_FAKE_SHARED=module$/m);
    assert.match(result.stdout, /^CONVERTD_FAKE_OWN=run$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('ffmpeg and GDAL start with the reference BLAS: neither loads OpenBLAS, which they link and never use (support/reference-blas.ts)', () => {
  const loaded = (program: string, env: Readonly<Record<string, string>>) => execFileSync('/usr/bin/ldd', [program], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', ...env } });
  for (const id of ['ffmpeg', 'gdal']) {
    const module = ENGINE_MODULES.find((candidate) => candidate.id === id)!;
    assert.ok(module.packages.debian.includes('libblas3') && module.packages.debian.includes('liblapack3'), `${id} asks for the reference libraries`);
    const variables = module.environment?.() ?? {};
    // The setup installs the reference libraries with the engine, so they are here.
    assert.match(variables.LD_LIBRARY_PATH ?? '', /\/blas:.*\/lapack$/, `${id}'s environment names them`);
    const program = id === 'ffmpeg' ? '/usr/bin/ffmpeg' : '/usr/bin/ogr2ogr';
    // Control: on this machine the default BLAS is OpenBLAS (the setup's python3-fonttools
    // brings SciPy, which brings it), so the
    // check below is not true by accident.
    assert.match(loaded(program, {}), /libopenblas/, `${program} loads OpenBLAS by default here`);
    const withReference = loaded(program, variables);
    assert.doesNotMatch(withReference, /libopenblas/, `${program} still loads OpenBLAS`);
    assert.match(withReference, /\/blas\/libblas\.so\.3/);
  }
});

test("the vips engine's programs load libvips' HEIF and JPEG XL modules only: ImageMagick's, poppler's and OpenSlide's loaders are out of reach (support/vips-modules.ts)", async () => {
  const system = systemModulesDirectory();
  assert.ok(system, 'libvips has a modules directory here (libvips-tools installs it)');
  const home = await makeModulesHome(system);
  assert.ok(home);
  try {
    const loaders = (env: Readonly<Record<string, string>>) => execFileSync('/usr/bin/vips', ['-l', 'foreign'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', ...env } });
    // Control: by default libvips loads every module, ImageMagick's and poppler's among them.
    const everything = loaders({});
    for (const loader of ['heifload', 'jxlload', 'magickload', 'pdfload']) assert.match(everything, new RegExp(`\\(${loader}\\)`), `${loader} by default`);
    const engines = loaders({ VIPSHOME: home });
    for (const loader of ['heifload', 'heifsave', 'jxlload', 'jxlsave', 'jp2kload', 'pngload', 'vipsload']) assert.match(engines, new RegExp(`\\(${loader}\\)`), `${loader} under the engine's VIPSHOME`);
    for (const loader of ['magickload', 'pdfload', 'openslideload']) assert.doesNotMatch(engines, new RegExp(`\\(${loader}\\)`), `${loader} under the engine's VIPSHOME`);
    // What that means for a file vipsheader sniffs: a PDF is read by default, refused by the engine's.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'convertd-vips-test-'));
    try {
      const pdf = path.join(dir, 'page.pdf');
      execFileSync('/usr/bin/gs', ['-q', '-dSAFER', '-dBATCH', '-dNOPAUSE', '-sDEVICE=pdfwrite', `-sOutputFile=${pdf}`, '-c', 'showpage']);
      const header = (env: Readonly<Record<string, string>>) => spawnSync('/usr/bin/vipsheader', [pdf], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', ...env } });
      assert.equal(header({}).status, 0, 'vipsheader reads a PDF by default');
      assert.notEqual(header({ VIPSHOME: home }).status, 0, "vipsheader reads no PDF under the engine's VIPSHOME");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
