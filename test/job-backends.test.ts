// One contract for the job store and the queue, run against both backends: the embedded one
// (SQLite, in-process queue) and the scale-out one (Redis, BullMQ) on a real redis-server. What
// the service relies on must hold in both: durable records, progress that never goes down, a job
// finished once only, expiry and tombstones, a line with positions, bounded concurrency, and jobs
// taken up again after an interruption.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LocalQueue } from '../src/jobs/local-queue.ts';
import { BullQueue } from '../src/jobs/redis/bullmq-queue.ts';
import { openRedis } from '../src/jobs/redis/connection.ts';
import { RedisJobStore } from '../src/jobs/redis/redis-store.ts';
import { SqliteJobStore } from '../src/jobs/sqlite-store.ts';
import type { JobHandler, JobQueue, JobStore, NewJob } from '../src/jobs/types.ts';
import { startRedis, type RedisServer } from './helpers/backing-servers.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/server.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Backend {
  readonly name: string;
  /** A fresh, empty store. */
  store(): Promise<JobStore>;
  /** A fresh, empty queue; several calls give queues sharing one line (workers on other machines), where the backend has that. */
  queue(concurrency: number): Promise<JobQueue>;
  /** Whether queues of this backend share their line across processes. */
  readonly distributed: boolean;
  reset(): Promise<void>;
}

let redisServer: RedisServer;
before(async () => { redisServer = await startRedis(); });

const closers: Array<() => Promise<void>> = [];
async function closeAll(): Promise<void> {
  while (closers.length > 0) await closers.pop()!().catch(() => undefined);
}

const BACKENDS: Backend[] = [
  {
    name: 'embedded (SQLite + in-process queue)',
    distributed: false,
    async store() {
      const store = new SqliteJobStore(path.join(await tempDir(), 'jobs.sqlite'));
      closers.push(() => store.close());
      return store;
    },
    async queue(concurrency) {
      const queue = new LocalQueue(concurrency);
      closers.push(() => queue.stop(0));
      return queue;
    },
    async reset() { await closeAll(); },
  },
  {
    name: 'Redis (hashes + Lua, BullMQ)',
    distributed: true,
    async store() {
      const redis = await openRedis(redisServer.url, { name: 'test-store' });
      const store = new RedisJobStore(redis);
      closers.push(() => store.close());
      return store;
    },
    async queue(concurrency) {
      const redis = await openRedis(redisServer.url, { name: 'test-queue' });
      const queue = new BullQueue({ redis, redisUrl: redisServer.url, concurrency, maxAttempts: 3 });
      closers.push(async () => { await queue.stop(0); await redis.quit(); });
      return queue;
    },
    async reset() {
      await closeAll();
      const redis = await openRedis(redisServer.url, { name: 'test-reset' });
      await redis.flushall();
      await redis.quit();
    },
  },
];

let counter = 0;
function newJob(overrides: Partial<NewJob> = {}): NewJob {
  counter++;
  return { id: `job${counter}x${Date.now().toString(36)}`, source: 'png', target: 'webp', filename: `f${counter}.png`, inputBytes: 100 + counter, createdAt: Date.now() + counter, ...overrides };
}

for (const backend of BACKENDS) {
  describe(`job store contract: ${backend.name}`, () => {
    test('a created job reads back queued with every field', async () => {
      await backend.reset();
      const store = await backend.store();
      const job = newJob({ filename: 'Ünïcode name.png' });
      await store.create(job);
      const read = await store.get(job.id);
      assert.deepEqual(read, {
        ...job, status: 'queued', progress: 0, startedAt: null, finishedAt: null, attempts: 0, resultToken: null,
        resultBytes: null, expiresAt: null, errorCode: null, errorMessage: null, purgedAt: null, options: {}, ignoredOptions: [], skipped: [],
      });
      assert.equal(await store.get('no-such-job'), undefined);
      await store.checkWritable();
    });

    test('attempts count up; progress only rises, and only while running', async () => {
      await backend.reset();
      const store = await backend.store();
      const job = newJob();
      await store.create(job);
      await store.setProgress(job.id, 40);
      assert.equal((await store.get(job.id))!.progress, 0, 'a queued job has no progress');
      assert.equal(await store.markRunning(job.id, 1000), 1);
      await store.setProgress(job.id, 40);
      await store.setProgress(job.id, 25);
      assert.equal((await store.get(job.id))!.progress, 40);
      assert.equal(await store.markRunning(job.id, 2000), 2, 'a second attempt (after a crash)');
      const running = (await store.get(job.id))!;
      assert.equal(running.status, 'running');
      assert.equal(running.progress, 40, 'a new attempt does not lower the progress');
      assert.equal(running.startedAt, 2000);
    });

    test('a job keeps its options, the names it ignored, and the members its result skipped', async () => {
      await backend.reset();
      const store = await backend.store();
      const plain = newJob();
      await store.create(plain);
      const stored = (await store.get(plain.id))!;
      assert.deepEqual([stored.options, stored.ignoredOptions, stored.skipped], [{}, [], []], 'a job without options has none');
      const job = { ...newJob(), options: { quality: '40', page_range: '1-3,5', sheet: 'Ünïcode "sheet"\\' }, ignoredOptions: ['bogus'] };
      await store.create(job);
      await store.markRunning(job.id, 1);
      await store.markDone(job.id, { token: `opt${job.id}`, bytes: 1, finishedAt: 2, expiresAt: 3, skipped: ['notes/readme.txt', 'a b.bin'] });
      for (const record of [await store.get(job.id), await store.getByToken(`opt${job.id}`)]) {
        assert.deepEqual(record!.options, job.options);
        assert.deepEqual(record!.ignoredOptions, ['bogus']);
        assert.deepEqual(record!.skipped, ['notes/readme.txt', 'a b.bin']);
      }
    });

    test('a job finishes once: the first outcome stands', async () => {
      await backend.reset();
      const store = await backend.store();
      const job = newJob();
      await store.create(job);
      await store.markRunning(job.id, 1);
      assert.equal(await store.markDone(job.id, { token: `tok${job.id}`, bytes: 42, finishedAt: 10, expiresAt: 20 }), true);
      assert.equal(await store.markDone(job.id, { token: `other${job.id}`, bytes: 43, finishedAt: 11, expiresAt: 21 }), false);
      assert.equal(await store.markError(job.id, { code: 'timeout', message: 'late', finishedAt: 12, expiresAt: 22 }), false);
      const done = (await store.get(job.id))!;
      assert.equal(done.status, 'done');
      assert.equal(done.progress, 100);
      assert.equal(done.resultToken, `tok${job.id}`);
      assert.equal(done.resultBytes, 42);
      assert.equal(done.expiresAt, 20);
      assert.equal((await store.getByToken(`tok${job.id}`))!.id, job.id);
      assert.equal(await store.getByToken(`other${job.id}`), undefined);
      await assert.rejects(store.markRunning(job.id, 30), 'a finished job does not run again');

      const failed = newJob();
      await store.create(failed);
      assert.equal(await store.markError(failed.id, { code: 'corrupt_input', message: 'bad', finishedAt: 5, expiresAt: 6 }), true);
      const record = (await store.get(failed.id))!;
      assert.deepEqual([record.status, record.errorCode, record.errorMessage], ['error', 'corrupt_input', 'bad']);
    });

    test('unfinished jobs list oldest first; expired ones list once expired; tombstones go', async () => {
      await backend.reset();
      const store = await backend.store();
      const base = 1_000_000;
      const [a, b, c] = [newJob({ createdAt: base + 3 }), newJob({ createdAt: base + 1 }), newJob({ createdAt: base + 2 })];
      for (const job of [a, b, c]) await store.create(job);
      assert.deepEqual((await store.listUnfinished()).map((j) => j.id), [b.id, c.id, a.id]);
      await store.markRunning(c.id, base);
      await store.markDone(c.id, { token: `t${c.id}`, bytes: 1, finishedAt: base + 10, expiresAt: base + 100 });
      await store.markError(a.id, { code: 'timeout', message: 'x', finishedAt: base + 10, expiresAt: base + 200 });
      assert.deepEqual((await store.listUnfinished()).map((j) => j.id), [b.id]);
      assert.deepEqual((await store.listExpired(base + 99)).map((j) => j.id), []);
      assert.deepEqual((await store.listExpired(base + 150)).map((j) => j.id), [c.id]);
      await store.markPurged(c.id, base + 150);
      assert.deepEqual((await store.listExpired(base + 150)).map((j) => j.id), [], 'a purged job is not listed again');
      assert.equal((await store.get(c.id))!.purgedAt, base + 150, 'the tombstone stays');
      assert.equal((await store.getByToken(`t${c.id}`))!.id, c.id, 'its download address still finds it (410, not 404)');
      assert.equal(await store.deleteTombstones(base + 150), 0, 'not before the given time');
      assert.equal(await store.deleteTombstones(base + 151), 1);
      assert.equal(await store.get(c.id), undefined);
      assert.equal(await store.getByToken(`t${c.id}`), undefined);
    });
  });

  describe(`job queue contract: ${backend.name}`, () => {
    test('jobs wait in line with positions, then run, at most `concurrency` at once', async () => {
      await backend.reset();
      const queue = await backend.queue(2);
      const ids = Array.from({ length: 6 }, (_, i) => `line${i}x${Date.now().toString(36)}`);
      for (const id of ids) await queue.enqueue(id);
      await queue.enqueue(ids[0]!); // already in line: not added twice
      assert.equal(await queue.waiting(), 6);
      assert.deepEqual(await Promise.all(ids.map((id) => queue.position(id))), [1, 2, 3, 4, 5, 6]);
      assert.equal(await queue.position('unknown'), undefined);

      const ran: string[] = [];
      let running = 0;
      let most = 0;
      const handler: JobHandler = async (id) => {
        running++;
        most = Math.max(most, running);
        await sleep(100);
        ran.push(id);
        running--;
        return 'finished';
      };
      queue.start(handler);
      await waitFor('all jobs', () => ran.length === ids.length);
      assert.deepEqual([...ran].sort(), [...ids].sort(), 'each job ran exactly once');
      assert.equal(most, 2, 'two at once, never more');
      assert.equal(ran.indexOf(ids[0]!) < ran.indexOf(ids[5]!), true, 'first in, first out');
      await waitFor('an empty line', async () => (await queue.waiting()) === 0 && (await queue.active()) === 0);
    });

    test('stop waits for running jobs up to the grace time, then aborts them', async () => {
      await backend.reset();
      const queue = await backend.queue(1);
      const id = `slow${Date.now().toString(36)}`;
      let aborted = false;
      let started = false;
      queue.start(async (_id, signal) => {
        started = true;
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted = true;
        return 'interrupted';
      });
      await queue.enqueue(id);
      await waitFor('the job to start', () => started);
      const before = Date.now();
      await queue.stop(300);
      assert.equal(aborted, true);
      assert.ok(Date.now() - before >= 250, 'it waited for the grace time first');
    });

    test('a job interrupted while the queue keeps running (storage away) runs again shortly', async () => {
      await backend.reset();
      const queue = await backend.queue(1);
      const id = `again${Date.now().toString(36)}`;
      const runs: number[] = [];
      queue.start(async () => {
        runs.push(Date.now());
        return runs.length === 1 ? 'interrupted' : 'finished';
      });
      await queue.enqueue(id);
      await waitFor('the second run', () => runs.length === 2);
      assert.ok(runs[1]! - runs[0]! >= 1000, 'not at once: the storage gets a moment to come back');
    });

    if (backend.distributed) {
      test('a job interrupted on one worker is taken by another', async () => {
        await backend.reset();
        const first = await backend.queue(1);
        const second = await backend.queue(1);
        const id = `moved${Date.now().toString(36)}`;
        let firstStarted = false;
        first.start(async (_id, signal) => {
          firstStarted = true;
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
          return 'interrupted';
        });
        await first.enqueue(id);
        await waitFor('the first worker to start it', () => firstStarted);
        await first.stop(0);
        const ranOnSecond: string[] = [];
        second.start(async (jobId) => { ranOnSecond.push(jobId); return 'finished'; });
        await waitFor('the second worker to run it', () => ranOnSecond.length === 1);
        assert.deepEqual(ranOnSecond, [id]);
      });
    }
  });
}

after(async () => {
  await closeAll();
  await redisServer.stop();
});
