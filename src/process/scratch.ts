// A scratch directory for an engine's start-up probe: private, handed to the engine user (the
// sandbox runs tools as "nobody" when the service is root), and removed afterwards. Engines get it
// through their context (EngineContext.withScratchDir).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { giveToEngineUser } from './sandbox.ts';

export async function withScratchDir<T>(name: string, work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `convertd-probe-${name}-`));
  try {
    await giveToEngineUser(dir);
    return await work(dir);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
