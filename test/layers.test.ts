// The layers' dependency rules (docs/architecture.md, "Layers"), checked on the source itself:
// the HTTP layer talks to the jobs layer only and touches no disk (storage owns an upload from its
// first byte), the jobs layer reads no state of the process layer (main.ts passes it in, as an
// EngineIsolation), and storage does not reach back up into the layers that use it. Static and
// fast: every import of every file is read with the TypeScript parser, nothing is run.
//
// No exemption is needed for the web page: http/routes/web.ts serves it, and src/web/bundle.ts,
// beside the page's own files, reads and bundles them.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname, '..');
const SRC = path.join(ROOT, 'src');

interface Import {
  /** What the file names, as written ("node:fs", "../storage/types.ts"). */
  readonly specifier: string;
  /** For a relative import, the file it names, relative to src/ ("storage/types.ts"). */
  readonly target?: string;
  /** Only types: erased when the file runs, so no code (and no state) of the target is loaded. */
  readonly typeOnly: boolean;
  readonly line: number;
}

/** Every import, re-export and dynamic import() of one source text. */
function importsOf(file: string, text: string): Import[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Import[] = [];
  const add = (literal: ts.Expression, typeOnly: boolean) => {
    if (!ts.isStringLiteralLike(literal)) return;
    const specifier = literal.text;
    const target = specifier.startsWith('.') ? path.relative(SRC, path.resolve(path.dirname(file), specifier)).split(path.sep).join('/') : undefined;
    found.push({ specifier, target, typeOnly, line: source.getLineAndCharacterOfPosition(literal.getStart()).line + 1 });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const allInlineTypes = !!clause && !clause.name && !!clause.namedBindings && ts.isNamedImports(clause.namedBindings)
        && clause.namedBindings.elements.length > 0 && clause.namedBindings.elements.every((element) => element.isTypeOnly);
      add(node.moduleSpecifier, !!clause && (clause.isTypeOnly || allInlineTypes));
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      const allInlineTypes = !!node.exportClause && ts.isNamedExports(node.exportClause)
        && node.exportClause.elements.length > 0 && node.exportClause.elements.every((element) => element.isTypeOnly);
      add(node.moduleSpecifier, node.isTypeOnly || allInlineTypes);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0]) {
      add(node.arguments[0], false);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression, node.isTypeOnly);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The .ts files under a folder of src/, with their path relative to src/. */
function sourceFiles(folder: string): Array<{ name: string; file: string }> {
  const dir = path.join(SRC, folder);
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => ({ name: `${folder}/${name.split(path.sep).join('/')}`, file: path.join(dir, name) }));
}

type Rule = (found: Import) => string | undefined;

const NODE_FS = new Set(['node:fs', 'node:fs/promises', 'fs', 'fs/promises']);
const under = (found: Import, folder: string) => found.target?.startsWith(`${folder}/`) ?? false;

const RULES: Record<string, Rule> = {
  // The HTTP layer calls JobService for everything (jobs/service.ts), and never the disk.
  http: (found) => {
    if (NODE_FS.has(found.specifier)) return 'the HTTP layer touches no disk: storage does, through JobService';
    for (const folder of ['storage', 'engines', 'process']) {
      if (under(found, folder)) return `the HTTP layer talks to the jobs layer only, not to src/${folder}/`;
    }
    return undefined;
  },
  // The jobs layer is given the process layer's settings (EngineIsolation); its types alone are shared.
  jobs: (found) => (under(found, 'process') && !found.typeOnly
    ? 'the jobs layer imports only types from src/process/: main.ts passes the isolation in'
    : undefined),
  // Storage is used by the layers above it and uses none of them (the HTTP layer's per-chunk
  // garbage-collection nudge comes in as an onBytes callback).
  storage: (found) => (['http', 'jobs', 'engines', 'process'].some((folder) => under(found, folder))
    ? 'storage depends on no layer above it'
    : undefined),
};

function violations(folder: string): string[] {
  const rule = RULES[folder]!;
  const found: string[] = [];
  for (const { name, file } of sourceFiles(folder)) {
    for (const imported of importsOf(file, readFileSync(file, 'utf8'))) {
      const problem = rule(imported);
      if (problem) found.push(`src/${name}:${imported.line} imports "${imported.specifier}": ${problem}`);
    }
  }
  return found;
}

for (const folder of Object.keys(RULES)) {
  test(`src/${folder}/ keeps to its layer's imports`, () => {
    assert.ok(sourceFiles(folder).length > 0, `no source under src/${folder}/`);
    assert.deepEqual(violations(folder), []);
  });
}

test('the import reader sees what the rules need (so that a rule cannot pass on nothing)', () => {
  const file = path.join(SRC, 'http', 'routes', 'example.ts');
  const found = importsOf(file, [
    "import fs from 'node:fs';",
    "import type { Upload } from '../../storage/types.ts';",
    "import { type A, type B } from '../../process/cgroups.ts';",
    "import { wrap, type SandboxMode } from '../../process/sandbox.ts';",
    "export { x } from '../../engines/registry.ts';",
    "export type { Y } from '../../jobs/types.ts';",
    "const later = () => import('node:fs/promises');",
  ].join('\n'));
  assert.deepEqual(found.map((f) => [f.specifier, f.target, f.typeOnly, f.line]), [
    ['node:fs', undefined, false, 1],
    ['../../storage/types.ts', 'storage/types.ts', true, 2],
    ['../../process/cgroups.ts', 'process/cgroups.ts', true, 3],
    ['../../process/sandbox.ts', 'process/sandbox.ts', false, 4],
    ['../../engines/registry.ts', 'engines/registry.ts', false, 5],
    ['../../jobs/types.ts', 'jobs/types.ts', true, 6],
    ['node:fs/promises', undefined, false, 7],
  ]);
  const http = found.map((f) => RULES.http!(f));
  assert.deepEqual(http.map(Boolean), [true, true, true, true, true, false, true]);
  const jobs = found.map((f) => RULES.jobs!(f));
  assert.deepEqual(jobs.map(Boolean), [false, false, false, true, false, false, false]);
});
