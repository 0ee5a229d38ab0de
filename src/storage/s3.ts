// Inputs and results in an S3-compatible bucket, for API nodes and workers on different machines:
//   <prefix>inputs/<job_id>          the input of a queued or running job
//   <prefix>results/<token>.<ext>    a finished result, until it expires
// Uploads still stream to the receiving node's disk first (their size and format are checked
// before they become a job), and engines work on local files in a local work directory; this
// class moves files between those and the bucket. Downloads stream from the bucket through the API
// node, so the download URL keeps the spec's shape and the bucket stays private.
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, ListObjectsV2Command, S3Client,
} from '@aws-sdk/client-s3';
import { Upload as MultipartUpload } from '@aws-sdk/lib-storage';
import type { S3StorageConfig } from '../config.ts';
import { ConvertdError } from '../errors.ts';
import { LocalStorage, safeExtension, safeName } from './local.ts';
import type { FileStorage, ResultHandle, Upload, UploadOptions } from './types.ts';

/**
 * The object store cannot be reached or is failing for a while (no answer, 5xx): a request that
 * needs it gets 503 with Retry-After, as when Redis is down, not a 500.
 */
function storeUnavailable(error: unknown): unknown {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  if (status !== undefined && status < 500) return error;
  if (status === 501) return error; // the server lacks a feature: a configuration problem, not an outage
  const unavailable = new ConvertdError('unavailable', 'The service cannot reach its file storage right now: try again after the time in Retry-After.',
    {}, { 'retry-after': '10' });
  unavailable.cause = error;
  return unavailable;
}

function isNotFound(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const name = (error as { name?: string }).name;
  return status === 404 || name === 'NotFound' || name === 'NoSuchKey';
}

export class S3Storage implements FileStorage {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  /** The node's own disk: uploads being received and work directories. */
  private readonly scratch: LocalStorage;

  constructor(settings: S3StorageConfig, scratch: LocalStorage) {
    this.bucket = settings.bucket;
    this.prefix = settings.prefix;
    this.scratch = scratch;
    // Credentials come from the SDK's usual chain: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY,
    // a profile, or an instance role.
    this.client = new S3Client({
      region: settings.region,
      endpoint: settings.endpoint,
      forcePathStyle: settings.forcePathStyle,
      // Some S3-compatible servers reject the SDK's newer default checksums.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  private inputKey(jobId: string): string {
    return `${this.prefix}inputs/${safeName(jobId)}`;
  }

  private resultKey(token: string, ext: string): string {
    return `${this.prefix}results/${safeName(token)}.${safeExtension(ext)}`;
  }

  /** Fails at start with a clear message when the bucket is missing or the credentials are wrong. */
  async init(): Promise<void> {
    try {
      await this.checkAvailable();
    } catch (error) {
      throw new Error(`the S3 bucket "${this.bucket}" cannot be used (${error instanceof Error ? error.message : String(error)}): create it and check the endpoint and credentials`, { cause: error });
    }
  }

  async checkAvailable(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      throw new Error(status ? `the bucket answered HTTP ${status}` : (error instanceof Error ? error.message : String(error)), { cause: error });
    }
  }

  receiveUpload(source: Readable, options: UploadOptions): Promise<Upload> {
    return this.scratch.receiveUploadAs(source, options, async (jobId, file) => {
      await this.moveIn(this.inputKey(jobId), file);
    });
  }

  /** Puts a local file into the bucket, then removes it; resolves with its size. */
  private async moveIn(key: string, localPath: string): Promise<number> {
    let size: number;
    try {
      size = (await fs.stat(localPath)).size;
      // Multipart for large files, streamed from disk: memory stays flat whatever the size.
      await new MultipartUpload({ client: this.client, params: { Bucket: this.bucket, Key: key, Body: createReadStream(localPath), ContentLength: size } }).done();
    } catch (error) {
      throw storeUnavailable(error);
    }
    await fs.rm(localPath, { force: true });
    return size;
  }

  async fetchInput(jobId: string, workDir: string, ext: string): Promise<string> {
    const target = path.join(workDir, `input.${safeExtension(ext)}`);
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.inputKey(jobId) }));
      await pipeline(object.Body as Readable, createWriteStream(target, { flags: 'wx', mode: 0o600 }));
    } catch (error) {
      throw storeUnavailable(error);
    }
    return target;
  }

  async deleteInput(jobId: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.inputKey(jobId) }));
  }

  createWorkDir(jobId: string): Promise<string> {
    return this.scratch.createWorkDir(jobId);
  }

  removeWorkDir(jobId: string): Promise<void> {
    return this.scratch.removeWorkDir(jobId);
  }

  commitResult(token: string, ext: string, localPath: string): Promise<number> {
    return this.moveIn(this.resultKey(token, ext), localPath);
  }

  async openResult(token: string, ext: string): Promise<ResultHandle | undefined> {
    const key = this.resultKey(token, ext);
    let size: number;
    try {
      size = (await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }))).ContentLength ?? 0;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw storeUnavailable(error);
    }
    const controller = new AbortController();
    return {
      size,
      open: (range) => {
        // The HTTP layer wants a stream at once; the object's bytes flow into it when S3 answers.
        const stream = new PassThrough();
        const Range = range ? `bytes=${range.start}-${range.end}` : undefined;
        this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range }), { abortSignal: controller.signal })
          .then((object) => pipeline(object.Body as Readable, stream))
          .catch((error: unknown) => stream.destroy(error instanceof Error ? error : new Error(String(error))));
        stream.on('close', () => controller.abort());
        return stream;
      },
      close: () => controller.abort(),
    };
  }

  async deleteResult(token: string, ext: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.resultKey(token, ext) }));
  }

  /** Every object under a folder of the prefix, with its age. */
  private async *list(folder: string): AsyncGenerator<{ key: string; name: string; modified: number }> {
    let ContinuationToken: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${this.prefix}${folder}/`, ContinuationToken }));
      for (const object of page.Contents ?? []) {
        if (!object.Key) continue;
        yield { key: object.Key, name: object.Key.slice(this.prefix.length + folder.length + 1), modified: object.LastModified?.getTime() ?? 0 };
      }
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  async removeOrphans(isLiveJob: (jobId: string) => boolean, uploadMaxAgeMs: number, resultMaxAgeMs: number): Promise<number> {
    let removed = await this.scratch.removeOrphans(isLiveJob, uploadMaxAgeMs, resultMaxAgeMs);
    const now = Date.now();
    // An input belongs to a live job, or is a minute-old leftover of an upload whose job was never
    // recorded; a result older than a lifetime belongs to no job any more (see LocalStorage).
    for await (const object of this.list('inputs')) {
      if (isLiveJob(object.name) || now - object.modified < 60_000) continue;
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: object.key }));
      removed++;
    }
    for await (const object of this.list('results')) {
      if (now - object.modified < resultMaxAgeMs) continue;
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: object.key }));
      removed++;
    }
    return removed;
  }

  freeBytes(): Promise<number> {
    return this.scratch.freeBytes();
  }

  diskSpace(): Promise<{ freeBytes: number; totalBytes: number }> {
    return this.scratch.diskSpace();
  }

  close(): void {
    this.client.destroy();
  }
}
