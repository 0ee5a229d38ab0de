// An upload on the node's own disk, from its first byte until it becomes a job's input or is
// removed: received into a file (UploadSink), capped, then committed or discarded (LocalUpload).
// Whatever fails on the way, the partial file is removed before anyone is told.
import { createWriteStream, rmSync, writeFileSync, type WriteStream } from 'node:fs';
import { finished, Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ConvertdError } from '../errors.ts';
import type { Upload, UploadOptions } from './types.ts';

/** Uploads up to this size are held in memory and written to disk in one call. */
const SMALL_UPLOAD_BYTES = 512 * 1024;

/**
 * Where an upload's bytes go. Written through a file stream, every 64 KiB chunk of an upload is a
 * trip through libuv's thread pool, and so are the open and the close, on the path of every small
 * job. So the first SMALL_UPLOAD_BYTES are held: an upload that ends within them is written with
 * one synchronous call (the job store beside it is synchronous SQLite already), a larger one goes
 * on through a file stream that starts with what was held. Reading a 258 KB upload went from
 * 3.1 to 2.6 ms (BENCHMARKS.md, change 20). It counts the bytes itself, so no stat follows.
 */
class UploadSink extends Writable {
  /** Bytes received so far; the upload's size once the sink has finished. */
  bytes = 0;
  private held: Buffer[] = [];
  private heldBytes = 0;
  private file: WriteStream | undefined;
  private readonly destination: string;
  private readonly options: UploadOptions;

  constructor(destination: string, options: UploadOptions) {
    super();
    this.destination = destination;
    this.options = options;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.options.onBytes?.(chunk.length);
    this.bytes += chunk.length;
    if (this.bytes > this.options.maxBytes) {
      done(new ConvertdError('file_too_large', undefined, { max_bytes: this.options.maxBytes }));
      return;
    }
    if (!this.file && this.heldBytes + chunk.length <= SMALL_UPLOAD_BYTES) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      done();
      return;
    }
    if (!this.file) {
      this.file = createWriteStream(this.destination, { flags: 'wx', mode: 0o600 });
      this.file.once('error', (error) => this.destroy(error));
      for (const piece of this.held) this.file.write(piece);
      this.held = [];
    }
    if (this.file.write(chunk)) done();
    else this.file.once('drain', () => done());
  }

  override _final(done: (error?: Error | null) => void): void {
    if (this.file) {
      finished(this.file.end(), (error) => done(error));
      return;
    }
    try {
      writeFileSync(this.destination, Buffer.concat(this.held, this.heldBytes), { flag: 'wx', mode: 0o600 });
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    // The file stream is closed before the sink says it is done, so that the partial file can be
    // removed after it for good (a stream still opening would otherwise create it afterwards).
    if (!this.file || this.file.closed) {
      done(error);
      return;
    }
    this.file.once('close', () => done(error));
    this.file.destroy();
  }
}

/**
 * Receives `source` into `destination` (a new file) and resolves with its size. On any failure
 * (the source fails or is destroyed, the cap is passed, the disk is full) the partial file is
 * removed, then the promise rejects with that failure.
 */
export async function receiveFile(source: Readable, destination: string, options: UploadOptions): Promise<number> {
  const sink = new UploadSink(destination, options);
  try {
    await pipeline(source, sink);
  } catch (error) {
    rmSync(destination, { force: true });
    throw error;
  }
  return sink.bytes;
}

/** How an upload becomes a job's input: given the job and the upload's local file, which it consumes. */
export type CommitInput = (jobId: string, file: string) => Promise<void>;

/** An upload received into a local file; committed or discarded at most once. */
export class LocalUpload implements Upload {
  readonly path: string;
  readonly bytes: number;
  private readonly commitInput: CommitInput;
  private settled = false;

  constructor(file: string, bytes: number, commitInput: CommitInput) {
    this.path = file;
    this.bytes = bytes;
    this.commitInput = commitInput;
  }

  async commit(jobId: string): Promise<void> {
    if (this.settled) throw new Error('this upload was committed or discarded already');
    await this.commitInput(jobId, this.path);
    this.settled = true;
  }

  discard(): void {
    if (this.settled) return;
    this.settled = true;
    rmSync(this.path, { force: true });
  }
}
