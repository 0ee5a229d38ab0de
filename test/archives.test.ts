// Archives: every advertised pair, from a tree of files the test makes and packs with bsdtar and
// 7-Zip; each output's members are listed by tools other than the engine's libarchive
// (test/helpers/list_archive.py: Python's zipfile and tarfile, 7-Zip for 7z) and must equal the
// source's, member by member: the same names, directories kept (an empty one too), files of the
// same size and SHA-256. Then a 7z in Deflate64, a method libarchive 3.6 lacks, which the engine
// reads with 7-Zip through the same checks, and the hostile archives of docs/security.md#archives:
// zip slip, absolute paths, symlinks, hard links, zip bombs (flat, lying sizes, overlapping
// entries), an encrypted archive. None is unpacked anywhere; each ends in a documented error or
// expands no further.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { zipSync } from 'fflate';
import { convert, submitOk, waitForJob } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const FORMATS = ['zip', '7z', 'tar', 'tar.gz', 'tar.bz2', 'tar.xz'];
let server: RunningServer;
let tree: string;
const samples: Record<string, Buffer> = {};
/** The tree as the test wrote it: what every sample and every output must list. */
let expected: Members;

type Members = Record<string, { type: string; size: number; sha256?: string }>;

/** An archive's members, listed by test/helpers/list_archive.py (asynchronously: pairs run side by side). */
async function listArchive(bytes: Buffer, format: string): Promise<Members> {
  const file = await writeTemp(bytes, `archive.${format}`);
  const { stdout } = await promisify(execFile)('/usr/bin/python3', [path.resolve('test/helpers/list_archive.py'), file, format], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as Members;
}

/** Every directory and regular file under dir, as list_archive.py lists them. */
async function walk(dir: string): Promise<Members> {
  const out: Members = {};
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    const name = path.relative(dir, full);
    if (entry.isDirectory()) out[name] = { type: 'dir', size: 0 };
    else if (entry.isFile()) {
      const data = await fs.readFile(full);
      out[name] = { type: 'file', size: data.length, sha256: createHash('sha256').update(data).digest('hex') };
    }
  }
  return out;
}

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  tree = await tempDir('convertd-tree-');
  await fs.mkdir(path.join(tree, 'docs/deep/er'), { recursive: true });
  await fs.mkdir(path.join(tree, 'docs/empty dir'));
  await fs.writeFile(path.join(tree, 'docs/readme.txt'), 'hello from convertd\n');
  await fs.writeFile(path.join(tree, 'docs/deep/er/random.bin'), randomBytes(50_000));
  await fs.writeFile(path.join(tree, 'docs/deep/zeros.bin'), Buffer.alloc(100_000));
  await fs.writeFile(path.join(tree, 'docs/naïve café.txt'), 'unicode names survive\n');
  await fs.writeFile(path.join(tree, 'docs/empty.txt'), '');
  expected = await walk(tree);
  const dir = await tempDir();
  const bsdtarOptions: Record<string, string[]> = {
    zip: ['--format', 'zip'], tar: ['--format', 'pax'], 'tar.gz': ['-z'], 'tar.bz2': ['-j'], 'tar.xz': ['-J'],
  };
  for (const [format, options] of Object.entries(bsdtarOptions)) {
    execFileSync('bsdtar', ['-c', '-f', path.join(dir, `s.${format}`), ...options, '-C', tree, 'docs']);
    samples[format] = await fs.readFile(path.join(dir, `s.${format}`));
  }
  execFileSync('7zz', ['a', '-bd', path.join(dir, 's.7z'), 'docs'], { cwd: tree, stdio: 'ignore' });
  samples['7z'] = await fs.readFile(path.join(dir, 's.7z'));
  // The listing tool itself sees the tree in every sample: a listing that saw nothing would pass anything.
  for (const format of FORMATS) assert.deepEqual(await listArchive(samples[format]!, format), expected, `the ${format} sample`);
});
after(async () => { await server.stop(); });

describe('every advertised archive pair keeps every member: names, directories, sizes, SHA-256', { concurrency: 4 }, () => {
  for (const source of FORMATS) {
    for (const target of FORMATS.filter((t) => t !== source)) {
      test(`${source} → ${target}`, async () => {
        const { bytes, response } = await convert(server.url, samples[source]!, `backup.${source}`, target);
        assert.match(response.headers.get('content-disposition') ?? '', new RegExp(`filename="?backup\\.${target.replace('.', '\\.')}"?`));
        assert.deepEqual(await listArchive(bytes, target), expected);
      });
    }
  }
});

/** A 7z in Deflate64 (7-Zip's `-m0=Deflate64`), which libarchive 3.6 cannot decompress, of `what` under dir. */
async function deflate64(dir: string, name: string, what: string[], options: string[] = []): Promise<Buffer> {
  const file = path.join(dir, name);
  execFileSync('7zz', ['a', '-bd', '-m0=Deflate64', ...options, file, ...what], { cwd: dir, stdio: 'ignore' });
  return fs.readFile(file);
}

describe('a 7z in Deflate64 (libarchive lacks the method) is read with 7-Zip, through the same checks', { concurrency: 3 }, () => {
  let sample: Buffer;
  let dir: string;
  before(async () => {
    dir = await tempDir();
    await fs.cp(path.join(tree, 'docs'), path.join(dir, 'docs'), { recursive: true });
    sample = await deflate64(dir, 'deflate64.7z', ['docs']);
    assert.match(execFileSync('7zz', ['l', '-slt', '-ba', path.join(dir, 'deflate64.7z')], { encoding: 'utf8' }), /^Method = Deflate64$/m);
    // The premise: libarchive cannot read it (bsdtar says "(null)").
    assert.throws(() => execFileSync('bsdtar', ['-x', '-O', '-f', path.join(dir, 'deflate64.7z')], { stdio: 'ignore' }));
  });

  for (const target of ['zip', 'tar.gz']) {
    test(`deflate64.7z → ${target} keeps every member`, async () => {
      const { bytes } = await convert(server.url, sample, 'deflate64.7z', target);
      assert.deepEqual(await listArchive(bytes, target), expected);
    });
  }

  test('a symbolic link in it is refused as unsafe_input', async () => {
    await fs.mkdir(path.join(dir, 'linked'));
    await fs.writeFile(path.join(dir, 'linked/real.txt'), 'real');
    await fs.symlink('/etc/passwd', path.join(dir, 'linked/passwd'));
    const final = await failure(await deflate64(dir, 'link.7z', ['linked'], ['-snl']), 'link.7z', 'zip');
    assert.equal(final.error?.code, 'unsafe_input', JSON.stringify(final.error));
    assert.match(final.error!.message, /passwd.*not a regular file/);
  });

  test('a bomb in it stops with input_too_complex', async () => {
    await fs.mkdir(path.join(dir, 'bomb'));
    await fs.writeFile(path.join(dir, 'bomb/zeros'), Buffer.alloc(64 * 1024 * 1024));
    const bomb = await deflate64(dir, 'bomb.7z', ['bomb']);
    // Deflate64 packs zeros about 270 to 1: past the engine's ratio cap of 200.
    assert.ok(bomb.length < 300_000, `bomb is ${bomb.length} bytes`);
    const final = await failure(bomb, 'bomb.7z', 'tar');
    assert.equal(final.error?.code, 'input_too_complex', JSON.stringify(final.error));
  });

  test('a method neither libarchive nor 7-Zip has is unsupported_format, naming the method, not "damaged"', async () => {
    // The Deflate64 sample with its coder id (04 01 09) changed to one no tool knows (04 01 7E),
    // its header left uncompressed to be patched, and both header checksums made right again.
    execFileSync('7zz', ['a', '-bd', '-m0=Deflate64', '-mhc=off', path.join(dir, 'plain-header.7z'), 'docs'], { cwd: dir, stdio: 'ignore' });
    const archive = await fs.readFile(path.join(dir, 'plain-header.7z'));
    const headerAt = 32 + Number(archive.readBigUInt64LE(12));
    const header = archive.subarray(headerAt, headerAt + Number(archive.readBigUInt64LE(20)));
    const coder = header.indexOf(Buffer.from([0x04, 0x01, 0x09]));
    assert.ok(coder > 0);
    header[coder + 2] = 0x7e;
    archive.writeUInt32LE(crc32(header), 28);
    archive.writeUInt32LE(crc32(archive.subarray(12, 32)), 8);
    const final = await failure(archive, 'unknown-method.7z', 'zip');
    assert.equal(final.error?.code, 'unsupported_format', JSON.stringify(final.error));
    assert.match(final.error!.message, /method.*04017E/);
  });
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
    // A 7-Zip waiting on a password prompt would end at the engine's time limit as timeout, not
    // encrypted_input: the code alone tells the two apart (no wall-clock bound on a busy CI machine).
    const final = await failure(await fs.readFile(path.join(dir, name)), name, 'tar');
    assert.equal(final.error?.code, 'encrypted_input', `${name}: ${JSON.stringify(final.error)}`);
  }
});

test('a nested archive is carried as a file, not opened', async () => {
  const dir = await tempDir();
  await fs.mkdir(path.join(dir, 'nest'));
  await fs.writeFile(path.join(dir, 'nest/inner.zip'), pythonZip(dir, 'inner.zip', [['a.txt', 'inside']]));
  execFileSync('bsdtar', ['-c', '-f', path.join(dir, 'outer.zip'), '--format', 'zip', '-C', path.join(dir, 'nest'), 'inner.zip']);
  const { bytes } = await convert(server.url, await fs.readFile(path.join(dir, 'outer.zip')), 'outer.zip', '7z');
  const members = await listArchive(bytes, '7z');
  assert.deepEqual(Object.keys(members), ['inner.zip']);
  assert.equal(members['inner.zip']!.sha256, createHash('sha256').update(await fs.readFile(path.join(dir, 'nest/inner.zip'))).digest('hex'));
});
