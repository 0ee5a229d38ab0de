// Connections to Redis, shared by the Redis job store, the BullMQ queue, the change feed and the
// rate-limit counters. Requests fail fast while Redis is unreachable (no offline queue, a command
// timeout) so that an API node answers 503 with Retry-After instead of hanging, and ioredis keeps
// reconnecting in the background, so the node recovers by itself when Redis is back.
import { Redis, type RedisOptions } from 'ioredis';
import { ConvertdError } from '../../errors.ts';

/** Every key convertd writes starts with this (BullMQ's keys too, as its prefix). */
export const KEY_PREFIX = 'convertd';

/** Seconds a client is told to wait when Redis cannot be reached. */
const RETRY_AFTER_SECONDS = '5';

export interface RedisConnectOptions {
  /** Name shown by CLIENT LIST, to tell the connections apart. */
  readonly name: string;
  /**
   * Blocking connections (BullMQ's workers) must wait for Redis however long it takes, so their
   * commands queue while disconnected; request-serving connections fail fast instead.
   */
  readonly blocking?: boolean;
}

export function connectRedis(url: string, options: RedisConnectOptions): Redis {
  const common: RedisOptions = {
    connectionName: `convertd-${options.name}`,
    lazyConnect: true,
    // Reconnect for ever, backing off to one attempt a second.
    retryStrategy: (attempt) => Math.min(1000, attempt * 100),
  };
  const settings: RedisOptions = options.blocking
    ? { ...common, maxRetriesPerRequest: null, enableOfflineQueue: true }
    : { ...common, maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 3000, connectTimeout: 3000 };
  return new Redis(url, settings);
}

/** Connects, or fails with a message that names the problem (a wrong URL, Redis not running). */
export async function openRedis(url: string, options: RedisConnectOptions): Promise<Redis> {
  const client = connectRedis(url, options);
  // An unhandled 'error' event would crash the process; reconnection failures are expected while
  // Redis restarts, and every failing command reports its own error to its caller.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    throw new Error(`cannot connect to Redis at ${redactUrl(url)}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return client;
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'redis://…';
  }
}

/** What a client is told when Redis cannot be reached: 503 unavailable with Retry-After. */
export function redisUnavailable(cause: unknown): ConvertdError {
  if (cause instanceof ConvertdError) return cause;
  const error = new ConvertdError('unavailable',
    'The service cannot reach its job database (Redis) right now: try again after the time in Retry-After.',
    {}, { 'retry-after': RETRY_AFTER_SECONDS });
  error.cause = cause;
  return error;
}

/** Runs a Redis operation, turning any failure to reach Redis into `unavailable`. */
export async function guarded<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw redisUnavailable(error);
  }
}
