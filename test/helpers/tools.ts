// Independent checks of outputs with Debian's tools, never with the engine that made them.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

// sharp sets VIPSHOME=/target in the process that loads it, which makes Debian's vips look for its
// modules (HEIF among them) in the wrong place: the tools get an environment without it.
/** Debian's tools' environment: without the VIPSHOME sharp sets, which sends Debian's vips CLI to the wrong module directory. */
const { VIPSHOME: _vipsHome, ...env } = process.env;
export const toolEnv: NodeJS.ProcessEnv = env;
function tool(program: string, args: string[]): string {
  return execFileSync(program, args, { encoding: 'utf8', env: toolEnv, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export function fileMime(file: string): string {
  return tool('file', ['--brief', '--mime-type', file]);
}

/** fileMime without blocking the test's event loop (pair tests keep their other jobs moving meanwhile). */
export async function fileMimeOf(file: string): Promise<string> {
  const { stdout } = await execFileAsync('file', ['--brief', '--mime-type', file], { encoding: 'utf8', env: toolEnv });
  return stdout.trim();
}

export interface ImageFacts {
  width: number;
  height: number;
  /** Mean of all bands, 0-255. */
  average: number;
}

/**
 * Decodes an image with a library other than the engines': Pillow (Debian's python3-pil) where it
 * reads the format, Debian's libvips otherwise (HEIC, AVIF, JPEG XL, which Pillow lacks here).
 */
export function decodeImage(file: string): { width: number; height: number; average: number } {
  const script = [
    'import sys', 'from PIL import Image, ImageStat',
    'im = Image.open(sys.argv[1]); im.load()',
    'rgb = im.convert("RGB")',
    'print(im.width, im.height, sum(ImageStat.Stat(rgb).mean) / 3)',
  ].join('\n');
  try {
    const [width, height, average] = tool('/usr/bin/python3', ['-c', script, file]).split(' ').map(Number) as [number, number, number];
    return { width, height, average };
  } catch {
    const facts = imageFacts(file);
    return { width: facts.width, height: facts.height, average: facts.average };
  }
}

/** Reads an image with Debian's libvips CLI (not sharp's bundled copy). */
export function imageFacts(file: string): ImageFacts {
  const field = (name: string) => tool('vipsheader', ['-f', name, file]);
  return {
    width: Number(field('width')),
    height: Number(field('height')),
    average: colourAverage(file),
  };
}

/** Mean of the colour bands only (an alpha band would pull it towards 255). */
function colourAverage(file: string): number {
  const bands = Number(tool('vipsheader', ['-f', 'bands', file]));
  if (bands < 4) return Number(tool('vips', ['avg', file]));
  const colour = path.join(path.dirname(file), `${path.basename(file)}.colour.v`);
  tool('vips', ['extract_band', file, colour, '0', '--n', '3']);
  return Number(tool('vips', ['avg', colour]));
}

/** One folder per test process for writeTemp's files, removed when the process exits (a whole run wrote some 25,000). */
let outputsRoot: string | undefined;
function outputs(): string {
  if (!outputsRoot) {
    const root = mkdtempSync(path.join(os.tmpdir(), 'convertd-outputs-'));
    process.once('exit', () => rmSync(root, { recursive: true, force: true }));
    outputsRoot = root;
  }
  return outputsRoot;
}

export async function writeTemp(bytes: Uint8Array, name: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(outputs(), 'out-'));
  const file = path.join(dir, name);
  await fs.writeFile(file, bytes);
  return file;
}
