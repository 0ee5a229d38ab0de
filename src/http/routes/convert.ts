// POST /api/convert: stream the upload to disk, then hand it to the jobs layer. At most its first
// 512 KiB are held in memory (UploadSink); past the size limit the handler stops at once and
// answers 413.
import { createWriteStream, statSync, writeFileSync, type WriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import { finished, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance } from 'fastify';
import { ROUTE_SCHEMAS } from '../schemas.ts';
import type { Multipart, MultipartFile } from '@fastify/multipart';
import { ConvertdError } from '../../errors.ts';
import type { JobService } from '../../jobs/service.ts';
import { uploadBytesReceived } from '../upload-garbage.ts';

/** Longest file name kept for display (bytes of UTF-16 text, after NFC). */
const MAX_FILENAME_LENGTH = 255;

/** Display-only: normalised, without control characters or path, never used to build a path. */
export function displayName(raw: string | undefined): string {
  // Control characters (NUL, CR, LF, ...) never reach a header or a log line.
  // eslint-disable-next-line no-control-regex
  const base = (raw ?? '').normalize('NFC').replace(/[\u0000-\u001f\u007f]/g, '').split(/[\\/]/).pop() ?? '';
  return base.trim().slice(0, MAX_FILENAME_LENGTH);
}

/** Uploads up to this size are held in memory and written to disk in one call. */
const SMALL_UPLOAD_BYTES = 512 * 1024;

/**
 * Where an upload's bytes go. Written through a file stream, every 64 KiB chunk of an upload is a
 * trip through libuv's thread pool, and so are the open and the close, on the path of every small
 * job. So the first SMALL_UPLOAD_BYTES are held: an upload that ends within them is written with
 * one synchronous call (the job store beside it is synchronous SQLite already), a larger one goes
 * on through a file stream that starts with what was held. Reading a 258 KB upload went from
 * 3.1 to 2.6 ms (BENCHMARKS.md, change 20).
 */
class UploadSink extends Writable {
  private held: Buffer[] = [];
  private heldBytes = 0;
  private file: WriteStream | undefined;
  private readonly destination: string;

  constructor(destination: string) {
    super();
    this.destination = destination;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    uploadBytesReceived(chunk.length);
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
    this.file?.destroy();
    done(error);
  }
}

async function saveFile(part: MultipartFile, destination: string, maxBytes: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    // busboy signals the limit, then silently discards the rest of the part: stop right there.
    part.file.once('limit', () => reject(new ConvertdError('file_too_large', undefined, { max_bytes: maxBytes })));
    pipeline(part.file, new UploadSink(destination)).then(resolve, reject);
  });
  if (part.file.truncated) throw new ConvertdError('file_too_large', undefined, { max_bytes: maxBytes });
  return statSync(destination).size; // one system call: not worth a trip through the thread pool
}

export function registerConvertRoute(app: FastifyInstance, service: JobService, maxFileBytes: number): void {
  app.post('/api/convert', { schema: ROUTE_SCHEMAS.convert }, async (request, reply) => {
    if (!request.isMultipart()) {
      throw new ConvertdError('invalid_request', 'The body is not multipart/form-data: send the file as a multipart form with parts "file" and "target".');
    }
    let upload: { path: string; bytes: number; filename: string } | undefined;
    let uploadPath: string | undefined;
    let target: string | undefined;
    try {
      const parts: AsyncIterable<Multipart> = request.parts();
      for await (const part of parts) {
        if (part.type === 'file') {
          if (part.fieldname !== 'file') {
            part.file.resume(); // not ours; "missing_file" follows if no "file" part comes
            continue;
          }
          uploadPath = service.newUploadPath();
          const bytes = await saveFile(part, uploadPath, maxFileBytes);
          upload = { path: uploadPath, bytes, filename: displayName(part.filename) };
        } else if (part.fieldname === 'target' && target === undefined) {
          target = String(part.value ?? '').trim();
        }
      }
      if (!upload || upload.bytes === 0) throw new ConvertdError('missing_file');
      if (!target) throw new ConvertdError('missing_target');
      const jobId = await service.submit({ uploadPath: upload.path, bytes: upload.bytes, filename: upload.filename, target });
      // The request's log line then names the job it created, beside its request id.
      request.log = request.log.child({ job_id: jobId });
      return reply.send({ ok: true, job_id: jobId });
    } catch (error) {
      if (uploadPath) await fs.rm(uploadPath, { force: true });
      throw error;
    }
  });
}
