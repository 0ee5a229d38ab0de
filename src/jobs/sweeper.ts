// Deletes what has expired. Expiry itself is decided on every request (service.ts isExpired); the
// sweeper only frees the disk, at least once a minute, so a result never outlives its lifetime by
// more than the sweep interval. Tombstones (records of purged jobs, which answer 410) are
// forgotten after CONVERTD_TOMBSTONE_SECONDS, and files no job owns any more are removed.
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { FileStorage } from '../storage/types.ts';
import type { JobStore } from './types.ts';

/** An upload untouched for this long is abandoned (the HTTP request timeout is far shorter). */
const ABANDONED_UPLOAD_MS = 30 * 60 * 1000;

export interface SweeperDeps {
  readonly store: JobStore;
  readonly storage: FileStorage;
  readonly config: Config;
  readonly log: Logger;
}

export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  private readonly deps: SweeperDeps;

  constructor(deps: SweeperDeps) {
    this.deps = deps;
  }

  start(): void {
    const tick = () => {
      this.running = this.sweep()
        .catch((error: unknown) => this.deps.log.error({ err: error }, 'sweep failed'))
        .finally(() => { this.running = undefined; });
    };
    tick();
    this.timer = setInterval(tick, this.deps.config.sweepIntervalSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  async sweep(now = Date.now()): Promise<void> {
    const { store, storage, config, log } = this.deps;
    const expired = await store.listExpired(now);
    for (const job of expired) {
      if (job.resultToken) await storage.deleteResult(job.resultToken, job.target);
      await storage.deleteInput(job.id);
      await store.markPurged(job.id, now);
    }
    const tombstones = await store.deleteTombstones(now - config.tombstoneSeconds * 1000);
    const live = new Set((await store.listUnfinished()).map((job) => job.id));
    const resultMaxAgeMs = (config.fileLifetimeSeconds + config.sweepIntervalSeconds) * 1000;
    const orphans = await storage.removeOrphans((id) => live.has(id), ABANDONED_UPLOAD_MS, resultMaxAgeMs);
    if (expired.length + tombstones + orphans > 0) {
      log.info({ event: 'sweep', expired: expired.length, tombstones, orphans }, 'expired files deleted');
    }
  }
}
