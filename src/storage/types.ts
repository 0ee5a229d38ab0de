// Where uploads and results live. Engines always work on local files in a job's work directory;
// this interface is the seam where a shared or object store (S3) replaces the local disk.
import type { Readable } from 'node:stream';

export interface ResultHandle {
  readonly size: number;
  /** Opens the bytes [start, end] (inclusive), or the whole file: a stream, or the bytes themselves when the file was small. */
  open(range?: { start: number; end: number }): Readable | Buffer;
  /** Releases the handle when no stream was opened (HEAD requests, errors). */
  close(): void;
}

export interface FileStorage {
  /** A fresh local path to stream an upload into (the API node's own disk). */
  newUploadPath(): string;
  /** Makes an accepted upload the job's input; the upload path is consumed. */
  commitInput(jobId: string, uploadPath: string): Promise<void>;
  /** Puts the job's input into workDir as `input.<ext>` and returns its path. */
  fetchInput(jobId: string, workDir: string, ext: string): Promise<string>;
  deleteInput(jobId: string): Promise<void>;
  /** A fresh, empty, private work directory for one attempt of a job. */
  createWorkDir(jobId: string): Promise<string>;
  removeWorkDir(jobId: string): Promise<void>;
  /** Stores a finished result under its download token; the local file is consumed. */
  commitResult(token: string, ext: string, localPath: string): Promise<number>;
  openResult(token: string, ext: string): Promise<ResultHandle | undefined>;
  deleteResult(token: string, ext: string): Promise<void>;
  /** Removes leftovers no job owns any more (interrupted uploads, orphaned inputs, work dirs and results). */
  removeOrphans(isLiveJob: (jobId: string) => boolean, uploadMaxAgeMs: number, resultMaxAgeMs: number): Promise<number>;
  /** Rejects, saying why, unless files can be stored and read now (for /readyz). */
  checkAvailable(): Promise<void>;
  /** Free bytes where uploads land. */
  freeBytes(): Promise<number>;
  /** Size and free space of the file system that holds the files. */
  diskSpace(): Promise<{ freeBytes: number; totalBytes: number }>;
}
