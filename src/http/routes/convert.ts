// POST /api/convert: stream the upload to disk, then hand it to the jobs layer. The file is never
// held in memory; past the size limit the handler stops at once and answers 413.
import { createWriteStream, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance } from 'fastify';
import { ROUTE_SCHEMAS } from '../schemas.ts';
import type { Multipart, MultipartFile } from '@fastify/multipart';
import { ConvertdError } from '../../errors.ts';
import type { JobService } from '../../jobs/service.ts';

/** Longest file name kept for display (bytes of UTF-16 text, after NFC). */
const MAX_FILENAME_LENGTH = 255;

/** Display-only: normalised, without control characters or path, never used to build a path. */
export function displayName(raw: string | undefined): string {
  // Control characters (NUL, CR, LF, ...) never reach a header or a log line.
  // eslint-disable-next-line no-control-regex
  const base = (raw ?? '').normalize('NFC').replace(/[\u0000-\u001f\u007f]/g, '').split(/[\\/]/).pop() ?? '';
  return base.trim().slice(0, MAX_FILENAME_LENGTH);
}

async function saveFile(part: MultipartFile, destination: string, maxBytes: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    // busboy signals the limit, then silently discards the rest of the part: stop right there.
    part.file.once('limit', () => reject(new ConvertdError('file_too_large', undefined, { max_bytes: maxBytes })));
    pipeline(part.file, createWriteStream(destination, { flags: 'wx', mode: 0o600 })).then(resolve, reject);
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
