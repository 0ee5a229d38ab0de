// Configuration from environment variables, validated once at start. Every variable is documented
// in the README; a bad value stops the service with a message naming the variable. An engine's own
// settings are declared in its module (src/engines/<tool>/) and read with these by main.ts.
import os from 'node:os';
import path from 'node:path';

export interface RateWindow {
  readonly limit: number;
  readonly windowSeconds: number;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly maxFileBytes: number;
  readonly fileLifetimeSeconds: number;
  /** Submission limits per client; empty when switched off. */
  readonly submitRateLimits: readonly RateWindow[];
  /** Limit on every other request per client (polling, downloads, catalogue); empty when off. */
  readonly readRateLimits: readonly RateWindow[];
  readonly trustedProxies: readonly string[];
  readonly concurrency: number;
  readonly queueLimit: number;
  readonly jobTimeoutSeconds: number;
  readonly maxOutputBytes: number;
  readonly maxImagePixels: number;
  readonly maxMediaSeconds: number;
  readonly maxAttempts: number;
  readonly sweepIntervalSeconds: number;
  readonly tombstoneSeconds: number;
  readonly shutdownGraceSeconds: number;
  /** Slow clients: time to send the request headers, the whole request, and idle time on a connection. */
  readonly headersTimeoutSeconds: number;
  readonly requestTimeoutSeconds: number;
  readonly idleTimeoutSeconds: number;
  readonly logLevel: string;
  /** "auto": engines run in bubblewrap, and the service refuses to start without it; "off": unconfined. */
  readonly sandbox: 'auto' | 'off';
  /** Per-engine wall-clock limits in seconds (engine id → seconds), over each engine's default. */
  readonly engineTimeouts: Readonly<Record<string, number>>;
  /** Memory limit of each engine process in MiB, through a cgroup where the machine allows; 0: none. */
  readonly engineMemoryMb: number;
  /** A worker's port for /healthz, /readyz and /metrics; undefined: a worker serves no HTTP. */
  readonly workerPort: number | undefined;
  /** What this process runs: the API and workers ("all", the embedded default), the API only, or workers only. */
  readonly role: 'all' | 'api' | 'worker';
  /** Redis for the job store, queue (BullMQ) and rate-limit counters; undefined: embedded SQLite and memory. */
  readonly redisUrl: string | undefined;
  /** Where uploads and results live: the data directory, or an S3-compatible bucket. */
  readonly storage: LocalStorageConfig | S3StorageConfig;
  /** Where engines' passed probes are remembered across starts (engines/probe-cache.ts); undefined: every start probes. */
  readonly probeCacheDir: string | undefined;
  /** When the warm Node pools (sharp, data) start their processes: with the service ("eager"), or each on its first job ("lazy"). */
  readonly poolStart: 'eager' | 'lazy';
}

export interface LocalStorageConfig {
  readonly kind: 'local';
}

export interface S3StorageConfig {
  readonly kind: 's3';
  readonly bucket: string;
  /** Key prefix inside the bucket, '' or ending in '/'. */
  readonly prefix: string;
  /** An S3-compatible server's URL; undefined for AWS itself. */
  readonly endpoint: string | undefined;
  readonly region: string;
  /** Path-style addressing (http://host/bucket/key), which most self-hosted servers need. */
  readonly forcePathStyle: boolean;
}

export class ConfigError extends Error {}

const UNIT_SECONDS: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86400 };

/** Parses "20/minute,200/hour" (units: second, minute, hour, day, or a number of seconds as "90s"); "off" gives []. */
export function parseRateLimits(name: string, text: string): RateWindow[] {
  if (text.trim().toLowerCase() === 'off') return [];
  return text.split(',').map((part) => {
    const match = /^\s*(\d+)\s*\/\s*(second|minute|hour|day|\d+s)\s*$/i.exec(part);
    if (!match) throw new ConfigError(`${name}: "${part}" is not of the form N/minute, N/hour, N/day, N/second or N/<seconds>s`);
    const unit = match[2]!.toLowerCase();
    const windowSeconds = UNIT_SECONDS[unit] ?? Number(unit.slice(0, -1));
    const limit = Number(match[1]);
    if (limit < 1 || windowSeconds < 1) throw new ConfigError(`${name}: "${part}" needs a limit and a window of at least 1`);
    return { limit, windowSeconds };
  });
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name}: "${raw}" must be a whole number from ${min} to ${max}`);
  }
  return value;
}

function sandboxMode(raw: string | undefined): 'auto' | 'off' {
  const value = (raw ?? 'auto').trim().toLowerCase();
  if (value === 'auto' || value === 'on' || value === '') return 'auto';
  if (value === 'off') return 'off';
  throw new ConfigError(`CONVERTD_SANDBOX: "${raw}" must be "auto" (the default) or "off"`);
}

/** Parses "libreoffice=120,pandoc=30" (engine id = seconds). */
export function parseEngineTimeouts(raw: string | undefined): Record<string, number> {
  const timeouts: Record<string, number> = {};
  for (const part of (raw ?? '').split(',').map((p) => p.trim()).filter(Boolean)) {
    const match = /^([a-z0-9]+)\s*=\s*(\d+)$/.exec(part);
    if (!match || Number(match[2]) < 1) throw new ConfigError(`CONVERTD_ENGINE_TIMEOUTS: "${part}" is not of the form engine=seconds (for example libreoffice=120)`);
    timeouts[match[1]!] = Number(match[2]);
  }
  return timeouts;
}

function roleOf(raw: string | undefined): Config['role'] {
  const value = raw?.trim().toLowerCase() || 'all';
  if (value === 'all' || value === 'api' || value === 'worker') return value;
  throw new ConfigError(`CONVERTD_ROLE: "${raw}" must be "all" (the default), "api" or "worker"`);
}

function poolStartOf(raw: string | undefined): Config['poolStart'] {
  const value = raw?.trim().toLowerCase() || 'eager';
  if (value === 'eager' || value === 'lazy') return value;
  throw new ConfigError(`CONVERTD_POOL_START: "${raw}" must be "eager" (the default) or "lazy"`);
}

function redisUrlOf(raw: string | undefined): string | undefined {
  const value = raw?.trim();
  if (!value) return undefined;
  if (!/^rediss?:\/\/./.test(value)) throw new ConfigError(`CONVERTD_REDIS_URL: "${value}" must be a redis:// or rediss:// URL`);
  return value;
}

function storageOf(env: NodeJS.ProcessEnv): Config['storage'] {
  const raw = env.CONVERTD_STORAGE?.trim();
  if (!raw || raw === 'local') return { kind: 'local' };
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(raw);
  if (!match) throw new ConfigError(`CONVERTD_STORAGE: "${raw}" must be "local" (the default) or s3://bucket[/prefix]`);
  const prefix = (match[2] ?? '').replace(/^\/+|\/+$/g, '');
  const endpoint = env.CONVERTD_S3_ENDPOINT?.trim() || undefined;
  if (endpoint && !/^https?:\/\/./.test(endpoint)) throw new ConfigError(`CONVERTD_S3_ENDPOINT: "${endpoint}" must be an http:// or https:// URL`);
  const pathStyle = (env.CONVERTD_S3_FORCE_PATH_STYLE ?? (endpoint ? 'true' : 'false')).trim().toLowerCase();
  if (pathStyle !== 'true' && pathStyle !== 'false') throw new ConfigError(`CONVERTD_S3_FORCE_PATH_STYLE: "${pathStyle}" must be "true" or "false"`);
  return {
    kind: 's3',
    bucket: match[1]!,
    prefix: prefix ? `${prefix}/` : '',
    endpoint,
    region: env.CONVERTD_S3_REGION?.trim() || env.AWS_REGION?.trim() || 'us-east-1',
    forcePathStyle: pathStyle === 'true',
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cores = Math.max(1, os.availableParallelism());
  const config: Config = {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: env.HOST?.trim() || '127.0.0.1',
    dataDir: path.resolve(env.CONVERTD_DATA_DIR?.trim() || './data'),
    maxFileBytes: integer(env, 'CONVERTD_MAX_FILE_BYTES', 26_214_400, 1),
    fileLifetimeSeconds: integer(env, 'CONVERTD_FILE_LIFETIME_SECONDS', 1800, 1),
    submitRateLimits: parseRateLimits('CONVERTD_RATE_LIMITS', env.CONVERTD_RATE_LIMITS ?? '20/minute,200/hour,1000/day'),
    readRateLimits: parseRateLimits('CONVERTD_READ_RATE_LIMITS', env.CONVERTD_READ_RATE_LIMITS ?? '6000/minute'),
    trustedProxies: (env.CONVERTD_TRUSTED_PROXIES ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    concurrency: integer(env, 'CONVERTD_CONCURRENCY', cores, 1, 256),
    queueLimit: integer(env, 'CONVERTD_QUEUE_LIMIT', 200, 0),
    jobTimeoutSeconds: integer(env, 'CONVERTD_JOB_TIMEOUT_SECONDS', 900, 1),
    maxOutputBytes: integer(env, 'CONVERTD_MAX_OUTPUT_BYTES', 268_435_456, 1),
    maxImagePixels: integer(env, 'CONVERTD_MAX_IMAGE_PIXELS', 100_000_000, 1),
    maxMediaSeconds: integer(env, 'CONVERTD_MAX_MEDIA_SECONDS', 4 * 3600, 1),
    maxAttempts: integer(env, 'CONVERTD_MAX_ATTEMPTS', 3, 1, 100),
    sweepIntervalSeconds: integer(env, 'CONVERTD_SWEEP_INTERVAL_SECONDS', 30, 1, 60),
    tombstoneSeconds: integer(env, 'CONVERTD_TOMBSTONE_SECONDS', 7 * 86400, 0),
    shutdownGraceSeconds: integer(env, 'CONVERTD_SHUTDOWN_GRACE_SECONDS', 20, 0),
    headersTimeoutSeconds: integer(env, 'CONVERTD_HEADERS_TIMEOUT_SECONDS', 20, 1),
    requestTimeoutSeconds: integer(env, 'CONVERTD_REQUEST_TIMEOUT_SECONDS', 120, 1),
    idleTimeoutSeconds: integer(env, 'CONVERTD_IDLE_TIMEOUT_SECONDS', 60, 1),
    logLevel: env.CONVERTD_LOG_LEVEL?.trim() || 'info',
    sandbox: sandboxMode(env.CONVERTD_SANDBOX),
    engineTimeouts: parseEngineTimeouts(env.CONVERTD_ENGINE_TIMEOUTS),
    // Room for LibreOffice on a large spreadsheet or ffmpeg on 4K video; a bomb stops here.
    engineMemoryMb: integer(env, 'CONVERTD_ENGINE_MEMORY_MB', 2048, 0, 1024 * 1024),
    workerPort: env.CONVERTD_WORKER_PORT?.trim() ? integer(env, 'CONVERTD_WORKER_PORT', 0, 0, 65535) : undefined,
    role: roleOf(env.CONVERTD_ROLE),
    redisUrl: redisUrlOf(env.CONVERTD_REDIS_URL),
    storage: storageOf(env),
    probeCacheDir: env.CONVERTD_PROBE_CACHE_DIR?.trim() ? path.resolve(env.CONVERTD_PROBE_CACHE_DIR.trim()) : undefined,
    poolStart: poolStartOf(env.CONVERTD_POOL_START),
  };
  if (config.role !== 'all' && !config.redisUrl) {
    throw new ConfigError(`CONVERTD_ROLE=${config.role} needs CONVERTD_REDIS_URL: API nodes and workers share jobs through Redis`);
  }
  return config;
}
