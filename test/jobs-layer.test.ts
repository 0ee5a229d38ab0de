// The jobs layer built as a test builds it, without main.ts: a JobService and a JobWorker on a real
// SQLite store and the local disk in a temporary directory, an engine of the test's own, and an
// EngineIsolation given by the test. What they report and do about isolation must be what they were
// given, not what the process layer's module state says (which, in this process, nobody set up).
// It also follows an upload through the service: received by storage, then committed as the job's
// input or discarded, with nothing left in uploads/ on any path.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { ConvertdError } from '../src/errors.ts';
import { EngineRegistry } from '../src/engines/registry.ts';
import { FormatCatalogue } from '../src/formats/catalogue.ts';
import type { Engine } from '../src/engines/types.ts';
import { LocalQueue } from '../src/jobs/local-queue.ts';
import { JobService } from '../src/jobs/service.ts';
import { SqliteJobStore } from '../src/jobs/sqlite-store.ts';
import type { EngineIsolation } from '../src/jobs/types.ts';
import { JobWorker } from '../src/jobs/worker.ts';
import { cgroupLimitsState, type CgroupLimitsState } from '../src/process/cgroups.ts';
import { sandboxSettings, type SandboxMode } from '../src/process/sandbox.ts';
import { LocalStorage } from '../src/storage/local.ts';
import { tempDir } from './helpers/server.ts';

const MAX_FILE_BYTES = 1024 * 1024;

/** csv → json, by writing a fixed JSON text: enough for the worker to run a job end to end. */
const csvToJson: Engine = {
  id: 'test-csv-json',
  edges: [{ from: 'csv', to: 'json', cost: 1 }],
  reportsProgress: true,
  estimateSeconds: () => 0.1,
  probe: async () => undefined,
  convert: async (request) => {
    await fs.access(request.input);
    await fs.writeFile(request.output, '{"converted":true}\n');
  },
};

/** An isolation of the test's own; every field can be changed between calls. */
class TestIsolation implements EngineIsolation {
  sandboxMode: SandboxMode = 'bwrap';
  limits: CgroupLimitsState = { mode: 'cgroup-v2', limitBytes: 123 * 1024 * 1024, maxTasks: 77 };
  readonly handedOver: string[][] = [];
  cgroupLimits(): CgroupLimitsState {
    return this.limits;
  }
  giveToEngineUser(entries: readonly string[]): void {
    this.handedOver.push([...entries]);
  }
}

let dir: string;
let store: SqliteJobStore;
let storage: LocalStorage;
let isolation: TestIsolation;
let service: JobService;
let worker: JobWorker;

before(async () => {
  dir = await tempDir('convertd-jobs-layer-');
  const config = loadConfig({ CONVERTD_DATA_DIR: dir, CONVERTD_MAX_FILE_BYTES: String(MAX_FILE_BYTES) });
  const log = pino({ level: 'silent' });
  store = new SqliteJobStore(path.join(dir, 'convertd.sqlite'));
  storage = new LocalStorage(dir);
  await storage.init();
  // The two formats the test engine converts, as an engine module would add them.
  const formats = new FormatCatalogue([
    { id: 'csv', name: 'Comma-separated values', category: 'data', mediaType: 'text/csv', extensions: ['csv'], detect: 'extension' },
    { id: 'json', name: 'JSON', category: 'data', mediaType: 'application/json', extensions: ['json'], detect: 'extension' },
  ]);
  const engines = await EngineRegistry.start([csvToJson], log, formats);
  isolation = new TestIsolation();
  service = new JobService({ store, queue: new LocalQueue(1), storage, engines, config, isolation, log });
  worker = new JobWorker({ store, storage, engines, config, isolation, log });
});

after(async () => {
  await store.close();
  await fs.rm(dir, { recursive: true, force: true });
});

const uploads = () => fs.readdir(path.join(dir, 'uploads'));
const csv = (bytes: number) => Buffer.from('a,b\n1,2\n'.repeat(Math.ceil(bytes / 8)).slice(0, bytes));

/** A source in 64 KiB chunks, as a socket gives them. */
function source(bytes: Buffer): Readable {
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 64 * 1024) chunks.push(bytes.subarray(at, at + 64 * 1024));
  return Readable.from(chunks);
}

test('readiness reports the sandbox and cgroup state it was given, not the process layer\'s', async () => {
  // Nothing in this process set the process layer up: reading it would find no sandbox and no cgroup.
  assert.equal(sandboxSettings().mode, 'off');
  assert.equal(cgroupLimitsState().mode, 'none');

  let checks = (await service.readiness()).checks;
  assert.deepEqual(checks.sandbox, { ok: true, mode: 'bwrap' });
  assert.deepEqual(checks.memory_limit, { ok: true, mode: 'cgroup-v2', limit_bytes: 123 * 1024 * 1024 });
  assert.deepEqual(checks.process_limit, { ok: true, max_tasks: 77 });

  // Asked again at every call: the cgroup state of the moment.
  isolation.limits = { mode: 'none', problem: 'no memory controller', tasksProblem: 'no pids controller' };
  checks = (await service.readiness()).checks;
  assert.deepEqual(checks.memory_limit, { ok: true, mode: 'none', problem: 'no memory controller' });
  assert.deepEqual(checks.process_limit, { ok: true, mode: 'none', problem: 'no pids controller' });

  // Unsandboxed engines without CONVERTD_SANDBOX=off: not ready.
  isolation.sandboxMode = 'off';
  const readiness = await service.readiness();
  assert.deepEqual(readiness.checks.sandbox, { ok: false, mode: 'off' });
  assert.equal(readiness.ready, false);
  isolation.sandboxMode = 'bwrap';
});

test('an upload received through the service becomes the job\'s input; the worker hands its work dir to the engine user it was given', async () => {
  for (const size of [1000, 700 * 1024]) { // held in memory, and streamed to disk
    let counted = 0;
    const upload = await service.receiveUpload(source(csv(size)), (bytes) => { counted += bytes; });
    assert.equal(upload.bytes, size);
    assert.equal(counted, size, 'every chunk is counted (the HTTP layer\'s garbage-collection nudge)');
    assert.deepEqual(await uploads(), [path.basename(upload.path)]);

    const jobId = await service.submit({ upload, filename: 'table.csv', target: 'json' });
    assert.deepEqual(await uploads(), [], 'the upload was committed');
    assert.deepEqual(await fs.readFile(path.join(dir, 'inputs', jobId)), csv(size));
    upload.discard(); // a no-op once committed
    assert.equal((await fs.stat(path.join(dir, 'inputs', jobId))).size, size);

    isolation.handedOver.length = 0;
    assert.equal(await worker.process(jobId, new AbortController().signal), 'finished');
    assert.equal((await store.get(jobId))?.status, 'done');
    const workDir = path.join(dir, 'work', jobId);
    assert.deepEqual(isolation.handedOver, [[workDir, path.join(workDir, 'input.csv')]]);
  }
});

test('an upload that does not become a job is removed, whatever stops it', async () => {
  const refused = async (promise: Promise<unknown>, code: string) => {
    await assert.rejects(promise, (error: unknown) => error instanceof ConvertdError && error.code === code);
    assert.deepEqual(await uploads(), []);
  };
  // Refused by the service after it was received.
  for (const size of [1000, 700 * 1024]) {
    await refused(service.submit({ upload: await service.receiveUpload(source(csv(size))), filename: 'table.csv', target: 'mp4' }), 'unsupported_target');
    await refused(service.submit({ upload: await service.receiveUpload(source(Buffer.alloc(size, 0xfe))), filename: 'blob', target: 'json' }), 'unsupported_format');
  }
  // Past the size limit, held in memory or streaming.
  await refused(service.receiveUpload(source(csv(MAX_FILE_BYTES + 1))), 'file_too_large');
  // The source fails midway (a client gone), after storage started writing a file.
  async function* broken() {
    yield csv(600 * 1024);
    await new Promise((resolve) => setTimeout(resolve, 20));
    throw new ConvertdError('invalid_request', 'the client went away');
  }
  await refused(service.receiveUpload(Readable.from(broken())), 'invalid_request');
  // Received, then discarded by its holder.
  const upload = await service.receiveUpload(source(csv(1000)));
  upload.discard();
  assert.deepEqual(await uploads(), []);
  await assert.rejects(upload.commit('discarded-upload'), /committed or discarded already/);
});
