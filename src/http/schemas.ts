// The JSON schemas of the API: fastify validates route parameters and serialises responses with
// them, and @fastify/swagger turns the same schemas into the OpenAPI 3.1 document served at
// /api/openapi.json. One source, so the document cannot drift from what the routes do (and a
// test validates real responses against the document).
import { ERRORS, JOB_ERROR_CODES } from '../errors.ts';

/** Every code an error answer may carry (the job codes too: a few also reject requests). */
const ERROR_CODES = Object.keys(ERRORS);

/** Shared schemas, registered with app.addSchema and referenced by $id. */
export const SHARED_SCHEMAS = [
  {
    $id: 'Error',
    type: 'object',
    description: 'Every error answer of the API (api-contract.md). Extra fields in `error` give details (`max_bytes`, `targets`, `retry_after_seconds`, ...).',
    required: ['ok', 'error'],
    properties: {
      ok: { type: 'boolean', const: false },
      error: {
        type: 'object',
        required: ['code', 'message'],
        additionalProperties: true,
        properties: {
          code: { type: 'string', enum: ERROR_CODES, description: 'Stable machine-readable code.' },
          message: { type: 'string', description: 'One sentence for a person: what went wrong and what to do.' },
        },
      },
    },
    examples: [{ ok: false, error: { code: 'unsupported_target', message: 'This file cannot be converted to the requested target: choose one of the listed targets.', source: 'png', targets: ['jpg', 'webp'] } }],
  },
  {
    $id: 'ProgressRecord',
    type: 'object',
    description: 'A job\'s state. `progress` only rises and is 100 exactly when `status` is `done`.',
    required: ['job_id', 'status', 'progress'],
    properties: {
      job_id: { type: 'string' },
      status: { type: 'string', enum: ['queued', 'running', 'done', 'error'] },
      progress: { type: 'integer', minimum: 0, maximum: 100 },
      source: { type: 'string', description: 'Format id of the upload, read from its content.' },
      target: { type: 'string' },
      filename: { type: 'string', description: 'The upload\'s file name.' },
      created_at: { type: 'string', format: 'date-time' },
      queue_position: { type: 'integer', minimum: 1, description: 'While queued: 1 is next.' },
      download_url: { type: 'string', description: 'When done: where to GET the result (relative to the service).' },
      size: { type: 'integer', minimum: 0, description: 'When done: the result\'s size in bytes.' },
      expires_at: { type: 'string', format: 'date-time', description: 'When done or failed: when the result and this record are deleted.' },
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { type: 'string', enum: [...JOB_ERROR_CODES] },
          message: { type: 'string' },
        },
      },
    },
    examples: [{ job_id: '3q2Fz5lqfE0hS1v7Bm0YpQkR', status: 'done', progress: 100, source: 'png', target: 'webp', filename: 'photo.png', created_at: '2026-11-22T08:00:00.000Z', download_url: '/api/download/Xy7pQ2mVb3nR8sT1uW4zA6cD9eF0gH2j.webp', size: 48212, expires_at: '2026-11-22T08:30:00.000Z' }],
  },
  {
    $id: 'Format',
    type: 'object',
    required: ['id', 'name', 'category', 'media_type', 'extensions', 'targets'],
    properties: {
      id: { type: 'string', description: 'What to send as `target`; also the result\'s extension.' },
      name: { type: 'string' },
      category: { type: 'string', enum: ['document', 'spreadsheet', 'presentation', 'image', 'vector', 'audio', 'video', 'ebook', 'markup', 'data', 'archive', 'font'] },
      media_type: { type: 'string' },
      extensions: { type: 'array', items: { type: 'string' } },
      targets: { type: 'array', items: { type: 'string' }, description: 'Formats this one converts to (possibly through several engines).' },
    },
  },
] as const;

const errorResponse = (description: string) => ({ description, $ref: 'Error#' });
const ref = (id: string, description: string) => ({ description, $ref: `${id}#` });
/** Answers every read endpoint may give: its own rate limit, and Redis or S3 away (scale-out). */
const READ_REFUSALS = {
  429: errorResponse('rate_limited: the per-client limit on requests other than submissions (CONVERTD_READ_RATE_LIMITS); see Retry-After.'),
  503: errorResponse('unavailable: the service is shutting down, or (scaled out) cannot reach Redis or its object storage; see Retry-After.'),
};

export const ROUTE_SCHEMAS = {
  convert: {
    summary: 'Submit a file for conversion',
    description: 'multipart/form-data with one file part `file` and one text part `target` (a format id from /api/formats, case-insensitive). The source format is read from the content. Answers once the job is stored: it is never lost after this.',
    tags: ['conversion'],
    response: {
      200: {
        description: 'The job is accepted.',
        type: 'object', required: ['ok', 'job_id'],
        properties: { ok: { type: 'boolean', const: true }, job_id: { type: 'string' } },
        examples: [{ ok: true, job_id: '3q2Fz5lqfE0hS1v7Bm0YpQkR' }],
      },
      400: errorResponse('invalid_request, missing_file or missing_target.'),
      413: errorResponse('file_too_large: details `max_bytes`.'),
      415: errorResponse('unsupported_format: details `detected`.'),
      422: errorResponse('unsupported_target: details `source`, `targets`.'),
      429: errorResponse('rate_limited: see Retry-After; details `limit`, `window_seconds`, `retry_after_seconds`.'),
      503: errorResponse('busy (queue full), or unavailable (shutting down, or scaled out and Redis or the object storage cannot be reached): see Retry-After.'),
      507: errorResponse('insufficient_storage.'),
    },
  },
  progress: {
    summary: 'A job\'s progress',
    description: 'Poll about twice a second. One indexed read: cheap.',
    tags: ['conversion'],
    params: { type: 'object', required: ['job_id'], properties: { job_id: { type: 'string', description: 'The job_id from /api/convert.' } } },
    response: {
      200: ref('ProgressRecord', 'The job\'s state.'),
      404: errorResponse('job_not_found.'),
      410: errorResponse('expired: the job and its result passed their lifetime.'),
      ...READ_REFUSALS,
    },
  },
  progressEvents: {
    summary: 'A job\'s progress as Server-Sent Events (beyond the spec)',
    description: 'The same records as /api/progress/{job_id}, each as a `data:` event when it changes; the stream ends after `done` or `error`. Lines starting with `:` are keep-alives.',
    tags: ['conversion'],
    params: { type: 'object', required: ['job_id'], properties: { job_id: { type: 'string', description: 'The job_id from /api/convert.' } } },
    response: {
      200: { description: 'text/event-stream of ProgressRecord JSON objects.', content: { 'text/event-stream': { schema: { type: 'string' } } } },
      404: errorResponse('job_not_found.'),
      410: errorResponse('expired.'),
      ...READ_REFUSALS,
    },
  },
  download: {
    summary: 'Download a result',
    description: 'The path is the download_url of a done job. An attachment named after the upload with the new extension; HEAD and single byte ranges work.',
    tags: ['conversion'],
    params: { type: 'object', required: ['file'], properties: { file: { type: 'string', description: '`{token}.{ext}`' } } },
    response: {
      200: { description: 'The file.', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      206: { description: 'The requested byte range.', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      404: errorResponse('file_not_found.'),
      410: errorResponse('expired.'),
      416: errorResponse('range_not_satisfiable.'),
      ...READ_REFUSALS,
    },
  },
  formats: {
    summary: 'The formats the service converts',
    description: 'Only formats whose engine works on this server are listed. Sorted by id.',
    tags: ['catalogue'],
    response: {
      200: {
        description: 'The catalogue.',
        type: 'object', required: ['formats'],
        properties: { formats: { type: 'array', items: { $ref: 'Format#' } } },
      },
      ...READ_REFUSALS,
    },
  },
  limits: {
    summary: 'The limits in force, and what this client has left',
    tags: ['catalogue'],
    response: {
      200: {
        description: 'Limits.',
        type: 'object', required: ['max_file_size_bytes', 'file_lifetime_seconds', 'rate_limits'],
        properties: {
          max_file_size_bytes: { type: 'integer' },
          file_lifetime_seconds: { type: 'integer' },
          rate_limits: {
            type: 'array',
            items: {
              type: 'object', required: ['limit', 'window_seconds', 'applies_to', 'remaining', 'reset_seconds'],
              properties: {
                limit: { type: 'integer' }, window_seconds: { type: 'integer' },
                applies_to: { type: 'string', enum: ['submissions', 'other_requests'] },
                remaining: { type: 'integer' }, reset_seconds: { type: 'integer' },
              },
            },
          },
        },
        examples: [{ max_file_size_bytes: 26214400, file_lifetime_seconds: 1800, rate_limits: [{ limit: 20, window_seconds: 60, applies_to: 'submissions', remaining: 19, reset_seconds: 42 }] }],
      },
      ...READ_REFUSALS,
    },
  },
  healthz: {
    summary: 'Liveness', tags: ['operations'],
    response: { 200: { description: 'The process answers.', type: 'object', required: ['status'], properties: { status: { type: 'string', const: 'ok' } } } },
  },
  readyz: {
    summary: 'Readiness: the service can take and convert a job now', tags: ['operations'],
    response: {
      200: { $ref: 'Readiness#', description: 'Ready.' },
      503: { $ref: 'Readiness#', description: 'Not ready: the failing checks have `ok: false`.' },
    },
  },
  metrics: {
    summary: 'Prometheus metrics', tags: ['operations'],
    response: { 200: { description: 'Prometheus text format.', content: { 'text/plain': { schema: { type: 'string' } } } } },
  },
} as const;

export const READINESS_SCHEMA = {
  $id: 'Readiness',
  type: 'object',
  required: ['status', 'ready', 'checks', 'engines_unavailable'],
  properties: {
    status: { type: 'string', enum: ['ready', 'not_ready'] },
    ready: { type: 'boolean' },
    checks: {
      type: 'object',
      description: 'store, disk, sandbox, memory_limit (`mode`: cgroup-v1, cgroup-v2 or none, with `limit_bytes`), process_limit (`max_tasks` per engine process tree, or `mode: none`), queue, storage and one pool:<engine> per process pool, each with `ok` and what it found.',
      additionalProperties: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' } }, additionalProperties: true },
    },
    engines_unavailable: {
      type: 'array',
      items: { type: 'object', required: ['engine'], properties: { engine: { type: 'string' }, reason: { type: 'string' } } },
    },
  },
} as const;
