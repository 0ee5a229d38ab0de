// npm run bench [-- --quick]: the benchmark suite. Starts its own service (the README's
// configuration, rate limits off), measures, prints tables and writes BENCHMARKS.md:
//   1. overhead: the service end to end (submit → done → downloaded; polling every 0.5 s as the
//      spec's client does, and with the event stream) against the bare engine on the same file;
//   2. engine choice: the engine the service uses for a pair against the alternatives installed;
//   3. throughput at concurrency 1, 2, 4 (8 in the full run) for a mixed workload, with the
//      latency of /api/progress measured meanwhile, and idle with the service held to one core;
//      the load comes from wrk (Debian's, in a process of its own on the other core) where it is
//      installed, otherwise from autocannon in this process;
//   3b. office throughput: small docx/xlsx/pptx → pdf through the service against the same
//      LibreOffice pool driven directly;
//   4. uploads: 1, 20 and 50 concurrent 25 MB uploads, throughput and the server's peak RSS;
//   5. start-up: to listening, and to the first LibreOffice conversion;
//   6. scale-out: jobs/s with one and two workers behind an API node on Redis + S3 (real
//      redis-server and Swift, as in the tests), against the embedded service.
// Every figure is the median of several runs, with the spread (min-max). Not a test: nothing here
// is asserted; `npm test` never times anything.
//
// `npm run bench -- --overhead-only` measures tables 1 and 1b alone and puts them in place of the
// old ones in BENCHMARKS.md, leaving the other tables as the last full run wrote them (a row
// added for a new format family needs no hour-long run). `npm run bench -- --families 'OCR,djvu'`
// measures only those rows of table 1 and puts each in place of its old row (or after the last),
// leaving every other row and table as it was.
import { FONTCONFIG_FILE } from '../src/engines/support/fonts/index.ts';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { simpleParser } from 'mailparser';
import sharp from 'sharp';
import { ConvertdClient } from '../src/client/convertd-client.ts';
import { documentSamples, TEXT_SAMPLES } from '../test/helpers/documents.ts';
import { noisePng, sampleImage } from '../test/helpers/fixtures.ts';
import { officeSamples } from '../test/helpers/office-samples.ts';
import { startRedis, startS3, type RedisServer, type S3Server } from '../test/helpers/backing-servers.ts';
import { startApiNode, startWorker, type RunningServer } from '../test/helpers/server.ts';
import { pino } from 'pino';
import { createEngines, readEngineSettings } from '../src/engines/assembly.ts';
import { engineModule, mp4Encoders, VP9_SPEED, WEBM_ENCODERS } from '../src/engines/index.ts';
import type { Engine } from '../src/engines/types.ts';
import { SERVICE_NODE_FLAGS } from '../src/node-flags.ts';
import { configureCgroupLimits } from '../src/process/cgroups.ts';
import { configureSandbox, giveToEngineUser } from '../src/process/sandbox.ts';

/** The LibreOffice pool of the engine-level tables: `size` processes, never recycled during a run. */
const OFFICE_SETTINGS = (size: number): NodeJS.ProcessEnv => ({
  CONVERTD_LIBREOFFICE_POOL: String(size), CONVERTD_LIBREOFFICE_MAX_JOBS: '1000', CONVERTD_LIBREOFFICE_QUEUE: '10',
});

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: {
  quick: { type: 'boolean', default: false },
  'overhead-only': { type: 'boolean', default: false },
  // Comma-separated families of table 1 (its first column): only their rows are measured, and
  // they replace (or are added to) their rows in BENCHMARKS.md, every other row and table kept.
  families: { type: 'string' },
  out: { type: 'string', default: path.join(ROOT, 'BENCHMARKS.md') },
} });
const QUICK = values.quick;
/** The families of table 1 to measure alone (--families), or undefined for all of them. */
const FAMILIES = values.families === undefined ? undefined : new Set(values.families.split(',').map((family) => family.trim()).filter(Boolean));
const OVERHEAD_ONLY = values['overhead-only'] || FAMILIES !== undefined;
/** The font folders Debian's packages gave the engines before #28: DejaVu, Liberation, URW, OpenSymbol. */
const FONTS_BEFORE_28 = ['/usr/share/fonts/truetype/dejavu', '/usr/share/fonts/truetype/liberation2', '/usr/share/fonts/truetype/libreoffice', '/usr/share/fonts/opentype/urw-base35', '/usr/share/fonts/type1/urw-base35', '/usr/share/fonts/X11/Type1'];
const RUNS = QUICK ? 3 : 5;
const { VIPSHOME: _vipsHome, ...toolEnv } = process.env;

/** What the worker logs of a finished job: its time in the worker, and the engine step's share. */
interface JobDone { ms: number; steps: { prepare: number; convert: number; store: number } }
interface Service {
  url: string;
  child: ChildProcess;
  startedMs: number;
  /** The service's job_done log lines, by job id. */
  jobsDone: Map<string, JobDone>;
  stop(): Promise<void>;
}

async function startService(dataDir: string, env: Record<string, string> = {}): Promise<Service> {
  const begin = performance.now();
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.join(ROOT, 'src', 'main.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', CONVERTD_DATA_DIR: dataDir, CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', (code, signal) => {
    if (code !== 0) process.stderr.write(`service exited with ${code ?? signal}\n`);
    resolve();
  }));
  const jobsDone = new Map<string, JobDone>();
  const port = await new Promise<number>((resolve, reject) => {
    let buffer = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line.includes('"event":"listening"')) resolve((JSON.parse(line) as { port: number }).port);
        else if (line.includes('"event":"job_done"')) {
          const done = JSON.parse(line) as JobDone & { job_id: string };
          jobsDone.set(done.job_id, { ms: done.ms, steps: done.steps });
        }
        // Warnings and errors of the service are worth seeing beside the figures.
        else if (/"level":(40|50|60)/.test(line)) process.stderr.write(`service: ${line}\n`);
      }
    });
    void exited.then(() => reject(new Error('the service exited before listening')));
  });
  return { url: `http://127.0.0.1:${port}`, child, startedMs: performance.now() - begin, jobsDone, stop: async () => { child.kill('SIGTERM'); await exited; } };
}

interface Stat { median: number; min: number; max: number }
function stat(samples: number[]): Stat {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)]!, min: sorted[0]!, max: sorted.at(-1)! };
}
/**
 * A 95% confidence interval of the median, free of any assumption about the distribution: the
 * order statistics k and n+1-k, with k the largest for which Binomial(n, 1/2) < k has a chance
 * of at most 2.5% (for 15 samples, the 4th and the 12th). Undefined below 6 samples.
 */
function medianInterval(samples: number[]): [number, number] | undefined {
  const n = samples.length;
  const sorted = [...samples].sort((a, b) => a - b);
  let below = 0; // P(Binomial(n, 1/2) < k)
  let choose = 1; // n choose j, for j = k - 1
  let k = 0;
  for (let j = 0; j < n; j++) {
    const next = below + choose / 2 ** n;
    if (next > 0.025) break;
    below = next;
    k = j + 1;
    choose = (choose * (n - j)) / (j + 1);
  }
  return k >= 1 ? [sorted[k - 1]!, sorted[n - k]!] : undefined;
}
/**
 * The median of per-pair ratios with its 95% interval, as "1.03x (1.00-1.04)". A large file's
 * target is 3%, so table 1 gives its ratios three decimals: with two, 1.025 and 1.034 both read
 * "1.03x".
 */
function ratioText(ratios: number[], digits = 2): string {
  const interval = medianInterval(ratios);
  return `${stat(ratios).median.toFixed(digits)}x${interval ? ` (${interval[0].toFixed(digits)}-${interval[1].toFixed(digits)})` : ''}`;
}
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
/**
 * CPU time (user and system, in ms) a process has used so far, on its own: not its reaped
 * children's (the service's would include the engine processes it started).
 */
async function cpuMs(pid: number): Promise<number> {
  const text = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * (1000 / CLOCK_TICKS);
}
const fmt = (s: Stat, digits = 0) => `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}-${s.max.toFixed(digits)})`;

async function repeat(runs: number, measure: () => Promise<number>): Promise<Stat> {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) samples.push(await measure());
  return stat(samples);
}

async function timed(work: () => Promise<unknown> | unknown): Promise<number> {
  const begin = performance.now();
  await work();
  return performance.now() - begin;
}

function run(program: string, args: string[], cwd: string): void {
  execFileSync(program, args, { cwd, env: toolEnv, stdio: 'ignore' });
}

/** Peak resident memory of a process while `work` runs, in MiB, sampled every 20 ms. */
async function peakRss(pid: number, work: () => Promise<unknown>): Promise<{ baseline: number; peak: number }> {
  const rss = async () => Number(/VmRSS:\s+(\d+)/.exec(await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => ''))?.[1] ?? 0) / 1024;
  const baseline = await rss();
  let peak = baseline;
  let running = true;
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, await rss());
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  await work();
  running = false;
  await sampler;
  return { baseline, peak };
}

const sections: string[] = [];
/** Table 1's rows measured with --families, merged into the old table when written. */
const familyRows: string[][] = [];
const CHANGES_HEADING = '## Changes made from these numbers';

const WRK = '/usr/bin/wrk';
const hasWrk = await fs.access(WRK).then(() => true, () => false);

/**
 * wrk's own latency report (--latency) has 50, 75, 90 and 99 only; the issue asks for p50, p95
 * and p99, so a script's done() hook prints those from wrk's full histogram, in microseconds.
 * It defines no request or response hook, so wrk keeps its fast path.
 */
const WRK_PERCENTILES = 'done = function(summary, latency, requests)\n'
  + '  io.write(string.format("percentiles_us %d %d %d\\n", latency:percentile(50), latency:percentile(95), latency:percentile(99)))\n'
  + 'end\n';

/** Progress load figures: requests per second and latency percentiles in ms. */
interface LoadFigures { rps: number; p50: number; p95: number; p99: number }

/** Runs wrk against `url` for `seconds` on the given core, in a process of its own. */
async function wrkLoad(url: string, seconds: number, core: number, script: string): Promise<LoadFigures> {
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn('/usr/bin/taskset', ['-c', String(core), WRK, '-t1', '-c10', `-d${seconds}s`, '-s', script, url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; });
    child.on('error', reject);
    child.on('close', () => resolve(text));
  });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? NaN);
  const [p50, p95, p99] = (/^percentiles_us (\d+) (\d+) (\d+)$/m.exec(output)?.slice(1) ?? [NaN, NaN, NaN]).map((us) => Number(us) / 1000) as [number, number, number];
  return { rps, p50, p95, p99 };
}

/**
 * The progress endpoint's baseline: bare fastify (the service's version) answering the same record
 * on the same route, with nothing else around it (no hooks, logging, metrics or store).
 */
async function startBareFastify(record: unknown): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const code = [
    "import Fastify from 'fastify';",
    'const record = JSON.parse(process.env.BENCH_RECORD);',
    'const app = Fastify();',
    "app.get('/api/progress/:job_id', async () => record);",
    "await app.listen({ port: 0, host: '127.0.0.1' });",
    "process.stdout.write(`${app.server.address().port}\\n`);",
  ].join('\n');
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: ROOT, env: { ...process.env, BENCH_RECORD: JSON.stringify(record) }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').once('data', (chunk: string) => resolve(Number(chunk.trim())));
    void exited.then(() => reject(new Error('the bare fastify server exited before listening')));
  });
  return { url: `http://127.0.0.1:${port}`, child, stop: async () => { child.kill('SIGTERM'); await exited; } };
}

/** Holds every thread of a process to the given cores (taskset -a). */
function pin(pid: number, cores: string): void {
  execFileSync('/usr/bin/taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' });
}
function table(title: string, intro: string, header: string[], rows: string[][]): void {
  const widths = header.map((_, i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const text = [`## ${title}`, '', intro, '', line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line), ''].join('\n');
  process.stdout.write(`\n${text}\n`);
  sections.push(text);
}

/**
 * `document` with each of `measured` (a "## title" section) in place of the section of the same
 * title, the rest untouched: what --overhead-only writes.
 */
function replaceSections(document: string, measured: readonly string[]): string {
  let text = document;
  for (const section of measured) {
    const heading = section.slice(0, section.indexOf('\n'));
    const begin = text.indexOf(`${heading}\n`);
    if (begin < 0) throw new Error(`${values.out} has no section "${heading}" to replace: run the whole benchmark`);
    const next = text.indexOf('\n## ', begin + heading.length);
    text = `${text.slice(0, begin)}${section}${next < 0 ? '\n' : text.slice(next)}`;
  }
  return text;
}

const FAMILY_NOTE = 'Measured alone by `npm run bench -- --families`';

/**
 * `document` with `rows` (table 1's cells) each in place of the row of the same family and
 * conversion in its "## 1. Overhead" table, or added after its last row, and a line after the
 * table naming what was measured alone and when: what --families writes.
 */
function mergeOverheadRows(document: string, rows: readonly string[][]): string {
  const heading = '## 1. Overhead';
  const begin = document.indexOf(`${heading}\n`);
  if (begin < 0) throw new Error(`${values.out} has no section "${heading}": run the whole benchmark first`);
  const end = document.indexOf('\n## ', begin + heading.length);
  const lines = document.slice(begin, end < 0 ? undefined : end).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  let last = first;
  while (lines[last + 1]?.startsWith('|')) last++;
  const cells = (line: string) => line.slice(1, -1).split('|').map((cell) => cell.trim());
  const key = (row: readonly string[]) => `${row[0]}\u0000${row[1]!.replace(/ \(.*$/, '')}`;
  const header = cells(lines[first]!);
  const table = lines.slice(first + 2, last + 1).map(cells);
  for (const row of rows) {
    const at = table.findIndex((old) => key(old) === key(row));
    if (at >= 0) table[at] = [...row];
    else table.push([...row]);
  }
  const widths = header.map((_, i) => Math.max(header[i]!.length, ...table.map((r) => r[i]!.length)));
  const line = (row: readonly string[]) => `| ${row.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const measured = [...new Set(rows.map((row) => row[0]))].join(', ');
  // Earlier runs' notes stay (what they say of their rows' conditions still holds), the new one after them.
  const rest = lines.slice(last + 1);
  const earlier = rest.filter((text) => text.startsWith(FAMILY_NOTE));
  const after = rest.filter((text) => !text.startsWith(FAMILY_NOTE));
  while (after[0] === '') after.shift();
  const note = `${FAMILY_NOTE} on ${new Date().toISOString().slice(0, 10)} (the other rows as above): ${measured}.`;
  const notes = [...earlier.flatMap((text) => [text, '']), note];
  const section = [...lines.slice(0, first), line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...table.map(line), '', ...notes, ...after].join('\n');
  return `${document.slice(0, begin)}${section}${end < 0 ? '' : document.slice(end)}`;
}

const work = await fs.mkdtemp(path.join(os.tmpdir(), 'convertd-bench-'));
await fs.chmod(work, 0o711); // the engines run as an unprivileged user when this runs as root
const services: Service[] = [];
try {
  process.stdout.write(`making samples in ${work}...\n`);
  const docs = await documentSamples();
  const largeMd = Array.from({ length: 400 }, (_, i) => `## Section ${i}\n\n${'Some *markup* text with a [link](https://example.org). '.repeat(20)}\n`).join('\n');
  const largeCsv = `id,name,value\n${Array.from({ length: 200_000 }, (_, i) => `${i},row ${i},${i * 3.5}`).join('\n')}\n`;
  // A 12-megapixel photo-like JPEG (smoothed noise): what a phone camera uploads.
  const photo = await sharp(await noisePng(400, 300)).resize(4000, 3000, { kernel: 'cubic' }).jpeg({ quality: 90 }).toBuffer();
  const files: Record<string, Buffer> = {
    'small.png': await sampleImage('png'), 'large.jpg': photo,
    'small.docx': docs.docx!, 'small.md': Buffer.from(TEXT_SAMPLES.md!), 'large.md': Buffer.from(largeMd),
    'small.csv': Buffer.from('a,b\n1,2\n3,4\n'), 'large.csv': Buffer.from(largeCsv),
  };
  run('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=3', 'small.wav'], work);
  run('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=120', 'large.wav'], work);
  run('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25:duration=2', '-pix_fmt', 'yuv420p', 'small.mp4'], work);
  run('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=1280x720:rate=25:duration=20', '-pix_fmt', 'yuv420p', 'large.mp4'], work);
  await fs.writeFile(path.join(work, 'large.md'), largeMd);
  run('pandoc', ['--from', 'markdown', '--to', 'docx', '-o', 'large.docx', 'large.md'], work);
  // One typical file for each family issue #30 added (the engines' other formats), for table 1.
  files['letter.abw'] = (await officeSamples()).abw!;
  files['book.epub'] = docs.epub!;
  const srtTime = (seconds: number) => new Date(seconds * 1000).toISOString().slice(11, 23).replace('.', ',');
  files['film.srt'] = Buffer.from(Array.from({ length: 2000 }, (_, i) => `${i + 1}\n${srtTime(i * 2)} --> ${srtTime(i * 2 + 1.5)}\nLine ${i + 1} of what the <i>heron</i> says.\n`).join('\n'));
  files['notes.dokuwiki'] = Buffer.from(Array.from({ length: 400 }, (_, i) => `===== Section ${i} =====\n\n${'Some **wiki** text with a [[https://example.org|link]]. '.repeat(20)}\n`).join('\n'));
  files['settings.plist'] = Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><array>${Array.from({ length: 20_000 }, (_, i) => `<dict><key>id</key><integer>${i}</integer><key>name</key><string>row ${i}</string><key>on</key>${i % 2 ? '<true/>' : '<false/>'}</dict>`).join('')}</array></plist>\n`);
  await fs.writeFile(path.join(work, 'photo.jpg'), await sharp(photo).resize(1600, 1200).toBuffer());
  run('/usr/bin/convert', ['photo.jpg', 'photo.xwd'], work);
  // A one-page colour DjVu of the same photo (DjVuLibre's own wavelet encoder, from a PPM).
  run('/usr/bin/convert', ['photo.jpg', 'photo.ppm'], work);
  run('c44', ['photo.ppm', 'photo.djvu'], work);
  await fs.mkdir(path.join(work, 'sources'));
  for (let i = 0; i < 300; i++) await fs.writeFile(path.join(work, 'sources', `part-${i}.txt`), `${'Some text of part '.repeat(200)}${i}\n`);
  run('bsdtar', ['--zstd', '-cf', 'sources.tar.zst', 'sources'], work);
  await fs.copyFile('/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', path.join(work, 'font.ttf'));
  // A 20-page PostScript document: a heading and forty lines of text a page.
  files['report.ps'] = Buffer.from(['%!PS-Adobe-3.0', '%%Pages: 20', '/Helvetica findfont 11 scalefont setfont',
    ...Array.from({ length: 20 }, (_, page) => [`%%Page: ${page + 1} ${page + 1}`, `72 760 moveto (Page ${page + 1}) show`,
      ...Array.from({ length: 40 }, (_, line) => `72 ${740 - line * 16} moveto (Line ${line + 1}: some words of a report drawn by the program.) show`), 'showpage'].join('\n')),
    '%%EOF', ''].join('\n'));
  // A page of text for OCR: twenty lines of 28 px DejaVu Sans on a 1240 × 1754 page (A4 at 150 dpi).
  run('/usr/bin/python3', ['-c', [
    'from PIL import Image, ImageDraw, ImageFont',
    "font = ImageFont.truetype('/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', 28)",
    "page = Image.new('L', (1240, 1754), 'white'); draw = ImageDraw.Draw(page)",
    "for i in range(20): draw.text((90, 120 + i * 60), f'Line {i + 1}: some words of a scanned report to read.', font=font, fill='black')",
    "page.save('page.png')",
    // Two scanned pages (the page's picture alone, 150 dpi) as a PDF, for OCR of a PDF.
    "page.save('scanned-report.pdf', save_all=True, append_images=[page], resolution=150)",
  ].join('\n')], work);
  files['scanned-report.pdf'] = await fs.readFile(path.join(work, 'scanned-report.pdf'));
  // The families of issue #31 that have no sample above: a PDF of the report (its first page for
  // MuPDF's SVG), 5,000 points of GeoJSON, and a plain e-mail of some 300 lines.
  await fs.writeFile(path.join(work, 'report.ps'), files['report.ps']!);
  run('gs', ['-dSAFER', '-dBATCH', '-dNOPAUSE', '-dQUIET', '-sDEVICE=pdfwrite', '-sOutputFile=report.pdf', 'report.ps'], work);
  files['points.geojson'] = Buffer.from(JSON.stringify({
    type: 'FeatureCollection',
    features: Array.from({ length: 5000 }, (_, i) => ({ type: 'Feature', properties: { id: i, name: `point ${i}` }, geometry: { type: 'Point', coordinates: [-10 + (i % 100) * 0.2, 40 + Math.floor(i / 100) * 0.2] } })),
  }));
  // A drawing for the inkscape engine: 200 coloured circles and a line of text.
  files['drawing.svg'] = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="800" height="600">${Array.from({ length: 200 }, (_, i) => `<circle cx="${20 + (i % 20) * 38}" cy="${20 + Math.floor(i / 20) * 55}" r="16" fill="#${((i * 2654435761) >>> 8 & 0xffffff).toString(16).padStart(6, '0')}"/>`).join('')}<text x="20" y="590" font-size="20">A drawing made a metafile</text></svg>`);
  files['letter.eml'] = Buffer.from(['From: Ada <ada@example.org>', 'To: Grace <grace@example.org>', 'Subject: The report', 'Date: Tue, 1 Dec 2026 10:00:00 +0000',
    'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', '', ...Array.from({ length: 300 }, (_, i) => `Line ${i + 1} of the letter, with some words about the report.`), ''].join('\r\n'));
  // A typical web page for the chromium engine: a heading, a grid of boxes, 200 paragraphs (about 5 pages of A4).
  // A sphere-like model of 40 × 40 quads (3,200 triangles once assimp triangulates it), for assimp.
  files['mesh.obj'] = Buffer.from((() => {
    const n = 40;
    const lines: string[] = [];
    for (let i = 0; i <= n; i++) for (let j = 0; j <= n; j++) {
      const [t, p] = [(i / n) * Math.PI, (j / n) * 2 * Math.PI];
      lines.push(`v ${(Math.sin(t) * Math.cos(p)).toFixed(5)} ${(Math.sin(t) * Math.sin(p)).toFixed(5)} ${Math.cos(t).toFixed(5)}`);
    }
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
      const a = i * (n + 1) + j + 1;
      lines.push(`f ${a} ${a + 1} ${a + n + 2} ${a + n + 1}`);
    }
    return `${lines.join('\n')}\n`;
  })());
  files['page.html'] = Buffer.from(`<!doctype html><html><head><meta charset="utf-8"><title>Report</title><style>body{font:14px sans-serif}.grid{display:grid;grid-template-columns:repeat(3,1fr);gap:8px}.grid div{height:60px;background:#36c}</style></head><body><h1>Report</h1><div class="grid"><div></div><div></div><div></div></div>${Array.from({ length: 200 }, (_, i) => `<p>Paragraph ${i + 1}: some words of a page printed by the browser, with <b>bold</b> and <i>italic</i> text.</p>`).join('')}</body></html>`);
  // A LaTeX article of a few pages with a cross-reference (two LuaLaTeX runs under latexmk).
  files['paper.tex'] = Buffer.from(`\\documentclass{article}\n\\begin{document}\n\\section{Opening}\\label{s:a}\nSee Section~\\ref{s:b}.\n${Array.from({ length: 60 }, (_, i) => `Paragraph ${i + 1}: words of an article typeset by LuaLaTeX, with \\textbf{bold} and \\emph{emphasis}.\n`).join('\n')}\n\\section{Closing}\\label{s:b}\nThe end.\n\\end{document}\n`);
  for (const name of ['small.wav', 'large.wav', 'small.mp4', 'large.mp4', 'large.docx', 'photo.xwd', 'photo.djvu', 'sources.tar.zst', 'font.ttf', 'page.png', 'report.pdf']) files[name] = await fs.readFile(path.join(work, name));
  for (const [name, data] of Object.entries(files)) await fs.writeFile(path.join(work, name), data);

  // 5. Start-up (measured first, on a fresh data directory).
  const startups: number[] = [];
  const firstOffice: number[] = [];
  for (let i = 0; i < (OVERHEAD_ONLY ? 0 : QUICK ? 2 : 3); i++) {
    const service = await startService(path.join(work, `startup-${i}`));
    startups.push(service.startedMs);
    const begin = performance.now();
    await new ConvertdClient(service.url).convert(new Blob([files['small.docx']!]), 'first.docx', 'pdf');
    firstOffice.push(service.startedMs + performance.now() - begin);
    await service.stop();
  }
  const service = await startService(path.join(work, 'data'));
  services.push(service);
  const client = new ConvertdClient(service.url);
  const convertVia = (events: boolean, name: string, target: string, options?: Record<string, string>) => () => timed(() => client.convert(new Blob([files[name]!]), name, target, { events, pollIntervalMs: 500, ...(options ? { options } : {}) }));

  // The progress endpoint of one finished job, idle: the server held to core 0 and wrk on the last
  // core, so the figure is what one core serves, against bare fastify answering the same record the
  // same way (the baseline). The two take turns run by run, in the order service, bare, bare,
  // service, ..., and the ratio is the median of each pair's ratio: this machine's figures move by
  // 2x from one minute to the next, and when all the service's runs came before all the baseline's,
  // its ratio moved between 0.55x and 0.75x across runs of the same code (BENCHMARKS.md, change
  // 34). A warm-up for each first (the JIT compiles the hot path). Measured twice: here, on the
  // fresh service, and in table 3 after every conversion before it, where the same code serves
  // fewer polls a second (BENCHMARKS.md, change 42).
  const wrkScript = path.join(work, 'percentiles.lua');
  await fs.writeFile(wrkScript, WRK_PERCENTILES);
  const latency = async (seconds: number, url: string): Promise<LoadFigures> => {
    if (hasWrk) return wrkLoad(url, seconds, os.cpus().length - 1, wrkScript);
    // autocannon's report has no p95: its p97.5 stands in (the table's heading says so).
    const result = await autocannon({ url, connections: 10, duration: seconds });
    return { rps: result.requests.average, p50: result.latency.p50, p95: result.latency.p97_5, p99: result.latency.p99 };
  };
  const summary = (runs: LoadFigures[]) => {
    const of = (key: keyof LoadFigures) => stat(runs.map((r) => r[key]));
    return { rps: of('rps'), p50: of('p50').median, p95: of('p95').median, p99: of('p99') };
  };
  const idleProgress = async (pairs: number) => {
    const jobId = await client.submit(new Blob([files['small.png']!]), 'idle.png', 'webp');
    await client.wait(jobId);
    const progressUrl = `${service.url}/api/progress/${jobId}`;
    const bareFastify = await startBareFastify(await (await fetch(progressUrl)).json());
    const bareUrl = `${bareFastify.url}/api/progress/${jobId}`;
    const serviceRuns: LoadFigures[] = [];
    const bareRuns: LoadFigures[] = [];
    try {
      if (hasWrk) for (const pid of [service.child.pid!, bareFastify.child.pid!]) pin(pid, '0');
      await latency(3, progressUrl);
      await latency(3, bareUrl);
      for (let i = 0; i < pairs; i++) {
        const serviceFirst = i % 2 === 0;
        for (const serviceTurn of serviceFirst ? [true, false] : [false, true]) {
          const figures = await latency(QUICK ? 3 : 4, serviceTurn ? progressUrl : bareUrl);
          (serviceTurn ? serviceRuns : bareRuns).push(figures);
        }
      }
      if (hasWrk) pin(service.child.pid!, `0-${os.cpus().length - 1}`);
    } finally {
      await bareFastify.stop();
    }
    const ratios = serviceRuns.map((run, i) => run.rps / bareRuns[i]!.rps);
    return { progressUrl, pairs, service: summary(serviceRuns), bare: summary(bareRuns), ratios };
  };
  const freshIdle = OVERHEAD_ONLY ? undefined : await idleProgress(QUICK ? 2 : 4);

  // 1. Overhead.
  const out = (name: string) => path.join(work, `bare-${name}`);
  // The image engine's settings (src/engines/sharp/images.ts): WebP at quality 82, effort 4, one
  // libvips thread per image (the service runs one image per process, two at a time), no cache.
  const WEBP = { quality: 82, effort: 4 };
  const sameAsService = async (work: () => Promise<unknown>) => {
    const threads = sharp.concurrency();
    sharp.concurrency(1);
    sharp.cache(false);
    try {
      return await work();
    } finally {
      sharp.concurrency(threads);
      sharp.cache(true);
    }
  };
  // The service's WebM encoders (src/engines/ffmpeg/engine.ts), the same for every clip.
  const bareWebm = (input: string, output: string) => run('ffmpeg', ['-y', '-loglevel', 'error', '-i', input, ...WEBM_ENCODERS, output], work);
  const cases: Array<{ family: string; name: string; target: string; options?: Record<string, string>; bareLabel: string; bare: () => Promise<unknown> | unknown }> = [
    { family: 'image', name: 'small.png', target: 'webp', bareLabel: 'sharp in-process, same settings', bare: () => sameAsService(() => sharp(files['small.png']).webp(WEBP).toBuffer()) },
    { family: 'image', name: 'large.jpg', target: 'webp', bareLabel: 'sharp in-process, same settings', bare: () => sameAsService(() => sharp(files['large.jpg']).webp(WEBP).toBuffer()) },
    { family: 'document', name: 'small.docx', target: 'pdf', bareLabel: 'soffice --convert-to (cold)', bare: () => run('soffice', [`-env:UserInstallation=file://${work}/lo-profile`, '--headless', '--convert-to', 'pdf', '--outdir', out('doc'), 'small.docx'], work) },
    { family: 'document', name: 'large.docx', target: 'pdf', bareLabel: 'soffice --convert-to (cold)', bare: () => run('soffice', [`-env:UserInstallation=file://${work}/lo-profile`, '--headless', '--convert-to', 'pdf', '--outdir', out('doc'), 'large.docx'], work) },
    { family: 'audio', name: 'small.wav', target: 'mp3', bareLabel: 'ffmpeg', bare: () => run('ffmpeg', ['-y', '-loglevel', 'error', '-i', 'small.wav', out('a.mp3')], work) },
    { family: 'audio', name: 'large.wav', target: 'mp3', bareLabel: 'ffmpeg', bare: () => run('ffmpeg', ['-y', '-loglevel', 'error', '-i', 'large.wav', out('b.mp3')], work) },
    { family: 'video', name: 'small.mp4', target: 'webm', bareLabel: 'ffmpeg (same VP9 settings)', bare: () => bareWebm('small.mp4', out('a.webm')) },
    { family: 'video', name: 'large.mp4', target: 'webm', bareLabel: 'ffmpeg (same VP9 settings)', bare: () => bareWebm('large.mp4', out('b.webm')) },
    { family: 'markup', name: 'small.md', target: 'html', bareLabel: 'pandoc', bare: () => run('pandoc', ['-s', '-o', out('a.html'), 'small.md'], work) },
    { family: 'markup', name: 'large.md', target: 'html', bareLabel: 'pandoc', bare: () => run('pandoc', ['-s', '-o', out('b.html'), 'large.md'], work) },
    { family: 'data', name: 'small.csv', target: 'json', bareLabel: 'python3 csv → json', bare: () => run('/usr/bin/python3', ['-c', 'import csv,json,sys; json.dump(list(csv.DictReader(open(sys.argv[1]))), open(sys.argv[2],"w"))', 'small.csv', out('a.json')], work) },
    { family: 'data', name: 'large.csv', target: 'json', bareLabel: 'python3 csv → json', bare: () => run('/usr/bin/python3', ['-c', 'import csv,json,sys; json.dump(list(csv.DictReader(open(sys.argv[1]))), open(sys.argv[2],"w"))', 'large.csv', out('b.json')], work) },
    // The families of issue #30, one typical file each.
    { family: 'office import', name: 'letter.abw', target: 'pdf', bareLabel: 'soffice --convert-to (cold)', bare: () => run('soffice', [`-env:UserInstallation=file://${work}/lo-profile`, '--headless', '--convert-to', 'pdf', '--outdir', out('doc'), 'letter.abw'], work) },
    { family: 'ebook (older)', name: 'book.epub', target: 'lrf', bareLabel: 'ebook-convert', bare: () => run('ebook-convert', ['book.epub', out('book.lrf')], work) },
    { family: 'subtitle', name: 'film.srt', target: 'vtt', bareLabel: 'ffmpeg', bare: () => run('ffmpeg', ['-y', '-loglevel', 'error', '-i', 'film.srt', '-c:s', 'webvtt', out('film.vtt')], work) },
    { family: 'markup (wikis)', name: 'notes.dokuwiki', target: 'html', bareLabel: 'pandoc', bare: () => run('pandoc', ['-s', '--from', 'dokuwiki', '-o', out('notes.html'), 'notes.dokuwiki'], work) },
    { family: 'data (trees)', name: 'settings.plist', target: 'json', bareLabel: 'python3 plistlib → json', bare: () => run('/usr/bin/python3', ['-c', 'import json,plistlib,sys; json.dump(plistlib.load(open(sys.argv[1],"rb")), open(sys.argv[2],"w"))', 'settings.plist', out('settings.json')], work) },
    { family: 'raster (ImageMagick)', name: 'photo.xwd', target: 'png', bareLabel: 'ImageMagick convert', bare: () => run('/usr/bin/convert', ['photo.xwd', out('photo.png')], work) },
    { family: 'archive', name: 'sources.tar.zst', target: 'zip', bareLabel: 'bsdtar -x, then bsdtar -a (zip)', bare: async () => {
      const into = await fs.mkdtemp(out('unpacked-'));
      run('bsdtar', ['-xf', path.join(work, 'sources.tar.zst'), '-C', into], work);
      run('bsdtar', ['-a', '-cf', path.join(into, 'sources.zip'), '-C', into, 'sources'], work);
    } },
    { family: 'font (TTX)', name: 'font.ttf', target: 'ttx', bareLabel: 'fontTools ttx', bare: () => run('/usr/bin/python3', ['-m', 'fontTools.ttx', '-q', '-o', out('font.ttx'), 'font.ttf'], work) },
    { family: 'postscript', name: 'report.ps', target: 'pdf', bareLabel: 'gs -dSAFER pdfwrite', bare: () => run('gs', ['-dSAFER', '-dBATCH', '-dNOPAUSE', '-dQUIET', '-sDEVICE=pdfwrite', '-dAutoRotatePages=/None', `-sOutputFile=${out('report.pdf')}`, 'report.ps'], work) },
    // The engine flattens the upload to PNG through sharp first, then runs tesseract with one OpenMP thread.
    { family: 'OCR', name: 'page.png', target: 'txt', bareLabel: 'tesseract (OMP_THREAD_LIMIT=1)', bare: () => run('/usr/bin/env', ['OMP_THREAD_LIMIT=1', 'tesseract', 'page.png', out('page'), 'txt'], work) },
    // A scanned PDF read with ocr=true: the engine runs pdfinfo and pdftotext (which pages have text), draws the pages at 300 dpi in grey, and reads them in one tesseract run over a list.
    { family: 'OCR of a PDF', name: 'scanned-report.pdf', target: 'txt', options: { ocr: 'true' }, bareLabel: 'pdftoppm -gray -r 300, tesseract on the list', bare: async () => {
      const pagesDir = await fs.mkdtemp(out('scan-pages-'));
      run('pdftoppm', ['-gray', '-r', '300', '-png', 'scanned-report.pdf', path.join(pagesDir, 'page')], work);
      const pages = (await fs.readdir(pagesDir)).sort().map((name) => path.join(pagesDir, name));
      await fs.writeFile(path.join(pagesDir, 'list.txt'), `${pages.join('\n')}\n`);
      run('/usr/bin/env', ['OMP_THREAD_LIMIT=1', 'tesseract', path.join(pagesDir, 'list.txt'), path.join(pagesDir, 'text'), 'txt'], work);
    } },
    { family: 'audio containers', name: 'large.wav', target: 'wv', bareLabel: 'ffmpeg', bare: () => run('ffmpeg', ['-y', '-loglevel', 'error', '-i', 'large.wav', '-c:a', 'wavpack', out('b.wv')], work) },
    // The engine's own JPEG quality for a PDF's colour pages (djvulibre/engine.ts PDF_QUALITY), with the verbose page log it reads.
    { family: 'djvu', name: 'photo.djvu', target: 'pdf', bareLabel: 'ddjvu -format=pdf', bare: () => run('ddjvu', ['-verbose', '-format=pdf', '-quality=85', 'photo.djvu', out('photo.pdf')], work) },
    // The engine makes potrace's greymap with sharp; the bare command with ImageMagick.
    { family: 'tracing', name: 'page.png', target: 'svg', bareLabel: 'convert → pgm, potrace -b svg', bare: () => { run('/usr/bin/convert', ['page.png', '-colorspace', 'gray', out('page.pgm')], work); run('potrace', ['-b', 'svg', '-o', out('page.svg'), out('page.pgm')], work); } },
    { family: 'PDF to SVG (MuPDF)', name: 'report.pdf', target: 'svg', bareLabel: 'mutool draw -F svg (page 1)', bare: () => run('mutool', ['draw', '-q', '-F', 'svg', '-o', out('report.svg'), 'report.pdf', '1'], work) },
    // A fresh Inkscape per job, as the engine runs it (src/engines/inkscape/engine.ts; HOME in a directory of its own).
    { family: 'vector (Inkscape)', name: 'drawing.svg', target: 'emf', bareLabel: 'inkscape --export-type=emf', bare: () => run('/usr/bin/env', [`HOME=${out('doc')}`, 'inkscape', '--export-type=emf', `--export-filename=${out('drawing.emf')}`, 'drawing.svg'], work) },
    { family: 'geodata', name: 'points.geojson', target: 'gpkg', bareLabel: 'ogr2ogr -f GPKG', bare: () => run('ogr2ogr', ['-f', 'GPKG', '-overwrite', out('points.gpkg'), 'points.geojson'], work) },
    { family: 'e-mail', name: 'letter.eml', target: 'txt', bareLabel: 'mailparser in-process', bare: async () => { await fs.writeFile(out('letter.txt'), (await simpleParser(files['letter.eml']!)).text ?? ''); } },
    // The browser started for each file, as a user of the bare command does; the engine keeps its browsers warm (src/engines/chromium/).
    { family: '3D model', name: 'mesh.obj', target: 'glb', bareLabel: 'assimp export -fglb2 -tri -vds', bare: () => run('/usr/bin/assimp', ['export', 'mesh.obj', out('mesh.glb'), '-fglb2', '-tri', '-vds'], work) },
    { family: 'HTML (Chromium)', name: 'page.html', target: 'pdf', bareLabel: 'chromium --headless --print-to-pdf (cold)', bare: () => run('/usr/bin/chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-pdf-header-footer', `--user-data-dir=${work}/chromium-profile`, `--print-to-pdf=${out('page.pdf')}`, `file://${path.join(work, 'page.html')}`], work) },
    // The engine's own limits and fonts file aside (src/engines/latex/engine.ts), the same latexmk with a font cache of its own in the bench's directory (the first bare run builds it); -g: every run typesets, as a job does, rather than finding its PDF up to date.
    { family: 'LaTeX', name: 'paper.tex', target: 'pdf', bareLabel: 'latexmk -lualatex', bare: () => run('/usr/bin/env', [`TEXMFCACHE=${out('latex-cache')}`, 'latexmk', '-norc', '-g', '-lualatex', '-interaction=nonstopmode', '-halt-on-error', '-no-shell-escape', `-outdir=${out('latex')}`, 'paper.tex'], work) },
  ];
  const unknown = [...FAMILIES ?? []].filter((family) => !cases.some((c) => c.family === family));
  if (unknown.length > 0) throw new Error(`--families: no row of table 1 has the family ${unknown.map((f) => `"${f}"`).join(', ')} (they are: ${[...new Set(cases.map((c) => c.family))].join(', ')})`);
  await fs.mkdir(out('doc'), { recursive: true });
  // A small file's figures are a few milliseconds that a moment of the machine moves as much as
  // the overhead itself: they get six times the runs (cheap, as they are small). The bare VP9
  // encode of small.mp4 alone spreads over about 120 ms within a run; with 15 pairs the median
  // difference still moved by 7 ms between two runs of the same code.
  // A large file's target is a share (3%) of a job of one to ten seconds, within the spread of
  // such jobs on a shared machine: they get three times the runs. With 5, large.jpg → webp swung
  // between 1.00x and 1.12x from run to run, and large.mp4 (9 s a job) between 0.97x and 1.03x.
  const overheadRuns = (name: string) => (name.startsWith('small.') ? 6 * RUNS : 3 * RUNS);
  const overheadRows: string[][] = [];
  const timelineRows: string[][] = [];
  for (const c of cases.filter((row) => FAMILIES === undefined || FAMILIES.has(row.family))) {
    await convertVia(true, c.name, c.target, c.options)(); // warm-up
    const polling = await repeat(RUNS, convertVia(false, c.name, c.target, c.options));
    // The stream runs and the bare runs alternate, so that a slow moment of the machine weighs on
    // both sides alike; the extra milliseconds are the median of each pair's difference, which a
    // slow moment shared by the pair leaves out.
    const streamSamples: number[] = [];
    const bareSamples: number[] = [];
    const jobIds: string[] = [];
    const serviceCpu = { job: [] as number[], bare: [] as number[] };
    for (let i = 0; i < overheadRuns(c.name); i++) {
      let cpuBefore = await cpuMs(service.child.pid!);
      const begin = performance.now();
      const result = await client.convert(new Blob([files[c.name]!]), c.name, c.target, { events: true, pollIntervalMs: 500, ...(c.options ? { options: c.options } : {}) });
      streamSamples.push(performance.now() - begin);
      serviceCpu.job.push(await cpuMs(service.child.pid!) - cpuBefore);
      jobIds.push(result.record.job_id);
      cpuBefore = await cpuMs(service.child.pid!);
      bareSamples.push(await timed(c.bare));
      serviceCpu.bare.push(await cpuMs(service.child.pid!) - cpuBefore);
    }
    const [stream, bare] = [stat(streamSamples), stat(bareSamples)];
    // Both overhead figures come from the pairs, so that they agree: the ratio of the two medians
    // mixes the slow moments of either side (one run gave +34 ms, but 1.04x, for large.jpg).
    const extra = stat(streamSamples.map((sample, i) => sample - bareSamples[i]!));
    const ratios = streamSamples.map((sample, i) => sample / bareSamples[i]!);
    const digits = c.name.startsWith('large.') ? 3 : 2;
    const withOptions = c.options ? ` ${Object.entries(c.options).map(([key, value]) => `${key}=${value}`).join(' ')}` : '';
    overheadRows.push([c.family, `${c.name} → ${c.target}${withOptions} (${(files[c.name]!.length / 1024).toFixed(0)} KB)`, fmt(polling), fmt(stream), `${c.bareLabel}: ${fmt(bare)}`,
      `${extra.median.toFixed(0)} ms / ${ratioText(ratios, digits)}`]);
    if (c.name.startsWith('large.')) {
      // The job as the worker saw it (its log line): what lies outside the engine step is the
      // service's alone, and free of the engine's own spread.
      const done = jobIds.map((id) => service.jobsDone.get(id));
      if (done.every(Boolean)) {
        const engineStep = done.map((d) => d!.steps.convert);
        const outside = streamSamples.map((sample, i) => sample - engineStep[i]!);
        const outsideInterval = medianInterval(outside);
        const stepRatios = engineStep.map((step, i) => step / bareSamples[i]!);
        const share = stat(outside.map((ms, i) => ms / streamSamples[i]! * 100));
        timelineRows.push([`${c.name} → ${c.target}`, stat(streamSamples).median.toFixed(0), stat(engineStep).median.toFixed(0),
          `${stat(outside).median.toFixed(0)}${outsideInterval ? ` (${outsideInterval[0].toFixed(0)}-${outsideInterval[1].toFixed(0)})` : ''}, ${share.median.toFixed(1)}%`,
          ratioText(stepRatios, digits),
          `${stat(serviceCpu.job).median.toFixed(0)} / ${stat(serviceCpu.bare).median.toFixed(0)}`]);
      }
    }
  }
  if (FAMILIES !== undefined) {
    familyRows.push(...overheadRows);
  } else {
    table('1. Overhead', `Milliseconds, median (min-max). "service" is submit → done → downloaded through HTTP: polling every 0.5 s as the spec's client does, or following the event stream. The last column is the stream figure against the bare engine (their runs alternate, ${overheadRuns('small.')} times for small files, ${overheadRuns('large.')} for large ones): extra milliseconds and ratio (three decimals for the large files, whose target is 3%), each the median over the pairs of runs of the stream run against the bare run beside it (below 1: the service is faster, as with the warm LibreOffice pool against a cold \`soffice\`); in brackets, the ratio's 95% confidence interval (order statistics of the pairs, no assumption about their distribution). The interval is this machine's resolution: a job that keeps both cores busy for seconds varies by 15% or more from one run to the next, the bare command as much as the service. The rows after data are the families issue #30 added, one typical file each.${OVERHEAD_ONLY ? ` Tables 1 and 1b were measured on ${new Date().toISOString().slice(0, 10)} by \`npm run bench -- --overhead-only\`; the other tables come from the run named at the top.` : ''}`,
      ['family', 'conversion', 'service, polling', 'service, stream', 'bare engine', 'overhead'], overheadRows);
    table('1b. Where a large job\'s time goes', `The stream runs of table 1 for the large files, against the service's own record of each job (its \`job_done\` log line: the engine step is the engine's process, sandbox included, from start to exit). Milliseconds, medians over the same ${overheadRuns('large.')} runs. "Outside the engine" is end to end minus the engine step (upload, queue, storage, event stream, download), with its 95% interval and its share of the job; it does not depend on how fast the engine ran. "Engine step / bare" is the engine step against the bare command beside it, which carries the machine's spread. "Service CPU" is the service process's own CPU time (user and system, not its engines') during the job, and during the bare run beside it, when it is idle.`,
      ['conversion', 'end to end', 'engine step', 'outside the engine', 'engine step / bare', 'service CPU, ms: job / idle'], timelineRows);
  }

  // With --overhead-only, nothing after tables 1 and 1b is measured.
  everyOtherTable: {
  if (OVERHEAD_ONLY) break everyOtherTable;
  // 2. Engine choice: the engines themselves (the service's modules, sandboxed as in the service),
  // side by side on the same files, so that the planner's costs can be checked against them.
  const { settings: sandbox } = configureSandbox('auto');
  configureCgroupLimits(2048, sandbox);
  const engineLimits = { timeoutMs: 300_000, maxOutputBytes: 256 * 1024 ** 2, maxImagePixels: 100_000_000, maxMediaSeconds: 14_400 };
  /**
   * One engine built from its module as main.ts builds it (one process per pool unless `env` says
   * otherwise), with its pool's processes under `stateRoot`.
   */
  const moduleEngine = (id: string, stateRoot: string, env: NodeJS.ProcessEnv = {}): Engine => {
    const module = engineModule(id);
    const created = createEngines([module], readEngineSettings([module], env, { cores: 1 }), {
      log: pino({ level: 'silent' }), concurrency: 1, maxOutputBytes: engineLimits.maxOutputBytes, runsJobs: true, stateRoot,
    });
    if (!created.engines[0]) throw new Error(`the ${id} engine could not be created: ${created.failed[0]?.reason}`);
    return created.engines[0];
  };
  /** Times one conversion by `engine` in a fresh work directory, as the worker runs it. */
  const byEngine = (engine: Engine, name: string, from: string, to: string) => () => timed(async () => {
    const dir = await fs.mkdtemp(path.join(work, 'engine-'));
    await fs.chmod(dir, 0o711);
    await fs.copyFile(path.join(work, name), path.join(dir, `input.${from}`));
    await giveToEngineUser(dir, sandbox);
    await engine.convert({
      input: path.join(dir, `input.${from}`), output: path.join(dir, `output.${to}`), from, to, workDir: dir,
      onProgress: () => undefined, signal: AbortSignal.timeout(300_000), limits: engineLimits, options: {},
    });
    await fs.rm(dir, { recursive: true, force: true });
  });
  const sharpEngine = moduleEngine('sharp', path.join(work, 'engines-sharp'));
  const officeEngine = moduleEngine('libreoffice', path.join(work, 'engines-lo'), OFFICE_SETTINGS(1));
  const pandocEngine = moduleEngine('pandoc', path.join(work, 'engines-pandoc'));
  await Promise.all([sharpEngine.probe(), officeEngine.probe(), pandocEngine.probe()]);
  run('pandoc', ['--standalone', '--from', 'markdown', '--to', 'html', '-o', 'large.html', 'large.md'], work);
  await fs.writeFile(path.join(work, 'choice.jpg'), files['large.jpg']!);
  const choiceRows: string[][] = [];
  /** An alternative's time as a multiple of the used engine's (below 1: the alternative is faster). */
  const times = (alternative: Stat, used: Stat) => `${(alternative.median / used.median).toFixed(2)}x`;
  try {
    const sharpMs = await repeat(RUNS, byEngine(sharpEngine, 'choice.jpg', 'jpg', 'png'));
    const vipsMs = await repeat(RUNS, () => timed(() => run('vips', ['copy', 'choice.jpg', 'choice-vips.png'], work)));
    const magickMs = await repeat(RUNS, () => timed(() => run('/usr/bin/convert', ['choice.jpg', 'choice-im.png'], work)));
    choiceRows.push(['jpg → png, 4000x3000', 'sharp (warm sandboxed process)', fmt(sharpMs), `vips CLI ${fmt(vipsMs)}, ${times(vipsMs, sharpMs)}; ImageMagick ${fmt(magickMs)}, ${times(magickMs, sharpMs)}`]);
    const warmDoc = await repeat(RUNS, byEngine(officeEngine, 'small.docx', 'docx', 'pdf'));
    const coldDoc = await repeat(Math.min(RUNS, 3), () => timed(cases[2]!.bare));
    choiceRows.push(['docx → pdf (small)', 'LibreOffice, warm pool', fmt(warmDoc), `soffice --convert-to, cold ${fmt(coldDoc)}, ${times(coldDoc, warmDoc)}`]);
    for (const [name, from, to] of [['large.html', 'html', 'docx'], ['large.html', 'html', 'odt'], ['large.docx', 'docx', 'odt'], ['large.docx', 'docx', 'html']] as const) {
      const viaPandoc = await repeat(RUNS, byEngine(pandocEngine, name, from, to));
      const viaOffice = await repeat(RUNS, byEngine(officeEngine, name, from, to));
      // The planner's pick: html is read by pandoc (Writer's HTML import is the weakest reader);
      // between office formats LibreOffice keeps the layout pandoc's model drops.
      const used = from === 'html' ? 'pandoc' : 'LibreOffice';
      const kilobytes = Math.round((await fs.stat(path.join(work, name))).size / 1024);
      const [usedMs, otherMs] = used === 'pandoc' ? [viaPandoc, viaOffice] : [viaOffice, viaPandoc];
      choiceRows.push([`${from} → ${to} (${name}, ${kilobytes} KB)`, used,
        fmt(usedMs), `${used === 'pandoc' ? 'LibreOffice, warm pool' : 'pandoc'} ${fmt(otherMs)}, ${times(otherMs, usedMs)}`]);
    }
    const pandocDocx = await repeat(RUNS, byEngine(pandocEngine, 'small.md', 'md', 'docx'));
    const pandocPdf = await repeat(RUNS, convertVia(true, 'small.md', 'pdf'));
    choiceRows.push(['md → docx', 'pandoc', fmt(pandocDocx), 'LibreOffice does not read Markdown'], ['md → pdf', 'pandoc → odt, then warm LibreOffice (through the service)', fmt(pandocPdf), 'no single engine here does the pair']);
  } finally {
    await Promise.all([sharpEngine.close?.(), officeEngine.close?.()]);
  }
  table('2. Engine choice', 'Milliseconds, median (min-max): each engine module as the worker runs it (sandboxed, from a fresh work directory), the one the route planner picks against the alternatives installed here, each also as a multiple of the used engine\'s time. Quality decides where it differs: the planner prefers LibreOffice between office formats (it keeps page setup, styles and tables) and pandoc for HTML input (Writer\'s HTML import crashed on real pages), whatever the speed.', ['pair', 'used', 'time', 'alternatives'], choiceRows);

  // 2b. The encoders whose library defaults take minutes (AVIF, VP9, PDF pages to PNG), at the
  // service's settings, on inputs of the size users upload (about 25 MB; for the image, the
  // 12-megapixel photo the issue's 49 s were measured on), through the service.
  // 20 s of 1080p at 30 fps with film grain, about 10 Mbit/s: a phone's video of about 25 MB.
  run('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=1920x1080:rate=30:duration=20', '-vf', 'noise=alls=6:allf=t',
    '-c:v', 'libx264', '-preset', 'veryfast', '-b:v', '10M', '-maxrate', '10M', '-bufsize', '20M', '-pix_fmt', 'yuv420p', 'clip.mp4'], work);
  // Eight A4 pages, each the 12-megapixel photo: a scanned document of about 25 MB. Without
  // --pagesize img2pdf gives each photo a 42-inch page, which no scanner makes and which at
  // 150 dpi would render at the 5000 px cap instead of a page's 1240x1754.
  await fs.writeFile(path.join(work, 'page.jpg'), photo);
  run('img2pdf', ['--pagesize', 'A4', '--output', 'scan.pdf', ...Array.from({ length: 8 }, () => 'page.jpg')], work);
  for (const name of ['clip.mp4', 'scan.pdf']) files[name] = await fs.readFile(path.join(work, name));
  const encoderRows: string[][] = [];
  for (const [name, target, settings, libraryDefault] of [
    ['large.jpg', 'avif', 'sharp: effort 0, quality 55, 4:2:0 chroma', 'effort 4, 4:4:4: 49 s for one such photo (measured before)'],
    ['clip.mp4', 'webm', `libvpx-vp9, CRF 33, ${VP9_SPEED.join(' ')}`, 'about 95 s for 30 s of 720p; "good" with cpu-used 4, 27 s (measured before)'],
    ['scan.pdf', 'png', 'pdftoppm: the first page at 150 dpi, its longest side at most 5000 px', 'every page at 150 dpi: about 470 ms a page (measured before)'],
  ] as const) {
    const megabytes = (files[name]!.length / 1024 ** 2).toFixed(1);
    const time = await repeat(QUICK ? 1 : 3, convertVia(true, name, target));
    encoderRows.push([`${name} (${megabytes} MB) → ${target}`, fmt(time), settings, libraryDefault]);
  }
  table('2b. Slow encoders on a typical upload', `Milliseconds through the service (submit → done → downloaded, with the event stream), median (min-max) of ${QUICK ? 1 : 3} runs, for the three encoders whose library defaults take minutes on inputs of the size users upload: the 12-megapixel photo of table 1 (the size, not the file's bytes, sets an image encoder's time), a 20 s 1080p clip with film grain, an 8-page A4 scan of photos.`,
    ['conversion', 'time', 'the service\'s settings', 'for comparison: library defaults or slower settings, bare (measured before)'], encoderRows);

  // 3. Throughput and progress latency.
  /**
   * Conversions per second with `clients` callers converting for `seconds`; each goes through
   * the workload's files in turn (convertOne(i) picks by i), starting at a different one.
   */
  const perSecond = async (clients: number, seconds: number, convertOne: (i: number) => Promise<unknown>) => {
    let done = 0;
    const deadline = performance.now() + seconds * 1000;
    const begin = performance.now();
    await Promise.all(Array.from({ length: clients }, async (_, c) => {
      for (let i = c; performance.now() < deadline; i++) {
        await convertOne(i);
        done++;
      }
    }));
    return done / ((performance.now() - begin) / 1000);
  };
  const idle = await idleProgress(QUICK ? 2 : 8);
  const jobsBeforeIdle = service.jobsDone.size;
  const mix = ['small.png:webp', 'small.md:html', 'small.docx:pdf', 'small.csv:json'];
  const ms = (value: number) => value.toFixed(2);
  const latencies = (figures: typeof idle.service) => `${ms(figures.p50)} / ${ms(figures.p95)} / ${ms(figures.p99.median)} (${ms(figures.p99.min)}-${ms(figures.p99.max)})`;
  const oneCore = hasWrk ? ', on one core' : '';
  const throughputRows: string[][] = [
    [`baseline: bare fastify, same record${oneCore}`, '-', fmt(idle.bare.rps), latencies(idle.bare)],
    [`idle${oneCore}, after the ${jobsBeforeIdle} jobs of tables 1-2b`, '-', `${fmt(idle.service.rps)}, ${ratioText(idle.ratios)} of the baseline`, latencies(idle.service)],
    [`idle${oneCore}, fresh service (before table 1, one job done)`, '-', `${fmt(freshIdle!.service.rps)}, ${ratioText(freshIdle!.ratios)} of its own baseline, ${fmt(freshIdle!.bare.rps)}`, latencies(freshIdle!.service)],
  ];
  for (const concurrency of QUICK ? [1, 2, 4] : [1, 2, 4, 8]) {
    const seconds = QUICK ? 6 : 15;
    const convertMix = (i: number) => {
      const [name, target] = mix[i % mix.length]!.split(':') as [string, string];
      return client.convert(new Blob([files[name]!]), name, target);
    };
    const [progress, rate] = await Promise.all([latency(seconds - 1, idle.progressUrl), perSecond(concurrency, seconds, convertMix)]);
    throughputRows.push([String(concurrency), rate.toFixed(1), progress.rps.toFixed(0), `${ms(progress.p50)} / ${ms(progress.p95)} / ${ms(progress.p99)}`]);
  }
  const loadTool = hasWrk
    ? `wrk (a process of its own, on the last core) polls one job's /api/progress with 10 connections; in the idle rows the service is held to core 0 (taskset), so those rows are what one core serves, as in the baseline row, where bare fastify (the service's version, nothing else) answers the same record on the same route. The two take turns, ${idle.pairs} runs each after a warm-up (median and spread; p99's spread in brackets); the ratio is the median of the ratios within each pair of runs, with its 95% interval. The fresh row is measured the same way (${freshIdle!.pairs} pairs, against baseline runs of its own) on the same service before table 1: the same code serves more polls a second before the mixed traffic of the tables has shaped the JIT's view of Node's shared internals (BENCHMARKS.md, change 42). Latency columns: p50 / p95 / p99`
    : 'autocannon (in the benchmark process) polls one job\'s /api/progress with 10 connections (in the baseline row, bare fastify, the service\'s version with nothing else, answering the same record on the same route; the fresh row, the service before table 1). Latency columns: p50 / p97.5 (autocannon reports no p95) / p99';
  table('3. Throughput', `A mixed workload (${mix.join(', ')}) with N clients converting in turn (each following the event stream), while ${loadTool}, in ms.`,
    ['clients', 'conversions/s', 'progress requests/s', 'progress latency, ms'], throughputRows);

  // 3b. Office throughput: small docx, xlsx and pptx to PDF, through the service (its default pool,
  // two LibreOffice processes on two cores) against the same pool driven directly, no HTTP.
  const officeMix = ['docx', 'xlsx', 'pptx'];
  for (const format of officeMix) await fs.writeFile(path.join(work, `office.${format}`), docs[format]!);
  const officeSeconds = QUICK ? 5 : 10;
  const officeClients = 4;
  const viaService = (i: number) => {
    const format = officeMix[i % officeMix.length]!;
    return client.convert(new Blob([docs[format]!]), `office.${format}`, 'pdf', { events: true });
  };
  await perSecond(officeClients, 2, viaService); // warm-up
  const officeService = await repeat(QUICK ? 2 : 3, () => perSecond(officeClients, officeSeconds, viaService));
  const officePool = moduleEngine('libreoffice', path.join(work, 'engines-lo-pool'), OFFICE_SETTINGS(2));
  let officeBare: Stat;
  try {
    await officePool.probe();
    const viaPool = (i: number) => {
      const format = officeMix[i % officeMix.length]!;
      return byEngine(officePool, `office.${format}`, format, 'pdf')();
    };
    await perSecond(officeClients, 2, viaPool); // warm-up
    officeBare = await repeat(QUICK ? 2 : 3, () => perSecond(officeClients, officeSeconds, viaPool));
  } finally {
    await officePool.close?.();
  }
  table('3b. Office throughput', `Small ${officeMix.join(', ')} → pdf, in turn, ${officeClients} clients for ${officeSeconds} s, conversions per second: through the service (HTTP, event stream, download; its default pool of ${Math.min(4, os.cpus().length)} LibreOffice processes) and the same kind of pool (2 processes) driven by the engine module directly.`,
    ['through the service', 'warm pool, no service', 'ratio'], [[fmt(officeService, 1), fmt(officeBare, 1), (officeService.median / officeBare.median).toFixed(2)]]);

  // 4. Uploads, from curl processes of their own where curl is installed: uploads sent by fetch
  // from this process measured the client (77-131 MB/s) more than the server.
  const upload = Buffer.alloc(25 * 1024 * 1024, 7);
  const uploadFile = path.join(work, 'upload.bin');
  await fs.writeFile(uploadFile, upload);
  const hasCurl = await fs.access('/usr/bin/curl').then(() => true, () => false);
  // Each upload is refused (415) once read: the upload itself is what is measured.
  const uploadOnce = hasCurl
    ? () => new Promise<void>((resolve, reject) => {
      const curl = spawn('/usr/bin/curl', ['-s', '-o', '/dev/null', '-F', `file=@${uploadFile};filename=blob.bin`, '-F', 'target=zip', `${service.url}/api/convert`], { stdio: 'ignore' });
      curl.on('error', reject);
      curl.on('close', () => resolve());
    })
    : async () => {
      const form = new FormData();
      form.append('file', new Blob([upload]), 'blob.bin');
      form.append('target', 'zip');
      await (await fetch(`${service.url}/api/convert`, { method: 'POST', body: form })).arrayBuffer();
    };
  const uploadRows: string[][] = [];
  for (const parallel of [1, 20, 50]) {
    let times: Stat = { median: 0, min: 0, max: 0 };
    const memory = await peakRss(service.child.pid!, async () => {
      times = await repeat(QUICK ? 2 : 3, () => timed(() => Promise.all(Array.from({ length: parallel }, uploadOnce))));
    });
    const megabytes = (parallel * upload.length) / 1024 / 1024;
    const rate = (ms: number) => (megabytes / (ms / 1000)).toFixed(0);
    uploadRows.push([String(parallel), `${rate(times.median)} (${rate(times.max)}-${rate(times.min)})`, `${memory.baseline.toFixed(0)} → ${memory.peak.toFixed(0)} (+${(memory.peak - memory.baseline).toFixed(0)})`]);
  }
  table('4. Uploads', `Concurrent 25 MB uploads streamed to disk (each then refused as an unknown format, so only the upload is measured), sent by ${hasCurl ? 'curl, one process per upload' : 'fetch from the benchmark process'}. MB/s: median (min-max).`, ['uploads at once', 'MB/s', 'server RSS MiB, before → peak'], uploadRows);

  table('5. Start-up', `Milliseconds from spawning \`node ${SERVICE_NODE_FLAGS.join(' ')} src/main.ts\` (fresh data directory): to listening (every engine probed, the LibreOffice pool warm), and to the first docx → pdf downloaded.`,
    ['to listening', 'to the first office conversion'], [[fmt(stat(startups)), fmt(stat(firstOffice))]]);

  // 5b. What the fonts cost (#28): a cold LibreOffice, started and then asked for its first PDF, with
  // the fonts installed before #28 (a fontconfig file naming only their folders) and with today's set
  // (the service's own fontconfig file), turn by turn; and one fontconfig start inside the sandbox,
  // with and without the system's font cache bound in (docs/fidelity.md#fonts).
  {
    const beforeConfig = path.join(work, 'fonts-before.conf');
    const folders = FONTS_BEFORE_28.map((dir) => `<dir>${dir}</dir>`).join('');
    await fs.writeFile(beforeConfig, `<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd"><fontconfig>${folders}<cachedir>${work}/fc-cache-before</cachedir><include ignore_missing="yes">/etc/fonts/conf.d</include></fontconfig>`);
    const sets = [['before', beforeConfig], ['after', FONTCONFIG_FILE]] as const;
    const soffice = (set: string, config: string, args: string[]) => () => execFileSync('soffice', [`-env:UserInstallation=file://${work}/lo-fonts-${set}`, '--headless', ...args], { cwd: work, env: { ...toolEnv, FONTCONFIG_FILE: config }, stdio: 'ignore' });
    const startOnly = ['--terminate_after_init'];
    const firstPdf = ['--convert-to', 'pdf', '--outdir', path.join(work, 'fonts-out'), 'small.docx'];
    for (const [set, config] of sets) soffice(set, config, firstPdf)(); // the profile and the font cache, made once
    const samples: Record<string, { start: number[]; pdf: number[] }> = { before: { start: [], pdf: [] }, after: { start: [], pdf: [] } };
    for (let i = 0; i < (QUICK ? 3 : 5); i++) {
      for (const [set, config] of sets) {
        samples[set]!.start.push(await timed(soffice(set, config, startOnly)));
        samples[set]!.pdf.push(await timed(soffice(set, config, firstPdf)));
      }
    }
    const fontsIn = (config: string) => execFileSync('fc-list', [], { env: { ...toolEnv, FONTCONFIG_FILE: config }, encoding: 'utf8' }).split('\n').filter(Boolean).length;
    const fontRows = sets.map(([set, config]) => [`${set} #28 (${fontsIn(config)} font files)`, fmt(stat(samples[set]!.start)), fmt(stat(samples[set]!.pdf))]);
    const sandboxed = (withCache: boolean) => () => execFileSync('bwrap', ['--unshare-all', '--die-with-parent', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--symlink', 'usr/bin', '/bin', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--ro-bind', '/etc', '/etc', ...(withCache ? ['--ro-bind', '/var/cache/fontconfig', '/var/cache/fontconfig'] : []), '--ro-bind', path.dirname(FONTCONFIG_FILE), path.dirname(FONTCONFIG_FILE), '--setenv', 'HOME', '/tmp', '--setenv', 'FONTCONFIG_FILE', FONTCONFIG_FILE, 'fc-match', 'sans:lang=ja'], { stdio: 'ignore' });
    const cached = await repeat(QUICK ? 3 : 5, () => timed(sandboxed(true)));
    const uncached = await repeat(QUICK ? 3 : 5, () => timed(sandboxed(false)));
    table('5b. Fonts', `Milliseconds, median (min-max), of a cold \`soffice --headless\` (its profile made beforehand) started and stopped (\`--terminate_after_init\`), and started to convert small.docx to PDF, with the fonts installed before #28 and with the set installed now (\`src/engines/support/fonts/\`), turn by turn. Then one fontconfig start in the sandbox (\`fc-match\` under bubblewrap, as every engine process starts): with the system's font cache bound in, as the service does, ${fmt(cached)}; without it, ${fmt(uncached)}.`,
      ['fonts', 'LibreOffice start', 'start and first PDF'], fontRows);
  }

  // 5c. Options and results of several files (#29), each against the bare tools doing the same:
  // every page of a 20-page PDF as PNGs in a ZIP (pdftoppm, then bsdtar), 50 photos in a ZIP each
  // made WebP (sharp in this process at the service's settings, then bsdtar), and a clip trimmed
  // to 5 s (ffmpeg with the engine's own arguments for such a clip).
  {
    const withOptions = async (name: string, target: string, options: Record<string, string>) => {
      const form = new FormData();
      form.append('file', new Blob([files[name]!]), name);
      form.append('target', target);
      for (const [key, value] of Object.entries(options)) form.append(key, value);
      const answer = await (await fetch(`${service.url}/api/convert`, { method: 'POST', body: form })).json() as { job_id?: string };
      if (!answer.job_id) throw new Error(`${name} → ${target} ${JSON.stringify(options)} refused: ${JSON.stringify(answer)}`);
      const record = await client.wait(answer.job_id, { events: true });
      if (record.status !== 'done') throw new Error(`${name} → ${target} failed: ${JSON.stringify(record.error)}`);
      await (await fetch(`${service.url}${record.download_url!}`)).arrayBuffer();
    };
    // A 20-page text PDF: the large Markdown through the service, cut with qpdf.
    const longPdf = path.join(work, 'long.pdf');
    const made = await client.convert(new Blob([files['large.md']!]), 'large.md', 'pdf');
    await fs.writeFile(longPdf, Buffer.from(await made.data.arrayBuffer()));
    run('qpdf', [longPdf, '--pages', longPdf, '1-20', '--', 'pages20.pdf'], work);
    files['pages20.pdf'] = await fs.readFile(path.join(work, 'pages20.pdf'));
    // 50 photos of about a megapixel in a ZIP (under the 25 MB upload limit).
    const photoDir = path.join(work, 'photos');
    await fs.mkdir(photoDir, { recursive: true });
    for (let i = 0; i < 50; i++) {
      await sharp(files['large.jpg']!).rotate(i % 4 * 90).resize(1200, 900, { fit: 'cover' }).jpeg({ quality: 85 }).toFile(path.join(photoDir, `photo-${String(i + 1).padStart(2, '0')}.jpg`));
    }
    run('bsdtar', ['-a', '-cf', path.join(work, 'photos.zip'), '-C', photoDir, '.'], work);
    files['photos.zip'] = await fs.readFile(path.join(work, 'photos.zip'));
    const bareDir = path.join(work, 'bare-batch');
    const fresh = async () => {
      await fs.rm(bareDir, { recursive: true, force: true });
      await fs.mkdir(bareDir, { recursive: true });
    };
    const barePages = async () => {
      await fresh();
      run('pdftoppm', ['-r', '150', '-png', path.join(work, 'pages20.pdf'), path.join(bareDir, 'page')], work);
      run('bsdtar', ['-a', '-cf', path.join(work, 'bare-pages.zip'), '-C', bareDir, '.'], work);
    };
    const barePhotos = async () => {
      await fresh();
      for (const photo of await fs.readdir(photoDir)) {
        await sharp(path.join(photoDir, photo)).rotate().webp({ quality: 82, effort: 4 }).toFile(path.join(bareDir, photo.replace(/\.jpg$/, '.webp')));
      }
      run('bsdtar', ['-a', '-cf', path.join(work, 'bare-photos.zip'), '-C', bareDir, '.'], work);
    };
    const bareTrim = async () => {
      run('ffmpeg', ['-nostdin', '-loglevel', 'error', '-ss', '5', '-i', 'clip.mp4', '-threads', '2', '-t', '5', ...mp4Encoders(5), '-f', 'mp4', '-y', 'bare-trim.mp4'], work);
    };
    const rows: string[][] = [];
    for (const [label, name, target, options, bare, bareLabel] of [
      ['pages20.pdf (20 pages) → zip of PNGs', 'pages20.pdf', 'zip', { each: 'png', pixel_density: '150' }, barePages, 'pdftoppm -r 150 -png, then bsdtar -a (zip)'],
      ['photos.zip (50 photos, 1.1 MP) → zip of WebPs', 'photos.zip', 'zip', { each: 'webp' }, barePhotos, 'sharp in-process (quality 82, effort 4) one by one, then bsdtar -a (zip)'],
      ['clip.mp4 (20 s 1080p) → mp4, trim_start 5, trim_end 10', 'clip.mp4', 'mp4', { trim_start: '5', trim_end: '10' }, bareTrim, 'ffmpeg -ss 5 -t 5 with the engine\'s arguments'],
    ] as const) {
      const serviceRuns: number[] = [];
      const bareRuns: number[] = [];
      await withOptions(name, target, options); // warm-up
      for (let i = 0; i < (QUICK ? 2 : 3); i++) {
        serviceRuns.push(await timed(() => withOptions(name, target, options)));
        bareRuns.push(await timed(bare));
      }
      rows.push([label, fmt(stat(serviceRuns)), `${bareLabel}: ${fmt(stat(bareRuns))}`, ratioText(serviceRuns.map((ms, i) => ms / bareRuns[i]!))]);
    }
    table('5c. Options and several files', `Milliseconds, median (min-max), of ${QUICK ? 2 : 3} runs, turn by turn: through the service (submit with the options, the event stream, the download) and the bare tools doing the same work; the ratio is the median of the pairs' ratios (#29).`,
      ['conversion', 'service', 'bare', 'service / bare'], rows);
  }

  // 6. Scale-out.
  await service.stop();
  services.length = 0;
  const batch = QUICK ? 8 : 16;
  const cpuBound = ['large.wav:mp3', 'large.jpg:webp'];
  /** Submits `batch` CPU-bound jobs at once and returns jobs per second until the last is done. */
  const jobsPerSecond = async (url: string) => {
    const api = new ConvertdClient(url);
    const ms = await timed(() => Promise.all(Array.from({ length: batch }, async (_, i) => {
      const [name, target] = cpuBound[i % cpuBound.length]!.split(':') as [string, string];
      await api.convert(new Blob([files[name]!]), name, target, { events: true });
    })));
    return batch / (ms / 1000);
  };
  const scaleRows: string[][] = [];
  const embedded = await startService(path.join(work, 'embedded'), { CONVERTD_CONCURRENCY: '2' });
  await jobsPerSecond(embedded.url); // warm-up
  scaleRows.push(['embedded, one process, concurrency 2', fmt(await repeat(Math.min(RUNS, 3), () => jobsPerSecond(embedded.url)), 2)]);
  await embedded.stop();
  let redis: RedisServer | undefined;
  let s3: S3Server | undefined;
  const nodes: RunningServer[] = [];
  try {
    redis = await startRedis();
    s3 = await startS3();
    const shared = {
      ...s3.env(await s3.createBucket()), CONVERTD_REDIS_URL: redis.url, CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off',
      CONVERTD_CONCURRENCY: '1', CONVERTD_LIBREOFFICE_POOL: '1', CONVERTD_LOG_LEVEL: 'warn',
    };
    const api = await startApiNode({ ...shared, CONVERTD_LOG_LEVEL: 'info' }, path.join(work, 'api'));
    nodes.push(api);
    for (const workerCount of [1, 2]) {
      nodes.push(await startWorker({ ...shared, CONVERTD_LOG_LEVEL: 'info' }, path.join(work, `worker-${workerCount}`)));
      await jobsPerSecond(api.url); // warm-up
      const rate = await repeat(Math.min(RUNS, 3), () => jobsPerSecond(api.url));
      scaleRows.push([`API node + ${workerCount} worker${workerCount > 1 ? 's' : ''} (concurrency 1 each), Redis + S3`, fmt(rate, 2)]);
    }
  } finally {
    await Promise.all(nodes.map((node) => node.stop()));
    await redis?.stop();
    await s3?.stop();
  }
  table('6. Scale-out', `Jobs per second for a batch of ${batch} CPU-bound jobs submitted at once (${cpuBound.join(', ')}), until the last is downloaded. Every job costs CPU seconds; a worker with concurrency 1 uses one core, so on this ${os.cpus().length}-core machine two workers are the ceiling and the API node, Redis and Swift share the same cores. The second worker's gain is what extrapolates: workers on machines of their own add their own cores, until Redis (a few round trips per job) or the object store (the input and the result cross the network once each) saturates, which for jobs of seconds is far beyond a handful of machines. The embedded row shows the cost of the shared backends on one machine.`,
    ['topology', 'jobs/s'], scaleRows);

  } // everyOtherTable

  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const machine = `${os.cpus().length} cores (${cpu}), ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB RAM, ${os.type()} ${os.release()}, Node ${process.version}`;
  const header = [
    '# Benchmarks', '',
    `Written by \`npm run bench${QUICK ? ' -- --quick' : ''}\` on ${new Date().toISOString().slice(0, 10)}: ${machine}.`,
    `Each figure is the median of ${RUNS} runs with the spread (min-max). Figures depend on the machine; the ratios to the baselines measured in the same run are what carries over.`,
    '',
  ].join('\n');
  // The hand-written record of changes made from these numbers survives each rewrite.
  const previous = await fs.readFile(values.out, 'utf8').catch(() => '');
  const changes = previous.indexOf(CHANGES_HEADING) >= 0 ? previous.slice(previous.indexOf(CHANGES_HEADING)) : '';
  if (FAMILIES !== undefined) await fs.writeFile(values.out, mergeOverheadRows(previous, familyRows));
  else if (OVERHEAD_ONLY) await fs.writeFile(values.out, replaceSections(previous, sections));
  else await fs.writeFile(values.out, `${header}\n${sections.join('\n')}${changes ? `\n${changes}` : ''}`);
  process.stdout.write(`\nwritten to ${values.out}\n`);
} finally {
  await Promise.all(services.map((s) => s.stop()));
  await fs.rm(work, { recursive: true, force: true });
}
