// A pooled job's directory (supervisor.ts runs the job, messaging.ts talks to the process).
//
// Isolation: a process sees its own directory only, and a job/ directory in it that holds the
// current job's input and output and is emptied between jobs. The directory is made fresh for
// every new process, so nothing a file did to one outlives maxJobs conversions.
import { linkSync, mkdirSync, readdirSync, renameSync, rmdirSync, unlinkSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { giveEntriesToEngineUser } from '../sandbox.ts';

/**
 * Runs one job in the job/ directory of the process whose directory is `processDir`: `input` is
 * linked (or copied) in as input.<ext> and handed to the engine user, `work` gets the staged input
 * and output paths (and throws for a refusal), and the output is moved out to `output`. The
 * directory is emptied afterwards, whatever happened. `label` names the tool in messages.
 */
export async function inJobDir(processDir: string, input: string, output: string, label: string, work: (stagedInput: string, stagedOutput: string) => Promise<void>): Promise<void> {
  const jobDir = path.join(processDir, 'job');
  const stagedInput = path.join(jobDir, `input${path.extname(input)}`);
  const stagedOutput = path.join(jobDir, `output${path.extname(output)}`);
  // Staged with synchronous calls, as the job path's other metadata calls (storage/local.ts
  // says why); only a copy (another file system) or a crowded directory waits on the thread pool.
  if (mkdirSync(jobDir, { recursive: true, mode: 0o700 }) === undefined) {
    await fs.rm(jobDir, { recursive: true, force: true });
    mkdirSync(jobDir, { mode: 0o700 });
  }
  try {
    try {
      linkSync(input, stagedInput);
    } catch {
      await fs.copyFile(input, stagedInput);
    }
    giveEntriesToEngineUser([jobDir, stagedInput]);
    await work(stagedInput, stagedOutput);
    try {
      renameSync(stagedOutput, output);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ConvertdError('conversion_failed', `${label} wrote no output: the file may use features it cannot convert.`);
      await fs.copyFile(stagedOutput, output);
    }
  } finally {
    await emptyJobDir(jobDir).catch(() => undefined);
  }
}

/** Entries a job directory normally holds afterwards (the input, and an output not moved out). */
const FEW_ENTRIES = 4;

/**
 * Removes a job directory: a few plain files synchronously, anything else (what a hostile file
 * made the helper write) through the thread pool, where a large tree does not hold up the service.
 */
async function emptyJobDir(jobDir: string): Promise<void> {
  const entries = readdirSync(jobDir, { withFileTypes: true });
  if (entries.length <= FEW_ENTRIES && entries.every((entry) => entry.isFile())) {
    for (const entry of entries) unlinkSync(path.join(jobDir, entry.name));
    rmdirSync(jobDir);
  } else {
    await fs.rm(jobDir, { recursive: true, force: true });
  }
}
