// The job store in Redis, for several API nodes and workers: one hash per job, an index from
// download token to job, and three sorted sets (unfinished jobs by creation, finished jobs by
// expiry, purged tombstones by purge time). Every transition that depends on the current state
// (start an attempt, raise progress, finish once) is one Lua script, so it is atomic however many
// workers race. Durability is Redis's: run it with appendonly yes (README, "Scaling out").
import type { Redis } from 'ioredis';
import type { JobErrorCode } from '../../errors.ts';
import type { JobRecord, JobResult, JobStatus, JobStore, NewJob } from '../types.ts';
import { guarded, KEY_PREFIX } from './connection.ts';

const JOB = `${KEY_PREFIX}:job:`;
const TOKEN = `${KEY_PREFIX}:token:`;
const UNFINISHED = `${KEY_PREFIX}:jobs:unfinished`;
const EXPIRY = `${KEY_PREFIX}:jobs:expiry`;
const PURGED = `${KEY_PREFIX}:jobs:purged`;
const WRITE_CHECK = `${KEY_PREFIX}:write-check`;

/** Returns the new attempt number, or -1 when the job is not queued or running. */
const MARK_RUNNING = `
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'running' then return -1 end
redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[1])
return redis.call('HINCRBY', KEYS[1], 'attempts', 1)`;

const SET_PROGRESS = `
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'progress')) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'progress', ARGV[1])
return 1`;

/** KEYS: job, unfinished, expiry, token; ARGV: id, token, bytes, finished_at, expires_at, skipped (JSON or ''). */
const MARK_DONE = `
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'done', 'progress', 100, 'result_token', ARGV[2], 'result_bytes', ARGV[3],
  'finished_at', ARGV[4], 'expires_at', ARGV[5], 'skipped', ARGV[6])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
redis.call('SET', KEYS[4], ARGV[1])
return 1`;

/** KEYS: job, unfinished, expiry; ARGV: id, code, message, finished_at, expires_at. */
const MARK_ERROR = `
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'error', 'error_code', ARGV[2], 'error_message', ARGV[3],
  'finished_at', ARGV[4], 'expires_at', ARGV[5])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
return 1`;

/** KEYS: job, expiry, purged; ARGV: id, purged_at. */
const MARK_PURGED = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'purged_at', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return 1`;

/** KEYS: purged; ARGV: purged_before (exclusive), job key prefix, token key prefix. Returns how many. */
const DELETE_TOMBSTONES = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, 1000)
for _, id in ipairs(ids) do
  local token = redis.call('HGET', ARGV[2] .. id, 'result_token')
  if token then redis.call('DEL', ARGV[3] .. token) end
  redis.call('DEL', ARGV[2] .. id)
  redis.call('ZREM', KEYS[1], id)
end
return #ids`;

type Hash = Record<string, string>;

const optionalNumber = (value: string | undefined) => (value === undefined || value === '' ? null : Number(value));
const optionalString = (value: string | undefined) => (value === undefined || value === '' ? null : value);
const EMPTY_OPTIONS: Readonly<Record<string, string>> = Object.freeze({});
const NONE: readonly string[] = Object.freeze([]);
/** A JSON field written by this store; absent or empty (a job stored before it existed) is empty. */
const fromJson = <T>(value: string | undefined, empty: T): T => (value === undefined || value === '' ? empty : JSON.parse(value) as T);
const toJson = (value: object | undefined) => (value && Object.keys(value).length > 0 ? JSON.stringify(value) : '');

function toRecord(hash: Hash): JobRecord | undefined {
  if (!hash.id) return undefined;
  return {
    id: hash.id,
    status: hash.status as JobStatus,
    progress: Number(hash.progress ?? 0),
    source: hash.source ?? '',
    target: hash.target ?? '',
    filename: hash.filename ?? '',
    inputBytes: Number(hash.input_bytes ?? 0),
    createdAt: Number(hash.created_at ?? 0),
    startedAt: optionalNumber(hash.started_at),
    finishedAt: optionalNumber(hash.finished_at),
    attempts: Number(hash.attempts ?? 0),
    resultToken: optionalString(hash.result_token),
    resultBytes: optionalNumber(hash.result_bytes),
    expiresAt: optionalNumber(hash.expires_at),
    errorCode: optionalString(hash.error_code) as JobErrorCode | null,
    errorMessage: optionalString(hash.error_message),
    purgedAt: optionalNumber(hash.purged_at),
    options: fromJson(hash.options, EMPTY_OPTIONS),
    ignoredOptions: fromJson(hash.ignored_options, NONE),
    skipped: fromJson(hash.skipped, NONE),
  };
}

export class RedisJobStore implements JobStore {
  private readonly redis: Redis;

  constructor(redis: Redis) {
    this.redis = redis;
  }

  async create(job: NewJob): Promise<void> {
    await guarded(() => this.redis.multi()
      .hset(JOB + job.id, {
        id: job.id, status: 'queued', progress: 0, source: job.source, target: job.target, filename: job.filename,
        input_bytes: job.inputBytes, created_at: job.createdAt, attempts: 0,
        options: toJson(job.options), ignored_options: toJson(job.ignoredOptions),
      })
      .zadd(UNFINISHED, job.createdAt, job.id)
      .exec());
  }

  async get(id: string): Promise<JobRecord | undefined> {
    return toRecord(await guarded(() => this.redis.hgetall(JOB + id)));
  }

  async getByToken(token: string): Promise<JobRecord | undefined> {
    const id = await guarded(() => this.redis.get(TOKEN + token));
    return id ? this.get(id) : undefined;
  }

  async markRunning(id: string, at: number): Promise<number> {
    const attempts = Number(await guarded(() => this.redis.eval(MARK_RUNNING, 1, JOB + id, at)));
    if (attempts < 0) throw new Error(`job ${id} is not queued or running`);
    return attempts;
  }

  async setProgress(id: string, progress: number): Promise<void> {
    await guarded(() => this.redis.eval(SET_PROGRESS, 1, JOB + id, progress));
  }

  async markDone(id: string, result: JobResult): Promise<boolean> {
    const changed = await guarded(() => this.redis.eval(MARK_DONE, 4, JOB + id, UNFINISHED, EXPIRY, TOKEN + result.token,
      id, result.token, result.bytes, result.finishedAt, result.expiresAt, toJson(result.skipped)));
    return Number(changed) === 1;
  }

  async markError(id: string, error: { code: JobErrorCode; message: string; finishedAt: number; expiresAt: number }): Promise<boolean> {
    const changed = await guarded(() => this.redis.eval(MARK_ERROR, 3, JOB + id, UNFINISHED, EXPIRY,
      id, error.code, error.message, error.finishedAt, error.expiresAt));
    return Number(changed) === 1;
  }

  private async getMany(ids: readonly string[]): Promise<JobRecord[]> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(JOB + id);
    const replies = await guarded(() => pipeline.exec());
    return (replies ?? []).map(([, hash]) => toRecord(hash as Hash)).filter((job): job is JobRecord => job !== undefined);
  }

  async listUnfinished(): Promise<JobRecord[]> {
    return this.getMany(await guarded(() => this.redis.zrange(UNFINISHED, 0, -1)));
  }

  async listExpired(now: number): Promise<JobRecord[]> {
    return this.getMany(await guarded(() => this.redis.zrangebyscore(EXPIRY, '-inf', now, 'LIMIT', 0, 1000)));
  }

  async markPurged(id: string, at: number): Promise<void> {
    await guarded(() => this.redis.eval(MARK_PURGED, 3, JOB + id, EXPIRY, PURGED, id, at));
  }

  async deleteTombstones(purgedBefore: number): Promise<number> {
    return Number(await guarded(() => this.redis.eval(DELETE_TOMBSTONES, 1, PURGED, purgedBefore, JOB, TOKEN)));
  }

  async checkWritable(): Promise<void> {
    // A real write: a read-only replica or a Redis out of memory refuses it.
    await guarded(() => this.redis.set(WRITE_CHECK, String(Date.now()), 'PX', 60_000));
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
