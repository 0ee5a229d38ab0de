// Files on the local disk, under the data directory:
//   uploads/<random>.part   an upload being received (not yet a job)
//   inputs/<job_id>         the input of a queued or running job
//   work/<job_id>/          the private directory of the attempt in progress
//   results/<token>.<ext>   a finished result, until it expires
// Renames within one file system are atomic, so a file is either fully in a place or not there.
//
// The calls on a job's path (rename, link, mkdir, stat, unlink of one entry) are synchronous on
// purpose: each is one system call of a few microseconds on the data directory, where the promise
// versions wait for a thread of libuv's pool (shared with uploads and downloads) and then for a
// turn of the event loop: about 0.3 ms each on a busy service, several milliseconds a job in all
// (BENCHMARKS.md, change 14). They add no new way to stall: the job store is synchronous SQLite
// in the same directory already. So is reading a result of at most 512 KiB in one go (change 20).
// Anything that may take long (reading a larger result, removing a directory an engine filled)
// stays asynchronous.
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, statfsSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { FileStorage, ResultHandle, Upload, UploadOptions } from './types.ts';
import { LocalUpload, receiveFile, type CommitInput } from './upload.ts';

/** Results up to this size are read into memory when a download starts. */
const SMALL_RESULT_BYTES = 512 * 1024;

const ID_PATTERN = /^[A-Za-z0-9_-]+$/;
const EXTENSION_PATTERN = /^[a-z0-9]+(\.[a-z0-9]+)?$/;

/** Names from job ids and tokens only, never from anything a client chose freely. */
export function safeName(name: string): string {
  if (!ID_PATTERN.test(name)) throw new Error(`refusing unsafe storage name ${JSON.stringify(name)}`);
  return name;
}

/** Extensions are format ids from the catalogue ("png", "tar.gz"). */
export function safeExtension(ext: string): string {
  if (!EXTENSION_PATTERN.test(ext)) throw new Error(`refusing unsafe extension ${JSON.stringify(ext)}`);
  return ext;
}

export class LocalStorage implements FileStorage {
  private readonly uploads: string;
  private readonly inputs: string;
  private readonly work: string;
  private readonly results: string;

  private readonly root: string;

  constructor(root: string) {
    this.root = root;
    this.uploads = path.join(root, 'uploads');
    this.inputs = path.join(root, 'inputs');
    this.work = path.join(root, 'work');
    this.results = path.join(root, 'results');
  }

  async init(): Promise<void> {
    for (const dir of [this.uploads, this.inputs, this.results]) {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
      await fs.chmod(dir, 0o700);
    }
    // Engines may run as an unprivileged user that must reach its own work dir: the data dir and
    // work/ are traverse-only for others (no listing; job ids are unguessable), the rest private.
    await fs.mkdir(this.work, { recursive: true, mode: 0o711 });
    await fs.chmod(this.root, 0o711);
    await fs.chmod(this.work, 0o711);
  }

  /**
   * At start nothing can be uploading or converting (one service owns a data directory), so
   * every partial upload and every work directory is a leftover of the previous run: a crash
   * or kill -9 leaves no temporary file behind for longer than a restart.
   */
  async removeLeftovers(): Promise<number> {
    let removed = 0;
    for (const dir of [this.uploads, this.work]) {
      for (const name of await fs.readdir(dir)) {
        await fs.rm(path.join(dir, name), { recursive: true, force: true });
        removed++;
      }
    }
    return removed;
  }

  receiveUpload(source: Readable, options: UploadOptions): Promise<Upload> {
    return this.receiveUploadAs(source, options, async (jobId, file) => {
      renameSync(file, path.join(this.inputs, safeName(jobId)));
    });
  }

  /** Receives an upload into uploads/, to be made a job's input by `commitInput` (S3Storage's puts it in the bucket). */
  async receiveUploadAs(source: Readable, options: UploadOptions, commitInput: CommitInput): Promise<Upload> {
    const file = path.join(this.uploads, `${randomBytes(12).toString('base64url')}.part`);
    return new LocalUpload(file, await receiveFile(source, file, options), commitInput);
  }

  async fetchInput(jobId: string, workDir: string, ext: string): Promise<string> {
    const target = path.join(workDir, `input.${safeExtension(ext)}`);
    // A hard link: no copy, and the engine's directory holds only its own input.
    linkSync(path.join(this.inputs, safeName(jobId)), target);
    return target;
  }

  async deleteInput(jobId: string): Promise<void> {
    rmSync(path.join(this.inputs, safeName(jobId)), { force: true });
  }

  async createWorkDir(jobId: string): Promise<string> {
    const dir = path.join(this.work, safeName(jobId));
    // `recursive` answers undefined when the directory was there already: an earlier attempt's
    // leftovers, which go first.
    if (mkdirSync(dir, { recursive: true, mode: 0o700 }) === undefined) {
      await fs.rm(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    }
    return dir;
  }

  async removeWorkDir(jobId: string): Promise<void> {
    await fs.rm(path.join(this.work, safeName(jobId)), { recursive: true, force: true });
  }

  private resultPath(token: string, ext: string): string {
    return path.join(this.results, `${safeName(token)}.${safeExtension(ext)}`);
  }

  async commitResult(token: string, ext: string, localPath: string): Promise<number> {
    const target = this.resultPath(token, ext);
    renameSync(localPath, target);
    return statSync(target).size;
  }

  async openResult(token: string, ext: string): Promise<ResultHandle | undefined> {
    const file = this.resultPath(token, ext);
    // A small result is read at once, synchronously, and sent from memory: opening, reading and
    // closing it through the thread pool cost about a millisecond of every small job's download
    // (BENCHMARKS.md, change 20).
    let size: number;
    try {
      size = statSync(file).size;
    } catch {
      return undefined;
    }
    if (size <= SMALL_RESULT_BYTES) {
      let bytes: Buffer;
      try {
        bytes = readFileSync(file);
      } catch {
        return undefined; // swept between the two calls
      }
      return { size: bytes.length, open: (range) => (range ? bytes.subarray(range.start, range.end + 1) : bytes), close: () => undefined };
    }
    // Opened once: the handle stays readable even if the sweeper unlinks the file meanwhile. A
    // FileHandle, not a bare descriptor: a number closed twice could close someone else's file.
    const handle = await fs.open(file, 'r').catch(() => undefined);
    if (!handle) return undefined;
    const opened = await handle.stat();
    return {
      size: opened.size,
      // 512 KiB reads, not the default 64 KiB: each read is a trip through the thread pool, and a
      // 1.8 MB result took 9 ms to send in 64 KiB reads (BENCHMARKS.md, change 23).
      open: (range) => handle.createReadStream({ start: range?.start, end: range?.end, autoClose: true, highWaterMark: SMALL_RESULT_BYTES }),
      close: () => void handle.close().catch(() => undefined),
    };
  }

  async deleteResult(token: string, ext: string): Promise<void> {
    await fs.rm(this.resultPath(token, ext), { force: true });
  }

  async removeOrphans(isLiveJob: (jobId: string) => boolean, uploadMaxAgeMs: number, resultMaxAgeMs: number): Promise<number> {
    const now = Date.now();
    let removed = 0;
    // An upload still being received is written to continuously, so its mtime stays fresh; inputs
    // and work dirs of jobs that no longer run get a minute, which covers the instant between an
    // upload's rename into inputs/ and its job's insert.
    const sweep = async (dir: string, maxAgeMs: number, owner: (name: string) => string | undefined) => {
      for (const name of await fs.readdir(dir).catch(() => [] as string[])) {
        const jobId = owner(name);
        if (jobId !== undefined && isLiveJob(jobId)) continue;
        const file = path.join(dir, name);
        const stat = await fs.stat(file).catch(() => undefined);
        if (!stat || now - stat.mtimeMs < maxAgeMs) continue;
        await fs.rm(file, { recursive: true, force: true });
        removed++;
      }
    };
    await sweep(this.uploads, uploadMaxAgeMs, () => undefined);
    await sweep(this.inputs, 60_000, (name) => name);
    await sweep(this.work, 60_000, (name) => name);
    // Every result expires one lifetime after its creation; one older than that belongs to no
    // live job (a crash between storing it and recording the job as done leaves such a file).
    await sweep(this.results, resultMaxAgeMs, () => undefined);
    return removed;
  }

  async checkAvailable(): Promise<void> {
    for (const dir of [this.uploads, this.inputs, this.results]) await fs.access(dir, fs.constants.W_OK);
  }

  async freeBytes(): Promise<number> {
    return (await this.diskSpace()).freeBytes;
  }

  async diskSpace(): Promise<{ freeBytes: number; totalBytes: number }> {
    const stat = statfsSync(this.root);
    return { freeBytes: stat.bavail * stat.bsize, totalBytes: stat.blocks * stat.bsize };
  }
}
