// Starts convertd. Embedded by default: one process, SQLite job store, in-process queue, local
// disk. With CONVERTD_REDIS_URL the store, queue and rate-limit counters live in Redis (BullMQ for
// the queue), with CONVERTD_STORAGE=s3://... files live in a bucket, and CONVERTD_ROLE makes the
// process an API node or a worker only. Wires the layers together, takes up the jobs a previous
// run left unfinished, and shuts down gracefully on SIGTERM/SIGINT.
import fs from 'node:fs/promises';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import os from 'node:os';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { catalogueOf, checkEngineNames, createEngines, readEngineSettings } from './engines/assembly.ts';
import { ENGINE_MODULES } from './engines/index.ts';
import { ProbeCache } from './engines/probe-cache.ts';
import { EngineRegistry } from './engines/registry.ts';
import { buildApp, buildOperationsApp } from './http/app.ts';
import { cgroupLimitsState, configureCgroupLimits, removeServiceCgroupsAtStop } from './process/cgroups.ts';
import { stopLaunchers } from './process/launchers.ts';
import { configureSandbox, giveEntriesToEngineUser, unenterableDirectory } from './process/sandbox.ts';
import { LocalQueue } from './jobs/local-queue.ts';
import { JobChanges } from './jobs/changes.ts';
import type { EngineIsolation, JobQueue, JobStore } from './jobs/types.ts';
import { RateLimits, redisLimiter, type LimiterFactory } from './http/rate-limits.ts';
import { JobService } from './jobs/service.ts';
import { SqliteJobStore } from './jobs/sqlite-store.ts';
import { Sweeper } from './jobs/sweeper.ts';
import { JobWorker } from './jobs/worker.ts';
import { openLogDestination } from './observability/log-destination.ts';
import { Metrics } from './observability/metrics.ts';
import { LocalStorage } from './storage/local.ts';
import type { FileStorage } from './storage/types.ts';

interface Backends {
  readonly store: JobStore;
  readonly queue: JobQueue;
  readonly changes: JobChanges;
  readonly limiterFactory?: LimiterFactory;
  close(): Promise<void>;
}

/** SQLite and an in-process queue, or Redis with BullMQ when CONVERTD_REDIS_URL is set. */
async function openBackends(config: Config, log: Logger): Promise<Backends> {
  if (!config.redisUrl) {
    const store = new SqliteJobStore(path.join(config.dataDir, 'convertd.sqlite'));
    return { store, queue: new LocalQueue(config.concurrency), changes: new JobChanges(), close: () => store.close() };
  }
  // Loaded only here: BullMQ, ioredis and the S3 client take some 0.3 s of CPU to load, which an
  // embedded service (and each of the tests' ~90 service starts) would spend for nothing.
  const [{ openRedis, redactUrl }, { BullQueue }, { RedisJobChanges }, { RedisJobStore }] = await Promise.all([
    import('./jobs/redis/connection.ts'), import('./jobs/redis/bullmq-queue.ts'), import('./jobs/redis/redis-changes.ts'), import('./jobs/redis/redis-store.ts'),
  ]);
  const redis = await openRedis(config.redisUrl, { name: config.role });
  const subscriber = await openRedis(config.redisUrl, { name: `${config.role}-changes` });
  const changes = new RedisJobChanges(redis, subscriber);
  await changes.listen();
  const store = new RedisJobStore(redis);
  const queue = new BullQueue({ redis, redisUrl: config.redisUrl, concurrency: config.concurrency, maxAttempts: config.maxAttempts });
  log.info({ event: 'redis', url: redactUrl(config.redisUrl), role: config.role }, 'job store, queue and rate limits in Redis');
  return {
    store, queue, changes, limiterFactory: redisLimiter(redis),
    close: async () => {
      await changes.close();
      await store.close();
    },
  };
}

async function openStorage(config: Config, log: Logger): Promise<{ storage: FileStorage; close(): void }> {
  const local = new LocalStorage(config.dataDir);
  await local.init();
  // One process owns an embedded data directory, so whatever is half-done in it at start is a
  // leftover. With Redis, several nodes may share the directory (a network file system): the
  // sweeper removes leftovers by age instead.
  if (!config.redisUrl) {
    const leftovers = await local.removeLeftovers();
    if (leftovers > 0) log.info({ event: 'leftovers_removed', count: leftovers }, 'removed partial uploads and work directories of the previous run');
  }
  if (config.storage.kind === 'local') return { storage: local, close: () => undefined };
  const { S3Storage } = await import('./storage/s3.ts'); // loaded only when used, as openBackends says
  const s3 = new S3Storage(config.storage, local);
  await s3.init();
  log.info({ event: 'storage', bucket: config.storage.bucket, prefix: config.storage.prefix, endpoint: config.storage.endpoint }, 'inputs and results in S3');
  return { storage: s3, close: () => s3.close() };
}

/** A bad setting stops the service with exit code 2 and a message naming it. */
function stopOnBadConfiguration(message: string): never {
  process.stderr.write(`convertd: invalid configuration: ${message}\n`);
  process.exit(2);
}

/** The service's configuration and each engine's settings, from the environment. */
function readConfig(): { config: Config; engineSettings: Map<string, Record<string, unknown>> } {
  try {
    const config = loadConfig();
    checkEngineNames(ENGINE_MODULES, config.engineTimeouts);
    const engineSettings = readEngineSettings(ENGINE_MODULES, process.env, { cores: Math.max(1, os.availableParallelism()) });
    return { config, engineSettings };
  } catch (error) {
    if (error instanceof ConfigError) stopOnBadConfiguration(error.message);
    throw error;
  }
}

async function main(): Promise<void> {
  const { config, engineSettings } = readConfig();
  const destination = openLogDestination();
  const log = pino({ level: config.logLevel, base: { service: 'convertd' } }, destination.stream);
  const exit = (code: number): never => {
    destination.flushBeforeExit();
    process.exit(code);
  };

  const sandbox = configureSandbox(config.sandbox);
  if (sandbox.problem) {
    log.fatal({ event: 'sandbox_unavailable', problem: sandbox.problem },
      `engines cannot be sandboxed: ${sandbox.problem}. Fix this, or set CONVERTD_SANDBOX=off to run them unconfined (not for untrusted uploads).`);
    exit(1);
  }
  if (sandbox.settings.mode === 'off') log.warn({ event: 'sandbox_off' }, 'CONVERTD_SANDBOX=off: engines run without a sandbox; do not accept untrusted uploads');
  else log.info({ event: 'sandbox', mode: sandbox.settings.mode, engine_uid: sandbox.settings.uid ?? process.getuid?.() }, 'engines run in a bubblewrap sandbox');
  const limits = configureCgroupLimits(config.engineMemoryMb, sandbox.settings);
  if (limits.mode !== 'none') log.info({ event: 'memory_limit', mode: limits.mode, limit_mb: config.engineMemoryMb }, `each engine process is limited to ${config.engineMemoryMb} MiB by a memory cgroup`);
  else if (limits.problem) log.warn({ event: 'memory_limit_unavailable', problem: limits.problem }, `engine memory is not limited by a cgroup: ${limits.problem}; engines keep their address-space limits`);
  if (limits.maxTasks) log.info({ event: 'process_limit', max_tasks: limits.maxTasks }, `each engine process tree is limited to ${limits.maxTasks} tasks by a pids cgroup`);
  else log.warn({ event: 'process_limit_unavailable', problem: limits.tasksProblem }, `engine processes are not counted by a pids cgroup: ${limits.tasksProblem}`);
  // What the jobs layer knows of the above: passed to it, never read from the process layer's state.
  const isolation: EngineIsolation = {
    sandboxMode: sandbox.settings.mode,
    cgroupLimits: cgroupLimitsState,
    giveToEngineUser: (entries) => giveEntriesToEngineUser(entries, sandbox.settings),
  };

  await fs.mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const { storage, close: closeStorage } = await openStorage(config, log);
  // The engines' user reaches its work under the data directory, and the service's own tree (the
  // Node pools' modules, the engines' policy files): a directory it cannot pass through above
  // either would fail every job with "launcher: cannot enter", so the service does not start.
  for (const [what, dir] of [['the data directory', config.dataDir], ["the service's own files", path.resolve(import.meta.dirname, '..')]] as const) {
    const closed = unenterableDirectory(dir, sandbox.settings);
    if (!closed) continue;
    log.fatal({ event: 'data_dir_unreachable', dir, closed_dir: closed },
      `the engines' user (uid ${sandbox.settings.uid}) cannot enter ${closed}, which holds ${what} (${dir}), so no engine could run: make it traversable (chmod o+x ${closed}) or move ${what} elsewhere${what === 'the data directory' ? ' (CONVERTD_DATA_DIR)' : ''}`);
    exit(1);
  }
  const backends = await openBackends(config, log);
  const { store, queue, changes } = backends;
  const runsWorkers = config.role !== 'api';
  const servesHttp = config.role !== 'worker';
  // An API node probes the engines too: its catalogue and route checks come from them, so API
  // nodes and workers must have the same engines installed.
  const created = createEngines(ENGINE_MODULES, engineSettings, {
    log,
    concurrency: config.concurrency,
    maxOutputBytes: config.maxOutputBytes,
    runsJobs: runsWorkers,
    poolStart: config.poolStart,
    stateRoot: path.join(config.dataDir, 'engines'),
  });
  const probeCache = config.probeCacheDir ? await ProbeCache.open(config.probeCacheDir, {
    // An engine's own time limit keys its verdict, not every engine's: a service started with
    // latex=60 re-probes LaTeX alone.
    settings: new Map([...engineSettings].map(([id, settings]) => [id, { ...settings, timeoutSeconds: config.engineTimeouts[id] }])),
    machine: { sandbox: sandbox.settings, memory: limits.mode, engineMemoryMb: config.engineMemoryMb, maxOutputBytes: config.maxOutputBytes, maxImagePixels: config.maxImagePixels, maxMediaSeconds: config.maxMediaSeconds },
  }) : undefined;
  const engines = await EngineRegistry.start(created.engines, log, catalogueOf(ENGINE_MODULES), created.failed, probeCache);
  const metrics = new Metrics({
    queueWaiting: () => queue.waiting(),
    jobsRunning: () => queue.active(),
    disk: () => storage.diskSpace(),
    pools: created.engines.flatMap((engine) => (engine.poolStats ? [{ name: engine.id, stats: () => engine.poolStats!() }] : [])),
  });
  const service = new JobService({ store, queue, storage, engines, config, isolation, log, changes, metrics });
  const worker = new JobWorker({ store, storage, engines, config, isolation, log, metrics, changes });
  const sweeper = new Sweeper({ store, storage, config, log });

  await service.recover();
  if (runsWorkers) queue.start(worker.process);
  sweeper.start();

  const app = servesHttp
    ? await buildApp({
      config, service, log, metrics,
      submitLimits: new RateLimits(config.submitRateLimits, 'submit', backends.limiterFactory),
      readLimits: new RateLimits(config.readRateLimits, 'read', backends.limiterFactory),
    })
    : undefined;
  if (app) {
    await app.listen({ port: config.port, host: config.host });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    log.info({ event: 'listening', host: config.host, port, data_dir: config.dataDir, concurrency: config.concurrency, role: config.role }, `convertd listening on http://${config.host}:${port}`);
  }
  // A worker listens only when given a port (CONVERTD_WORKER_PORT, `convertd worker --port`), for
  // its health and metrics; API nodes and the embedded service serve those with the API.
  const operations = !servesHttp && config.workerPort !== undefined ? await buildOperationsApp({ service, log, metrics }) : undefined;
  if (operations) await operations.listen({ port: config.workerPort, host: config.host });
  if (!servesHttp) {
    const address = operations?.server.address();
    const port = typeof address === 'object' && address ? address.port : undefined;
    log.info({ event: 'worker_started', data_dir: config.dataDir, concurrency: config.concurrency, operations_port: port }, 'convertd worker started');
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ event: 'shutdown', signal }, 'shutting down: no new requests; running jobs finish or run again at the next start');
    const hardStop = setTimeout(() => {
      log.warn('shutdown took too long; exiting now (unfinished jobs run again at the next start)');
      exit(1);
    }, (config.shutdownGraceSeconds + 10) * 1000);
    hardStop.unref();
    await app?.close();
    await operations?.close();
    await queue.stop(config.shutdownGraceSeconds * 1000);
    await sweeper.stop();
    await engines.close();
    await backends.close();
    closeStorage();
    await stopLaunchers();
    await removeServiceCgroupsAtStop();
    log.info({ event: 'stopped' }, 'convertd stopped');
    exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`convertd: failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
