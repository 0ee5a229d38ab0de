// The archive formats beyond zip, 7z and tar.gz/bz2/xz (archives.test.ts has those six, each to
// each): every pair the catalogue offers from or to tar.zst, tar.lz, tar.lzma, tar.Z, tar.lz4,
// cpio, ISO 9660 (read and written), RAR, cab, LHA, xar, ar, Debian and RPM packages, SquashFS,
// WIM and ARJ (read). One sample per source format, made once: by bsdtar, binutils' ar,
// dpkg-deb, gcab, mksquashfs, wimcapture and arj where they write the format, by
// test/helpers/archive-writers.ts where nothing here does (RAR, LHA, the RPM around a cpio).
// Each sample is first listed by a tool other than libarchive (test/helpers/list_archive.py) and
// must hold the tree as the format can carry it; then each output is listed the same way and must
// hold the sample's files (names, sizes, SHA-256) and directories. Then, per new read format, the
// hostile classes of docs/security.md#archives that the format can carry: names with `..` and
// absolute paths, symbolic and hard links, device nodes, an encrypted RAR, a flood of members and,
// where the format compresses, a bomb. Last, the corpus's real files of these families.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import tar from 'tar-stream';
import { fetchCatalogue, submit, submitOk, waitForJob, download, type ProgressRecord } from './helpers/client.ts';
import { ar, cab, lzh, rar4, rar5, rpm, type HandMember } from './helpers/archive-writers.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { flatPng } from './helpers/fixtures.ts';

const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
/** archives.test.ts proves these six each to each. */
const FIRST_SIX = ['zip', '7z', 'tar', 'tar.gz', 'tar.bz2', 'tar.xz'];
const NEW_WRITES = ['tar.zst', 'tar.lz', 'tar.lzma', 'tar.z', 'tar.lz4', 'cpio', 'iso'];
const WRITES = [...FIRST_SIX, ...NEW_WRITES];
const NEW_READ_ONLY = ['rar', 'cab', 'lzh', 'xar', 'ar', 'deb', 'rpm', 'squashfs', 'wim', 'arj'];
const NEW_READS = [...NEW_WRITES, ...NEW_READ_ONLY];
/** Samples of a format in a second version, uploaded as that format: RAR 5 beside RAR 4. */
const VARIANTS: Record<string, string> = { rar5: 'rar' };
const formatOf = (source: string) => VARIANTS[source] ?? source;
/** Every pair this file proves: from each new format (and variant) to every written one, and from the first six to the new ones. */
const PAIRS: Array<[string, string]> = [
  ...[...NEW_READS, ...Object.keys(VARIANTS)].flatMap((from) => WRITES.filter((to) => to !== formatOf(from)).map((to): [string, string] => [from, to])),
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
  'tar.zst': ['--zstd'], 'tar.lz': ['--lzip'], 'tar.lzma': ['--lzma'], 'tar.z': ['-Z'], 'tar.lz4': ['--lz4'], cpio: ['--format', 'newc'], iso: ['--format', 'iso9660'], xar: ['--format', 'xar'],
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
  const file = path.join(work, `sample.${formatOf(format)}${VARIANTS[format] ? `.${format}` : ''}`);
  let expected = treeMembers;
  if (BSDTAR_WRITES[format]) {
    await run('bsdtar', ['-c', '-f', file, ...BSDTAR_WRITES[format]!, '-C', tree, 'docs']);
  } else if (format === 'rpm') {
    // The payload as rpmbuild writes it: a newc cpio (bsdtar's), gzip-compressed by the writer.
    const cpio = path.join(work, 'payload.cpio');
    await run('bsdtar', ['-c', '-f', cpio, '--format', 'newc', '-C', tree, 'docs']);
    await fs.writeFile(file, rpm(await fs.readFile(cpio)));
  } else if (format === 'squashfs') {
    await run('mksquashfs', [tree, file, '-noappend', '-quiet', '-no-progress', '-all-root']);
  } else if (format === 'wim') {
    await run('wimcapture', [tree, file]);
  } else if (format === 'arj') {
    // arj stores files only (no directory entries), under their relative paths.
    await run('arj', ['a', '-r', '-y', file, 'docs'], { cwd: tree });
    expected = filesOnly(treeMembers);
  } else if (format === 'rar') {
    await fs.writeFile(file, rar4(await handMembers()));
  } else if (format === 'rar5') {
    await fs.writeFile(file, rar5(await handMembers()));
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
  const members = await listOne(file, formatOf(format));
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
after(async () => {
  await server?.stop();
  if (work) await fs.rm(work, { recursive: true, force: true });
});

test('the catalogue offers exactly the archive pairs this file and archives.test.ts prove', async () => {
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
        const answer = await submit(server.url, bytes, `backup.${source === 'tar.z' ? 'tar.Z' : formatOf(source)}`, target);
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
      listed.forEach(([, r], i) => {
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

// Hostile archives of every new read format: each class the format can carry, made by bsdtar from
// a tar that tar-stream writes (compressed tars, cpio, ISO 9660, xar: `bsdtar -P` keeps `..` and
// absolute names where the target format can hold them) or by the hand writers (RAR, LHA, cab, ar,
// Debian packages). Before a test trusts a sample, bsdtar's own listing shows the hostile member
// in it; the service must then refuse it with the documented code.

/** Bytes of a 17 MiB run of zeros: past the engine's 16 MiB floor for the ratio cap, and compressible far past 200 to 1. */
const BOMB_BYTES = 17 * 1024 * 1024;
/** One member more than the engine's cap of 10,000. */
const FLOOD_MEMBERS = 10_001;

interface TarEntry { name: string; type?: 'file' | 'symlink' | 'link' | 'character-device' | 'directory'; linkname?: string; content?: Buffer | string }

async function tarOf(entries: TarEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const { content, ...header } of entries) {
    if (header.type === 'character-device') pack.entry({ ...header, devmajor: 1, devminor: 3 });
    else if (header.type && header.type !== 'file') pack.entry(header);
    else pack.entry(header, content ?? '');
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** A tar of `entries` rewritten by bsdtar (-P: names kept as they are) into a format. */
async function viaBsdtar(format: string, entries: TarEntry[], name: string, extra: string[] = []): Promise<string> {
  const source = path.join(work, `${name}.src.tar`);
  await fs.writeFile(source, await tarOf(entries));
  const file = path.join(work, `${name}.${format}`);
  await run('bsdtar', ['-c', '-f', file, '-P', ...BSDTAR_WRITES[format]!, ...extra, `@${source}`], { maxBuffer: 64 * 1024 * 1024 });
  return file;
}

const CLASSES = {
  dotdot: { entries: [{ name: 'ok.txt', content: 'fine' }, { name: '../../evil.txt', content: 'pwned' }] as TarEntry[], listed: /^\S+\s.*\.\.\/\.\.\/evil\.txt$/m, code: 'unsafe_input' },
  absolute: { entries: [{ name: 'ok.txt', content: 'fine' }, { name: '/etc/cron.d/evil', content: 'pwned' }] as TarEntry[], listed: / \/etc\/cron\.d\/evil$/m, code: 'unsafe_input' },
  symlink: { entries: [{ name: 'in/real.txt', content: 'real' }, { name: 'in/passwd', type: 'symlink', linkname: '/etc/passwd' }] as TarEntry[], listed: /^l.* in\/passwd -> \/etc\/passwd$/m, code: 'unsafe_input' },
  // Formats that store hard links as shared inodes (cpio, ISO 9660, xar) can only link inside the archive.
  hardlink: { entries: [{ name: 'in/real.txt', content: 'real' }, { name: 'in/hard.txt', type: 'link', linkname: 'in/real.txt' }] as TarEntry[], listed: /in\/hard\.txt link to in\/real\.txt$/m, code: 'unsafe_input' },
  device: { entries: [{ name: 'in/real.txt', content: 'real' }, { name: 'in/null', type: 'character-device' }] as TarEntry[], listed: /^c.* in\/null$/m, code: 'unsafe_input' },
};
type ClassName = keyof typeof CLASSES;

/**
 * Which classes each bsdtar-made format carries. ISO 9660 and xar cannot hold `..` or absolute
 * names (libarchive's writers place every member in the image's tree: "../../evil.txt" becomes
 * "evil.txt"), so those two are not tried on them.
 */
const BSDTAR_CLASSES: Record<string, ClassName[]> = {
  'tar.zst': ['dotdot', 'absolute', 'symlink', 'hardlink', 'device'],
  'tar.lz': ['dotdot', 'absolute', 'symlink', 'hardlink', 'device'],
  'tar.lzma': ['dotdot', 'absolute', 'symlink', 'hardlink', 'device'],
  'tar.z': ['dotdot', 'absolute', 'symlink', 'hardlink', 'device'],
  'tar.lz4': ['dotdot', 'absolute', 'symlink', 'hardlink', 'device'],
  cpio: ['dotdot', 'absolute', 'symlink', 'hardlink', 'device'],
  iso: ['symlink', 'hardlink', 'device'],
  xar: ['symlink', 'hardlink', 'device'],
};

async function listed(file: string): Promise<string> {
  return (await run('bsdtar', ['-t', '-v', '-f', file], { maxBuffer: 64 * 1024 * 1024 })).stdout;
}

async function refusal(file: string, sample: string): Promise<ProgressRecord> {
  const format = formatOf(sample);
  const jobId = await submitOk(server.url, await fs.readFile(file), `hostile.${format === 'tar.z' ? 'tar.Z' : format}`, format === 'zip' ? 'tar' : 'zip');
  return (await waitForJob(server.url, jobId, { timeoutMs: 120_000 })).final;
}

function assertRefused(final: ProgressRecord, code: string, where: string): void {
  assert.equal(final.status, 'error', `${where}: ${JSON.stringify(final)}`);
  assert.equal(final.error?.code, code, `${where}: ${JSON.stringify(final.error)}`);
}

/** Formats that store a hard link as members sharing an inode: made from real files, since a tar's link entry alone gives them none. */
const INODE_LINKS = new Set(['cpio', 'iso', 'xar']);

async function hardLinked(format: string, tag = format): Promise<string> {
  const dir = path.join(work, `hard-${tag}`);
  await fs.mkdir(path.join(dir, 'in'), { recursive: true });
  await fs.writeFile(path.join(dir, 'in/real.txt'), 'real');
  await fs.link(path.join(dir, 'in/real.txt'), path.join(dir, 'in/hard.txt'));
  const file = path.join(work, `hard-${tag}.${format}`);
  await run('bsdtar', ['-c', '-f', file, ...BSDTAR_WRITES[format]!, '-C', dir, 'in']);
  return file;
}

/** The hard-link class as a format with inode-shared links lists it ("in/hard.txt link to in/real.txt", or the reverse order). */
const HARD_LINK_LISTED = /(in\/hard\.txt link to in\/real\.txt|in\/real\.txt link to in\/hard\.txt)$/m;

describe('hostile archives of the new formats are refused with a documented error', { concurrency: 4 }, () => {
  for (const [format, classes] of Object.entries(BSDTAR_CLASSES)) {
    for (const name of classes) {
      test(`${format}: ${name}`, async () => {
        const file = name === 'hardlink' && INODE_LINKS.has(format) ? await hardLinked(format) : await viaBsdtar(format, CLASSES[name].entries, `${name}-${format}`);
        const listing = await listed(file);
        assert.match(listing, name === 'hardlink' ? HARD_LINK_LISTED : CLASSES[name].listed, `the sample carries the class:\n${listing}`);
        assertRefused(await refusal(file, format), CLASSES[name].code, `${format} ${name}`);
      });
    }
  }

  // Bombs where the format compresses: 17 MiB of zeros in a few KiB.
  for (const format of ['tar.zst', 'tar.lz', 'tar.lzma', 'tar.z', 'tar.lz4', 'xar']) {
    test(`${format}: a bomb (17 MiB of zeros) stops with input_too_complex`, async () => {
      const file = await viaBsdtar(format, [{ name: 'zeros', content: Buffer.alloc(BOMB_BYTES) }], `bomb-${format}`);
      const { size } = await fs.stat(file);
      assert.ok(size * 200 < BOMB_BYTES, `the bomb is ${size} bytes`);
      assertRefused(await refusal(file, format), 'input_too_complex', `${format} bomb`);
    });
  }

  test('cab: a bomb (17 MiB of zeros, MSZIP, written by gcab) stops with input_too_complex', async () => {
    const dir = path.join(work, 'cab-bomb');
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, 'zeros'), Buffer.alloc(BOMB_BYTES));
    const file = path.join(work, 'bomb.cab');
    await run('gcab', ['-c', '-z', file, 'zeros'], { cwd: dir });
    assert.ok((await fs.stat(file)).size * 200 < BOMB_BYTES);
    assertRefused(await refusal(file, 'cab'), 'input_too_complex', 'cab bomb');
  });

  // Floods where the format stores members uncompressed: more members than the cap.
  for (const format of ['cpio', 'iso']) {
    test(`${format}: ${FLOOD_MEMBERS} members stop with input_too_complex`, async () => {
      const file = await viaBsdtar(format, Array.from({ length: FLOOD_MEMBERS }, (_, i) => ({ name: `f/${i}` })), `flood-${format}`);
      assertRefused(await refusal(file, format), 'input_too_complex', `${format} flood`);
    });
  }

  // The hand-written formats: what each can carry.
  const hand: Record<string, (members: HandMember[]) => Buffer> = { rar: rar4, rar5, lzh, cab, ar, deb: (members) => ar([{ name: 'debian-binary', content: '2.0\n' }, ...members]) };
  const HAND_CASES: Array<{ format: string; what: string; members: HandMember[]; code: string; listed?: RegExp }> = [
    ...['rar', 'rar5', 'lzh', 'cab', 'ar', 'deb'].flatMap((format) => [
      { format, what: 'a name with ..', members: [{ name: 'ok.txt', content: 'fine' }, { name: '../../evil.txt', content: 'pwned' }], code: 'unsafe_input', listed: /\.\.\/\.\.\/evil\.txt$/m },
      { format, what: 'an absolute path', members: [{ name: 'ok.txt', content: 'fine' }, { name: '/etc/cron.d/evil', content: 'pwned' }], code: 'unsafe_input', listed: /\/etc\/cron\.d\/evil$/m },
      { format, what: `${FLOOD_MEMBERS} members`, members: Array.from({ length: FLOOD_MEMBERS }, (_, i): HandMember => ({ name: `f/${i}`, content: '' })), code: 'input_too_complex' },
    ]),
    ...['rar', 'rar5', 'lzh'].map((format) => ({ format, what: 'a symbolic link to /etc/passwd', members: [{ name: 'in/real.txt', content: 'real' }, { name: 'in/passwd', symlink: '/etc/passwd' }], code: 'unsafe_input', listed: /^l.*in\/passwd -> \/etc\/passwd$/m })),
    // LHA's Unix mode can say "device", but libarchive's reader keeps only links and directories
    // from it: such a member arrives as an empty regular file (the test below), not a device.
    { format: 'rar', what: 'a device node', members: [{ name: 'in/real.txt', content: 'real' }, { name: 'in/null', mode: 0o20644 }], code: 'unsafe_input', listed: /^c.*in\/null$/m },
    { format: 'rar5', what: 'a hard link', members: [{ name: 'in/real.txt', content: 'real' }, { name: 'in/hard', hardlink: 'in/real.txt' }], code: 'unsafe_input', listed: /in\/hard link to in\/real\.txt$/m },
    // Stored members marked encrypted: libarchive alone would copy their bytes (the ciphertext of a real one).
    ...['rar', 'rar5'].map((format) => ({ format, what: 'an encrypted member (encrypted_input, never a password prompt)', members: [{ name: 'secret.txt', content: 'secret', encrypted: true }], code: 'encrypted_input' })),
  ];
  for (const { format, what, members, code, listed: shows } of HAND_CASES) {
    test(`${format}: ${what}`, async () => {
      const file = path.join(work, `hand-${format}-${what.replace(/\W+/g, '-')}.${formatOf(format)}`);
      await fs.writeFile(file, hand[format]!(members));
      // bsdtar lists the hostile member even where it then exits non-zero on the sample.
      if (shows) assert.match(await listed(file).catch((error: { stdout?: string }) => error.stdout ?? ''), shows, 'the sample carries the class');
      assertRefused(await refusal(file, format), code, `${format} ${what}`);
    });
  }

  // RPM: its payload is a cpio, and carries every class a cpio can (bsdtar lists through the package).
  for (const name of Object.keys(CLASSES) as ClassName[]) {
    test(`rpm: ${name}`, async () => {
      const cpio = name === 'hardlink' ? await hardLinked('cpio', 'rpm') : await viaBsdtar('cpio', CLASSES[name].entries, `${name}-rpm-payload`);
      const file = path.join(work, `${name}.rpm`);
      await fs.writeFile(file, rpm(await fs.readFile(cpio)));
      const listing = await listed(file);
      assert.match(listing, name === 'hardlink' ? HARD_LINK_LISTED : CLASSES[name].listed, `the sample carries the class:\n${listing}`);
      assertRefused(await refusal(file, 'rpm'), CLASSES[name].code, `rpm ${name}`);
    });
  }
  test('rpm: a bomb (17 MiB of zeros in the gzip payload) stops with input_too_complex', async () => {
    const cpio = await viaBsdtar('cpio', [{ name: 'zeros', content: Buffer.alloc(BOMB_BYTES) }], 'bomb-rpm-payload');
    const file = path.join(work, 'bomb.rpm');
    await fs.writeFile(file, rpm(await fs.readFile(cpio)));
    assert.ok((await fs.stat(file)).size * 200 < BOMB_BYTES);
    assertRefused(await refusal(file, 'rpm'), 'input_too_complex', 'rpm bomb');
  });

  // SquashFS, WIM and ARJ (read by 7-Zip): made from trees on disk by their own tools, which put
  // every member inside the image (no `..` or absolute names). 7-Zip's listing, which the engine
  // reads, must show the hostile member as what it is; the independent tool's unpacking shows it here.
  /** A directory holding `in/real.txt` and what `extra` adds; made once per `extra` (the three formats share the flood and the bomb). */
  const trees = new Map<(dir: string) => Promise<void>, Promise<string>>();
  function treeWith(name: string, extra: (dir: string) => Promise<void>): Promise<string> {
    let made = trees.get(extra);
    if (!made) {
      made = (async () => {
        const dir = path.join(work, `tree-${name}`);
        await fs.mkdir(path.join(dir, 'in'), { recursive: true });
        await fs.writeFile(path.join(dir, 'in/real.txt'), 'real');
        await extra(dir);
        return dir;
      })();
      trees.set(extra, made);
    }
    return made;
  }
  const symlinked = (dir: string) => fs.symlink('/etc/passwd', path.join(dir, 'in/passwd'));
  const nothing = async () => undefined;
  const zeros = (dir: string) => fs.writeFile(path.join(dir, 'in/zeros'), Buffer.alloc(BOMB_BYTES));
  const flooded = async (dir: string) => {
    await fs.mkdir(path.join(dir, 'f'));
    // In runs of 100: 10,001 writes at once would hold the thread pool every other test's file reads wait on.
    for (let start = 0; start < FLOOD_MEMBERS; start += 100) {
      await Promise.all(Array.from({ length: Math.min(100, FLOOD_MEMBERS - start) }, (_, i) => fs.writeFile(path.join(dir, 'f', String(start + i)), '')));
    }
  };
  const SEVEN_ZIP_CASES: Array<{ format: string; what: string; extra: (dir: string) => Promise<void>; args?: string[]; code: string; listed?: RegExp; bomb?: boolean }> = [
    { format: 'squashfs', what: 'a symbolic link to /etc/passwd', extra: symlinked, code: 'unsafe_input', listed: /^Mode = l/m },
    // mksquashfs's pseudo-file definition: a character device 1,3 (/dev/null) at in/null.
    { format: 'squashfs', what: 'a device node', extra: nothing, args: ['-p', 'in/null c 644 0 0 1 3'], code: 'unsafe_input', listed: /^Mode = c/m },
    { format: 'squashfs', what: `${FLOOD_MEMBERS} members`, extra: flooded, code: 'input_too_complex' },
    { format: 'squashfs', what: 'a bomb (17 MiB of zeros)', extra: zeros, code: 'input_too_complex', bomb: true },
    // wimcapture stores a symbolic link as a reparse point.
    { format: 'wim', what: 'a symbolic link to /etc/passwd', extra: symlinked, code: 'unsafe_input', listed: /^Link = .*etc.passwd/m },
    { format: 'wim', what: `${FLOOD_MEMBERS} members`, extra: flooded, code: 'input_too_complex' },
    { format: 'wim', what: 'a bomb (17 MiB of zeros)', extra: zeros, code: 'input_too_complex', bomb: true },
    // arj follows links when it archives (it stores no links), and names stay relative.
    { format: 'arj', what: `${FLOOD_MEMBERS} members`, extra: flooded, code: 'input_too_complex' },
    { format: 'arj', what: 'a bomb (17 MiB of zeros)', extra: zeros, code: 'input_too_complex', bomb: true },
  ];
  for (const { format, what, extra, args = [], code, listed: shows, bomb } of SEVEN_ZIP_CASES) {
    test(`${format}: ${what}`, async () => {
      const name = `${format}-${what.replace(/\W+/g, '-')}`;
      const dir = await treeWith(name, extra);
      const file = path.join(work, `${name}.${format}`);
      if (format === 'squashfs') await run('mksquashfs', [dir, file, '-noappend', '-quiet', '-no-progress', '-all-root', ...args]);
      else if (format === 'wim') await run('wimcapture', [dir, file]);
      // With no names given, arj takes every file under the current directory.
      else await run('arj', ['a', '-r', '-y', file], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
      if (shows) assert.match((await run('7zz', ['l', '-slt', '-ba', file], { maxBuffer: 64 * 1024 * 1024 })).stdout, shows, 'the sample carries the class');
      if (bomb) assert.ok((await fs.stat(file)).size * 200 < BOMB_BYTES, `the bomb is ${(await fs.stat(file)).size} bytes`);
      assertRefused(await refusal(file, format), code, `${format} ${what}`);
    });
  }

  /** Converts a hand-made archive to tar and lists the result. */
  async function carried(format: string, members: HandMember[]): Promise<Members> {
    const jobId = await submitOk(server.url, hand[format]!(members), `neutral.${format}`, 'tar');
    const { final } = await waitForJob(server.url, jobId);
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    const out = path.join(work, `neutral-${format}.tar`);
    await fs.writeFile(out, (await download(server.url, final.download_url!)).bytes);
    return listOne(out, 'tar');
  }

  test('ar: a member whose mode says "symbolic link" is carried as the regular file ar(1) would extract', async () => {
    assert.deepEqual(await carried('ar', [{ name: 'looks-like-a-link', symlink: '/etc/passwd' }]), { 'looks-like-a-link': { type: 'file', size: 11, sha256: sha256('/etc/passwd') } });
  });

  test('lzh: a member whose mode says "device" is carried as an empty regular file, never a device', async () => {
    assert.deepEqual(await carried('lzh', [{ name: 'null', mode: 0o20644 }]), { null: { type: 'file', size: 0, sha256: sha256('') } });
  });
});

// The corpus's real archives of these families (public projects' test files; skipped without
// ../shared/corpus). Each converts to zip with the same members as an independent tool lists in
// the source, except those holding links, which are refused like every archive with links.
const CORPUS_FAMILIES: Record<string, string> = { rar: 'rar', iso: 'iso', cab: 'cab', lha: 'lzh', xar: 'xar', cpio: 'cpio', deb: 'deb', 'tar.zst': 'tar.zst' };
/** Corpus files that hold links (as `bsdtar -tv` and their projects' descriptions show): refused as unsafe_input. */
const CORPUS_WITH_LINKS: Record<string, string> = {
  'rar/libarchive-rar4.rar': 'a symbolic link, testlink → test.txt',
  'rar/libarchive-rar5-unicode.rar': 'a hard link and a symbolic link',
  'iso/libarchive-iso-joliet-rockridge.iso': 'a hard link and a symbolic link (Rock Ridge)',
  'iso/libarchive-iso-xorriso.iso': 'a hard link (two names for one file)',
  'lha/libarchive-lha-header1.lzh': 'two symbolic links',
  'lha/libarchive-lha-lh7.lzh': 'two symbolic links',
  'cpio/libarchive-compat-cpio-1.cpio': 'a hard link',
};

/** Corpus files whose check differs, and why (the README's known limitations name the first). */
const CORPUS_KNOWN: Record<string, { lister: string; compare: 'contents' | 'names and sizes'; why: string }> = {
  'cab/libarchive-cab-filename-cp932.cab': {
    lister: 'unar', compare: 'contents',
    why: 'names in the Japanese Windows code page (CP932) without the cabinet\'s UTF-8 flag: libarchive cannot translate them, so the members keep their sizes and bytes under garbled names',
  },
  'rar/libarchive-rar5-solid.rar': {
    lister: 'unar-names', compare: 'names and sizes',
    why: 'unar 1.10.1, the only other RAR reader here, cannot decompress this solid RAR 5 ("Attempted to read more data than was available"): its listing checks names and sizes, the contents are libarchive\'s alone',
  },
  'xar/libarchive-xar-duplicate-filename-node.xar': {
    lister: 'xar', compare: 'contents',
    why: 'its table of contents gives the one file two <name> elements: libarchive joins them ("FileFile"), 7-Zip takes the first ("File")',
  },
};

/** The files' sizes and digests, names aside. */
const contentsOf = (members: Members) => Object.values(filesOnly(members)).map((m) => `${m.size} ${m.sha256}`).sort();

describe('corpus: real archives of the new families', { concurrency: 4, skip: existsSync(CORPUS) ? false : 'no ../shared/corpus' }, () => {
  for (const [family, format] of Object.entries(CORPUS_FAMILIES)) {
    const dir = path.join(CORPUS, family);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) {
      const key = `${family}/${name}`;
      // A plain ar archive filed with the Debian packages is read as ar.
      const source = name.endsWith('.ar') ? 'ar' : format;
      test(`${key} → zip`, async () => {
        const file = path.join(dir, name);
        const jobId = await submitOk(server.url, await fs.readFile(file), name, 'zip');
        const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
        if (CORPUS_WITH_LINKS[key]) {
          assertRefused(final, 'unsafe_input', `${key} holds ${CORPUS_WITH_LINKS[key]}`);
          return;
        }
        assert.equal(final.status, 'done', `${key}: ${JSON.stringify(final.error)}`);
        assert.equal(final.source, source);
        const out = path.join(work, `corpus-${family}-${name}.zip`);
        await fs.writeFile(out, (await download(server.url, final.download_url!)).bytes);
        const known = CORPUS_KNOWN[key];
        const [output, expected] = await listMany([{ file: out, format: 'zip' }, { file, format: known?.lister ?? source }]) as Members[];
        assert.ok(!('error' in expected!), JSON.stringify(expected));
        if (!known) assertSameMembers(output!, expected!, key);
        else if (known.compare === 'contents') assert.deepEqual(contentsOf(output!), contentsOf(expected!), `${key}: ${known.why}`);
        else {
          const namesAndSizes = (members: Members) => Object.fromEntries(Object.entries(filesOnly(members)).map(([n, m]) => [n, m.size]));
          assert.deepEqual(namesAndSizes(output!), namesAndSizes(expected!), `${key}: ${known.why}`);
        }
      });
    }
  }
});

describe('compression_level of the new compressed targets', { concurrency: 3 }, () => {
  // Prose, the project's own docs: zstd's fast levels beat its middle ones on some synthetic
  // text (numbered lines: level 1 gave 115 KB, level 9 127 KB), never on prose.
  let text: Buffer;
  before(async () => { text = Buffer.concat([await fs.readFile('docs/architecture.md'), await fs.readFile('docs/security.md')]); });
  for (const [format, fastest] of [['tar.zst', '1'], ['tar.lz', '0'], ['tar.lzma', '0'], ['tar.lz4', '1']] as const) {
    test(`${format}: level ${fastest} and 9 both keep the file; 9 is smaller`, async () => {
      const source = await tarOf([{ name: 'numbers.txt', content: text }]);
      const sizes: number[] = [];
      for (const level of [fastest, '9']) {
        const form = new FormData();
        form.append('file', new Blob([source]), 'numbers.tar');
        form.append('target', format);
        form.append('compression_level', level);
        const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body: form });
        const body = await response.json() as { job_id: string };
        assert.equal(response.status, 200, JSON.stringify(body));
        const { final } = await waitForJob(server.url, body.job_id);
        assert.equal(final.status, 'done', JSON.stringify(final.error));
        const out = path.join(work, `level-${level}.${format}`);
        const { bytes } = await download(server.url, final.download_url!);
        await fs.writeFile(out, bytes);
        assert.deepEqual(await listOne(out, format), { 'numbers.txt': { type: 'file', size: text.length, sha256: sha256(text) } });
        sizes.push(bytes.length);
      }
      assert.ok(sizes[1]! < sizes[0]!, `${format}: level 9 gave ${sizes[1]} bytes, level ${fastest} ${sizes[0]}`);
    });
  }
});

test('each sample is recognised by its content alone: uploaded as "upload.bin", it is read as its format', async () => {
  await Promise.all([...NEW_READS, ...Object.keys(VARIANTS)].map(async (source) => {
    const { file } = await sample(source);
    const jobId = await submitOk(server.url, await fs.readFile(file), 'upload.bin', 'tar');
    const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
    assert.equal(final.source, formatOf(source), `${source}: ${JSON.stringify(final)}`);
    assert.equal(final.status, 'done', `${source}: ${JSON.stringify(final.error)}`);
  }));
});

test('a Debian package to zip with each: its members go through the same unpacking (a PNG member becomes a WebP)', async () => {
  const png = flatPng(16, 8);
  const archive = ar([{ name: 'debian-binary', content: '2.0\n' }, { name: 'picture.png', content: png }]);
  const form = new FormData();
  form.append('file', new Blob([archive]), 'package.deb');
  form.append('target', 'zip');
  form.append('each', 'webp');
  const response = await fetch(`${server.url}/api/convert`, { method: 'POST', body: form });
  const body = await response.json() as { job_id: string };
  assert.equal(response.status, 200, JSON.stringify(body));
  const { final } = await waitForJob(server.url, body.job_id, { timeoutMs: 120_000 });
  assert.equal(final.status, 'done', JSON.stringify(final.error));
  const out = path.join(work, 'each.zip');
  await fs.writeFile(out, (await download(server.url, final.download_url!)).bytes);
  const members = await listOne(out, 'zip');
  assert.deepEqual(Object.keys(members).sort(), ['debian-binary', 'picture.webp']);
  assert.equal(members['debian-binary']!.sha256, sha256('2.0\n'));
  const webp = execFileSync('/usr/bin/python3', ['-c', 'import sys, zipfile, io\nfrom PIL import Image\nimage = Image.open(io.BytesIO(zipfile.ZipFile(sys.argv[1]).read("picture.webp")))\nprint(image.format, *image.size)', out], { encoding: 'utf8' }).trim();
  assert.equal(webp, 'WEBP 16 8');
});
