// SVG through librsvg's rsvg-convert (to PNG, PDF, EPS and PS): it loads no URL and, in the sandbox, no file but the
// upload itself, so external entities, XInclude and linked images come out blank. librsvg caps a
// canvas at 32767 px a side, but a 30000 x 30000 canvas still means 3.6 GB of pixels
// (docs/security.md#librsvg): the declared size is read here first and refused past the pixel limit.
// rsvg-convert leaves a 0-byte file on some errors; the pipeline's output check catches that.
// To PNG, `width`/`height`/`fit` and `pixel_density` render the drawing at that size (a vector
// drawn at 800 px, not a bitmap scaled up); PDF, EPS and PS stay vector and take no option.
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzip as gunzipCallback } from 'node:zlib';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import { narrow, numberOption, OPTIONS, type StepOptions } from '../options.ts';
import { outputSize, rasterOptions, requestedSize } from '../support/raster-options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { startsAsSvg } from './formats.ts';

const RSVG = '/usr/bin/rsvg-convert';
const gunzip = promisify(gunzipCallback);
// PostScript is written, never read: no engine here accepts PostScript uploads (Ghostscript's
// sandbox has a long record of escapes, docs/security.md#ghostscript-and-postscript).
/** CSS pixels are 1/96 inch: rsvg-convert's default, and what a drawing's px sizes mean. */
const CSS_DPI = 96;
/**
 * PNG: the size options, and the resolution. rsvg-convert writes no metadata into its PNG (no
 * `strip`), and PNG keeps transparency (no `background`).
 */
const PNG_OPTIONS = [
  ...rasterOptions({ alpha: true, keepsMetadata: false }),
  narrow(OPTIONS.pixel_density, { default: CSS_DPI, description: `Resolution in dots per inch at which the drawing is rendered: ${CSS_DPI} (the default) draws a CSS pixel as one pixel, 192 at twice the size. Ignored when width or height is given.` }),
];
// A drawing made a PDF has one page of ours: a page_range or pixel_density of a later step (svg →
// pdf → jpg) is not the upload's; svg → png renders at the size asked directly (planner.ts, `resets`).
// A gzip-compressed SVG (.svgz) goes the same ways, inflated first (inflateSvgz), and to plain SVG.
const EDGES: ConversionEdge[] = [
  ...['svg', 'svgz'].flatMap((from) => ['png', 'pdf', 'eps', 'ps'].map((to): ConversionEdge => ({
    from, to, cost: 1, ...(to === 'png' ? { options: PNG_OPTIONS } : { resets: ['page_range', 'pixel_density'] }),
  }))),
  { from: 'svgz', to: 'svg', cost: 1 },
];
/**
 * The most an .svgz may inflate to. rsvg-convert would inflate it itself, with no bound: a few
 * MiB of gzip can hold gigabytes of XML (a decompression bomb), so it is inflated here, within
 * this cap, and rsvg reads the plain SVG.
 */
const MAX_INFLATED_SVG_BYTES = 64 * 1024 * 1024;
const MAX_SIDE = 16384;

/** CSS pixels per unit, at rsvg-convert's default 96 dpi. */
const UNIT_PX: Record<string, number> = { '': 1, px: 1, pt: 96 / 72, pc: 16, mm: 96 / 25.4, cm: 96 / 2.54, in: 96 };

function toPixels(value: string | undefined): number | undefined {
  const match = /^\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*(px|pt|pc|mm|cm|in)?\s*$/i.exec(value ?? '');
  if (!match) return undefined;
  return Number(match[1]) * UNIT_PX[(match[2] ?? '').toLowerCase()]!;
}

/** The size the root <svg> element declares, in pixels, when it says. */
export function declaredSize(head: string): { width: number; height: number } | undefined {
  const root = /<svg\b([^>]*)>/i.exec(head)?.[1];
  if (root === undefined) return undefined;
  const attribute = (name: string) => new RegExp(`(?:^|\\s)${name}\\s*=\\s*["']([^"']*)["']`, 'i').exec(root)?.[1];
  const viewBox = attribute('viewBox')?.trim().split(/[\s,]+/).map(Number);
  const width = toPixels(attribute('width')) ?? (viewBox?.length === 4 ? viewBox[2] : undefined);
  const height = toPixels(attribute('height')) ?? (viewBox?.length === 4 ? viewBox[3] : undefined);
  if (width === undefined || height === undefined || !Number.isFinite(width) || !Number.isFinite(height)) return undefined;
  return { width, height };
}

export class RsvgEngine implements Engine {
  readonly id = 'rsvg';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 60;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 0.3 + inputBytes / 1_000_000;
  }

  async probe(): Promise<void> {
    const { run, withScratchDir } = this.context;
    await withScratchDir(async (dir) => {
      await fs.writeFile(path.join(dir, 'probe.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="red"/></svg>');
      for (const format of ['png', 'pdf', 'eps', 'ps']) {
        const result = await run(RSVG, ['--format', format, '--output', `probe.${format}`, 'probe.svg'], { cwd: dir, timeoutMs: 20_000 });
        ensureSuccess(result, 'rsvg-convert');
        if ((await fs.stat(path.join(dir, `probe.${format}`))).size === 0) throw new Error(`rsvg-convert wrote an empty ${format}`);
      }
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { output, to, workDir, limits, signal, options } = request;
    const input = request.from === 'svgz' ? await inflateSvgz(request.input, workDir) : request.input;
    if (to === 'svg') {
      await fs.rename(input, output);
      return;
    }
    const handle = await fs.open(input, 'r');
    const head = await handle.read(Buffer.alloc(65536), 0, 65536, 0).then(({ buffer, bytesRead }) => buffer.toString('utf8', 0, bytesRead)).finally(() => handle.close());
    const size = declaredSize(head);
    const render = to === 'png' ? renderArguments(size, options, limits.maxImagePixels) : [];
    if (to === 'png' && render.length === 0 && size && (size.width > MAX_SIDE || size.height > MAX_SIDE || size.width * size.height > limits.maxImagePixels)) {
      throw new ConvertdError('input_too_complex', `The drawing declares ${Math.round(size.width)}x${Math.round(size.height)} pixels; this service renders at most ${MAX_SIDE} a side and ${limits.maxImagePixels} in all.`);
    }
    const result = await this.context.run(RSVG, ['--format', to, ...render, '--output', path.basename(output), path.basename(input)], {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
    if (result.exitCode !== 0) {
      const detail = lastErrorLine(result.stderr);
      if (/loop|exceeded|too many|limit/i.test(detail)) throw new ConvertdError('input_too_complex', `The drawing is too complex to render (${detail}).`);
      throw new ConvertdError('corrupt_input', `The SVG could not be rendered${detail ? ` (${detail})` : ''}: check that it is a valid SVG file.`);
    }
    ensureSuccess(result, 'rsvg-convert');
  }
}

/** The plain SVG inside an .svgz, written beside it (within MAX_INFLATED_SVG_BYTES); its path. */
async function inflateSvgz(input: string, workDir: string): Promise<string> {
  let svg: Buffer;
  try {
    svg = await gunzip(await fs.readFile(input), { maxOutputLength: MAX_INFLATED_SVG_BYTES });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new ConvertdError('input_too_complex', `The compressed drawing inflates to more than ${MAX_INFLATED_SVG_BYTES / 1024 / 1024} MiB of SVG, more than this service renders.`);
    }
    throw new ConvertdError('corrupt_input', 'The .svgz file is not a complete gzip stream: check that it is not damaged.');
  }
  if (!startsAsSvg(svg.subarray(0, 65536))) {
    throw new ConvertdError('corrupt_input', 'The .svgz file does not hold an SVG drawing.');
  }
  const inflated = path.join(workDir, 'inflated.svg');
  await fs.writeFile(inflated, svg, { mode: 0o644 });
  return inflated;
}

/**
 * rsvg-convert's arguments for the size and resolution asked for (none without options), built
 * from numbers: the drawing is rendered at the output size. `fit=crop` renders it covering the box
 * and takes the box's middle as the page. The rendered size is checked first: past MAX_SIDE or
 * the pixel cap the options are refused.
 */
export function renderArguments(declared: { width: number; height: number } | undefined, options: StepOptions, maxPixels: number): string[] {
  const size = requestedSize(options);
  const density = numberOption(options, 'pixel_density');
  if (!size && density === undefined) return [];
  const option = size ? (size.width !== undefined ? 'width' : 'height') : 'pixel_density';
  const check = (width: number, height: number) => {
    if (width > MAX_SIDE || height > MAX_SIDE || width * height > maxPixels) {
      throw new ConvertdError('invalid_option', `Option "${option}": the drawing would be rendered at ${width} × ${height} pixels; this service renders at most ${MAX_SIDE} a side and ${maxPixels} in all.`, { option, reason: 'past the pixel limit', maximum_pixels: maxPixels });
    }
  };
  if (!declared) {
    // Without a declared size (no width, height or viewBox) there is no aspect ratio to keep.
    throw new ConvertdError('invalid_option', `Option "${option}": the drawing declares no size (no width, height or viewBox), so it cannot be rendered at another one.`, { option, reason: 'the drawing declares no size' });
  }
  if (!size) {
    const zoom = density! / CSS_DPI;
    check(Math.ceil(declared.width * zoom), Math.ceil(declared.height * zoom));
    return ['--zoom', zoom.toFixed(6)];
  }
  const intrinsic = { width: Math.max(1, declared.width), height: Math.max(1, declared.height) };
  const target = outputSize(intrinsic, size);
  check(target.width, target.height);
  if (size.fit !== 'crop') return ['--width', String(target.width), '--height', String(target.height)];
  const cover = Math.max(target.width / intrinsic.width, target.height / intrinsic.height);
  const drawn = { width: Math.max(target.width, Math.round(intrinsic.width * cover)), height: Math.max(target.height, Math.round(intrinsic.height * cover)) };
  check(drawn.width, drawn.height);
  return [
    '--width', String(drawn.width), '--height', String(drawn.height),
    '--page-width', String(target.width), '--page-height', String(target.height),
    `--left=${-Math.round((drawn.width - target.width) / 2)}`, `--top=${-Math.round((drawn.height - target.height) / 2)}`,
  ];
}
