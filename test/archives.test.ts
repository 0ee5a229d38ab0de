// Archives: every advertised pair, from a tree of files the test makes and packs with bsdtar and
// 7-Zip; each output is unpacked with 7-Zip (not libarchive, which the engine uses) and compared
// file by file. Then the hostile archives of docs/security.md#archives: zip slip, absolute
// paths, symlinks, hard links, zip bombs (flat, lying sizes, overlapping entries), an encrypted
// archive. None is unpacked anywhere; each ends in a documented error or expands no further.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { zipSync } from 'fflate';
import { convert, submitOk, waitForJob } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const FORMATS = ['zip', '7z', 'tar', 'tar.gz', 'tar.bz2', 'tar.xz'];
let server: RunningServer;
let tree: string;
const samples: Record<string, Buffer> = {};
let expected: Record<string, string>;

/** Every regular file under dir, as relative path → sha256. */
async function digest(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, full)] = createHash('sha256').update(await fs.readFile(full)).digest('hex');
  }
  return out;
}

/** Unpacks with 7-Zip (a .tar.gz in two steps: the compression, then the tar). */
async function unpackWith7z(bytes: Buffer, format: string): Promise<string> {
  const dir = await tempDir('convertd-unpack-');
  const file = path.join(dir, `archive.${format}`);
  await fs.writeFile(file, bytes);
  const out = path.join(dir, 'out');
  if (format.startsWith('tar.')) {
    execFileSync('7z', ['x', '-y', `-o${dir}/inner`, file], { stdio: 'ignore' });
    const [inner] = await fs.readdir(`${dir}/inner`);
    execFileSync('7z', ['x', '-y', '-ttar', `-o${out}`, `${dir}/inner/${inner}`], { stdio: 'ignore' });
  } else {
    execFileSync('7z', ['x', '-y', `-o${out}`, file], { stdio: 'ignore' });
  }
  return out;
}

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  tree = await tempDir('convertd-tree-');
  await fs.mkdir(path.join(tree, 'docs/deep/er'), { recursive: true });
  await fs.writeFile(path.join(tree, 'docs/readme.txt'), 'hello from convertd\n');
  await fs.writeFile(path.join(tree, 'docs/deep/er/random.bin'), randomBytes(50_000));
  await fs.writeFile(path.join(tree, 'docs/deep/zeros.bin'), Buffer.alloc(100_000));
  await fs.writeFile(path.join(tree, 'docs/naïve café.txt'), 'unicode names survive\n');
  expected = await digest(tree);
  const dir = await tempDir();
  const bsdtarOptions: Record<string, string[]> = {
    zip: ['--format', 'zip'], tar: ['--format', 'pax'], 'tar.gz': ['-z'], 'tar.bz2': ['-j'], 'tar.xz': ['-J'],
  };
  for (const [format, options] of Object.entries(bsdtarOptions)) {
    execFileSync('bsdtar', ['-c', '-f', path.join(dir, `s.${format}`), ...options, '-C', tree, 'docs']);
    samples[format] = await fs.readFile(path.join(dir, `s.${format}`));
  }
  execFileSync('7z', ['a', '-bd', path.join(dir, 's.7z'), 'docs'], { cwd: tree, stdio: 'ignore' });
  samples['7z'] = await fs.readFile(path.join(dir, 's.7z'));
});
after(async () => { await server.stop(); });

describe('every advertised archive pair converts with every file intact', { concurrency: 3 }, () => {
  for (const source of FORMATS) {
    for (const target of FORMATS.filter((t) => t !== source)) {
      test(`${source} → ${target}`, async () => {
        const { bytes, response } = await convert(server.url, samples[source]!, `backup.${source}`, target);
        assert.match(response.headers.get('content-disposition') ?? '', new RegExp(`filename="?backup\\.${target.replace('.', '\\.')}"?`));
        assert.deepEqual(await digest(await unpackWith7z(bytes, target)), expected);
      });
    }
  }
});

async function failure(bytes: Buffer, name: string, target = 'zip') {
  const jobId = await submitOk(server.url, bytes, name, target);
  return (await waitForJob(server.url, jobId)).final;
}

/** A zip written by Python's zipfile, which stores any member name it is given. */
function pythonZip(dir: string, name: string, members: Array<[string, string]>): Buffer {
  const script = 'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], "w")\nfor i in range(2, len(sys.argv), 2): z.writestr(sys.argv[i], sys.argv[i + 1])\nz.close()';
  const file = path.join(dir, name);
  execFileSync('/usr/bin/python3', ['-c', script, file, ...members.flat()]);
  return execFileSync('cat', [file]);
}

test('zip slip and absolute paths are refused as unsafe_input', async () => {
  const dir = await tempDir();
  for (const evil of ['../../evil.txt', '/etc/cron.d/evil', 'ok/../../evil.txt']) {
    const final = await failure(pythonZip(dir, 'slip.zip', [['fine.txt', 'x'], [evil, 'pwned']]), 'slip.zip', 'tar');
    assert.equal(final.error?.code, 'unsafe_input', `${evil}: ${JSON.stringify(final.error)}`);
  }
});

test('symbolic and hard links are refused as unsafe_input', async () => {
  const dir = await tempDir();
  await fs.mkdir(path.join(dir, 'in'));
  await fs.writeFile(path.join(dir, 'in/real.txt'), 'real');
  await fs.symlink('/etc/passwd', path.join(dir, 'in/passwd'));
  execFileSync('bsdtar', ['-c', '-f', path.join(dir, 'symlink.tar'), '-C', dir, 'in']);
  assert.equal((await failure(await fs.readFile(path.join(dir, 'symlink.tar')), 'symlink.tar')).error?.code, 'unsafe_input');

  await fs.rm(path.join(dir, 'in/passwd'));
  await fs.link(path.join(dir, 'in/real.txt'), path.join(dir, 'in/hard.txt'));
  execFileSync('bsdtar', ['-c', '-f', path.join(dir, 'hard.tar'), '-C', dir, 'in']);
  assert.equal((await failure(await fs.readFile(path.join(dir, 'hard.tar')), 'hard.tar', '7z')).error?.code, 'unsafe_input');
});

test('a zip bomb stops while streaming with input_too_complex', async () => {
  const dir = await tempDir();
  await fs.writeFile(path.join(dir, 'zeros'), Buffer.alloc(64 * 1024 * 1024));
  execFileSync('bsdtar', ['-c', '-f', path.join(dir, 'bomb.zip'), '--format', 'zip', '--options', 'zip:compression-level=9', '-C', dir, 'zeros']);
  const bomb = await fs.readFile(path.join(dir, 'bomb.zip'));
  assert.ok(bomb.length < 200_000, `bomb is ${bomb.length} bytes`);
  const final = await failure(bomb, 'bomb.zip', 'tar');
  assert.equal(final.error?.code, 'input_too_complex');
  assert.match(final.error!.message, /decompression bomb|expands/);
});

/** A zip of one member, `zeros`, 64 MB of zero bytes, compressed by fflate. */
function zeroZip(): Buffer {
  return Buffer.from(zipSync({ zeros: new Uint8Array(64 * 1024 * 1024) }, { level: 9 }));
}

test('a zip bomb whose headers lie about the size (10 bytes declared, 64 MB inside) never expands past the cap', async () => {
  const bomb = zeroZip();
  const local = bomb.indexOf(Buffer.from('504b0304', 'hex'));
  const central = bomb.indexOf(Buffer.from('504b0102', 'hex'));
  bomb.writeUInt32LE(10, local + 22); // local header: uncompressed size
  bomb.writeUInt32LE(10, central + 24); // central directory: uncompressed size
  const final = await failure(bomb, 'liar.zip', 'tar');
  if (final.status === 'done') {
    // libarchive believed the header and stopped after 10 bytes: nothing expanded.
    const output = Buffer.from(await (await fetch(`${server.url}${final.download_url}`)).arrayBuffer());
    assert.ok(output.length < 1024 * 1024, `the output is ${output.length} bytes`);
  } else {
    assert.ok(['input_too_complex', 'corrupt_input'].includes(final.error!.code), JSON.stringify(final.error));
  }
});

test('an overlapping zip bomb (300 directory entries naming one compressed member) never expands past the cap', async () => {
  const zip = zeroZip();
  const centralAt = zip.indexOf(Buffer.from('504b0102', 'hex'));
  const endAt = zip.indexOf(Buffer.from('504b0506', 'hex'));
  const entry = zip.subarray(centralAt, endAt);
  const nameLength = entry.readUInt16LE(28);
  // 300 central entries, each a different name (z000...z299, as long as "zeros") for the same local header at offset 0.
  const entries = Array.from({ length: 300 }, (_, i) => {
    const copy = Buffer.from(entry);
    copy.write(`z${String(i).padStart(nameLength - 1, '0')}`, 46, 'latin1');
    return copy;
  });
  const directory = Buffer.concat(entries);
  const end = Buffer.from(zip.subarray(endAt));
  end.writeUInt16LE(300, 8);
  end.writeUInt16LE(300, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(centralAt, 16);
  const bomb = Buffer.concat([zip.subarray(0, centralAt), directory, end]);
  assert.ok(bomb.length < 1024 * 1024);
  const final = await failure(bomb, 'overlap.zip', 'tar');
  if (final.status === 'done') {
    // Read sequentially, the archive holds one member: the output is no bigger than it.
    const output = Buffer.from(await (await fetch(`${server.url}${final.download_url}`)).arrayBuffer());
    assert.ok(output.length < 70 * 1024 * 1024, `the output is ${output.length} bytes`);
  } else {
    assert.ok(['input_too_complex', 'corrupt_input', 'unsafe_input'].includes(final.error!.code), JSON.stringify(final.error));
  }
});

test('an encrypted archive fails at once with encrypted_input, never waiting for a password', async () => {
  const dir = await tempDir();
  await fs.writeFile(path.join(dir, 'secret.txt'), 'secret');
  execFileSync('7z', ['a', '-bd', '-psecret', '-mem=ZipCrypto', path.join(dir, 'locked.zip'), 'secret.txt'], { cwd: dir, stdio: 'ignore' });
  execFileSync('7z', ['a', '-bd', '-psecret', '-mhe=on', path.join(dir, 'locked.7z'), 'secret.txt'], { cwd: dir, stdio: 'ignore' });
  for (const name of ['locked.zip', 'locked.7z']) {
    const started = Date.now();
    const final = await failure(await fs.readFile(path.join(dir, name)), name, 'tar');
    assert.equal(final.error?.code, 'encrypted_input', `${name}: ${JSON.stringify(final.error)}`);
    assert.ok(Date.now() - started < 15_000);
  }
});

test('a nested archive is carried as a file, not opened', async () => {
  const dir = await tempDir();
  await fs.mkdir(path.join(dir, 'nest'));
  await fs.writeFile(path.join(dir, 'nest/inner.zip'), pythonZip(dir, 'inner.zip', [['a.txt', 'inside']]));
  execFileSync('bsdtar', ['-c', '-f', path.join(dir, 'outer.zip'), '--format', 'zip', '-C', path.join(dir, 'nest'), 'inner.zip']);
  const { bytes } = await convert(server.url, await fs.readFile(path.join(dir, 'outer.zip')), 'outer.zip', '7z');
  const files = await digest(await unpackWith7z(bytes, '7z'));
  assert.deepEqual(Object.keys(files), ['inner.zip']);
});
