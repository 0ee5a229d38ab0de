// The archive formats beyond zip, 7z and tar.gz/bz2/xz (archives.test.ts has those six, each to
// each): every pair the catalogue offers from or to tar.zst, tar.lz, tar.lzma, tar.Z, cpio, ISO
// 9660 (read and written), RAR, cab, LHA, xar, ar and Debian packages (read). One sample per
// source format, made once: by bsdtar, binutils' ar, dpkg-deb and gcab where they write the
// format, by test/helpers/archive-writers.ts where nothing here does (RAR, LHA).
// Each sample is first listed by a tool other than libarchive (test/helpers/list_archive.py) and
// must hold the tree as the format can carry it; then each output is listed the same way and must
// hold the sample's files (names, sizes, SHA-256) and directories. Then, per new read format, the
// hostile classes of docs/security.md#archives that the format can carry: names with `..` and
// absolute paths, symbolic and hard links, device nodes, an encrypted RAR, a flood of members and,
// where the format compresses, a bomb. Last, the corpus's real files of these families.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import tar from 'tar-stream';
import { fetchCatalogue, submit, submitOk, waitForJob, download, type ProgressRecord } from './helpers/client.ts';
import { ar, cab, lzh, rar4, type HandMember } from './helpers/archive-writers.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
/** archives.test.ts proves these six each to each. */
const FIRST_SIX = ['zip', '7z', 'tar', 'tar.gz', 'tar.bz2', 'tar.xz'];
const NEW_WRITES = ['tar.zst', 'tar.lz', 'tar.lzma', 'tar.z', 'cpio', 'iso'];
const WRITES = [...FIRST_SIX, ...NEW_WRITES];
const NEW_READ_ONLY = ['rar', 'cab', 'lzh', 'xar', 'ar', 'deb'];
const NEW_READS = [...NEW_WRITES, ...NEW_READ_ONLY];
/** Every pair this file proves: from each new format to every written one, and from the first six to the new ones. */
const PAIRS: Array<[string, string]> = [
  ...NEW_READS.flatMap((from) => WRITES.filter((to) => to !== from).map((to): [string, string] => [from, to])),
  ...FIRST_SIX.flatMap((from) => NEW_WRITES.map((to): [string, string] => [from, to])),
];
/** The result's file name ending where it is not the id. */
const FILE_EXTENSION: Record<string, string> = { 'tar.z': 'tar.Z' };

type Members = Record<string, { type: string; size: number; sha256?: string }>;
let server: RunningServer;
let work: string;
/** The tree every sample is made of. */
let tree: string;
let treeMembers: Members;

const run = promisify(execFile);
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** Listings of many archives in one Python process (test/helpers/list_archive.py --many). */
async function listMany(items: Array<{ file: string; format: string }>): Promise<Array<Members | { error: string }>> {
  if (items.length === 0) return [];
  const { stdout } = await run('/usr/bin/python3', [path.resolve('test/helpers/list_archive.py'), '--many', ...items.flatMap((i) => [i.file, i.format])], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as Array<Members | { error: string }>;
}

async function listOne(file: string, format: string): Promise<Members> {
  const [listed] = await listMany([{ file, format }]);
  if ('error' in listed! && typeof listed.error === 'string') throw new Error(`${format}: ${listed.error}`);
  return listed as Members;
}

/** The files of a listing, and its directories. */
function split(members: Members): { files: Members; dirs: Set<string> } {
  const files: Members = {};
  const dirs = new Set<string>();
  for (const [name, member] of Object.entries(members)) {
    if (member.type === 'dir') dirs.add(name);
    else files[name] = member;
  }
  return { files, dirs };
}

/**
 * The output holds the source's files exactly (names, types, sizes, SHA-256) and its directories;
 * a directory more is accepted only as the parent of a member (an ISO 9660 image or a 7z lists
 * the directories of a path the source gave without its own directory entry).
 */
function assertSameMembers(output: Members, source: Members, where: string): void {
  const out = split(output);
  const src = split(source);
  assert.deepEqual(out.files, src.files, `${where}: the files`);
  for (const dir of src.dirs) assert.ok(out.dirs.has(dir), `${where}: the directory ${dir} is missing`);
  const parents = new Set(Object.keys(source).flatMap((name) => name.split('/').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('/'))));
  for (const dir of out.dirs) assert.ok(src.dirs.has(dir) || parents.has(dir), `${where}: a directory ${dir} the source has not`);
}

/** The tree as a format without directory entries (cab) or without directories at all (ar) carries it. */
function filesOnly(members: Members): Members {
  return Object.fromEntries(Object.entries(members).filter(([, m]) => m.type === 'file'));
}

/** The members of the tree in order, for the hand writers. */
async function handMembers(): Promise<HandMember[]> {
  const out: HandMember[] = [];
  for (const [name, member] of Object.entries(treeMembers).sort(([a], [b]) => a.localeCompare(b))) {
    out.push(member.type === 'dir' ? { name, directory: true } : { name, content: await fs.readFile(path.join(tree, name)) });
  }
  return out;
}

/** bsdtar's options to write a format from a tree or another archive. */
const BSDTAR_WRITES: Record<string, string[]> = {
  zip: ['--format', 'zip'], '7z': ['--format', '7zip'], tar: ['--format', 'pax'], 'tar.gz': ['-z'], 'tar.bz2': ['-j'], 'tar.xz': ['-J'],
  'tar.zst': ['--zstd'], 'tar.lz': ['--lzip'], 'tar.lzma': ['--lzma'], 'tar.z': ['-Z'], cpio: ['--format', 'newc'], iso: ['--format', 'iso9660'], xar: ['--format', 'xar'],
};

/** One sample per source format, made once; with what its listing must show. */
const samples = new Map<string, Promise<{ file: string; members: Members }>>();
function sample(format: string): Promise<{ file: string; members: Members }> {
  let made = samples.get(format);
  if (!made) {
    made = makeSample(format);
    samples.set(format, made);
  }
  return made;
}

async function makeSample(format: string): Promise<{ file: string; members: Members }> {
  const file = path.join(work, `sample.${format}`);
  let expected = treeMembers;
  if (BSDTAR_WRITES[format]) {
    await run('bsdtar', ['-c', '-f', file, ...BSDTAR_WRITES[format]!, '-C', tree, 'docs']);
  } else if (format === 'rar') {
    await fs.writeFile(file, rar4(await handMembers()));
  } else if (format === 'lzh') {
    await fs.writeFile(file, lzh(await handMembers()));
  } else if (format === 'cab') {
    // gcab (Debian's, not libarchive) writes the files; a cabinet has no directory entries.
    const files = Object.keys(filesOnly(treeMembers));
    await run('gcab', ['-c', '-z', file, ...files], { cwd: tree });
    expected = filesOnly(treeMembers);
  } else if (format === 'ar') {
    // binutils' ar keeps base names only: the tree's files, flat.
    const flat = path.join(work, 'flat');
    await fs.mkdir(flat, { recursive: true });
    for (const name of Object.keys(filesOnly(treeMembers))) await fs.copyFile(path.join(tree, name), path.join(flat, path.basename(name)));
    const names = (await fs.readdir(flat)).sort();
    await run('ar', ['rcS', file, ...names], { cwd: flat });
    expected = Object.fromEntries(Object.entries(filesOnly(treeMembers)).map(([name, m]) => [path.basename(name), m]));
  } else if (format === 'deb') {
    // A package whose data is the tree: its members are debian-binary, control.tar.* and data.tar.*.
    const root = path.join(work, 'package');
    await fs.mkdir(path.join(root, 'DEBIAN'), { recursive: true });
    await fs.writeFile(path.join(root, 'DEBIAN/control'), 'Package: convertd-sample\nVersion: 1.0\nArchitecture: all\nMaintainer: convertd <tests@example.org>\nDescription: a sample package\n');
    await fs.cp(path.join(tree, 'docs'), path.join(root, 'usr/share/doc/convertd-sample'), { recursive: true });
    await run('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', root, file]);
    // The members as binutils' ar sees them (independent of libarchive and 7-Zip).
    const names = (await run('ar', ['t', file])).stdout.trim().split('\n');
    assert.deepEqual(names.slice(0, 1), ['debian-binary']);
    expected = {};
    for (const name of names) {
      const data = execFileSync('ar', ['p', file, name], { maxBuffer: 64 * 1024 * 1024 });
      expected[name] = { type: 'file', size: data.length, sha256: sha256(data) };
    }
  } else {
    throw new Error(`no sample for ${format}`);
  }
  const members = await listOne(file, format);
  // The listing tool itself sees the tree in every sample: a listing that saw nothing would pass anything.
  assertSameMembers(members, expected, `the ${format} sample`);
  return { file, members: expected };
}

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off' });
  work = await tempDir('convertd-archive-formats-');
  tree = path.join(work, 'tree');
  await fs.mkdir(path.join(tree, 'docs/deep/er'), { recursive: true });
  await fs.mkdir(path.join(tree, 'docs/empty dir'));
  await fs.writeFile(path.join(tree, 'docs/readme.txt'), 'hello from convertd\n');
  await fs.writeFile(path.join(tree, 'docs/deep/er/random.bin'), randomBytes(40_000));
  await fs.writeFile(path.join(tree, 'docs/deep/zeros.bin'), Buffer.alloc(70_000));
  await fs.writeFile(path.join(tree, 'docs/naïve café.txt'), 'unicode names survive\n');
  await fs.writeFile(path.join(tree, 'docs/empty.txt'), '');
  treeMembers = {};
  for (const entry of await fs.readdir(tree, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    const name = path.relative(tree, full);
    if (entry.isDirectory()) treeMembers[name] = { type: 'dir', size: 0 };
    else {
      const data = await fs.readFile(full);
      treeMembers[name] = { type: 'file', size: data.length, sha256: sha256(data) };
    }
  }
});
after(async () => { await server?.stop(); });

test('the catalogue offers exactly the archive pairs these two files prove, each format sniffed by its content', async () => {
  const catalogue = await fetchCatalogue(server.url);
  for (const format of [...NEW_READS]) {
    const entry = catalogue.find((f) => f.id === format);
    assert.ok(entry, `${format} is offered`);
    assert.equal(entry.category, 'archive');
    const archiveTargets = entry.targets.filter((t) => catalogue.find((f) => f.id === t)?.category === 'archive');
    assert.deepEqual(new Set(archiveTargets), new Set(WRITES.filter((t) => t !== format)), `${format}'s archive targets`);
  }
  for (const format of FIRST_SIX) {
    const targets = catalogue.find((f) => f.id === format)!.targets;
    for (const to of NEW_WRITES) assert.ok(targets.includes(to), `${format} → ${to}`);
  }
});

/** Each source's outputs, converted side by side and listed in one Python process. */
const outputs = new Map<string, Promise<Map<string, { members?: Members; error?: string; disposition?: string }>>>();
function outputsOf(source: string): Promise<Map<string, { members?: Members; error?: string; disposition?: string }>> {
  let made = outputs.get(source);
  if (!made) {
    made = (async () => {
      const { file } = await sample(source);
      const bytes = await fs.readFile(file);
      const targets = PAIRS.filter(([from]) => from === source).map(([, to]) => to);
      const results = new Map<string, { members?: Members; error?: string; disposition?: string; file?: string }>();
      await Promise.all(targets.map(async (target) => {
        const answer = await submit(server.url, bytes, `backup.${source === 'tar.z' ? 'tar.Z' : source}`, target);
        if (answer.status !== 200) {
          results.set(target, { error: `submission refused: ${answer.status} ${await answer.text()}` });
          return;
        }
        const jobId = ((await answer.json()) as { job_id: string }).job_id;
        const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
        if (final.status !== 'done') {
          results.set(target, { error: JSON.stringify(final.error) });
          return;
        }
        const { response, bytes: out } = await download(server.url, final.download_url!);
        const outFile = path.join(work, `out-${source}-to.${target}`);
        await fs.writeFile(outFile, out);
        results.set(target, { file: outFile, disposition: response.headers.get('content-disposition') ?? '' });
      }));
      const listed = [...results].filter(([, r]) => r.file);
      const listings = await listMany(listed.map(([target, r]) => ({ file: r.file!, format: target })));
      listed.forEach(([target, r], i) => {
        const listing = listings[i]!;
        if ('error' in listing && typeof listing.error === 'string') r.error = `the output cannot be listed: ${listing.error}`;
        else r.members = listing as Members;
      });
      return results;
    })();
    outputs.set(source, made);
  }
  return made;
}

describe('every new archive pair keeps every member: names, directories, sizes, SHA-256', { concurrency: 4 }, () => {
  for (const [source, target] of PAIRS) {
    test(`${source} → ${target}`, async () => {
      const { members: expected } = await sample(source);
      const result = (await outputsOf(source)).get(target)!;
      assert.equal(result.error, undefined, result.error);
      const ending = FILE_EXTENSION[target] ?? target;
      assert.match(result.disposition!, new RegExp(`filename="?backup\\.${ending.replaceAll('.', '\\.')}"?`));
      assertSameMembers(result.members!, expected, `${source} → ${target}`);
    });
  }
});
