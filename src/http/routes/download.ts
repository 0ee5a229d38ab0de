// GET/HEAD /api/download/{token}.{ext}: the converted file, as an attachment that can never run
// script on the service's origin (docs/security.md#downloads), with single byte ranges for resumed downloads.
import { create as contentDisposition } from 'content-disposition';
import type { FastifyInstance } from 'fastify';
import { ROUTE_SCHEMAS } from '../schemas.ts';
import { ConvertdError } from '../../errors.ts';
import type { JobService } from '../../jobs/service.ts';

/** `<token>.<extension>`; tokens have no dot, extensions may have one (tar.gz). */
const FILE_NAME = /^([A-Za-z0-9_-]{16,128})\.([a-z0-9]{1,10}(?:\.[a-z0-9]{1,10})?)$/;

/** Parses a single "bytes=" range; undefined means "send the whole file", null "unsatisfiable". */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | undefined | null {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined; // several ranges or another unit: the whole file is a valid answer
  const [, first, last] = match;
  if (first === '' && last === '') return undefined;
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0) return null;
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (start >= size || start > end) return null;
  return { start, end };
}

export function registerDownloadRoute(app: FastifyInstance, service: JobService): void {
  app.route<{ Params: { file: string } }>({
    method: ['GET', 'HEAD'],
    url: '/api/download/:file',
    schema: ROUTE_SCHEMAS.download,
    handler: async (request, reply) => {
      const match = FILE_NAME.exec(request.params.file);
      if (!match) throw new ConvertdError('file_not_found');
      const download = await service.download(match[1]!, match[2]!);
      const { file } = download;
      const etag = `"${download.job.resultToken!.slice(0, 16)}-${file.size}"`;
      reply.headers({
        'content-type': download.mediaType,
        'content-disposition': contentDisposition(download.filename, { type: 'attachment' }),
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; sandbox",
        'cross-origin-resource-policy': 'same-origin',
        'referrer-policy': 'no-referrer',
        'cache-control': 'private, no-store',
        'accept-ranges': 'bytes',
        etag,
      });

      const ifRange = request.headers['if-range'];
      let range = ifRange && ifRange !== etag ? undefined : parseRange(request.headers.range, file.size);
      if (range === null) {
        file.close();
        throw new ConvertdError('range_not_satisfiable', undefined, { size: file.size }, { 'content-range': `bytes */${file.size}` });
      }
      if (range) {
        reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${file.size}`);
      } else {
        range = undefined;
      }
      const length = range ? range.end - range.start + 1 : file.size;
      reply.header('content-length', String(length));
      if (request.method === 'HEAD') {
        file.close();
        return reply.send();
      }
      return reply.send(file.open(range));
    },
  });
}

/** DELETE on a download URL (api-contract.md): the result goes now; the token is the capability. */
export function registerDeleteRoute(app: FastifyInstance, service: JobService): void {
  app.delete<{ Params: { file: string } }>('/api/download/:file', { schema: ROUTE_SCHEMAS.deleteResult }, async (request, reply) => {
    const match = FILE_NAME.exec(request.params.file);
    if (!match) throw new ConvertdError('file_not_found');
    await service.deleteResult(match[1]!, match[2]!);
    return reply.code(204).send();
  });
}
