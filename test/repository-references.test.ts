// Comments and configuration point only inside the repository: a clone has no ../shared folder
// beside it, so nothing under src/ or scripts/ may send a reader there, and every
// `docs/<page>.md#<anchor>` that the sources cite must be a heading of that page (as GitHub
// makes anchors of headings). Static: reads files, starts nothing.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Folders whose files must not point into the shared folder. */
const SOURCE_DIRS = ['src', 'scripts'];
/** Where citations of docs/ pages are looked for (the sources, the tests, the other docs). */
const CITING = [...SOURCE_DIRS, 'test', 'docs/architecture.md', 'README.md'];
/** A path into the shared folder, or one of its files named as if it were here. */
const SHARED = /shared\/(security|stack|spec|corpus)|\.\.\/shared\/|(^|[^/\w.-])(security|stack)\.md\b/;
const ANCHOR = /docs\/([\w-]+)\.md#([\w-]+)/g;

function filesUnder(relative: string): string[] {
  const absolute = path.join(ROOT, relative);
  if (statSync(absolute).isFile()) return [relative];
  return readdirSync(absolute, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

function lines(file: string): string[] {
  return readFileSync(path.join(ROOT, file), 'utf8').split('\n');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!.toLowerCase().replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

test('no file under src/ or scripts/ points into the shared folder', () => {
  const files = SOURCE_DIRS.flatMap(filesUnder);
  assert.ok(files.length > 50, `only ${files.length} files found under ${SOURCE_DIRS.join(', ')}`);
  const found = files.flatMap((file) => lines(file)
    .map((line, index) => ({ where: `${file}:${index + 1}`, line: line.trim() }))
    .filter(({ line }) => SHARED.test(line)));
  assert.deepEqual(found, [], 'point to docs/ (docs/security.md#<section>) or state the fact instead');
});

test('every anchor of a docs/ page that the sources cite is a heading of that page', () => {
  const cited = CITING.flatMap(filesUnder).flatMap((file) => lines(file).flatMap((line, index) =>
    [...line.matchAll(ANCHOR)].map((match) => ({ where: `${file}:${index + 1}`, page: `docs/${match[1]!}.md`, anchor: match[2]! }))));
  assert.ok(cited.filter(({ page }) => page === 'docs/security.md').length >= 20, 'fewer than 20 citations of docs/security.md found');
  const anchorsOf = new Map<string, Set<string>>();
  const missing = cited.filter(({ page, anchor }) => {
    if (!anchorsOf.has(page)) anchorsOf.set(page, headingAnchors(readFileSync(path.join(ROOT, page), 'utf8')));
    return !anchorsOf.get(page)!.has(anchor);
  });
  assert.deepEqual(missing, [], 'each must name a heading of its page');
});

test('heading anchors follow GitHub\'s rules', () => {
  const anchors = headingAnchors('# A title\n## PDF and poppler\n### SVG (librsvg)\n## Notes\n## Notes\n```\n# not a heading\n```\n');
  assert.deepEqual([...anchors], ['a-title', 'pdf-and-poppler', 'svg-librsvg', 'notes', 'notes-1']);
});
