// Runs a planned route: one engine call per step, each writing a file the next step reads, with
// one progress figure that rises across the steps and an output check after every step (exit
// codes lie: a converter may "succeed" and write nothing, or something else).
import { statSync, type Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../errors.ts';
import type { FormatCatalogue } from '../formats/catalogue.ts';
import { checkInputCaps } from '../formats/input-caps.ts';
import { formatOfContent } from '../formats/sniff.ts';
import { END_OF_CENTRAL_DIRECTORY, LOCAL_HEADER } from '../formats/zip-directory.ts';
import type { StepOptions } from './options.ts';
import type { Route } from './planner.ts';
import type { EngineLimits } from './types.ts';

export interface PipelineRequest {
  readonly route: Route;
  readonly input: string;
  readonly workDir: string;
  readonly limits: EngineLimits;
  /** The catalogue, for checking each step's output against its format's signature. */
  readonly formats: FormatCatalogue;
  readonly signal: AbortSignal;
  /** Overall progress, 0..1, never decreasing. */
  readonly onProgress: (fraction: number) => void;
  /** Per-engine limits in seconds from CONVERTD_ENGINE_TIMEOUTS, over the engines' own. */
  readonly engineTimeouts?: Readonly<Record<string, number>>;
  /** The options each step applies (planner.ts assignOptions), by step; absent: none. */
  readonly stepOptions?: readonly StepOptions[];
}

/** The wall-clock limit of one step: the engine's, but never beyond what the job has left. */
export function stepTimeoutMs(engine: { id: string; timeoutSeconds?: number }, jobRemainingMs: number, overrides: Readonly<Record<string, number>> = {}): number {
  const seconds = overrides[engine.id] ?? engine.timeoutSeconds;
  return Math.max(1, Math.floor(Math.min(jobRemainingMs, seconds === undefined ? Infinity : seconds * 1000)));
}

const NO_OPTIONS: StepOptions = Object.freeze({});

/** How often the time-based estimate moves for engines that report no progress of their own. */
const ESTIMATE_TICK_MS = 250;

/**
 * An honest estimate for a step whose engine reports nothing: it follows the elapsed share of
 * the expected time but slows down as it nears the end, so that it never reaches 100% before
 * the step really ends (1 - e^-t reaches 63% at the expected time and 95% at three times it).
 */
export function estimatedFraction(elapsedSeconds: number, expectedSeconds: number): number {
  return Math.min(0.95, 1 - Math.exp(-elapsedSeconds / Math.max(0.05, expectedSeconds)));
}

export async function checkOutput(file: string, format: string, maxBytes: number, formats: FormatCatalogue): Promise<number> {
  // Synchronous, as the job path's other metadata calls (storage/local.ts says why).
  let stat: Stats | undefined;
  try {
    stat = statSync(file);
  } catch {
    stat = undefined;
  }
  if (!stat?.isFile() || stat.size === 0) {
    throw new ConvertdError('conversion_failed', 'The converter produced no output: the file may use features it does not support.');
  }
  if (stat.size > maxBytes) throw new ConvertdError('output_too_large');
  const definition = formats.get(format);
  if (definition?.detect === 'magic') {
    const detectedId = await formatOfContent(file, formats);
    // A ZIP archive's members may make it look like a package of its own (a zipped shapefile, a
    // KMZ, an OOXML document): converted to zip, it is still the archive that was asked for.
    const zipArchive = format === 'zip' && detectedId !== undefined && await hasZipSignature(file);
    const same = detectedId === format || zipArchive || (detectedId !== undefined && detectedId === definition.signatureOf);
    if (!same) {
      throw new ConvertdError('conversion_failed', `The converter produced something other than ${format}: the conversion failed.`);
    }
  }
  return stat.size;
}

/** A ZIP's local file header, or the end record of an empty ZIP, at the start of the file. */
async function hasZipSignature(file: string): Promise<boolean> {
  const handle = await fs.open(file, 'r');
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await handle.read(head, 0, 4, 0);
    return bytesRead === 4 && [LOCAL_HEADER, END_OF_CENTRAL_DIRECTORY].includes(head.readUInt32LE(0));
  } finally {
    await handle.close();
  }
}

/** Runs every step of the route and returns the path of the final output. */
export async function runPipeline(request: PipelineRequest): Promise<string> {
  const { route, workDir, limits, signal } = request;
  const jobDeadline = performance.now() + limits.timeoutMs;
  const totalCost = route.reduce((sum, step) => sum + step.cost, 0);
  let doneCost = 0;
  let current = request.input;
  // The input's own caps, the same on every route that reads its format (formats/input-caps.ts).
  if (route[0]) await checkInputCaps(current, route[0].from, limits);
  let reported = 0;
  const report = (fraction: number) => {
    const clamped = Math.min(1, Math.max(reported, fraction));
    if (clamped > reported) {
      reported = clamped;
      request.onProgress(clamped);
    }
  };

  for (const [index, step] of route.entries()) {
    signal.throwIfAborted();
    const share = step.cost / totalCost;
    const base = doneCost / totalCost;
    const stepProgress = (fraction: number) => report(base + share * Math.min(1, Math.max(0, fraction)));
    const output = path.join(workDir, `step${index + 1}.${step.to}`);

    let ticker: NodeJS.Timeout | undefined;
    if (!step.engine.reportsProgress) {
      const inputBytes = statSync(current).size;
      const expected = step.engine.estimateSeconds(inputBytes, step.from, step.to);
      const started = performance.now();
      ticker = setInterval(() => stepProgress(estimatedFraction((performance.now() - started) / 1000, expected)), ESTIMATE_TICK_MS);
      ticker.unref();
    }
    const timeoutMs = stepTimeoutMs(step.engine, jobDeadline - performance.now(), request.engineTimeouts);
    const stepTimer = AbortSignal.timeout(timeoutMs);
    try {
      await step.engine.convert({
        input: current,
        output,
        from: step.from,
        to: step.to,
        workDir,
        onProgress: (fraction) => stepProgress(Math.min(0.99, fraction)),
        signal: AbortSignal.any([signal, stepTimer]),
        limits: { ...limits, timeoutMs },
        options: request.stepOptions?.[index] ?? NO_OPTIONS,
      });
    } catch (error) {
      // The step's own limit ran out (engines report it as a timeout, or as the abort they saw).
      if (stepTimer.aborted && !signal.aborted) {
        throw new ConvertdError('timeout', `The ${step.engine.id} step took longer than its limit of ${Math.round(timeoutMs / 1000)} s: send a smaller or simpler file.`);
      }
      throw error;
    } finally {
      if (ticker) clearInterval(ticker);
    }
    signal.throwIfAborted();
    await checkOutput(output, step.to, limits.maxOutputBytes, request.formats);
    // Intermediate files go as soon as the next step has what it needs: disk is a shared budget.
    if (current !== request.input) await fs.rm(current, { force: true });
    current = output;
    doneCost += step.cost;
    stepProgress(1);
  }
  return current;
}
