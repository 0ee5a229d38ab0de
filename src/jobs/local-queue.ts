// The embedded queue: a FIFO in memory with a fixed number of worker slots. It holds only job ids;
// the durable truth is the job store, from which the queue is rebuilt at start (see recovery in
// service.ts), so losing this memory in a crash loses nothing.
import { RETRY_INTERRUPTED_MS, type JobHandler, type JobQueue } from './types.ts';

export class LocalQueue implements JobQueue {
  private readonly pending: string[] = [];
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private handler: JobHandler | undefined;
  private stopping = false;

  private readonly concurrency: number;

  constructor(concurrency: number) {
    this.concurrency = concurrency;
  }

  async enqueue(jobId: string): Promise<void> {
    if (this.stopping) return; // taken up again from the store after the restart
    // A job already in line or running is not added twice (as with BullMQ's job ids).
    if (this.running.has(jobId) || this.pending.includes(jobId)) return;
    this.pending.push(jobId);
    this.pump();
  }

  async waiting(): Promise<number> {
    return this.pending.length;
  }

  async active(): Promise<number> {
    return this.running.size;
  }

  async position(jobId: string): Promise<number | undefined> {
    const index = this.pending.indexOf(jobId);
    return index === -1 ? undefined : index + 1;
  }

  start(handler: JobHandler): void {
    this.handler = handler;
    this.pump();
  }

  private pump(): void {
    const handler = this.handler;
    if (!handler) return;
    while (!this.stopping && this.running.size < this.concurrency && this.pending.length > 0) {
      const jobId = this.pending.shift()!;
      const controller = new AbortController();
      // The handler records its own failures; an interrupted job stays unfinished in the store,
      // from which the next start takes it up again.
      const done = handler(jobId, controller.signal)
        .then((outcome) => {
          // Interrupted while the service keeps running (its file storage was away): try again soon.
          if (outcome === 'interrupted' && !this.stopping) setTimeout(() => void this.enqueue(jobId), RETRY_INTERRUPTED_MS).unref();
        }, () => undefined)
        .finally(() => {
          this.running.delete(jobId);
          this.pump();
        });
      this.running.set(jobId, { controller, done });
    }
  }

  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.pending.length = 0;
    const all = Promise.all([...this.running.values()].map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), graceMs); });
    const outcome = await Promise.race([all.then(() => 'finished' as const), grace]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      for (const { controller } of this.running.values()) controller.abort(new Error('service shutting down'));
      await all;
    }
  }
}
