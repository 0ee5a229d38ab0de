// The wire shapes of the API, each defined once: the progress record, the catalogue entry and the
// /api/formats answer, the submission and limits answers, readiness, and the error codes and the
// error body. Each is a JSON Schema written with TypeBox: fastify validates and serialises with it
// (http/schemas.ts), @fastify/swagger publishes it in /api/openapi.json, and its Static<> type is
// what JobService and the engine registry build, what the client (src/client) hands its callers and
// what the tests read. So the document, the server and the client cannot drift apart.
//
// Why TypeBox, and the `typebox` 1.x package: its schemas are plain JSON Schema objects (its own
// markers are non-enumerable, unseen by Ajv, fast-json-stringify and @fastify/swagger), so fastify 5
// takes them as they are, with no plugin or compile step; and 1.x is the maintained line, the one
// fastify's own @fastify/type-provider-typebox 6 depends on (`@sinclair/typebox` 0.34 is the line
// before it). Plain `as const` JSON Schema would have needed no dependency, but the type derivation
// (optional keys, enums, open objects, references) would have been ours to write and keep right.
//
// The client imports types only from here (`import type`): the web page's bundle holds no schema code.
import Type, { type Static, type TObject, type TProperties, type TSchema, type TSchemaOptions } from 'typebox';
import { ERRORS, JOB_ERROR_CODES, type ErrorCode } from '../errors.ts';
import { CATEGORIES } from '../formats/categories.ts';

export type { ErrorCode, JobErrorCode } from '../errors.ts';

/** A string out of `values`, written with `type` (TypeBox's Enum leaves it out; fast-json-stringify then takes a slower path). */
function StringEnum<const T extends readonly string[]>(values: T, options: TSchemaOptions = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** An object that may carry more properties than those it names: an error's details, a check's findings. */
function OpenObject<P extends TProperties>(properties: P, options: TSchemaOptions = {}) {
  return Type.Unsafe<Static<TObject<P>> & { [detail: string]: unknown }>(Type.Object(properties, { ...options, additionalProperties: true }));
}

/** A schema shared by its $id: registered once with app.addSchema, a component of the OpenAPI document, referenced elsewhere. */
function Shared<T extends TSchema>($id: string, schema: T): T & { readonly $id: string } {
  return Object.assign(schema, { $id });
}

/** A reference to a shared schema, typed as that schema. */
function Ref<T extends TSchema>(schema: T & { readonly $id: string }) {
  return Type.Unsafe<Static<T>>({ $ref: `${schema.$id}#` });
}

/** Every code an error answer may carry: the one list of src/errors.ts (job codes too: a few also reject requests). */
export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

export const ErrorBodySchema = Shared('Error', Type.Object({
  ok: Type.Literal(false),
  error: OpenObject({
    code: StringEnum(ERROR_CODES, { description: 'Stable machine-readable code.' }),
    message: Type.String({ description: 'One sentence for a person: what went wrong and what to do.' }),
  }),
}, {
  description: 'Every error answer of the API (api-contract.md). Extra fields in `error` give details (`max_bytes`, `targets`, `retry_after_seconds`, ...).',
  examples: [{ ok: false, error: { code: 'unsupported_target', message: 'This file cannot be converted to the requested target: choose one of the listed targets.', source: 'png', targets: ['jpg', 'webp'] } }],
}));
/** `{"ok": false, "error": {"code", "message", ...details}}`. */
export type ErrorBody = Static<typeof ErrorBodySchema>;

export const JOB_STATUSES = ['queued', 'running', 'done', 'error'] as const;

export const ProgressRecordSchema = Shared('ProgressRecord', Type.Object({
  job_id: Type.String(),
  status: StringEnum(JOB_STATUSES),
  progress: Type.Integer({ minimum: 0, maximum: 100 }),
  source: Type.String({ description: 'Format id of the upload, read from its content.' }),
  target: Type.String(),
  filename: Type.String({ description: 'The upload\'s file name.' }),
  created_at: Type.String({ format: 'date-time' }),
  queue_position: Type.Optional(Type.Integer({ minimum: 1, description: 'While queued: 1 is next.' })),
  download_url: Type.Optional(Type.String({ description: 'When done: where to GET the result (relative to the service).' })),
  size: Type.Optional(Type.Integer({ minimum: 0, description: 'When done: the result\'s size in bytes.' })),
  expires_at: Type.Optional(Type.String({ format: 'date-time', description: 'When done or failed: when the result and this record are deleted.' })),
  error: Type.Optional(Type.Object({
    code: StringEnum(JOB_ERROR_CODES),
    message: Type.String(),
  }, { description: 'When failed: why, in words a user can act on.' })),
  options: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'When the client gave options: those in force for the job, as given (only those that apply).' })),
  ignored_options: Type.Optional(Type.Array(Type.String(), { description: 'When the client gave options: the names that do not apply to this conversion and were ignored.' })),
  skipped: Type.Optional(Type.Array(Type.String(), { description: 'When done, for target zip with each from an archive: the members carried unchanged because they cannot become `each`.' })),
}, {
  description: 'A job\'s state. `progress` only rises and is 100 exactly when `status` is `done`.',
  examples: [{ job_id: '3q2Fz5lqfE0hS1v7Bm0YpQkR', status: 'done', progress: 100, source: 'png', target: 'webp', filename: 'photo.png', created_at: '2026-11-22T08:00:00.000Z', download_url: '/api/download/Xy7pQ2mVb3nR8sT1uW4zA6cD9eF0gH2j.webp', size: 48212, expires_at: '2026-11-22T08:30:00.000Z' }],
}));
/** GET /api/progress/{job_id}'s answer, and each event of its stream. */
export type ProgressRecord = Static<typeof ProgressRecordSchema>;

export const SubmitAnswerSchema = Shared('SubmitAnswer', Type.Object({
  ok: Type.Literal(true),
  job_id: Type.String({ description: 'The job\'s id, for /api/progress/{job_id}.' }),
}, {
  examples: [{ ok: true, job_id: '3q2Fz5lqfE0hS1v7Bm0YpQkR' }],
}));
/** POST /api/convert's answer. */
export type SubmitAnswer = Static<typeof SubmitAnswerSchema>;

export const FormatSchema = Shared('Format', Type.Object({
  id: Type.String({ description: 'What to send as `target`; also the result\'s extension.' }),
  name: Type.String(),
  category: StringEnum(CATEGORIES),
  media_type: Type.String(),
  extensions: Type.Immutable(Type.Array(Type.String())),
  targets: Type.Immutable(Type.Array(Type.String(), { description: 'Formats this one converts to (possibly through several engines).' })),
}));
/** One format of the catalogue, as /api/formats lists it. */
export type CatalogueEntry = Static<typeof FormatSchema>;

export const FormatListSchema = Shared('FormatList', Type.Object({
  formats: Type.Immutable(Type.Array(Ref(FormatSchema), { description: 'Sorted by id.' })),
}));
/** GET /api/formats's answer. */
export type FormatList = Static<typeof FormatListSchema>;

export const OPTION_TYPES = ['integer', 'number', 'boolean', 'string', 'enum'] as const;

export const OptionDescriptorSchema = Shared('OptionDescriptor', Type.Object({
  name: Type.String({ description: 'The form part\'s name to send beside `file` and `target`.' }),
  type: StringEnum(OPTION_TYPES),
  description: Type.String(),
  default: Type.Optional(Type.Union([Type.Number(), Type.Boolean(), Type.String()], { description: 'What applies when the option is not given.' })),
  minimum: Type.Optional(Type.Number()),
  maximum: Type.Optional(Type.Number()),
  values: Type.Optional(Type.Array(Type.String(), { description: 'For enum: the allowed values.' })),
  pattern: Type.Optional(Type.String({ description: 'For string: the syntax of a value (a regular expression).' })),
}));
/** One option of a conversion, as GET /api/formats/{source}/{target} describes it. */
export type OptionDescriptor = Static<typeof OptionDescriptorSchema>;

export const ConversionOptionsSchema = Shared('ConversionOptions', Type.Object({
  source: Type.String(),
  target: Type.String(),
  steps: Type.Array(Type.String(), { description: 'The engines the conversion runs through when no option is given.' }),
  options: Type.Array(Ref(OptionDescriptorSchema), { description: 'Sorted by name.' }),
}, {
  examples: [{ source: 'png', target: 'jpg', steps: ['sharp'], options: [{ name: 'quality', type: 'integer', description: 'Quality of the lossy encoder, 1-100: higher is better and larger.', minimum: 1, maximum: 100, default: 90 }] }],
}));
/** GET /api/formats/{source}/{target}'s answer. */
export type ConversionOptions = Static<typeof ConversionOptionsSchema>;

export const LimitsSchema = Shared('Limits', Type.Object({
  max_file_size_bytes: Type.Integer(),
  file_lifetime_seconds: Type.Integer(),
  rate_limits: Type.Array(Type.Object({
    limit: Type.Integer(),
    window_seconds: Type.Integer(),
    applies_to: StringEnum(['submissions', 'other_requests']),
    remaining: Type.Integer(),
    reset_seconds: Type.Integer(),
  })),
}, {
  examples: [{ max_file_size_bytes: 26214400, file_lifetime_seconds: 1800, rate_limits: [{ limit: 20, window_seconds: 60, applies_to: 'submissions', remaining: 19, reset_seconds: 42 }] }],
}));
/** GET /api/limits's answer. */
export type Limits = Static<typeof LimitsSchema>;

export const HealthSchema = Type.Object({ status: Type.Literal('ok') });

/** One check of /readyz: `ok`, and what it found. */
const ReadinessCheckSchema = OpenObject({ ok: Type.Boolean() });

export const ReadinessSchema = Shared('Readiness', Type.Object({
  status: StringEnum(['ready', 'not_ready']),
  ready: Type.Boolean(),
  checks: Type.Unsafe<Record<string, Static<typeof ReadinessCheckSchema>>>({
    type: 'object',
    description: 'store, disk, sandbox, memory_limit (`mode`: cgroup-v1, cgroup-v2 or none, with `limit_bytes`), process_limit (`max_tasks` per engine process tree, or `mode: none`), queue, storage and one pool:<engine> per process pool, each with `ok` and what it found.',
    additionalProperties: ReadinessCheckSchema,
  }),
  engines_unavailable: Type.Array(Type.Object({ engine: Type.String(), reason: Type.Optional(Type.String()) })),
}));
/** GET /readyz's answer. */
export type Readiness = Static<typeof ReadinessSchema>;
