// Debian's libvips command line, for the image formats the libvips bundled with sharp lacks:
// HEIC/HEIF (libheif with libde265/x265), JPEG XL and JPEG 2000. Each source is read with its
// own explicit loader (never by content sniffing, which could hand a file to another loader), the
// pixel count is checked on the header before anything is decoded (the vips CLI has no cap of its
// own: it decoded a 2.5-gigapixel PNG here, docs/security.md#vips-and-sharp), and it runs sandboxed.
// JPEG, GIF and AVIF results come through PNG and sharp, which the planner chains.
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const LOADER: Record<string, string> = {
  heic: 'heifload', jxl: 'jxlload', jp2: 'jp2kload', png: 'pngload', webp: 'webpload', tiff: 'tiffload', jpg: 'jpegload',
};
/** Saver options by target extension. */
const SAVE_OPTIONS: Record<string, string> = {
  png: '[compression=6]', webp: '[Q=82]', tiff: '[compression=deflate]', heic: '[Q=60]', jxl: '', jp2: '',
};
/**
 * Loaders that turn an image upright by its orientation tag themselves. The vips command keeps
 * the pixels as stored otherwise, and the savers drop or reset the tag: a photo taken sideways
 * came out sideways (test/image-pairs.test.ts, orientation).
 */
const AUTOROTATES = new Set(['jpegload', 'tiffload']);
/** Loaders that keep an EXIF orientation without applying it (libheif applies HEIF's own itself). */
const ROTATE_AFTER = new Set(['pngload', 'webpload']);
const ONLY_HERE = ['heic', 'jxl', 'jp2'];
const COMMON = ['png', 'webp', 'tiff', 'jpg'];

function edges(): ConversionEdge[] {
  const list: ConversionEdge[] = [];
  for (const from of ONLY_HERE) {
    for (const to of ['png', 'webp', 'tiff', ...ONLY_HERE]) if (to !== from) list.push({ from, to, cost: 2 });
  }
  for (const from of COMMON) for (const to of ONLY_HERE) list.push({ from, to, cost: 2 });
  return list;
}

const ENV = { VIPS_CONCURRENCY: '1' };

export class VipsCliEngine implements Engine {
  readonly id = 'vips';
  readonly timeoutSeconds = 120;
  readonly edges = edges();
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 0.5 + inputBytes / 2_000_000;
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    return withScratchDir(async (dir) => {
      const make = await run('/usr/bin/vips', ['black', 'probe.png', '8', '8', '--bands', '3'], { cwd: dir, timeoutMs: 20_000, env: ENV });
      ensureSuccess(make, 'vips');
      const working = new Set<string>(COMMON);
      for (const format of ONLY_HERE) {
        const save = await run('/usr/bin/vips', ['pngload', 'probe.png', `probe.${format}`], { cwd: dir, timeoutMs: 20_000, env: ENV });
        const load = save.exitCode === 0
          ? await run('/usr/bin/vipsheader', ['-f', 'width', `probe.${format}`], { cwd: dir, timeoutMs: 20_000, env: ENV, captureStdout: true })
          : undefined;
        if (load?.exitCode === 0 && load.stdout.trim() === '8') working.add(format);
      }
      if (!ONLY_HERE.some((f) => working.has(f))) throw new Error('vips reads and writes none of heic, jxl, jp2 here');
      return this.edges.filter((e) => working.has(e.from) && working.has(e.to));
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, workDir, limits, signal } = request;
    const loader = LOADER[from];
    if (!loader || SAVE_OPTIONS[to] === undefined) throw new ConvertdError('conversion_failed', `vips does not convert ${from} to ${to}.`);
    const run = (program: string, args: string[]) =>
      this.context.run(program, args, { cwd: workDir, timeoutMs: limits.timeoutMs, signal, env: ENV, captureStdout: true, limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE } });

    // The header alone, with the same explicit loader: refuse pixel floods before decoding.
    const header = await run('/usr/bin/vipsheader', ['-a', `${path.basename(input)}`]);
    if (header.exitCode !== 0) {
      throw new ConvertdError('corrupt_input', `The image could not be read (${lastErrorLine(header.stderr)}): it may be damaged or truncated.`);
    }
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(header.stdout)?.[1] ?? 0);
    const pixels = field('width') * field('height') * Math.max(1, field('n-pages'));
    if (pixels > limits.maxImagePixels) {
      throw new ConvertdError('input_too_complex', 'The image has more pixels than this service processes: send a smaller image.');
    }
    signal.throwIfAborted();
    const target = `${path.basename(output)}${SAVE_OPTIONS[to]}`;
    const orientation = field('orientation');
    let result;
    const sideways = orientation >= 2 && orientation <= 8;
    if (sideways && AUTOROTATES.has(loader)) {
      result = await run('/usr/bin/vips', [loader, path.basename(input), target, '--autorotate']);
    } else if (sideways && ROTATE_AFTER.has(loader)) {
      // A PNG or WebP with an EXIF orientation: decoded to vips' own format, then turned upright.
      result = await run('/usr/bin/vips', [loader, path.basename(input), 'stored.v']);
      if (result.exitCode === 0) result = await run('/usr/bin/vips', ['autorot', 'stored.v', target]);
    } else {
      result = await run('/usr/bin/vips', [loader, path.basename(input), target]);
    }
    if (result.exitCode !== 0 && /load|read|decode|premature|truncat|corrupt|error in tile|invalid/i.test(result.stderr)) {
      throw new ConvertdError('corrupt_input', `The image could not be decoded (${lastErrorLine(result.stderr)}): it may be damaged or truncated.`);
    }
    ensureSuccess(result, 'vips');
  }
}
