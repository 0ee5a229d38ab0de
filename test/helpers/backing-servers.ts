// Real servers for the scale-out tests, started on free loopback ports in temp directories:
// Debian's redis-server, and Debian's OpenStack Swift with its s3api middleware as the
// S3-compatible object store (MinIO is not packaged in Debian). Nothing here is a fake.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { tempDir } from './server.ts';
import { waitFor } from './wait.ts';


export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Waits until `check` holds; a check that throws (the server not up yet) counts as not yet. */
async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  await waitFor(`${what} to come up`, () => check().catch(() => false), timeoutMs, 100);
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

/** Every child started here dies with the test process, whatever happens to the test. */
const children = new Set<ChildProcess>();
function killChildren(): void {
  for (const child of children) {
    try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ }
  }
}
process.once('exit', killChildren);
// The test runner ends a file's process with a signal when something still holds it open.
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    killChildren();
    process.exit(128 + (signal === 'SIGTERM' ? 15 : 2));
  });
}

function startDetached(command: string, args: string[], cwd: string): ChildProcess {
  const child = spawn(command, args, { cwd, detached: true, stdio: ['ignore', 'ignore', 'ignore'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  child.unref(); // a shared server must not keep the test process alive; the exit hook kills it
  return child;
}

async function killGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.ref(); // waiting for its exit must keep a script (the benchmark) alive
  try { process.kill(-child.pid!, 'SIGKILL'); } catch { return; }
  await exited;
}

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Stops Redis as a crash would (SIGKILL); start() brings it back on the same port with its data. */
  kill(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  const dir = await tempDir('convertd-redis-');
  let child: ChildProcess | undefined;
  const server: RedisServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      // Durable as the README asks of a production Redis: every write in the append-only file
      // before Redis answers, so a kill -9 and restart loses nothing.
      child = startDetached('/usr/bin/redis-server', [
        '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir,
      ], dir);
      await waitUntil('redis-server', () => portAnswers(port));
    },
    async kill() {
      if (child) await killGroup(child);
    },
    async stop() {
      await server.kill();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

export interface S3Server {
  readonly endpoint: string;
  /** The variables a convertd process needs to use `bucket` on this server. */
  env(bucket: string, prefix?: string): Record<string, string>;
  createBucket(): Promise<string>;
  /** Keys under a prefix of a bucket. */
  list(bucket: string, prefix?: string): Promise<string[]>;
  stop(): Promise<void>;
}

const ACCESS_KEY = 'test:tester';
const SECRET_KEY = 'testing';

/**
 * A one-replica Swift cluster in a temp directory: rings with one device each, account, container
 * and object servers, memcached (s3api needs it), and a proxy with s3api + tempauth. Swift reads
 * Debian's /etc/swift/swift.conf for its hash settings; everything else lives in the temp dir.
 */
export async function startS3(): Promise<S3Server> {
  const dir = await tempDir('convertd-swift-');
  await fs.mkdir(path.join(dir, 'devices', 'd1'), { recursive: true });
  const [account, container, object, proxy, memcached] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const user = os.userInfo().username;
  const rings = { account, container, object };
  await Promise.all(Object.entries(rings).map(async ([kind, port]) => {
    const builder = path.join(dir, `${kind}.builder`);
    for (const args of [['create', '6', '1', '1'], ['add', `r1z1-127.0.0.1:${port}/d1`, '1'], ['rebalance']]) {
      const result = spawnSync('/usr/bin/swift-ring-builder', [builder, ...args], { cwd: dir, encoding: 'utf8' });
      if (result.status !== 0 && !(args[0] === 'rebalance' && result.status === 1)) throw new Error(`swift-ring-builder ${args.join(' ')}: ${result.stdout}${result.stderr}`);
    }
    await fs.writeFile(path.join(dir, `${kind}-server.conf`), [
      '[DEFAULT]', 'bind_ip = 127.0.0.1', `bind_port = ${port}`, `devices = ${dir}/devices`, 'mount_check = false',
      `swift_dir = ${dir}`, `user = ${user}`, 'workers = 0', 'log_level = WARNING',
      '[pipeline:main]', `pipeline = ${kind}-server`, `[app:${kind}-server]`, `use = egg:swift#${kind}`, '',
    ].join('\n'));
  }));
  await fs.writeFile(path.join(dir, 'proxy-server.conf'), [
    '[DEFAULT]', 'bind_ip = 127.0.0.1', `bind_port = ${proxy}`, `swift_dir = ${dir}`, `user = ${user}`, 'workers = 0', 'log_level = WARNING',
    '[pipeline:main]',
    // slo: s3api builds multipart uploads on Swift's static large objects.
    'pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth slo dlo proxy-logging proxy-server',
    '[app:proxy-server]', 'use = egg:swift#proxy', 'account_autocreate = true',
    '[filter:catch_errors]', 'use = egg:swift#catch_errors',
    '[filter:gatekeeper]', 'use = egg:swift#gatekeeper',
    '[filter:healthcheck]', 'use = egg:swift#healthcheck',
    '[filter:proxy-logging]', 'use = egg:swift#proxy_logging',
    '[filter:cache]', 'use = egg:swift#memcache', `memcache_servers = 127.0.0.1:${memcached}`,
    '[filter:listing_formats]', 'use = egg:swift#listing_formats',
    '[filter:slo]', 'use = egg:swift#slo',
    '[filter:dlo]', 'use = egg:swift#dlo',
    '[filter:s3api]', 'use = egg:swift#s3api',
    '[filter:tempauth]', 'use = egg:swift#tempauth', `user_test_tester = ${SECRET_KEY} .admin`, '',
  ].join('\n'));

  const processes = [
    startDetached('/usr/bin/memcached', ['-p', String(memcached), '-l', '127.0.0.1', '-U', '0', '-u', user, '-m', '16'], dir),
    ...['account', 'container', 'object', 'proxy'].map((kind) =>
      startDetached(`/usr/bin/swift-${kind}-server`, [path.join(dir, `${kind}-server.conf`)], dir)),
  ];
  const endpoint = `http://127.0.0.1:${proxy}`;
  const client = new S3Client({
    region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
  });
  await waitUntil('Swift', async () => {
    for (const port of [account, container, object, memcached]) if (!await portAnswers(port)) return false;
    return (await fetch(`${endpoint}/healthcheck`)).ok;
  });
  let buckets = 0;
  return {
    endpoint,
    env: (bucket, prefix = 'convertd') => ({
      CONVERTD_STORAGE: `s3://${bucket}/${prefix}`,
      CONVERTD_S3_ENDPOINT: endpoint,
      CONVERTD_S3_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: ACCESS_KEY,
      AWS_SECRET_ACCESS_KEY: SECRET_KEY,
    }),
    async createBucket() {
      const bucket = `convertd-test-${process.pid}-${++buckets}`;
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      return bucket;
    },
    async list(bucket, prefix = '') {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
      return (page.Contents ?? []).map((entry) => entry.Key!).sort();
    },
    async stop() {
      client.destroy();
      await Promise.all(processes.map(killGroup));
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
