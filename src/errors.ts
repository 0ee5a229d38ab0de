// The one list of error codes. Every layer throws ConvertdError with one of these codes; the HTTP
// layer maps it to a status in one place (httpStatusOf) and the job worker stores it in the
// progress record. Codes are part of the public contract: add, never rename. (wire/shapes.ts
// derives the API's schemas and types from this list.)
import type { ErrorBody } from './wire/shapes.ts';

interface ErrorDefinition {
  /** HTTP status when the error rejects a request; job errors are reported with 200 in a progress record. */
  readonly status: number;
  /** Default message: one sentence that tells the user what to do. */
  readonly message: string;
}

export const ERRORS = {
  // Rejected requests
  invalid_request: { status: 400, message: 'The request is malformed: send multipart/form-data with one "file" part and one "target" part.' },
  missing_file: { status: 400, message: 'No file was uploaded: add a non-empty form part named "file".' },
  missing_target: { status: 400, message: 'No target format was given: add a form part named "target", for example "webp" (see /api/formats).' },
  file_too_large: { status: 413, message: 'The file is larger than the upload limit: send a smaller file (see /api/limits).' },
  unsupported_format: { status: 415, message: 'The file\'s format is not one this service reads: see /api/formats for the formats it converts.' },
  unsupported_target: { status: 422, message: 'This file cannot be converted to the requested target: choose one of the listed targets.' },
  invalid_option: { status: 422, message: 'A conversion option has a value it cannot take: see GET /api/formats/{source}/{target} for the options and what they allow.' },
  rate_limited: { status: 429, message: 'Too many submissions from this client: wait for the time in Retry-After, then try again.' },
  busy: { status: 503, message: 'The service has too much work queued: try again after the time in Retry-After.' },
  unavailable: { status: 503, message: 'The service is shutting down or not ready: try again after the time in Retry-After.' },
  insufficient_storage: { status: 507, message: 'The server is out of disk space for new uploads: try again later.' },
  job_not_found: { status: 404, message: 'No job has this id: check the job_id returned by /api/convert.' },
  expired: { status: 410, message: 'This result has expired and was deleted: submit the file again.' },
  file_not_found: { status: 404, message: 'No converted file has this address: use the download_url from the job\'s progress record.' },
  range_not_satisfiable: { status: 416, message: 'The requested byte range lies outside the file: ask for a range within its size.' },
  not_found: { status: 404, message: 'There is no such endpoint: the API offers /api/convert, /api/progress/{job_id}, /api/download/..., /api/formats and /api/limits.' },
  method_not_allowed: { status: 405, message: 'This endpoint does not accept this method: use one listed in the Allow header.' },
  internal_error: { status: 500, message: 'The service failed unexpectedly: try again, and report it if it persists.' },

  // Job failures, reported in the progress record of a job whose status is "error"
  corrupt_input: { status: 422, message: 'The file could not be read: it may be damaged, truncated or not really in its format.' },
  input_too_complex: { status: 422, message: 'The file exceeds a processing limit (pixels, pages, frames or duration): send a smaller one.' },
  conversion_failed: { status: 422, message: 'The conversion failed: the file may use features this converter does not support.' },
  timeout: { status: 422, message: 'The conversion took longer than the time limit: send a smaller or simpler file.' },
  output_too_large: { status: 422, message: 'The converted file would exceed the output size limit: send a smaller file or choose a more compact format.' },
  interrupted: { status: 422, message: 'The conversion was interrupted repeatedly by service restarts: submit the file again later.' },
  encrypted_input: { status: 422, message: 'The file is protected by a password: remove the protection and upload it again.' },
  unsafe_input: { status: 422, message: 'The file holds something this service refuses to unpack (links, device files or paths leading outside it).' },
} as const satisfies Record<string, ErrorDefinition>;

export type ErrorCode = keyof typeof ERRORS;

/** Codes a failed job may carry in its progress record. */
export const JOB_ERROR_CODES = [
  'corrupt_input', 'input_too_complex', 'conversion_failed', 'timeout', 'output_too_large', 'interrupted',
  'encrypted_input', 'unsafe_input', 'invalid_option',
  'unsupported_format', 'insufficient_storage', 'internal_error',
] as const satisfies readonly ErrorCode[];
export type JobErrorCode = (typeof JOB_ERROR_CODES)[number];

export class ConvertdError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  /** Extra response headers (Retry-After, Allow, ...). */
  readonly headers: Record<string, string>;
  /**
   * The HTTP status where the contract gives a code another one on a particular endpoint (the
   * discovery endpoint answers an unknown format with 404, not 415); otherwise the code's own.
   */
  status?: number;

  constructor(code: ErrorCode, message?: string, details: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(message ?? ERRORS[code].message);
    this.name = 'ConvertdError';
    this.code = code;
    this.details = details;
    this.headers = headers;
  }
}

/** A full disk, however it surfaced: a Node error code, or a tool's message. */
export function isDiskFull(error: unknown): boolean {
  const coded = error as { code?: string; message?: string } | undefined;
  return coded?.code === 'ENOSPC' || coded?.code === 'EDQUOT' || /no space left on device|disk quota exceeded|ENOSPC/i.test(coded?.message ?? '');
}

export function httpStatusOf(code: ErrorCode): number {
  return ERRORS[code].status;
}

/** The same error, answered as 404: a lookup's "there is no such thing" (GET /api/formats/{source}/{target}). */
export function asNotFound(error: unknown): unknown {
  if (error instanceof ConvertdError) error.status = 404;
  return error;
}

/** The contract's error body: {"ok": false, "error": {"code", "message", ...details}}. */
export function errorBody(code: ErrorCode, message: string, details: Record<string, unknown> = {}): ErrorBody {
  return { ok: false as const, error: { code, message, ...details } };
}
