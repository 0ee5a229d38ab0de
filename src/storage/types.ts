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

export interface UploadOptions {
  /** An upload larger than this is refused (file_too_large) and removed. */
  readonly maxBytes: number;
  /** Told the size of every chunk as it arrives (the HTTP layer's garbage-collection nudge). */
  readonly onBytes?: (bytes: number) => void;
}

/**
 * An upload received in full. Storage owns it until it is committed as a job's input or
 * discarded; whoever holds it does one or the other.
 */
export interface Upload {
  readonly bytes: number;
  /** A local file with the upload's bytes, to read (sniff) until it is committed or discarded. */
  readonly path: string;
  /** Makes the upload the job's input; the upload is consumed. */
  commit(jobId: string): Promise<void>;
  /** Removes the upload; a no-op once it was committed or discarded. Synchronous: one unlink. */
  discard(): void;
}

export interface FileStorage {
  /**
   * Receives an upload from its first byte (onto the API node's own disk). Rejects, leaving
   * nothing behind, when the source fails or passes maxBytes.
   */
  receiveUpload(source: Readable, options: UploadOptions): Promise<Upload>;
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
