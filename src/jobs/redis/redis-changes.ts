// Job changes across processes: the worker that stores a change publishes the job id on a Redis
// channel, and every API node wakes its own event-stream waiters for that job. A lost message
// costs only latency: a waiter also wakes after its timeout and reads the store.
import type { Redis } from 'ioredis';
import { JobChanges } from '../changes.ts';
import { KEY_PREFIX } from './connection.ts';

const CHANNEL = `${KEY_PREFIX}:job-changes`;

export class RedisJobChanges extends JobChanges {
  private readonly publisher: Redis;
  private readonly subscriber: Redis;

  /** The subscriber must be a connection of its own: a subscribed connection can do nothing else. */
  constructor(publisher: Redis, subscriber: Redis) {
    super();
    this.publisher = publisher;
    this.subscriber = subscriber;
    subscriber.on('message', (_channel: string, jobId: string) => super.notify(jobId));
  }

  async listen(): Promise<void> {
    await this.subscriber.subscribe(CHANNEL);
  }

  override notify(jobId: string): void {
    // Waiters in this process wake at once; the others when the message arrives.
    super.notify(jobId);
    this.publisher.publish(CHANNEL, jobId).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
  }
}
