// A full disk (issue 5), on a small tmpfs mounted as the data directory: submissions answer 507
// insufficient_storage with Retry-After, a running job whose output cannot be written ends in
// error with the same code, and the service recovers by itself once space is back. Mounting
// needs root; CI runs as root.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { convert, expectError, progress, submit, submitOk, waitForJob } from './helpers/client.ts';
import { noisePng, sampleImage } from './helpers/fixtures.ts';
import { startServer, tempDir } from './helpers/server.ts';

const isRoot = process.getuid?.() === 0;

async function freeBytes(dir: string): Promise<number> {
  const stat = await fs.statfs(dir);
  return stat.bavail * stat.bsize;
}

/** Writes zeros until only `leave` bytes remain free (or the disk is full). */
async function fill(file: string, leave: number): Promise<void> {
  const handle = await fs.open(file, 'a');
  const chunk = Buffer.alloc(1024 * 1024);
  try {
    for (;;) {
      const free = await freeBytes(path.dirname(file));
      if (free <= leave) return;
      await handle.write(chunk, 0, Math.min(chunk.length, free - leave));
    }
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error;
  } finally {
    await handle.close();
  }
}

test('a full disk: 507 on submission, insufficient_storage for a running job, recovery once space is back', { skip: isRoot ? false : 'mounting a tmpfs needs root' }, async () => {
  const dir = await tempDir('convertd-disk-');
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=400m', 'tmpfs', dir]);
  const server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '1', CONVERTD_MAX_FILE_BYTES: String(4 * 1024 * 1024) }, dir);
  const filler = path.join(dir, 'filler');
  try {
    await convert(server.url, await sampleImage('png'), 'fine.png', 'webp');

    // Below the free-space floor (256 MiB plus one upload), submissions are refused unread.
    await fill(filler, 200 * 1024 * 1024);
    const refused = await submit(server.url, await sampleImage('png'), 'a.png', 'webp');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    await expectError(refused, 507, 'insufficient_storage');

    // Space comes back: accepted again. Then the disk fills up under a running job, leaving the
    // few hundred kilobytes a job record needs but not the megabytes its result does. (With not
    // a byte left, the job store on the same disk cannot record anything either; the job then
    // runs again after a restart.)
    await fs.rm(filler);
    const jobId = await submitOk(server.url, await noisePng(1100, 900), 'noise.png', 'gif');
    for (let i = 0; i < 200 && (await progress(server.url, jobId)).body.status !== 'running'; i++) await new Promise((r) => setTimeout(r, 10));
    await fill(filler, 512 * 1024);
    const { final } = await waitForJob(server.url, jobId, { timeoutMs: 60_000 }).catch((error: unknown) => {
      throw new Error(`${String(error)}\nservice log:\n${server.logs.filter((l) => !l.includes('"msg":"request"')).slice(-8).join('\n')}`);
    });
    assert.equal(final.status, 'error');
    assert.equal(final.error?.code, 'insufficient_storage', JSON.stringify(final.error));

    await fs.rm(filler);
    await convert(server.url, await sampleImage('png'), 'recovered.png', 'webp');
  } finally {
    await server.stop();
    execFileSync('umount', [dir]);
  }
});
