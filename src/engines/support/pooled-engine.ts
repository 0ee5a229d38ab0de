// What every engine whose work runs in a supervised pool (process/pool/) answers the same way:
// warming, health, the pool's figures for /metrics, and closing are the pool's; and a start-up
// probe that converts a small sample in the pool. An engine extends this and sets `pool` in its
// constructor.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { PoolStats, ProcessPool } from '../../process/pool/index.ts';
import type { EngineContext } from '../module.ts';

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

  /**
   * The probe's conversion: `sample` written as `input` in a scratch directory, converted in the
   * pool with `message` (a probe job: not counted towards the process's recycling), and the
   * output file's text returned for the engine to check.
   */
  protected async convertSample(withScratchDir: EngineContext<unknown>['withScratchDir'], input: string, sample: string, output: string, message: Readonly<Record<string, unknown>>): Promise<string> {
    const [written] = await this.convertSamples(withScratchDir, [{ input, sample, output, message }]);
    return written!.toString('utf8');
  }

  /**
   * Several probe conversions in one start of the pool (init() clears the pool's state directory,
   * so it runs once, before them all): each output's bytes, in order.
   */
  protected async convertSamples(withScratchDir: EngineContext<unknown>['withScratchDir'], samples: ReadonlyArray<{ input: string; sample: string; output: string; message: Readonly<Record<string, unknown>> }>): Promise<Buffer[]> {
    await this.pool.init();
    return withScratchDir(async (dir) => {
      const outputs: Buffer[] = [];
      for (const { input, sample, output, message } of samples) {
        await fs.writeFile(path.join(dir, input), sample);
        await this.pool.convert(path.join(dir, input), path.join(dir, output), message, 30_000, AbortSignal.timeout(60_000), { probe: true });
        outputs.push(await fs.readFile(path.join(dir, output)));
      }
      return outputs;
    });
  }
}
