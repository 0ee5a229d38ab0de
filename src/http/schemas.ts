// The route schemas of the API: fastify validates route parameters and serialises responses with
// them, and @fastify/swagger turns them into the OpenAPI 3.1 document served at /api/openapi.json.
// The shapes they answer with (the progress record, the catalogue, errors, ...) are defined once, in
// wire/shapes.ts, which the jobs layer, the client and the tests take their types from; here they
// are referenced by $id. So the document cannot drift from what the routes do (and a test validates
// real responses against the document).
import Type, { type Static } from 'typebox';
import {
  ConversionOptionsSchema, ErrorBodySchema, FormatListSchema, FormatSchema, HealthSchema, LimitsSchema, OptionDescriptorSchema, ProgressRecordSchema, ReadinessSchema, SubmitAnswerSchema,
} from '../wire/shapes.ts';

/** Shared schemas, registered with app.addSchema and referenced by $id (each a component of the document). */
export const SHARED_SCHEMAS = [ErrorBodySchema, ProgressRecordSchema, SubmitAnswerSchema, FormatSchema, FormatListSchema, OptionDescriptorSchema, ConversionOptionsSchema, LimitsSchema, ReadinessSchema];

/** The progress routes' path parameter, named as the spec names it. */
export const JobParamsSchema = Type.Object({ job_id: Type.String({ description: 'The job_id from /api/convert.' }) });
export type JobParams = Static<typeof JobParamsSchema>;

const ref = (schema: { $id: string }, description: string) => ({ description, $ref: `${schema.$id}#` });
const errorResponse = (description: string) => ref(ErrorBodySchema, description);
/** Answers every read endpoint may give: its own rate limit, and Redis or S3 away (scale-out). */
const READ_REFUSALS = {
  429: errorResponse('rate_limited: the per-client limit on requests other than submissions (CONVERTD_READ_RATE_LIMITS); see Retry-After.'),
  503: errorResponse('unavailable: the service is shutting down, or (scaled out) cannot reach Redis or its object storage; see Retry-After.'),
};

export const ROUTE_SCHEMAS = {
  convert: {
    operationId: 'submitConversion',
    summary: 'Submit a file for conversion',
    description: 'multipart/form-data with one file part `file` and one text part `target` (a format id from /api/formats, case-insensitive). Further text parts are conversion options, by name (GET /api/formats/{source}/{target} lists those of a pair, with their types and bounds): a value is checked before the job is accepted (422 invalid_option), a name that does not apply is ignored and listed in the progress record\'s `ignored_options`. The source format is read from the content. Answers once the job is stored: it is never lost after this.',
    tags: ['conversion'],
    response: {
      200: ref(SubmitAnswerSchema, 'The job is accepted.'),
      400: errorResponse('invalid_request, missing_file or missing_target.'),
      413: errorResponse('file_too_large: details `max_bytes`.'),
      415: errorResponse('unsupported_format: details `detected`.'),
      422: errorResponse('unsupported_target: details `source`, `targets`; or invalid_option: details `option`, `reason`, and what is allowed (`minimum`, `maximum`, `values`, `pattern`).'),
      429: errorResponse('rate_limited: see Retry-After; details `limit`, `window_seconds`, `retry_after_seconds`.'),
      503: errorResponse('busy (queue full), or unavailable (shutting down, or scaled out and Redis or the object storage cannot be reached): see Retry-After.'),
      507: errorResponse('insufficient_storage.'),
    },
  },
  progress: {
    operationId: 'getProgress',
    summary: 'A job\'s progress',
    description: 'Poll about twice a second. One indexed read: cheap.',
    tags: ['conversion'],
    params: JobParamsSchema,
    response: {
      200: ref(ProgressRecordSchema, 'The job\'s state.'),
      404: errorResponse('job_not_found.'),
      410: errorResponse('expired: the job and its result passed their lifetime.'),
      ...READ_REFUSALS,
    },
  },
  progressEvents: {
    operationId: 'streamProgress',
    summary: 'A job\'s progress as Server-Sent Events (beyond the spec)',
    description: 'The same records as /api/progress/{job_id}, each as a `data:` event when it changes; the stream ends after `done` or `error`. Lines starting with `:` are keep-alives.',
    tags: ['conversion'],
    params: JobParamsSchema,
    response: {
      200: { description: 'text/event-stream of ProgressRecord JSON objects.', content: { 'text/event-stream': { schema: { type: 'string' } } } },
      404: errorResponse('job_not_found.'),
      410: errorResponse('expired.'),
      ...READ_REFUSALS,
    },
  },
  download: {
    operationId: 'downloadResult',
    summary: 'Download a result',
    description: 'The path is the download_url of a done job. An attachment named after the upload with the new extension; HEAD and single byte ranges work.',
    tags: ['conversion'],
    params: Type.Object({ file: Type.String({ description: '`{token}.{ext}`' }) }),
    response: {
      200: { description: 'The file.', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      206: { description: 'The requested byte range.', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      404: errorResponse('file_not_found.'),
      410: errorResponse('expired.'),
      416: errorResponse('range_not_satisfiable.'),
      ...READ_REFUSALS,
    },
  },
  deleteResult: {
    operationId: 'deleteResult',
    summary: 'Delete a result now',
    description: 'The path is the download_url of a done job: the file is deleted at once, before its lifetime ends; the job\'s progress record and the download answer 410 expired from then on. Whoever has the URL may delete it.',
    tags: ['conversion'],
    params: Type.Object({ file: Type.String({ description: '`{token}.{ext}`' }) }),
    response: {
      204: { description: 'Deleted.', type: 'null' },
      404: errorResponse('file_not_found.'),
      410: errorResponse('expired: already deleted, or past its lifetime.'),
      ...READ_REFUSALS,
    },
  },
  conversionOptions: {
    operationId: 'getConversionOptions',
    summary: 'The options of one conversion',
    description: 'The options a submission from `source` to `target` may carry (format ids or aliases, case-insensitive), computed from the engines\' declarations, and the engines the conversion runs through by default.',
    tags: ['catalogue'],
    params: Type.Object({ source: Type.String(), target: Type.String() }),
    response: {
      200: ref(ConversionOptionsSchema, 'The options.'),
      404: errorResponse('unsupported_format (the source is not read here) or unsupported_target (the source cannot become the target).'),
      ...READ_REFUSALS,
    },
  },
  formats: {
    operationId: 'listFormats',
    summary: 'The formats the service converts',
    description: 'Only formats whose engine works on this server are listed. Sorted by id.',
    tags: ['catalogue'],
    response: {
      200: ref(FormatListSchema, 'The catalogue.'),
      ...READ_REFUSALS,
    },
  },
  limits: {
    operationId: 'getLimits',
    summary: 'The limits in force, and what this client has left',
    tags: ['catalogue'],
    response: {
      200: ref(LimitsSchema, 'Limits.'),
      ...READ_REFUSALS,
    },
  },
  healthz: {
    operationId: 'getHealth',
    summary: 'Liveness', tags: ['operations'],
    response: { 200: { description: 'The process answers.', ...HealthSchema }, ...READ_REFUSALS },
  },
  readyz: {
    operationId: 'getReadiness',
    summary: 'Readiness: the service can take and convert a job now', tags: ['operations'],
    response: {
      200: ref(ReadinessSchema, 'Ready.'),
      429: READ_REFUSALS[429],
      503: ref(ReadinessSchema, 'Not ready: the failing checks have `ok: false`.'),
    },
  },
  metrics: {
    operationId: 'getMetrics',
    summary: 'Prometheus metrics', tags: ['operations'],
    response: { 200: { description: 'Prometheus text format.', content: { 'text/plain': { schema: { type: 'string' } } } }, ...READ_REFUSALS },
  },
} as const;
