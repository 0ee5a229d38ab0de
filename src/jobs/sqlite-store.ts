// The embedded job store: one SQLite file in the data directory through node:sqlite (no native
// build). WAL mode makes every committed write survive a crash of the process (kill -9); with
// synchronous=NORMAL a power loss may drop the last commits, which is the usual trade for a
// service that answers in microseconds. Statements are prepared once.
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { JobErrorCode } from '../errors.ts';
import type { JobRecord, JobResult, JobStatus, JobStore, NewJob } from './types.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS jobs (
  id            TEXT PRIMARY KEY,
  status        TEXT NOT NULL,
  progress      INTEGER NOT NULL DEFAULT 0,
  source        TEXT NOT NULL,
  target        TEXT NOT NULL,
  filename      TEXT NOT NULL,
  input_bytes   INTEGER NOT NULL,
  created_at    INTEGER NOT NULL,
  started_at    INTEGER,
  finished_at   INTEGER,
  attempts      INTEGER NOT NULL DEFAULT 0,
  result_token  TEXT UNIQUE,
  result_bytes  INTEGER,
  expires_at    INTEGER,
  error_code    TEXT,
  error_message TEXT,
  purged_at     INTEGER,
  options       TEXT,
  ignored_options TEXT,
  skipped       TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS jobs_unfinished ON jobs (created_at) WHERE status IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS jobs_expiry ON jobs (expires_at) WHERE purged_at IS NULL;
CREATE INDEX IF NOT EXISTS jobs_tombstones ON jobs (purged_at) WHERE purged_at IS NOT NULL;
`;

interface Row {
  id: string;
  status: string;
  progress: number;
  source: string;
  target: string;
  filename: string;
  input_bytes: number;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  attempts: number;
  result_token: string | null;
  result_bytes: number | null;
  expires_at: number | null;
  error_code: string | null;
  error_message: string | null;
  purged_at: number | null;
  options: string | null;
  ignored_options: string | null;
  skipped: string | null;
}

const EMPTY_OPTIONS: Readonly<Record<string, string>> = Object.freeze({});
const NONE: readonly string[] = Object.freeze([]);

/** A JSON column written by this store; null (and a job stored before the column existed) is empty. */
function fromJson<T>(text: string | null, empty: T): T {
  return text === null ? empty : JSON.parse(text) as T;
}

/** Columns added after the first release, added to an existing database at open. */
const ADDED_COLUMNS = ['options', 'ignored_options', 'skipped'];

function toRecord(row: Row): JobRecord {
  return {
    id: row.id,
    status: row.status as JobStatus,
    progress: row.progress,
    source: row.source,
    target: row.target,
    filename: row.filename,
    inputBytes: row.input_bytes,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    attempts: row.attempts,
    resultToken: row.result_token,
    resultBytes: row.result_bytes,
    expiresAt: row.expires_at,
    errorCode: row.error_code as JobErrorCode | null,
    errorMessage: row.error_message,
    purgedAt: row.purged_at,
    options: fromJson(row.options, EMPTY_OPTIONS),
    ignoredOptions: fromJson(row.ignored_options, NONE),
    skipped: fromJson(row.skipped, NONE),
  };
}

/** How many records the read cache holds; the oldest entry makes room. */
const RECENT_RECORDS = 10_000;

export class SqliteJobStore implements JobStore {
  private readonly db: DatabaseSync;
  private readonly statements: Record<string, StatementSync>;
  /**
   * Records read lately, by id. Every client polls its job twice a second, and the read was a
   * tenth of the progress endpoint's time (BENCHMARKS.md). One process owns an embedded data
   * directory and writes this database only through the methods below, each of which drops the
   * entry it changes, so a cached record is never stale. Records are frozen: callers share them.
   */
  private readonly recent = new Map<string, JobRecord>();

  constructor(file: string) {
    this.db = new DatabaseSync(file);
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;');
    this.db.exec(SCHEMA);
    const columns = new Set((this.db.prepare('PRAGMA table_info(jobs)').all() as Array<{ name: string }>).map((c) => c.name));
    for (const column of ADDED_COLUMNS) if (!columns.has(column)) this.db.exec(`ALTER TABLE jobs ADD COLUMN ${column} TEXT`);
    const prepare = (sql: string) => this.db.prepare(sql);
    this.statements = {
      insert: prepare(`INSERT INTO jobs (id, status, source, target, filename, input_bytes, created_at, options, ignored_options)
                       VALUES (?, 'queued', ?, ?, ?, ?, ?, ?, ?)`),
      get: prepare('SELECT * FROM jobs WHERE id = ?'),
      getByToken: prepare('SELECT * FROM jobs WHERE result_token = ?'),
      running: prepare(`UPDATE jobs SET status = 'running', started_at = ?, attempts = attempts + 1
                        WHERE id = ? AND status IN ('queued', 'running') RETURNING attempts`),
      progress: prepare(`UPDATE jobs SET progress = ? WHERE id = ? AND status = 'running' AND progress < ?`),
      done: prepare(`UPDATE jobs SET status = 'done', progress = 100, result_token = ?, result_bytes = ?,
                     finished_at = ?, expires_at = ?, skipped = ? WHERE id = ? AND status IN ('queued', 'running')`),
      error: prepare(`UPDATE jobs SET status = 'error', error_code = ?, error_message = ?, finished_at = ?,
                      expires_at = ? WHERE id = ? AND status IN ('queued', 'running')`),
      unfinished: prepare(`SELECT * FROM jobs WHERE status IN ('queued', 'running') ORDER BY created_at, rowid`),
      expired: prepare('SELECT * FROM jobs WHERE purged_at IS NULL AND expires_at <= ? ORDER BY expires_at LIMIT 1000'),
      purged: prepare('UPDATE jobs SET purged_at = ? WHERE id = ?'),
      tombstones: prepare('DELETE FROM jobs WHERE purged_at IS NOT NULL AND purged_at < ?'),
    };
  }

  private run(name: string) {
    return this.statements[name]!;
  }

  async create(job: NewJob): Promise<void> {
    const json = (value: object | undefined) => (value && Object.keys(value).length > 0 ? JSON.stringify(value) : null);
    this.run('insert').run(job.id, job.source, job.target, job.filename, job.inputBytes, job.createdAt, json(job.options), json(job.ignoredOptions));
  }

  async get(id: string): Promise<JobRecord | undefined> {
    return this.getNow(id);
  }

  getNow(id: string): JobRecord | undefined {
    const cached = this.recent.get(id);
    if (cached) return cached;
    const row = this.run('get').get(id) as Row | undefined;
    if (!row) return undefined;
    const record = Object.freeze(toRecord(row));
    if (this.recent.size >= RECENT_RECORDS) this.recent.delete(this.recent.keys().next().value!);
    this.recent.set(id, record);
    return record;
  }

  async getByToken(token: string): Promise<JobRecord | undefined> {
    const row = this.run('getByToken').get(token) as Row | undefined;
    return row ? toRecord(row) : undefined;
  }

  async markRunning(id: string, at: number): Promise<number> {
    this.recent.delete(id);
    const row = this.run('running').get(at, id) as { attempts: number } | undefined;
    if (!row) throw new Error(`job ${id} is not queued or running`);
    return row.attempts;
  }

  async setProgress(id: string, progress: number): Promise<void> {
    this.recent.delete(id);
    this.run('progress').run(progress, id, progress);
  }

  async markDone(id: string, result: JobResult): Promise<boolean> {
    this.recent.delete(id);
    const skipped = result.skipped && result.skipped.length > 0 ? JSON.stringify(result.skipped) : null;
    return this.run('done').run(result.token, result.bytes, result.finishedAt, result.expiresAt, skipped, id).changes === 1;
  }

  async markError(id: string, error: { code: JobErrorCode; message: string; finishedAt: number; expiresAt: number }): Promise<boolean> {
    this.recent.delete(id);
    return this.run('error').run(error.code, error.message, error.finishedAt, error.expiresAt, id).changes === 1;
  }

  async listUnfinished(): Promise<JobRecord[]> {
    return (this.run('unfinished').all() as unknown as Row[]).map(toRecord);
  }

  async listExpired(now: number): Promise<JobRecord[]> {
    return (this.run('expired').all(now) as unknown as Row[]).map(toRecord);
  }

  async markPurged(id: string, at: number): Promise<void> {
    this.recent.delete(id);
    this.run('purged').run(at, id);
  }

  async deleteTombstones(purgedBefore: number): Promise<number> {
    this.recent.clear();
    return Number(this.run('tombstones').run(purgedBefore).changes);
  }

  async checkWritable(): Promise<void> {
    // Taking the write lock proves the database file is there and writable, without writing.
    this.db.exec('BEGIN IMMEDIATE');
    this.db.exec('ROLLBACK');
  }

  async close(): Promise<void> {
    this.recent.clear();
    if (this.db.isOpen) this.db.close();
  }
}
