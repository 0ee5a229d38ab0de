// POST /api/convert: reads the multipart form and passes the file part's stream to the jobs layer,
// whose storage receives it (src/storage/upload.ts: at most its first 512 KiB held in memory) and
// owns it from its first byte. This handler keeps the HTTP side: the parts, the display name, and
// 413 at once past the size limit. It touches no disk.
import type { FastifyInstance } from 'fastify';
import { ROUTE_SCHEMAS } from '../schemas.ts';
import type { Multipart, MultipartFile } from '@fastify/multipart';
import { ConvertdError } from '../../errors.ts';
import type { JobService, Upload } from '../../jobs/service.ts';
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

/**
 * Hands the file part's stream to the jobs layer, which has storage receive it. busboy signals the
 * limit, then silently discards the rest of the part: the stream is stopped right there with the
 * answer, and storage removes what it had received before the promise rejects with it.
 */
async function receiveFile(part: MultipartFile, service: JobService, maxBytes: number): Promise<Upload> {
  const tooLarge = () => new ConvertdError('file_too_large', undefined, { max_bytes: maxBytes });
  part.file.once('limit', () => part.file.destroy(tooLarge()));
  const upload = await service.receiveUpload(part.file, uploadBytesReceived);
  if (part.file.truncated) {
    upload.discard();
    throw tooLarge();
  }
  return upload;
}

export function registerConvertRoute(app: FastifyInstance, service: JobService, maxFileBytes: number): void {
  app.post('/api/convert', { schema: ROUTE_SCHEMAS.convert }, async (request, reply) => {
    if (!request.isMultipart()) {
      throw new ConvertdError('invalid_request', 'The body is not multipart/form-data: send the file as a multipart form with parts "file" and "target".');
    }
    let upload: Upload | undefined;
    let filename = '';
    let target: string | undefined;
    // Every other text part is a conversion option; the jobs layer decides which apply and parses them.
    const options: Record<string, string> = Object.create(null) as Record<string, string>;
    try {
      const parts: AsyncIterable<Multipart> = request.parts();
      for await (const part of parts) {
        if (part.type === 'file') {
          if (part.fieldname !== 'file') {
            part.file.resume(); // not ours; "missing_file" follows if no "file" part comes
            continue;
          }
          upload = await receiveFile(part, service, maxFileBytes);
          filename = displayName(part.filename);
        } else if (part.fieldname === 'target') {
          if (target === undefined) target = String(part.value ?? '').trim();
        } else if (part.fieldname !== 'file') {
          const name = part.fieldname;
          if (part.valueTruncated) throw new ConvertdError('invalid_option', `Option "${name}": the value is too long.`, { option: name, reason: 'too long' });
          if (Object.hasOwn(options, name)) throw new ConvertdError('invalid_option', `Option "${name}" is given twice: send each option once.`, { option: name, reason: 'given twice' });
          options[name] = String(part.value ?? '');
        }
      }
      if (!upload || upload.bytes === 0) throw new ConvertdError('missing_file');
      if (!target) throw new ConvertdError('missing_target');
      const jobId = await service.submit({ upload, filename, target, options: { ...options } });
      // The request's log line then names the job it created, beside its request id.
      request.log = request.log.child({ job_id: jobId });
      return reply.send({ ok: true, job_id: jobId });
    } catch (error) {
      upload?.discard(); // a no-op once submit had it: submit commits or discards it
      throw error;
    }
  });
}
