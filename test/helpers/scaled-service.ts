// The scale-out topology as one "server" for suites written against startServer: an API node
// (`convertd serve --no-workers`) and a worker (`convertd worker`) sharing a real Redis (one per
// service, so suites stay independent) and a bucket on a real S3 server (one Swift per test
// process, a fresh bucket per service).
import { startRedis, startS3, type S3Server } from './backing-servers.ts';
import { startApiNode, startWorker, tempDir, type RunningServer } from './server.ts';

let s3: Promise<S3Server> | undefined;

/** One Swift per test process, stopped when the process ends. */
export function sharedS3(): Promise<S3Server> {
  s3 ??= startS3();
  return s3;
}

export interface ScaledService extends RunningServer {
  /** The bucket holding this service's files (under the prefix "convertd/"). */
  readonly bucket: string;
  readonly s3: S3Server;
}

export async function startScaledService(env: Record<string, string>, dataDir?: string): Promise<ScaledService> {
  const redis = await startRedis();
  const objectStore = await sharedS3();
  const bucket = await objectStore.createBucket();
  const shared = { ...objectStore.env(bucket), CONVERTD_REDIS_URL: redis.url, ...env };
  // One log for both processes: a job's lines come from the worker, a request's from the API node.
  const logs: string[] = [];
  const worker = await startWorker(shared, await tempDir(), logs);
  const api = await startApiNode(shared, dataDir, logs);
  return {
    ...api,
    bucket,
    s3: objectStore,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      const code = await api.stop(signal);
      await worker.stop(signal);
      await redis.stop();
      return code;
    },
  };
}
