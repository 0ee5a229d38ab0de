// Starts the real service (node src/main.ts) on a free port with its own data directory, as a
// user would, and stops it with a signal. Tests talk to it over HTTP only.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../../src/node-flags.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly child: ChildProcess;
  /** Every log line the service printed so far. */
  readonly logs: string[];
  /** Sends a signal and waits for the process to exit; resolves with its exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** The folders tempDir() made in this test process: removed when it exits (a restart test reuses one meanwhile). */
const madeDirs: string[] = [];
process.once('exit', () => {
  for (const dir of madeDirs) rmSync(dir, { recursive: true, force: true });
});

export async function tempDir(prefix = 'convertd-test-'): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}

/**
 * Starts the service. With CONVERTD_TEST_BACKEND=scaled in the test's environment, "the service"
 * is the scale-out topology instead: an API node (convertd serve --no-workers) and a worker
 * (convertd worker) sharing a real Redis and a real S3 server, so that a suite proves the HTTP
 * behaviour is the same in both modes.
 */
export async function startServer(env: Record<string, string> = {}, dataDir?: string): Promise<RunningServer> {
  if (process.env.CONVERTD_TEST_BACKEND === 'scaled') {
    const { startScaledService } = await import('./scaled-service.ts');
    return startScaledService(env, dataDir);
  }
  return startProcess([path.join(ROOT, 'src', 'main.ts')], env, dataDir, 'listening');
}

const CLI = path.join(ROOT, 'src', 'cli', 'main.ts');

/** `convertd worker`, as a user starts one; resolves once it takes jobs. */
export function startWorker(env: Record<string, string>, dataDir?: string, logs: string[] = []): Promise<RunningServer> {
  return startProcess([CLI, 'worker'], env, dataDir, 'worker_started', logs);
}

/** `convertd serve --no-workers`: an API node; resolves once it listens. */
export function startApiNode(env: Record<string, string>, dataDir?: string, logs: string[] = []): Promise<RunningServer> {
  return startProcess([CLI, 'serve', '--no-workers'], env, dataDir, 'listening', logs);
}

/** How long a service may take to probe its engines and listen (seconds on an idle machine; far more on a loaded one). */
const START_TIMEOUT_MS = 180_000;

/** Runs a node script of the service and waits for the log event that says it is up. */
export async function startProcess(argv: string[], env: Record<string, string>, dataDir: string | undefined, readyEvent: 'listening' | 'worker_started', logs: string[] = []): Promise<RunningServer> {
  const dir = dataDir ?? (await tempDir());
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...argv], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      CONVERTD_DATA_DIR: dir,
      CONVERTD_LOG_LEVEL: 'info',
      // A suite starts the service dozens of times, most of them converting no office document
      // and few images: LibreOffice and the Node pools (sharp, data) start their processes at the
      // first such job. The tests of the warm pools ask for "eager" (the default) themselves.
      CONVERTD_LIBREOFFICE_START: 'lazy',
      CONVERTD_POOL_START: 'lazy',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    let buffer = '';
    // A service that does not come up is killed, not left behind: a live child would keep the
    // test file's process (and so the whole run) waiting for ever after the failure. The verdict
    // waits for the output already delivered (setImmediate runs after pending I/O): a test that
    // blocks the event loop meanwhile (making its samples with execFileSync) would otherwise see
    // the timer fire before the service's "listening" line is read.
    let listening = false;
    const timer = setTimeout(() => setImmediate(() => {
      if (listening) return;
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${START_TIMEOUT_MS / 1000} s:\n${logs.join('\n')}`));
    }), START_TIMEOUT_MS);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        logs.push(line);
        try {
          // A worker reports the port of its operations server, if it has one.
          const entry = JSON.parse(line) as { event?: string; port?: number; operations_port?: number };
          if (entry.event === readyEvent && (entry.port || readyEvent === 'worker_started')) {
            listening = true;
            clearTimeout(timer);
            resolve(entry.port ?? entry.operations_port ?? 0);
          }
        } catch {
          // not JSON
        }
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => logs.push(chunk));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${logs.join('\n')}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dataDir: dir,
    child,
    logs,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}
