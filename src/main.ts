// Starts convertd in its embedded form: one process, SQLite job store, in-process queue, local
// disk. Wires the layers together, takes up the jobs a previous run left unfinished, and shuts
// down gracefully on SIGTERM/SIGINT.
import fs from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { EngineRegistry } from './engines/registry.ts';
import { ArchiveEngine } from './engines/archives.ts';
import { DataEngine } from './engines/data.ts';
import { FfmpegEngine } from './engines/ffmpeg.ts';
import { FontEngine } from './engines/fonts.ts';
import { ImageMagickEngine } from './engines/imagemagick.ts';
import { LibreOfficeEngine } from './engines/libreoffice.ts';
import { CalibreEngine } from './engines/calibre.ts';
import { GhostscriptEngine } from './engines/ghostscript.ts';
import { Img2PdfEngine } from './engines/img2pdf.ts';
import { PandocEngine } from './engines/pandoc.ts';
import { PopplerEngine } from './engines/poppler.ts';
import { RsvgEngine } from './engines/rsvg.ts';
import { SharpEngine } from './engines/sharp.ts';
import { VipsCliEngine } from './engines/vips.ts';
import { buildApp } from './http/app.ts';
import { configureSandbox } from './process/sandbox.ts';
import { LocalQueue } from './jobs/local-queue.ts';
import { JobChanges } from './jobs/changes.ts';
import { JobService } from './jobs/service.ts';
import { SqliteJobStore } from './jobs/sqlite-store.ts';
import { Sweeper } from './jobs/sweeper.ts';
import { JobWorker } from './jobs/worker.ts';
import { Metrics } from './observability/metrics.ts';
import { LocalStorage } from './storage/local.ts';

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`convertd: invalid configuration: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}

async function main(): Promise<void> {
  const config = readConfig();
  const log = pino({ level: config.logLevel, base: { service: 'convertd' } });

  const sandbox = configureSandbox(config.sandbox);
  if (sandbox.problem) {
    log.fatal({ event: 'sandbox_unavailable', problem: sandbox.problem },
      `engines cannot be sandboxed: ${sandbox.problem}. Fix this, or set CONVERTD_SANDBOX=off to run them unconfined (not for untrusted uploads).`);
    process.exit(1);
  }
  if (sandbox.settings.mode === 'off') log.warn({ event: 'sandbox_off' }, 'CONVERTD_SANDBOX=off: engines run without a sandbox; do not accept untrusted uploads');
  else log.info({ event: 'sandbox', mode: sandbox.settings.mode, engine_uid: sandbox.settings.uid ?? process.getuid?.() }, 'engines run in a bubblewrap sandbox');

  await fs.mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const storage = new LocalStorage(config.dataDir);
  await storage.init();
  const leftovers = await storage.removeLeftovers();
  if (leftovers > 0) log.info({ event: 'leftovers_removed', count: leftovers }, 'removed partial uploads and work directories of the previous run');
  const store = new SqliteJobStore(path.join(config.dataDir, 'convertd.sqlite'));
  const libreoffice = new LibreOfficeEngine({
    size: config.libreofficePool,
    maxJobsPerProcess: config.libreofficeMaxJobs,
    start: config.libreofficeStart,
    maxWaiting: config.libreofficeQueue,
    stateDir: path.join(config.dataDir, 'engines', 'libreoffice'),
    maxOutputBytes: config.maxOutputBytes,
  }, log);
  const engines = await EngineRegistry.start([
    new SharpEngine(), new VipsCliEngine(), new ImageMagickEngine(), new RsvgEngine(), new FfmpegEngine(),
    new FontEngine(), new ArchiveEngine(), new DataEngine(), libreoffice, new PandocEngine(), new PopplerEngine(),
    new GhostscriptEngine(), new Img2PdfEngine(), new CalibreEngine(),
  ], log);
  const queue = new LocalQueue(config.concurrency);
  const metrics = new Metrics({
    queueWaiting: () => queue.waiting(),
    jobsRunning: () => queue.active(),
    disk: () => storage.diskSpace(),
    pools: [{ name: 'libreoffice', stats: () => libreoffice.pool.stats() }],
  });
  const changes = new JobChanges();
  const service = new JobService({ store, queue, storage, engines, config, log, changes });
  const worker = new JobWorker({ store, storage, engines, config, log, metrics, changes });
  const sweeper = new Sweeper({ store, storage, config, log });

  await service.recover();
  queue.start(worker.process);
  sweeper.start();

  const app = await buildApp({ config, service, log, metrics });
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  log.info({ event: 'listening', host: config.host, port, data_dir: config.dataDir, concurrency: config.concurrency }, `convertd listening on http://${config.host}:${port}`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ event: 'shutdown', signal }, 'shutting down: no new requests; running jobs finish or run again at the next start');
    const hardStop = setTimeout(() => {
      log.warn('shutdown took too long; exiting now (unfinished jobs run again at the next start)');
      process.exit(1);
    }, (config.shutdownGraceSeconds + 10) * 1000);
    hardStop.unref();
    await app.close();
    await queue.stop(config.shutdownGraceSeconds * 1000);
    await sweeper.stop();
    await engines.close();
    await store.close();
    log.info({ event: 'stopped' }, 'convertd stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`convertd: failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
