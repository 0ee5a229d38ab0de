// The queue in Redis through BullMQ, for several API nodes and workers. The queue holds job ids
// only; the job store stays the truth about each job. BullMQ gives what a home-made queue would
// get wrong: a lock per running job that its worker keeps renewing, and a check that hands a job
// whose worker died (SIGKILL, a lost machine) to another worker once its lock runs out.
import { DelayedError, Queue, WaitingError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { RETRY_INTERRUPTED_MS, type JobHandler, type JobQueue } from '../types.ts';
import { connectRedis, guarded, KEY_PREFIX } from './connection.ts';

const QUEUE_NAME = 'conversions';
const WAIT_LIST = `${KEY_PREFIX}:${QUEUE_NAME}:wait`;

/**
 * A running job's lock lasts this long unless its worker renews it (every half of it). A worker
 * that died gives its jobs up after at most LOCK_MS + STALLED_CHECK_MS: the bounded delay after
 * which another worker takes them.
 */
const LOCK_MS = 15_000;
const STALLED_CHECK_MS = 5_000;

/** Place in line from the end the workers take from (BullMQ pushes on the left, takes on the right). */
const POSITION = `
local index = redis.call('LPOS', KEYS[1], ARGV[1])
if not index then return -1 end
return redis.call('LLEN', KEYS[1]) - index`;

export interface BullQueueOptions {
  /** Connection for the API side (adding, counting); fails fast while Redis is down. */
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly concurrency: number;
  /** Starts a job gets from BullMQ (the store's own attempt count ends a job that keeps dying). */
  readonly maxAttempts: number;
}

export class BullQueue implements JobQueue {
  private readonly options: BullQueueOptions;
  private readonly queue: Queue;
  private worker: Worker | undefined;
  private workerConnection: Redis | undefined;
  private readonly running = new Set<AbortController>();

  constructor(options: BullQueueOptions) {
    this.options = options;
    this.queue = new Queue(QUEUE_NAME, { connection: options.redis, prefix: KEY_PREFIX });
    this.queue.on('error', () => undefined); // connection trouble surfaces in the calls that fail
  }

  async enqueue(jobId: string): Promise<void> {
    // The job id is BullMQ's job id too: adding a job that is already queued or running is a no-op,
    // which makes taking up unfinished jobs again at start harmless.
    await guarded(() => this.queue.add('convert', {}, {
      jobId,
      attempts: this.options.maxAttempts + 1,
      backoff: { type: 'fixed', delay: 2000 },
      removeOnComplete: { age: 3600 },
      removeOnFail: { age: 24 * 3600 },
    }));
  }

  waiting(): Promise<number> {
    return guarded(() => this.queue.getWaitingCount());
  }

  active(): Promise<number> {
    return guarded(() => this.queue.getActiveCount());
  }

  async position(jobId: string): Promise<number | undefined> {
    const place = Number(await guarded(() => this.options.redis.eval(POSITION, 1, WAIT_LIST, jobId)));
    return place > 0 ? place : undefined;
  }

  start(handler: JobHandler): void {
    const connection = connectRedis(this.options.redisUrl, { name: 'worker', blocking: true });
    connection.on('error', () => undefined);
    this.workerConnection = connection;
    this.worker = new Worker(QUEUE_NAME, async (job: Job, token?: string) => {
      const controller = new AbortController();
      this.running.add(controller);
      try {
        const outcome = await handler(job.id!, controller.signal);
        if (outcome === 'interrupted' && controller.signal.aborted) {
          // This worker is shutting down: back to the head of the line for another worker.
          await job.moveToWait(token);
          throw new WaitingError();
        }
        if (outcome === 'interrupted') {
          // Shared storage was away for a moment: again shortly, as the embedded queue does.
          await job.moveToDelayed(Date.now() + RETRY_INTERRUPTED_MS, token);
          throw new DelayedError();
        }
      } finally {
        this.running.delete(controller);
      }
    }, {
      connection,
      prefix: KEY_PREFIX,
      concurrency: this.options.concurrency,
      lockDuration: LOCK_MS,
      stalledInterval: STALLED_CHECK_MS,
      maxStalledCount: this.options.maxAttempts + 1,
    });
    this.worker.on('error', () => undefined);
  }

  async stop(graceMs: number): Promise<void> {
    const worker = this.worker;
    if (worker) {
      const closed = worker.close();
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), graceMs); });
      const outcome = await Promise.race([closed.then(() => 'closed' as const), grace]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        for (const controller of this.running) controller.abort(new Error('worker shutting down'));
        await closed;
      }
    }
    await this.queue.close();
    // BullMQ closes only the connections it made itself.
    this.workerConnection?.disconnect();
  }
}
