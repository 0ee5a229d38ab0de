#!/usr/bin/env -S node --expose-gc --heap-growing-percent=100
// The convertd command: `serve` runs the service; `convert`, `formats` and `limits` talk to a
// running one through the same client the web page uses (src/client/convertd-client.ts).
//
// Exit codes: 0 all went well; 1 at least one conversion failed (the others still ran);
// 2 bad usage; 3 the service could not be reached or answered outside the contract.
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConvertdApiError, ConvertdClient, type ProgressRecord } from '../client/convertd-client.ts';

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_UNREACHABLE = 3;

const USAGE = `convertd: a self-hosted file conversion service

usage:
  convertd serve [--port N] [--host ADDRESS] [--data-dir DIR] [--no-workers]
  convertd worker [--data-dir DIR] [--concurrency N] [--port N]
  convertd convert FILE... --to FORMAT [--server URL] [--out DIR] [--concurrency N] [--json]
  convertd formats [--from FORMAT] [--server URL] [--json]
  convertd limits [--server URL] [--json]

--server defaults to $CONVERTD_URL, then http://127.0.0.1:8080.
Exit codes: 0 success, 1 a conversion failed, 2 bad usage, 3 service unreachable.`;

const WORKER_HELP = `convertd worker: runs conversion workers only, in the foreground (JSON logs on standard
output). Workers take jobs from Redis (CONVERTD_REDIS_URL, required) and read and write files
where the API nodes do (CONVERTD_STORAGE=s3://..., or a CONVERTD_DATA_DIR they share). Each worker
has its own engine pools.

  --data-dir DIR      CONVERTD_DATA_DIR: local work directories (default ./data)
  --concurrency N     CONVERTD_CONCURRENCY: conversions at once (default: the number of cores)
  --port N            CONVERTD_WORKER_PORT: serve /healthz, /readyz and /metrics on this port
                      (on HOST; 0 picks a free one); without it a worker serves no HTTP

Every other setting is the same environment variable as for \`convertd serve\` (see its --help).`;

const SERVE_HELP = `convertd serve: runs the service in the foreground (JSON logs on standard output).

  --port N          PORT (default 8080; 0 picks a free port)
  --host ADDRESS    HOST (default 127.0.0.1)
  --data-dir DIR    CONVERTD_DATA_DIR (default ./data)
  --no-workers      CONVERTD_ROLE=api: an API node only, converting nothing itself (needs
                    CONVERTD_REDIS_URL; run workers with \`convertd worker\`)

Scaling out: CONVERTD_REDIS_URL (job store, queue, rate limits in Redis), CONVERTD_STORAGE
(local, or s3://bucket/prefix with CONVERTD_S3_ENDPOINT, CONVERTD_S3_REGION,
CONVERTD_S3_FORCE_PATH_STYLE and the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY credentials),
CONVERTD_ROLE (all, api, worker).
Every other setting is an environment variable, validated at start (a bad value stops the service
with a message naming it): CONVERTD_MAX_FILE_BYTES, CONVERTD_FILE_LIFETIME_SECONDS,
CONVERTD_RATE_LIMITS, CONVERTD_READ_RATE_LIMITS, CONVERTD_TRUSTED_PROXIES, CONVERTD_CONCURRENCY,
CONVERTD_QUEUE_LIMIT, CONVERTD_JOB_TIMEOUT_SECONDS, CONVERTD_ENGINE_TIMEOUTS, CONVERTD_MAX_OUTPUT_BYTES,
CONVERTD_MAX_IMAGE_PIXELS, CONVERTD_MAX_MEDIA_SECONDS, CONVERTD_MAX_ATTEMPTS,
CONVERTD_SWEEP_INTERVAL_SECONDS, CONVERTD_TOMBSTONE_SECONDS, CONVERTD_SHUTDOWN_GRACE_SECONDS,
CONVERTD_HEADERS_TIMEOUT_SECONDS, CONVERTD_REQUEST_TIMEOUT_SECONDS, CONVERTD_IDLE_TIMEOUT_SECONDS,
CONVERTD_LIBREOFFICE_POOL, CONVERTD_LIBREOFFICE_MAX_JOBS, CONVERTD_LIBREOFFICE_START,
CONVERTD_LIBREOFFICE_QUEUE, CONVERTD_SANDBOX, CONVERTD_LOG_LEVEL.
The README's "Configuration" table says what each means and its default.`;

class UsageError extends Error {}

function serverUrl(value: string | undefined): string {
  return value ?? process.env.CONVERTD_URL ?? 'http://127.0.0.1:8080';
}

function humanBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

/** Progress display: one redrawn line per file on a terminal, one plain line per change otherwise. */
class ProgressView {
  private readonly lines: string[];
  private readonly tty: boolean;
  private drawn = false;

  constructor(files: readonly string[], tty: boolean) {
    this.lines = files.map((file) => `${path.basename(file)}: waiting`);
    this.tty = tty;
  }

  update(index: number, text: string): void {
    this.lines[index] = text;
    if (!this.tty) {
      process.stderr.write(`${text}\n`);
      return;
    }
    if (this.drawn) process.stderr.write(`\x1b[${this.lines.length}A`);
    for (const line of this.lines) process.stderr.write(`\x1b[2K${line}\n`);
    this.drawn = true;
  }
}

function bar(progress: number): string {
  const width = 20;
  const filled = Math.round((progress / 100) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(progress).padStart(3)}%`;
}

interface FileOutcome {
  readonly file: string;
  readonly ok: boolean;
  readonly output?: string;
  readonly size?: number;
  readonly error?: { readonly code: string; readonly message: string };
}

async function convertCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args, allowPositionals: true,
    options: { to: { type: 'string' }, server: { type: 'string' }, out: { type: 'string' }, concurrency: { type: 'string' }, json: { type: 'boolean' } },
  });
  if (!values.to) throw new UsageError('convert needs --to FORMAT');
  if (positionals.length === 0) throw new UsageError('convert needs at least one file');
  const concurrency = Number(values.concurrency ?? 2);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 32) throw new UsageError('--concurrency must be a whole number from 1 to 32');
  const outDir = path.resolve(values.out ?? '.');
  await fs.mkdir(outDir, { recursive: true });
  const client = new ConvertdClient(serverUrl(values.server));
  const view = values.json ? undefined : new ProgressView(positionals, process.stderr.isTTY === true);
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort(new Error('interrupted')));

  const outcomes: FileOutcome[] = [];
  let unreachable = false;
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, positionals.length) }, async () => {
    while (next < positionals.length) {
      const index = next++;
      const file = positionals[index]!;
      const name = path.basename(file);
      try {
        const data = new Blob([await fs.readFile(file)]);
        const result = await client.convert(data, name, values.to!, {
          signal: controller.signal,
          onProgress: (record: ProgressRecord) => view?.update(index, `${name}: ${record.status === 'queued' ? 'queued' : bar(record.progress)}`),
        });
        const output = path.join(outDir, path.basename(result.filename));
        await fs.writeFile(output, new Uint8Array(await result.data.arrayBuffer()));
        view?.update(index, `${name}: done → ${output} (${humanBytes(result.data.size)})`);
        outcomes[index] = { file, ok: true, output, size: result.data.size };
      } catch (error) {
        const code = error instanceof ConvertdApiError ? error.code : (error as NodeJS.ErrnoException).code ?? 'error';
        const message = error instanceof Error ? error.message : String(error);
        if (code === 'network_error' || code === 'protocol_error') unreachable = true;
        view?.update(index, `${name}: failed (${code}): ${message}`);
        outcomes[index] = { file, ok: false, error: { code: String(code), message } };
      }
    }
  }));
  if (values.json) process.stdout.write(`${JSON.stringify({ results: outcomes }, null, 2)}\n`);
  if (unreachable) return EXIT_UNREACHABLE;
  return outcomes.every((o) => o.ok) ? EXIT_OK : EXIT_FAILED;
}

async function formatsCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { from: { type: 'string' }, server: { type: 'string' }, json: { type: 'boolean' } } });
  const formats = await new ConvertdClient(serverUrl(values.server)).formats();
  if (values.from) {
    const key = values.from.toLowerCase().replace(/^\./, '');
    const source = formats.find((f) => f.id === key || f.extensions.includes(key));
    if (!source) throw new UsageError(`the service does not read "${values.from}"; \`convertd formats\` lists what it reads`);
    if (values.json) process.stdout.write(`${JSON.stringify(source, null, 2)}\n`);
    else process.stdout.write(`${source.id} (${source.name}) → ${source.targets.join(', ')}\n`);
    return EXIT_OK;
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ formats }, null, 2)}\n`);
    return EXIT_OK;
  }
  const width = Math.max(...formats.map((f) => f.id.length));
  for (const format of formats) {
    process.stdout.write(`${format.id.padEnd(width)}  ${format.category.padEnd(12)}  ${format.targets.length ? `→ ${format.targets.join(' ')}` : '(written only)'}\n`);
  }
  return EXIT_OK;
}

async function limitsCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { server: { type: 'string' }, json: { type: 'boolean' } } });
  const limits = await new ConvertdClient(serverUrl(values.server)).limits();
  if (values.json) {
    process.stdout.write(`${JSON.stringify(limits, null, 2)}\n`);
    return EXIT_OK;
  }
  process.stdout.write(`largest upload: ${humanBytes(limits.max_file_size_bytes)}\nresults kept for: ${limits.file_lifetime_seconds} s\n`);
  for (const rule of limits.rate_limits) {
    process.stdout.write(`${rule.applies_to}: ${rule.limit} per ${rule.window_seconds} s (${rule.remaining} left, resets in ${rule.reset_seconds} s)\n`);
  }
  return EXIT_OK;
}

async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: {
    port: { type: 'string' }, host: { type: 'string' }, 'data-dir': { type: 'string' }, 'no-workers': { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
  } });
  if (values.help) {
    process.stdout.write(`${SERVE_HELP}\n`);
    return EXIT_OK;
  }
  if (values.port !== undefined) process.env.PORT = values.port;
  if (values.host !== undefined) process.env.HOST = values.host;
  if (values['data-dir'] !== undefined) process.env.CONVERTD_DATA_DIR = values['data-dir'];
  if (values['no-workers']) process.env.CONVERTD_ROLE = 'api';
  await import('../main.ts');
  return new Promise(() => undefined); // the service runs until a signal stops it
}

async function workerCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { 'data-dir': { type: 'string' }, concurrency: { type: 'string' }, port: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    process.stdout.write(`${WORKER_HELP}\n`);
    return EXIT_OK;
  }
  if (values['data-dir'] !== undefined) process.env.CONVERTD_DATA_DIR = values['data-dir'];
  if (values.concurrency !== undefined) process.env.CONVERTD_CONCURRENCY = values.concurrency;
  if (values.port !== undefined) process.env.CONVERTD_WORKER_PORT = values.port;
  process.env.CONVERTD_ROLE = 'worker';
  await import('../main.ts');
  return new Promise(() => undefined); // the worker runs until a signal stops it
}

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  serve: serveCommand, worker: workerCommand, convert: convertCommand, formats: formatsCommand, limits: limitsCommand,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command ? EXIT_OK : EXIT_USAGE;
  }
  const run = COMMANDS[command];
  if (!run) throw new UsageError(`unknown command "${command}"`);
  return run(rest);
}

main(process.argv.slice(2)).then((code) => process.exit(code), (error: unknown) => {
  if (error instanceof UsageError || (error as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`convertd: ${(error as Error).message}\n\n${USAGE}\n`);
    process.exit(EXIT_USAGE);
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`convertd: ${message}\n`);
  process.exit(error instanceof ConvertdApiError && !['network_error', 'protocol_error'].includes(error.code) ? EXIT_FAILED : EXIT_UNREACHABLE);
});
