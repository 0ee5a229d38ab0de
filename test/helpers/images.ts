// Is the output the same picture as the source? Both are decoded by test/helpers/compare_images.py
// (Pillow, or Debian's vips CLI where Pillow lacks the format), never by the engines' sharp.
import { execFile } from 'node:child_process';
import path from 'node:path';

const SCRIPT = path.join(import.meta.dirname, 'compare_images.py');
const { VIPSHOME: _vipsHome, ...toolEnv } = process.env;

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

/** Decodes and compares many images in one Python process; rejects when any job failed. */
export function compareImages(jobs: readonly CompareJob[]): Promise<Comparison[]> {
  return new Promise((resolve, reject) => {
    const child = execFile('/usr/bin/python3', [SCRIPT], { env: toolEnv, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`compare_images.py failed: ${stderr || error.message}`));
      const results = JSON.parse(stdout) as Array<Comparison | { error: string }>;
      const failed = results.findIndex((r) => 'error' in r);
      if (failed >= 0) return reject(new Error(`${jobs[failed]!.output}: ${(results[failed] as { error: string }).error}`));
      resolve(results as Comparison[]);
    });
    child.stdin!.end(JSON.stringify(jobs));
  });
}

export async function compareImage(job: CompareJob): Promise<Comparison> {
  return (await compareImages([job]))[0]!;
}
