// Resource limits through cgroups (issue 5): every engine process runs in cgroups of its own, so a
// file that makes an engine balloon ends as input_too_complex instead of taking the machine's
// memory, and a process tree that forks without end stops at its task cap; the pools replace a
// process killed for its memory and go on. The service is started with a small memory limit
// (192 MiB: enough for every engine to pass its start-up probe) so that modest files cross it.
import assert from 'node:assert/strict';
import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { MAX_ENGINE_TASKS, configureCgroupLimits, removeServiceCgroups } from '../src/process/cgroups.ts';
import { LAUNCHERS_WAITING, stopLaunchers } from '../src/process/launchers.ts';
import { runProcess } from '../src/process/runner.ts';
import { configureSandbox, giveToEngineUser } from '../src/process/sandbox.ts';
import { convert, submitOk, waitForJob } from './helpers/client.ts';
import { handmadeDocx, handmadeEpub } from './helpers/documents.ts';
import { flatPng } from './helpers/fixtures.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const LIMIT_MB = 192;

/** The memory cgroup directory a process is in (cgroup v1's memory hierarchy, or v2's unified one). */
function memoryCgroupOf(pid: number): string | undefined {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const v1 = lines.find((line) => line.split(':')[1]?.split(',').includes('memory'));
  if (v1) return path.join('/sys/fs/cgroup/memory', v1.split(':').slice(2).join(':'));
  const v2 = lines.find((line) => line.startsWith('0::'));
  return v2 ? path.join('/sys/fs/cgroup', v2.slice(3)) : undefined;
}

/** Whether this machine lets the test's own user make memory cgroups (root with a writable hierarchy). */
function cgroupsWritable(): boolean {
  const dir = memoryCgroupOf(process.pid);
  if (!dir || process.getuid?.() !== 0) return false;
  try {
    accessSync(dir, constants.W_OK);
    return existsSync(path.join(dir, 'memory.limit_in_bytes')) || existsSync(path.join(dir, 'memory.max'));
  } catch {
    return false;
  }
}

const skip = cgroupsWritable() ? false : 'memory cgroups cannot be made here (not root, or no writable memory hierarchy)';

/** A run-length encoded TGA of width x height in one colour: small on disk, width*height*8 bytes in ImageMagick (Q16 RGBA). */
function flatTga(width: number, height: number): Buffer {
  const header = Buffer.alloc(18);
  header[2] = 10; // run-length encoded true colour
  header.writeUInt16LE(width, 12);
  header.writeUInt16LE(height, 14);
  header[16] = 24;
  header[17] = 0x20; // top-left origin
  const packets: Buffer[] = [];
  for (let left = width * height; left > 0; left -= 128) packets.push(Buffer.from([0x80 | (Math.min(128, left) - 1), 0x30, 0x60, 0x90]));
  return Buffer.concat([header, ...packets]);
}

let server: RunningServer;
let serviceCgroup: string;

before(async () => {
  if (skip) return;
  server = await startServer({
    CONVERTD_ENGINE_MEMORY_MB: String(LIMIT_MB), CONVERTD_LIBREOFFICE_POOL: '1', CONVERTD_LIBREOFFICE_START: 'eager', CONVERTD_POOL_START: 'eager',
    CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_MAX_ATTEMPTS: '1',
  });
  serviceCgroup = path.join(memoryCgroupOf(server.child.pid!)!, `convertd-${server.child.pid}`);
});

after(async () => {
  await server?.stop();
});

async function failsForMemory(data: Buffer, filename: string, target: string): Promise<void> {
  const jobId = await submitOk(server.url, data, filename, target);
  const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
  assert.equal(final.status, 'error', `${filename} → ${target} should fail`);
  assert.equal(final.error?.code, 'input_too_complex', JSON.stringify(final.error));
  assert.match(final.error!.message, new RegExp(`more than ${LIMIT_MB} MB of memory`));
}

test('/readyz says engines run under memory and task limits', { skip }, async () => {
  const ready = await (await fetch(`${server.url}/readyz`)).json() as { checks: Record<string, { ok: boolean; mode?: string; limit_bytes?: number; max_tasks?: number }> };
  assert.match(ready.checks.memory_limit?.mode ?? '', /^cgroup-v[12]$/, JSON.stringify(ready.checks.memory_limit));
  assert.equal(ready.checks.memory_limit?.limit_bytes, LIMIT_MB * 1024 * 1024);
  assert.equal(ready.checks.process_limit?.max_tasks, MAX_ENGINE_TASKS, JSON.stringify(ready.checks.process_limit));
  // The warm pooled processes (LibreOffice, sharp) live in cgroups of their own, under the service's, with the limit.
  const runs = readdirSync(serviceCgroup).filter((name) => name.startsWith('run-'));
  assert.ok(runs.length >= 2, 'the pooled processes have cgroups');
  const limitFile = existsSync(path.join(serviceCgroup, runs[0]!, 'memory.limit_in_bytes')) ? 'memory.limit_in_bytes' : 'memory.max';
  assert.equal(Number(readFileSync(path.join(serviceCgroup, runs[0]!, limitFile), 'utf8')), LIMIT_MB * 1024 * 1024);
});

test('an image that decodes past the limit (a 5000 x 5000 TGA of a few kilobytes) ends as input_too_complex, and the next job converts', { skip }, async () => {
  await failsForMemory(flatTga(5000, 5000), 'flood.tga', 'png');
  const { record } = await convert(server.url, flatTga(64, 64), 'small.tga', 'png');
  assert.equal(record.status, 'done');
});

test('a PNG that sharp must hold whole past the limit (81 megapixels into WebP) kills only its sandboxed process: input_too_complex, and the next image converts', { skip }, async () => {
  await failsForMemory(flatPng(9000, 9000), 'flood.png', 'webp');
  assert.ok(server.logs.some((line) => line.includes('sharp_crash')), 'the pool saw its sharp process die');
  const { record } = await convert(server.url, flatPng(64, 64), 'small.png', 'webp');
  assert.equal(record.status, 'done');
});

test('a docx with a 144-megapixel picture kills LibreOffice for its memory: input_too_complex, and the pool goes on', { skip }, async () => {
  await failsForMemory(handmadeDocx({ text: 'Big picture', picture: flatPng(12000, 12000) }), 'bomb.docx', 'pdf');
  assert.ok(server.logs.some((line) => line.includes('libreoffice_crash')), 'the pool saw its process die');
  const { record, bytes } = await convert(server.url, handmadeDocx({ text: 'After the bomb' }), 'after.docx', 'pdf');
  assert.equal(record.status, 'done');
  assert.equal(bytes.subarray(0, 5).toString('latin1'), '%PDF-');
  const ready = await (await fetch(`${server.url}/readyz`)).json() as { checks: Record<string, { ok: boolean; alive?: number }> };
  assert.equal(ready.checks['pool:libreoffice']?.ok, true);
});

/** A one-chapter EPUB showing `picture` (a PNG), written here. */
function pictureEpub(title: string, picture: Buffer): Buffer {
  return handmadeEpub({ title, body: '<p><img src="picture.png" alt="picture"/></p>', files: { 'picture.png': picture }, manifest: '<item id="p" href="picture.png" media-type="image/png"/>' });
}

test('an EPUB whose 144-megapixel picture calibre must scale for MOBI kills its forked child for its memory: input_too_complex, and the next book converts', { skip }, async () => {
  await failsForMemory(pictureEpub('Big picture', flatPng(12000, 12000)), 'bomb.epub', 'mobi');
  assert.ok(server.logs.some((line) => line.includes('calibre_crash')), 'the pool saw its calibre helper end with the child');
  const { record, bytes } = await convert(server.url, pictureEpub('After the bomb', flatPng(64, 64)), 'after.epub', 'mobi');
  assert.equal(record.status, 'done');
  assert.equal(bytes.subarray(60, 68).toString('latin1'), 'BOOKMOBI', 'a MOBI book');
});

test('finished engines leave no cgroup behind, and a stopped service removes its own', { skip }, async () => {
  // While the service runs, only cgroups with a process in them stay: the warm pooled processes'
  // and the launchers waiting for the next engine (removal retries while processes exit).
  const ready = await (await fetch(`${server.url}/readyz`)).json() as { checks: Record<string, { alive?: number }> };
  const pooled = Object.entries(ready.checks).filter(([name]) => name.startsWith('pool:')).reduce((sum, [, check]) => sum + (check.alive ?? 0), 0);
  assert.ok(pooled >= 2, 'the LibreOffice and sharp pools have processes');
  const occupied = (name: string) => readFileSync(path.join(serviceCgroup, name, 'cgroup.procs'), 'utf8').trim() !== '';
  let runs: string[] = [];
  for (let i = 0; i < 50; i++) {
    runs = readdirSync(serviceCgroup).filter((name) => name.startsWith('run-'));
    if (runs.every(occupied)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.deepEqual(runs.filter((name) => !occupied(name)), [], 'no empty cgroup is left');
  assert.ok(runs.length >= pooled && runs.length <= pooled + LAUNCHERS_WAITING, `cgroups: ${runs.join(', ')} for ${pooled} pooled processes`);
  // A service killed outright cannot clean up: the next one removes what it left.
  await server.stop('SIGKILL');
  assert.ok(existsSync(serviceCgroup), 'a killed service leaves its cgroup');
  const next = await startServer({ CONVERTD_ENGINE_MEMORY_MB: String(LIMIT_MB), CONVERTD_LIBREOFFICE_START: 'lazy' });
  try {
    assert.equal(existsSync(serviceCgroup), false, 'the next service removed the stale cgroup');
  } finally {
    await next.stop();
  }
  assert.equal(existsSync(path.join(memoryCgroupOf(process.pid)!, `convertd-${next.child.pid}`)), false, 'a stopped service removes its cgroup');
  assert.ok(next.logs.some((line) => line.includes('"event":"stopped"')), 'the stop ran to its end (not an exit halfway, the event loop empty while it waited)');
});

test('a process tree that forks without end stops at its task cap, and the runner still ends it', { skip }, async () => {
  // The runner in this test process, as the service uses it (with cgroups of its own, convertd-<test pid>).
  const { settings } = configureSandbox('auto');
  const limits = configureCgroupLimits(LIMIT_MB, settings);
  assert.equal(limits.maxTasks, MAX_ENGINE_TASKS, JSON.stringify(limits));
  const workDir = await tempDir('convertd-forks-');
  try {
    await giveToEngineUser(workDir, settings);
    const forkBomb = [
      'import os, time',
      'n = 0',
      'for i in range(5000):',
      '    try:',
      '        pid = os.fork()',
      '    except OSError:',
      '        break',
      '    if pid == 0:',
      '        time.sleep(30)',
      '        os._exit(0)',
      '    n += 1',
      'print(n, flush=True)',
    ].join('\n');
    const result = await runProcess('/usr/bin/python3', ['-c', forkBomb], { cwd: workDir, timeoutMs: 60_000, captureStdout: true });
    const forked = Number(result.stdout.trim());
    assert.ok(forked > 100 && forked < MAX_ENGINE_TASKS, `forked ${forked} children (cap ${MAX_ENGINE_TASKS})`);
    // The sleeping children went with the process group: the runner returned long before their 30 s.
    assert.ok(result.durationMs < 20_000, `took ${result.durationMs} ms`);
  } finally {
    await stopLaunchers();
    removeServiceCgroups();
    configureSandbox('off');
  }
});
