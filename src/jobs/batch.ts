// An uploaded archive converted member by member (api-contract.md, "Several files in one result":
// target zip with option `each`). The engine that reads the archive unpacks it through its usual
// checks (the 'archive-members' capability: member count, expanded size and ratio, unsafe names,
// links refused); then every member, sniffed by its content like an upload, goes through its own
// route from the planner and the ordinary pipeline, one at a time, in a directory of its own,
// with the job's other options and what is left of the job's time; the results and the members
// carried unchanged go into one ZIP, in the archive's order, each at its path (a converted one
// with the new extension).
//
// A member is carried, and named in the progress record's `skipped`, when no route turns it into
// `each` (an unknown format, a text file to an audio format), when its route would keep only a
// picture of its first page (a document to an image: a batch must not drop pages unnoticed), or
// when its own conversion fails (a damaged photo among a hundred good ones): users converting a
// folder expect the rest to succeed. What is not the member's fault still fails the job: the
// job's time limit, a shutdown, a full disk, the output cap.
import { linkSync, mkdirSync, renameSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { ConvertdError, isDiskFull } from '../errors.ts';
import type { ArchiveMember, ArchiveMembers } from '../engines/capabilities.ts';
import { checkOptions } from '../engines/options.ts';
import { runPipeline, stepTimeoutMs, type PipelineRequest } from '../engines/pipeline.ts';
import { assignOptions, routeOptions, type Route } from '../engines/planner.ts';
import type { EngineRegistry } from '../engines/registry.ts';
import { writeZip, type ZipMember } from '../engines/support/zip-writer.ts';
import { sniffFile } from '../formats/sniff.ts';
import type { EngineIsolation } from './types.ts';

export interface ConversionRun extends PipelineRequest {
  readonly engines: EngineRegistry;
  /** The job's options as the client gave them (text): a batch hands them on to every member's route. */
  readonly jobOptions: Readonly<Record<string, string>>;
  readonly isolation: Pick<EngineIsolation, 'giveToEngineUser'>;
  readonly log?: Logger;
}

export interface ConversionResult {
  readonly output: string;
  /** Members carried unconverted (a batch only). */
  readonly skipped: readonly string[];
}

/** Options of the archive step itself, not handed on to the members. */
const BATCH_OWN = new Set(['each', 'compression_level']);

/** Shares of the job's progress: unpacking, the members' conversions, writing the ZIP. */
const UNPACK_SHARE = 0.1;
const ZIP_SHARE = 0.1;

/** Categories whose formats become an image only as a picture of their first page. */
const RENDERS_IMAGE = new Set(['image', 'vector', 'video']);

/** The archives step of a route asked for target zip with each, and the engine's unpacking. */
function batchOf(run: PipelineRequest): { each: string; members: ArchiveMembers } | undefined {
  const [step] = run.route;
  const each = run.stepOptions?.[0]?.['each'];
  const members = step?.engine.capabilities?.['archive-members'];
  if (run.route.length !== 1 || step?.to !== 'zip' || typeof each !== 'string' || !members) return undefined;
  return { each, members };
}

/** Runs the job's route: a batch when it is one, otherwise the ordinary pipeline. */
export async function runConversion(run: ConversionRun): Promise<ConversionResult> {
  const batch = batchOf(run);
  if (!batch) return { output: await runPipeline(run), skipped: [] };
  return runBatch(run, batch.each, batch.members);
}

/** A member's path with the extension of `to` instead of its own (`photos/a.png` → `photos/a.webp`). */
function renamed(name: string, fromExtensions: readonly string[], toExtension: string): string {
  const slash = name.lastIndexOf('/');
  const base = name.slice(slash + 1);
  const lower = base.toLowerCase();
  // Its format's own extension first (longest first: `.tar.gz` before `.gz`), else whatever follows the last dot.
  const known = [...fromExtensions].sort((a, b) => b.length - a.length).find((ext) => lower.endsWith(`.${ext}`) && lower.length > ext.length + 1);
  const dot = base.lastIndexOf('.');
  const stem = known ? base.slice(0, base.length - known.length - 1) : dot > 0 ? base.slice(0, dot) : base;
  return `${name.slice(0, slash + 1)}${stem}.${toExtension}`;
}

/**
 * A name not yet taken in the ZIP (case aside, for unpacking on Windows and macOS): `wanted`, else
 * `alternative` (a.jpg's result as `a.jpg.webp` when a.png already became a.webp), else the last
 * of them numbered: `a.jpg-2.webp`, ...
 */
function unique(taken: Set<string>, wanted: string, alternative?: string): string {
  let name = [wanted, alternative].find((candidate) => candidate !== undefined && !taken.has(candidate.toLowerCase()));
  if (name === undefined) {
    const last = alternative ?? wanted;
    const dot = last.lastIndexOf('.');
    const split = dot > last.lastIndexOf('/') + 1 ? dot : last.length;
    for (let n = 2; name === undefined || taken.has(name.toLowerCase()); n++) name = `${last.slice(0, split)}-${n}${last.slice(split)}`;
  }
  taken.add(name.toLowerCase());
  return name;
}

/** Whether an error is the member's own (carry it) rather than the job's (fail the job). */
function isMemberFailure(error: unknown, signal: AbortSignal): boolean {
  if (signal.aborted || isDiskFull(error)) return false;
  if (error instanceof ConvertdError && ['insufficient_storage', 'output_too_large', 'unavailable'].includes(error.code)) return false;
  return true;
}

async function runBatch(run: ConversionRun, each: string, archive: ArchiveMembers): Promise<ConversionResult> {
  const { route, input, workDir, limits, signal, engines, formats } = run;
  const step = route[0]!;
  const deadline = performance.now() + limits.timeoutMs;
  const remaining = () => Math.max(1, Math.floor(deadline - performance.now()));
  let reported = 0;
  const report = (fraction: number) => {
    const clamped = Math.min(1, fraction);
    if (clamped > reported) {
      reported = clamped;
      run.onProgress(clamped);
    }
  };

  const unpacked: ArchiveMember[] = await archive.unpack({
    input, from: step.from, dir: path.join(workDir, 'members'), workDir,
    timeoutMs: stepTimeoutMs(step.engine, remaining(), run.engineTimeouts), signal,
    onProgress: (fraction) => report(UNPACK_SHARE * Math.min(1, fraction)),
  });
  report(UNPACK_SHARE);

  const target = formats.get(each);
  if (!target) throw new ConvertdError('conversion_failed', `The format ${each} is not known here.`);
  const toExtension = target.extensions[0] ?? each;
  const given = Object.fromEntries(Object.entries(run.jobOptions).filter(([name]) => !BATCH_OWN.has(name)));
  const converted = path.join(workDir, 'converted');
  mkdirSync(converted);
  const zipped: ZipMember[] = [];
  const skipped: string[] = [];
  const taken = new Set<string>();
  let totalBytes = 0;
  const count = (bytes: number) => {
    // The ZIP stores compressed formats as they are: past the cap in sum, it would be past it whole.
    totalBytes += bytes;
    if (totalBytes > limits.maxOutputBytes) throw new ConvertdError('output_too_large');
  };
  const memberShare = (1 - UNPACK_SHARE - ZIP_SHARE) / Math.max(1, unpacked.length);

  for (const [index, member] of unpacked.entries()) {
    signal.throwIfAborted();
    const base = UNPACK_SHARE + index * memberShare;
    const name = member.name.split('/').filter((part) => part !== '' && part !== '.').join('/');
    const carry = (why: string, error?: unknown) => {
      run.log?.info({ event: 'batch_member_skipped', member: index + 1, reason: why, ...(error ? { err: error } : {}) }, 'archive member carried unconverted');
      count(statSync(member.file).size);
      zipped.push({ name: unique(taken, name), file: member.file });
      skipped.push(name);
    };
    const sniffed = (await sniffFile(member.file, path.posix.basename(name), formats)).format;
    const plan = sniffed ? memberRoute(engines, sniffed.id, sniffed.category, each, target.category, Object.keys(given)) : undefined;
    if (!sniffed || !plan) {
      carry(sniffed ? `no route from ${sniffed.id} to ${each}` : 'unknown format');
      report(base + memberShare);
      continue;
    }
    const memberDir = path.join(workDir, 'm', String(index + 1));
    try {
      mkdirSync(memberDir, { recursive: true });
      const memberInput = path.join(memberDir, `input.${sniffed.extensions[0] ?? sniffed.id}`);
      linkSync(member.file, memberInput);
      run.isolation.giveToEngineUser([memberDir, memberInput]);
      const output = await runPipeline({
        route: plan,
        input: memberInput,
        workDir: memberDir,
        limits: { ...limits, timeoutMs: remaining() },
        formats,
        signal,
        engineTimeouts: run.engineTimeouts,
        stepOptions: assignOptions(plan, checkOptions(routeOptions(plan), given, { maxImagePixels: limits.maxImagePixels })),
        onProgress: (fraction) => report(base + memberShare * fraction),
      });
      const kept = path.join(converted, String(index + 1));
      renameSync(output, kept);
      count(statSync(kept).size);
      zipped.push({ name: unique(taken, renamed(name, sniffed.extensions, toExtension), `${name}.${toExtension}`), file: kept });
    } catch (error) {
      if (!isMemberFailure(error, signal)) throw error;
      carry(error instanceof ConvertdError ? error.code : 'conversion failed', error);
    } finally {
      await fs.rm(memberDir, { recursive: true, force: true });
    }
    report(base + memberShare);
  }

  const output = path.join(workDir, 'batch.zip');
  await writeZip(output, zipped, limits.maxOutputBytes, (done) => report(1 - ZIP_SHARE + ZIP_SHARE * done / Math.max(1, zipped.length)), signal);
  return { output, skipped };
}

/**
 * The route a member takes to `each`, or undefined when it is carried: no route, or one that
 * would turn a paged format (a document, a spreadsheet, slides, an ebook, ...) into a picture of
 * its first page.
 */
function memberRoute(engines: EngineRegistry, from: string, fromCategory: string, each: string, eachCategory: string, optionNames: readonly string[]): Route | undefined {
  if ((eachCategory === 'image' || eachCategory === 'vector') && !RENDERS_IMAGE.has(fromCategory)) return undefined;
  const route = engines.route(from, each, optionNames);
  if (!route || route.some((step) => step.firstPageOnly)) return undefined;
  return route;
}
