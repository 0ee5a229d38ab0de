// What every engine whose work runs in a supervised pool (process/pool/) answers the same way:
// warming, health, the pool's figures for /metrics, and closing are the pool's. An engine extends
// this and sets `pool` in its constructor.
import type { PoolStats, ProcessPool } from '../../process/pool/index.ts';

export abstract class PooledEngine {
  abstract readonly pool: ProcessPool;

  async warm(): Promise<void> {
    await this.pool.init();
  }

  health(): { ok: boolean; detail: Readonly<Record<string, unknown>> } {
    return this.pool.health();
  }

  poolStats(): PoolStats {
    return this.pool.stats();
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}
