// npm run bench: office conversions per second through the service (warm LibreOffice pool), beside
// `soffice --convert-to pdf` started cold for each file, on the same files and machine. Not a
// test: numbers depend on the machine; the ratio is the point (the pool should be several times
// faster than the cold command line).
//
//   node scripts/bench.ts [--jobs 24] [--cold 4]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { documentSamples } from '../test/helpers/documents.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: { jobs: { type: 'string', default: '24' }, cold: { type: 'string', default: '4' } } });
const JOBS = Number(values.jobs);
const COLD_RUNS = Number(values.cold);

async function startService(dataDir: string): Promise<{ url: string; stop: () => void; pool: number }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'src', 'main.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', CONVERTD_DATA_DIR: dataDir, CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      for (const line of buffer.split('\n')) {
        const entry = /"event":"listening"/.test(line) ? JSON.parse(line) as { port: number; concurrency: number } : undefined;
        if (entry) resolve({ url: `http://127.0.0.1:${entry.port}`, stop: () => child.kill('SIGTERM'), pool: entry.concurrency });
      }
      buffer = buffer.slice(buffer.lastIndexOf('\n') + 1);
    });
    child.once('exit', (code) => reject(new Error(`the service exited with ${code}`)));
  });
}

async function convertOnce(url: string, data: Buffer, name: string): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([data]), name);
  form.append('target', 'pdf');
  const { job_id: jobId } = await (await fetch(`${url}/api/convert`, { method: 'POST', body: form })).json() as { job_id: string };
  for (;;) {
    const record = await (await fetch(`${url}/api/progress/${jobId}`)).json() as { status: string; download_url?: string; error?: unknown };
    if (record.status === 'error') throw new Error(`${name}: ${JSON.stringify(record.error)}`);
    if (record.status === 'done') {
      await (await fetch(`${url}${record.download_url}`)).arrayBuffer();
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Conversions per second with `parallel` clients, each converting in turn until JOBS are done. */
async function serviceRate(url: string, data: Buffer, name: string, parallel: number): Promise<number> {
  let started = 0;
  const begin = performance.now();
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (started < JOBS) {
      started++;
      await convertOnce(url, data, name);
    }
  }));
  return JOBS / ((performance.now() - begin) / 1000);
}

function coldRate(file: string, dir: string): number {
  const begin = performance.now();
  for (let i = 0; i < COLD_RUNS; i++) {
    // A fresh profile each time, as a per-file converter starts (shared/stack.md measured the same).
    execFileSync('soffice', [`-env:UserInstallation=file://${dir}/profile-${i}`, '--headless', '--convert-to', 'pdf', '--outdir', dir, file], { stdio: 'ignore' });
  }
  return COLD_RUNS / ((performance.now() - begin) / 1000);
}

const work = await fs.mkdtemp(path.join(os.tmpdir(), 'convertd-bench-'));
// The engines run as an unprivileged user when this runs as root: they must reach the data dir.
await fs.chmod(work, 0o711);
let stopService = () => {};
try {
  process.stdout.write('making sample documents...\n');
  const samples = await documentSamples();
  const service = await startService(path.join(work, 'data'));
  stopService = service.stop;
  process.stdout.write(`service up (${service.pool} jobs at once); ${JOBS} conversions per format through it, ${COLD_RUNS} cold soffice runs each\n\n`);
  const rows: string[][] = [['pair', 'service (conv/s)', 'cold soffice (conv/s)', 'ratio']];
  for (const format of ['docx', 'xlsx', 'pptx']) {
    const file = path.join(work, `sample.${format}`);
    await fs.writeFile(file, samples[format]!);
    await convertOnce(service.url, samples[format]!, `warmup.${format}`);
    const warm = await serviceRate(service.url, samples[format]!, `sample.${format}`, service.pool);
    const cold = coldRate(file, work);
    rows.push([`${format} → pdf`, warm.toFixed(2), cold.toFixed(2), `${(warm / cold).toFixed(1)}x`]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const row of rows) process.stdout.write(`${row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')}\n`);
  process.stdout.write(`\n${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}\n`);
} finally {
  stopService();
  await fs.rm(work, { recursive: true, force: true });
}
