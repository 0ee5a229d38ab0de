// Is the output the same picture as the source? Both are decoded by test/helpers/compare_images.py
// (Pillow, or Debian's vips CLI where Pillow lacks the format), never by the engines' sharp: one
// long-lived process per test file (python-server.ts), which decodes each reference once.
import path from 'node:path';
import { PythonServer } from './python-server.ts';

const SCRIPT = path.join(import.meta.dirname, 'compare_images.py');
const comparer = new PythonServer<readonly CompareJob[], Array<Comparison | { error: string }>>([SCRIPT, '--serve'], 'compare_images.py --serve');

export interface DecodedFacts {
  width: number;
  height: number;
  mode: string;
  decoder: string;
  /** The EXIF (or HEIF) orientation tag, when the file has one. */
  orientation: number | null;
  has_alpha: boolean;
  /** Mean of each colour band, flattened onto white, 0-255. */
  means: [number, number, number];
  alpha_mean: number;
}

export interface Comparison {
  output: DecodedFacts;
  reference?: DecodedFacts;
  /** Mean SSIM of the luma of both, flattened onto white; null when the sizes differ. */
  ssim?: number | null;
  alpha_max_difference?: number;
  /** RGBA of the output at each probe point. */
  probes: Array<[number, number, number, number]>;
}

export interface CompareJob {
  output: string;
  reference?: string;
  /** bilevel: a dithered black-and-white output, both averaged over 4x4 blocks before SSIM. */
  mode?: 'colour' | 'bilevel';
  probes?: Array<[number, number]>;
}

/** Decodes and compares images (several in one request where a test has them); rejects when any job failed. */
export async function compareImages(jobs: readonly CompareJob[]): Promise<Comparison[]> {
  const results = await comparer.request(jobs);
  const failed = results.findIndex((r) => 'error' in r);
  if (failed >= 0) throw new Error(`${jobs[failed]!.output}: ${(results[failed] as { error: string }).error}`);
  return results as Comparison[];
}

export async function compareImage(job: CompareJob): Promise<Comparison> {
  return (await compareImages([job]))[0]!;
}
