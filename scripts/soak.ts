// Soak run: many clients polling and submitting at once, as the spec's client flow does, for a
// while. Passes when no answer is anything but success or the documented 429/503, no accepted
// job is lost (each ends done or error and every done result downloads at its stated size), and
// the service's memory stays bounded.
//
//   node scripts/soak.ts [--seconds 60] [--pollers 200] [--submitters 50]
// It starts its own service (read limits off: 200 pollers share one address here).
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import sharp from 'sharp';

export interface SoakReport {
  requests: number;
  byStatus: Record<string, number>;
  accepted: number;
  done: number;
  failed: number;
  lost: number;
  wrongSize: number;
  peakRssMiB: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const DOCUMENTED = new Set([200, 206, 429, 503]);

async function peakRss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024);
}

export async function soak(base: string, pid: number, options: { seconds: number; pollers: number; submitters: number }): Promise<SoakReport> {
  const report: SoakReport = { requests: 0, byStatus: {}, accepted: 0, done: 0, failed: 0, lost: 0, wrongSize: 0, peakRssMiB: 0 };
  const count = (status: number) => {
    report.requests += 1;
    const key = DOCUMENTED.has(status) ? String(status) : `other:${status}`;
    report.byStatus[key] = (report.byStatus[key] ?? 0) + 1;
  };
  const image = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a7' } }).png().toBuffer();
  const targets = ['webp', 'jpg', 'gif', 'tiff', 'avif'];
  const known: string[] = [];
  const deadline = Date.now() + options.seconds * 1000;

  const followJob = async (jobId: string): Promise<void> => {
    const until = Date.now() + 120_000;
    while (Date.now() < until) {
      await sleep(500);
      const response = await fetch(`${base}/api/progress/${jobId}`).catch(() => undefined);
      count(response?.status ?? 0);
      if (response?.status !== 200) { await response?.body?.cancel(); continue; }
      const record = await response.json() as { status: string; download_url?: string; size?: number };
      if (record.status === 'error') { report.failed += 1; return; }
      if (record.status === 'done') {
        const file = await fetch(`${base}${record.download_url}`);
        count(file.status);
        const bytes = (await file.arrayBuffer()).byteLength;
        if (bytes !== record.size) report.wrongSize += 1;
        report.done += 1;
        return;
      }
    }
    report.lost += 1;
  };

  // Each submitter follows the spec's client flow: submit, poll until done, download, again.
  const submitter = async (index: number) => {
    for (let n = 0; Date.now() < deadline; n++) {
      const form = new FormData();
      form.append('file', new Blob([image]), `soak-${index}-${n}.png`);
      form.append('target', targets[(index + n) % targets.length]!);
      const response = await fetch(`${base}/api/convert`, { method: 'POST', body: form }).catch(() => undefined);
      count(response?.status ?? 0);
      if (response?.status === 200) {
        const { job_id: jobId } = await response.json() as { job_id: string };
        report.accepted += 1;
        known.push(jobId);
        await followJob(jobId);
      } else {
        const wait = Number(response?.headers.get('retry-after') ?? 1);
        await response?.body?.cancel();
        await sleep(Math.min(2000, wait * 1000));
      }
    }
  };

  const poller = async () => {
    while (Date.now() < deadline) {
      const jobId = known.length ? known[Math.floor(Math.random() * known.length)] : 'not-a-job-yet';
      const response = await fetch(`${base}/api/progress/${jobId}`).catch(() => undefined);
      // A poll of the placeholder id answers 404 job_not_found: documented, counted as such.
      count(response?.status === 404 && jobId === 'not-a-job-yet' ? 200 : response?.status ?? 0);
      await response?.body?.cancel();
      await sleep(500);
    }
  };

  const rss = setInterval(() => void peakRss(pid).then((mib) => { report.peakRssMiB = Math.max(report.peakRssMiB, mib); }), 1000);
  await Promise.all([
    ...Array.from({ length: options.submitters }, (_, i) => submitter(i)),
    ...Array.from({ length: options.pollers }, () => poller()),
  ]);
  clearInterval(rss);
  report.peakRssMiB = Math.max(report.peakRssMiB, await peakRss(pid));
  return report;
}

export function summary(report: SoakReport): string {
  const statuses = Object.entries(report.byStatus).map(([status, n]) => `${status}:${n}`).join(' ');
  return `soak: ${report.requests} requests (${statuses}), jobs accepted ${report.accepted}, done ${report.done}, failed ${report.failed}, lost ${report.lost}, wrong size ${report.wrongSize}, peak RSS ${report.peakRssMiB} MiB`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' }, pollers: { type: 'string', default: '200' }, submitters: { type: 'string', default: '50' } } });
  const { startServer } = await import('../test/helpers/server.ts');
  const server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off' });
  try {
    const report = await soak(server.url, server.child.pid!, { seconds: Number(values.seconds), pollers: Number(values.pollers), submitters: Number(values.submitters) });
    console.log(summary(report));
    const bad = Object.keys(report.byStatus).some((k) => k.startsWith('other')) || report.lost > 0 || report.wrongSize > 0;
    process.exitCode = bad ? 1 : 0;
  } finally {
    await server.stop();
  }
}

if (import.meta.main) await main();
