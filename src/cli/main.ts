#!/usr/bin/env -S node --expose-gc --heap-growing-percent=100
// The convertd command: `serve` runs the service; `convert`, `formats`, `options` and `limits` talk
// to a running one through the same client the web page uses (src/client/convertd-client.ts).
//
// Exit codes: 0 all went well; 1 at least one conversion failed (the others still ran);
// 2 bad usage; 3 the service could not be reached or answered outside the contract.
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConvertdApiError, ConvertdClient, type OptionDescriptor, type ProgressRecord } from '../client/convertd-client.ts';

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_UNREACHABLE = 3;

const USAGE = `convertd: a self-hosted file conversion service

usage:
  convertd serve [--port N] [--host ADDRESS] [--data-dir DIR] [--no-workers]
  convertd worker [--data-dir DIR] [--concurrency N] [--port N]
  convertd convert FILE... --to FORMAT [--option NAME=VALUE]... [--delete-after]
                   [--server URL] [--out DIR] [--concurrency N] [--json]
  convertd options SOURCE TARGET [--server URL] [--json]
  convertd formats [--from FORMAT] [--server URL] [--json]
  convertd limits [--server URL] [--json]

convert:
  --option, -o NAME=VALUE   a conversion option, e.g. -o quality=70 -o width=800 (repeat it for
                            several; the value is everything after the first "=").
                            \`convertd options SOURCE TARGET\` lists what a pair takes. A value
                            the pair cannot take fails that file (invalid_option, saying what is
                            allowed); a name that does not apply to it is ignored, and said so.
  --delete-after            delete each result on the service as soon as it is downloaded
                            (instead of leaving it there for its lifetime)
options: the options of converting SOURCE to TARGET (format ids or extensions): name, type,
  allowed values, default and what each does; --json prints the service's answer as it is.

--server defaults to $CONVERTD_URL, then http://127.0.0.1:8080.
Exit codes: 0 success, 1 a conversion failed (or a result could not be deleted), 2 bad usage,
3 service unreachable.`;

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
CONVERTD_LIBREOFFICE_QUEUE, CONVERTD_POOL_START, CONVERTD_SANDBOX, CONVERTD_LOG_LEVEL.
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
  /** Where the result is on the service (relative to it), until it expires or is deleted. */
  readonly download_url?: string;
  /** The options in force for the job, as the service echoed them. */
  readonly options?: Readonly<Record<string, string>>;
  /** Options given that do not apply to this file's conversion (the service ignored them). */
  readonly ignored_options?: readonly string[];
  /** With --delete-after: whether the result is gone from the service. */
  readonly deleted?: boolean;
  readonly error?: { readonly code: string; readonly message: string; readonly details?: Readonly<Record<string, unknown>> };
}

/** `--option name=value`, repeatable: the value is everything after the first "=" (it may hold more). */
function parseOptionArguments(values: readonly string[]): Record<string, string> {
  const options: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const value of values) {
    const at = value.indexOf('=');
    if (at <= 0) throw new UsageError(`--option needs NAME=VALUE, not "${value}"`);
    const name = value.slice(0, at).trim();
    if (!/^[a-z][a-z0-9_]*$/i.test(name)) throw new UsageError(`--option: "${name}" is not an option name (letters, digits and _)`);
    if (Object.hasOwn(options, name)) throw new UsageError(`--option ${name} is given twice`);
    options[name] = value.slice(at + 1);
  }
  return options;
}

/** An error in words, with what the service said is allowed when a value was refused. */
function describeFailure(error: ConvertdApiError): string {
  if (error.code !== 'invalid_option') return error.message;
  const { minimum, maximum, values, pattern } = error.details as { minimum?: number; maximum?: number; values?: string[]; pattern?: string };
  // The service's message often says it already ("300 is outside 1-100"): then it is not repeated.
  const said = (...words: unknown[]) => words.every((word) => error.message.includes(String(word)));
  const allowed = values ? (said(...values) ? '' : `one of ${values.join(', ')}`)
    : minimum !== undefined && maximum !== undefined ? (said(minimum, maximum) ? '' : `${minimum} to ${maximum}`)
      : pattern ? `matching ${pattern}` : '';
  return allowed ? `${error.message} (allowed: ${allowed})` : error.message;
}

async function convertCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args, allowPositionals: true,
    options: {
      to: { type: 'string' }, server: { type: 'string' }, out: { type: 'string' }, concurrency: { type: 'string' }, json: { type: 'boolean' },
      option: { type: 'string', short: 'o', multiple: true }, 'delete-after': { type: 'boolean' },
    },
  });
  if (!values.to) throw new UsageError('convert needs --to FORMAT');
  if (positionals.length === 0) throw new UsageError('convert needs at least one file');
  const concurrency = Number(values.concurrency ?? 2);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 32) throw new UsageError('--concurrency must be a whole number from 1 to 32');
  const options = parseOptionArguments(values.option ?? []);
  const deleteAfter = values['delete-after'] === true;
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
          options,
          onProgress: (record: ProgressRecord) => view?.update(index, `${name}: ${record.status === 'queued' ? 'queued' : bar(record.progress)}`),
        });
        const output = path.join(outDir, path.basename(result.filename));
        await fs.writeFile(output, new Uint8Array(await result.data.arrayBuffer()));
        const { options: applied, ignored_options: ignored } = result.record;
        const notes = [
          ...(ignored?.length ? [`ignored ${ignored.join(', ')}: not an option of ${result.record.source} → ${result.record.target}`] : []),
        ];
        let deleted: boolean | undefined;
        let deleteError: FileOutcome['error'];
        if (deleteAfter) {
          try {
            await client.delete(result.record.download_url!, controller.signal);
            deleted = true;
            notes.push('deleted from the service');
          } catch (error) {
            // The file is here, but it is still on the service until its lifetime ends: a failure the user asked to hear about.
            deleted = false;
            const code = error instanceof ConvertdApiError ? error.code : 'error';
            deleteError = { code: String(code), message: `converted, but the result could not be deleted from the service: ${error instanceof Error ? error.message : String(error)}` };
            notes.push(deleteError.message);
          }
        }
        view?.update(index, `${name}: done → ${output} (${humanBytes(result.data.size)})${notes.length ? `; ${notes.join('; ')}` : ''}`);
        outcomes[index] = {
          file, ok: deleted !== false, output, size: result.data.size, download_url: result.record.download_url,
          ...(applied ? { options: applied } : {}), ...(ignored?.length ? { ignored_options: ignored } : {}),
          ...(deleted !== undefined ? { deleted } : {}), ...(deleteError ? { error: deleteError } : {}),
        };
      } catch (error) {
        const code = error instanceof ConvertdApiError ? error.code : (error as NodeJS.ErrnoException).code ?? 'error';
        const message = error instanceof ConvertdApiError ? describeFailure(error) : error instanceof Error ? error.message : String(error);
        if (code === 'network_error' || code === 'protocol_error') unreachable = true;
        view?.update(index, `${name}: failed (${code}): ${message}`);
        const details = error instanceof ConvertdApiError && Object.keys(error.details).length ? { details: error.details } : {};
        outcomes[index] = { file, ok: false, error: { code: String(code), message, ...details } };
      }
    }
  }));
  if (values.json) process.stdout.write(`${JSON.stringify({ results: outcomes }, null, 2)}\n`);
  if (unreachable) return EXIT_UNREACHABLE;
  return outcomes.every((o) => o.ok) ? EXIT_OK : EXIT_FAILED;
}

/** What an option allows, in a few words for the table. */
function allowedText(option: OptionDescriptor): string {
  switch (option.type) {
    case 'integer':
    case 'number': return option.minimum !== undefined && option.maximum !== undefined ? `${option.minimum}-${option.maximum}` : option.type;
    case 'boolean': return 'true, false';
    case 'enum': return (option.values ?? []).join(', ');
    case 'string': return option.pattern ?? 'text';
  }
}

/** Breaks text into lines of at most `width` characters (at spaces; a longer word stays whole). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines;
}

async function optionsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { server: { type: 'string' }, json: { type: 'boolean' } } });
  if (positionals.length !== 2) throw new UsageError('options needs SOURCE and TARGET, e.g. `convertd options png jpg`');
  const [source, target] = positionals.map((p) => p.toLowerCase().replace(/^\./, '')) as [string, string];
  const answer = await new ConvertdClient(serverUrl(values.server)).options(source, target);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    return EXIT_OK;
  }
  process.stdout.write(`${answer.source} → ${answer.target} (through ${answer.steps.join(', ')})\n`);
  if (answer.options.length === 0) {
    process.stdout.write('This conversion takes no options.\n');
    return EXIT_OK;
  }
  const rows = answer.options.map((o) => [o.name, o.type, allowedText(o), o.default === undefined ? '' : String(o.default), o.description]);
  const header = ['NAME', 'TYPE', 'ALLOWED', 'DEFAULT', 'DESCRIPTION'];
  const widths = header.slice(0, 4).map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const indent = widths.reduce((sum, w) => sum + w + 2, 0);
  // On a terminal the descriptions wrap within its width (at least 30 columns of them); piped, each stays on one line.
  const columns = process.stdout.isTTY ? Math.max(30, (process.stdout.columns || 100) - indent) : Number.POSITIVE_INFINITY;
  for (const row of [header, ...rows]) {
    const [first = '', ...more] = wrap(row[4]!, columns);
    process.stdout.write(`${row.slice(0, 4).map((cell, i) => cell.padEnd(widths[i]!)).join('  ')}  ${first}\n`);
    for (const line of more) process.stdout.write(`${' '.repeat(indent)}${line}\n`);
  }
  process.stdout.write(`\nGive them with: convertd convert FILE --to ${answer.target} --option NAME=VALUE (repeatable)\n`);
  return EXIT_OK;
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
  serve: serveCommand, worker: workerCommand, convert: convertCommand, options: optionsCommand, formats: formatsCommand, limits: limitsCommand,
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
