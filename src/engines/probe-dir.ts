// A scratch directory for an engine's start-up probe: private, handed to the engine user (the
// sandbox runs tools as "nobody" when the service is root), and removed afterwards.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { giveToEngineUser } from '../process/sandbox.ts';

export async function withProbeDir<T>(engine: string, probe: (dir: string) => Promise<T>): Promise<T> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `convertd-probe-${engine}-`));
  try {
    await giveToEngineUser(dir);
    return await probe(dir);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
