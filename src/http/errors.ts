// Turns anything thrown while handling a request into the contract's error body. Our own errors
// carry their code; errors of fastify and of the multipart parser are mapped by their codes; the
// rest is a bug (500, logged with its stack).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConvertdError, errorBody, httpStatusOf, isDiskFull } from '../errors.ts';

interface CodedError {
  code?: string;
  statusCode?: number;
  message?: string;
}

/** Errors of @fastify/multipart and busboy: what the client sent is not a usable form. */
const MULTIPART_MESSAGES: Record<string, string> = {
  FST_FILES_LIMIT: 'The form has more than one file part: send exactly one part named "file".',
  FST_PARTS_LIMIT: 'The form has too many parts: send one "file" part and one "target" part.',
  FST_FIELDS_LIMIT: 'The form has too many text fields: send one "file" part and one "target" part.',
  FST_INVALID_MULTIPART_CONTENT_TYPE: 'The body is not multipart/form-data: send the file as a multipart form.',
  FST_PROTO_VIOLATION: 'A form part has a forbidden name: name the parts "file" and "target".',
};

export function toConvertdError(error: unknown): ConvertdError | undefined {
  if (isDiskFull(error)) return new ConvertdError('insufficient_storage', undefined, {}, { 'retry-after': '60' });
  if (error instanceof ConvertdError) return error;
  const coded = (error ?? {}) as CodedError;
  if (coded.code === 'FST_REQ_FILE_TOO_LARGE') return new ConvertdError('file_too_large');
  if (coded.code && MULTIPART_MESSAGES[coded.code]) return new ConvertdError('invalid_request', MULTIPART_MESSAGES[coded.code]);
  // busboy's parse errors are plain Errors with a message
  if (/multipart|boundary|part header|terminated early|unexpected end|malformed/i.test(coded.message ?? '')) {
    return new ConvertdError('invalid_request', `The multipart body is malformed or truncated (${coded.message}): send a complete multipart/form-data request.`);
  }
  if (coded.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || coded.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' || coded.code === 'FST_ERR_CTP_EMPTY_TYPE') {
    return new ConvertdError('invalid_request');
  }
  if (coded.code === 'FST_ERR_BAD_URL') return new ConvertdError('not_found', 'The address is malformed: check its percent-encoding.');
  // The client went away mid-request: nobody will read the answer, but it is no fault of ours.
  if (coded.code === 'FST_ERR_ASYNC_CONSTRAINT' || coded.code === 'ERR_STREAM_PREMATURE_CLOSE' || coded.code === 'FST_REQ_PREMATURE_CLOSE'
    || coded.code === 'ECONNRESET' || coded.code === 'ECONNABORTED' || coded.message === 'aborted') {
    return new ConvertdError('invalid_request', 'The request ended before it was complete: send it again.');
  }
  if (typeof coded.statusCode === 'number' && coded.statusCode >= 400 && coded.statusCode < 500) {
    return new ConvertdError('invalid_request', coded.message ? `The request was refused: ${coded.message}.` : undefined);
  }
  return undefined;
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  let known = toConvertdError(error);
  if (!known) {
    request.log.error({ err: error }, 'unhandled error while serving a request');
    known = new ConvertdError('internal_error');
  }
  reply.code(known.status ?? httpStatusOf(known.code)).headers(known.headers);
  if (request.method === 'POST' && !request.raw.readableEnded) {
    reply.raw.once('finish', () => lingerThenClose(request));
  }
  return reply.send(errorBody(known.code, known.message, known.details));
}

/** How long, and how many more bytes, a refused upload may go on arriving before the socket closes. */
const LINGER_MS = 5000;
const LINGER_BYTES = 64 * 1024 * 1024;

/**
 * A refused upload may still be arriving. Closing the socket at once makes the client's next
 * write fail (EPIPE/ECONNRESET) before it reads our answer, so, as nginx's lingering close does,
 * the rest is read and discarded, never stored, for a short while, then the socket is closed.
 */
function lingerThenClose(request: FastifyRequest): void {
  const raw = request.raw;
  const socket = raw.socket;
  if (raw.readableEnded || socket.destroyed) return;
  let discarded = 0;
  const close = () => socket.destroy();
  const timer = setTimeout(close, LINGER_MS);
  timer.unref();
  raw.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_BYTES) close();
  });
  raw.once('end', () => {
    clearTimeout(timer);
    close();
  });
  raw.resume();
}
