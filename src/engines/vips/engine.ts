// Debian's libvips command line, for the image formats the libvips bundled with sharp lacks:
// HEIC/HEIF (libheif with libde265/x265), JPEG XL and JPEG 2000, and libvips' own format. Each source is read with its
// own explicit loader (never by content sniffing, which could hand a file to another loader), the
// pixel count is checked on the header before anything is decoded (the vips CLI has no cap of its
// own: it decoded a 2.5-gigapixel PNG here, docs/security.md#vips-and-sharp), and it runs sandboxed.
// JPEG, GIF and AVIF results come through PNG and sharp, which the planner chains.
// The raster options (support/raster-options.ts) map to the savers' own settings (Q, strip) and
// to `vips thumbnail` for a size; each format also converts to itself (a HEIC made smaller).
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import { booleanOption, numberOption } from '../options.ts';
import { outputSize, rasterOptions, requestedSize, type RasterTarget } from '../support/raster-options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { makeModulesHome } from '../support/vips-modules.ts';

const LOADER: Record<string, string> = {
  heic: 'heifload', jxl: 'jxlload', jp2: 'jp2kload', exr: 'openexrload', vips: 'vipsload', png: 'pngload', webp: 'webpload', tiff: 'tiffload', jpg: 'jpegload',
};
/**
 * Each target's saver: its fixed settings, and the raster options it takes. Every target here
 * holds transparency (no `background`). `quality` is offered for the lossy savers, with the
 * quality they use when none is given: WebP 82 and HEIC 60 (set here), JPEG 2000 48 (vips'
 * default), JPEG XL 90: vips' jxlsave uses butteraugli distance 1.0 unless Q is set, and maps Q to
 * distance as 0.1 + (100 - Q) × 0.09 (libvips jxlsave.c), so Q 90 is the same encoder setting.
 */
const TARGETS: Record<string, RasterTarget & { readonly settings: readonly string[] }> = {
  png: { alpha: true, settings: ['compression=6'] },
  webp: { alpha: true, defaultQuality: 82, settings: ['Q=82'] },
  // vips 8.14's TIFF, JPEG XL and JPEG 2000 savers write no EXIF (measured: a photo's GPS position
  // is gone with strip off): their results are always stripped, and `strip` is not offered.
  tiff: { alpha: true, keepsMetadata: false, settings: ['compression=deflate'] },
  heic: { alpha: true, defaultQuality: 60, settings: ['Q=60'] },
  jxl: { alpha: true, keepsMetadata: false, defaultQuality: 90, settings: [] },
  jp2: { alpha: true, keepsMetadata: false, defaultQuality: 48, settings: [] },
  // libvips' own format keeps every pixel as it is in memory; its metadata (EXIF among it) is
  // always stripped here, as for TIFF.
  vips: { alpha: true, keepsMetadata: false, settings: [] },
};
/**
 * Loaders that turn an image upright by its orientation tag themselves. The vips command keeps
 * the pixels as stored otherwise, and the savers drop or reset the tag: a photo taken sideways
 * came out sideways (test/image-pairs.test.ts, orientation).
 */
const AUTOROTATES = new Set(['jpegload', 'tiffload']);
/** Loaders that keep an EXIF orientation without applying it (libheif applies HEIF's own itself). */
const ROTATE_AFTER = new Set(['pngload', 'webpload']);
const ONLY_HERE = ['heic', 'jxl', 'jp2', 'vips'];
/**
 * Read only, into PNG (sharp and the other engines chain the rest): OpenEXR (vips has no saver
 * for it). Its pixels are linear light (scRGB floats), turned into 8-bit sRGB.
 */
const READ_ONLY = ['exr'];
const LINEAR_LIGHT = new Set(['exr']);
/**
 * A VIPS file holds any band format and colour space (floats, 16 bits, Lab, one band of grey):
 * turned into 8-bit sRGB as it is read, which every saver here takes (a no-op for 8-bit sRGB).
 */
const ANY_PIXELS = new Set(['vips']);
const COMMON = ['png', 'webp', 'tiff', 'jpg'];

function edges(): ConversionEdge[] {
  const list: ConversionEdge[] = [];
  const edge = (from: string, to: string): ConversionEdge => ({ from, to, cost: 2, options: rasterOptions(TARGETS[to]!) });
  for (const from of ONLY_HERE) {
    for (const to of ['png', 'webp', 'tiff', ...ONLY_HERE]) if (to !== from) list.push(edge(from, to));
  }
  for (const from of COMMON) for (const to of ONLY_HERE) list.push(edge(from, to));
  // Each format to itself too (from === to: a route of its own, for the options).
  for (const format of ONLY_HERE) list.push(edge(format, format));
  for (const from of READ_ONLY) list.push(edge(from, 'png'));
  return list;
}

/** Bytes per pixel of an intermediate `.v` file at most: four bands of 16 bits. */
const STAGE_BYTES_PER_PIXEL = 8;

const ENV = { VIPS_CONCURRENCY: '1' };

/** What every vips and vipsheader run gets: ENV, and VIPSHOME with its binding where there is one (support/vips-modules.ts). */
interface VipsRunSettings {
  readonly env: Readonly<Record<string, string>>;
  readonly readOnly: readonly string[];
}

export class VipsCliEngine implements Engine {
  readonly id = 'vips';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 120;
  readonly edges = edges();
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;
  /** The directory VIPSHOME names, made at the first run (the probe, or a job after a remembered probe). */
  private modulesHome: Promise<string | undefined> | undefined;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 0.5 + inputBytes / 2_000_000;
  }

  private async runSettings(): Promise<VipsRunSettings> {
    this.modulesHome ??= makeModulesHome();
    const home = await this.modulesHome;
    return home ? { env: { ...ENV, VIPSHOME: home }, readOnly: [home] } : { env: ENV, readOnly: [] };
  }

  async close(): Promise<void> {
    const home = await this.modulesHome?.catch(() => undefined);
    if (home) await fs.rm(home, { recursive: true, force: true });
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    const { withScratchDir } = this.context;
    const { env, readOnly } = await this.runSettings();
    const run = (program: string, args: string[], dir: string, captureStdout = false) => this.context.run(program, args, { cwd: dir, timeoutMs: 20_000, env, readOnly, captureStdout });
    return withScratchDir(async (dir) => {
      const make = await run('/usr/bin/vips', ['black', 'probe.png', '8', '8', '--bands', '3'], dir);
      ensureSuccess(make, 'vips');
      const working = new Set<string>(COMMON);
      for (const format of ONLY_HERE) {
        const save = await run('/usr/bin/vips', ['pngload', 'probe.png', `probe.${format}`], dir);
        const load = save.exitCode === 0 ? await run('/usr/bin/vipsheader', ['-f', 'width', `probe.${format}`], dir, true) : undefined;
        if (load?.exitCode === 0 && load.stdout.trim() === '8') working.add(format);
      }
      if (!ONLY_HERE.some((f) => working.has(f))) throw new Error('vips reads and writes none of heic, jxl, jp2, vips here');
      // The read-only loaders, when this build has them (OpenEXR comes with libopenexr).
      const loaders = await run('/usr/bin/vips', ['-l', 'foreign'], dir, true);
      for (const format of READ_ONLY) if (loaders.stdout.includes(`(${LOADER[format]})`)) working.add(format);
      return this.edges.filter((e) => working.has(e.from) && working.has(e.to));
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, workDir, limits, signal, options } = request;
    const loader = LOADER[from];
    const saver = TARGETS[to];
    if (!loader || !saver) throw new ConvertdError('conversion_failed', `vips does not convert ${from} to ${to}.`);
    // An intermediate `.v` holds the decoded pixels (bounded by the pixel cap checked below), which
    // may be larger than the result may be.
    const stageBytes = Math.max(limits.maxOutputBytes, limits.maxImagePixels * STAGE_BYTES_PER_PIXEL + 1_048_576);
    const { env, readOnly } = await this.runSettings();
    const run = (program: string, args: string[], fileSizeBytes = limits.maxOutputBytes) =>
      this.context.run(program, args, { cwd: workDir, timeoutMs: limits.timeoutMs, signal, env, readOnly, captureStdout: true, limits: { fileSizeBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE } });

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

    const orientation = field('orientation');
    const sideways = orientation >= 2 && orientation <= 8;
    const turned = sideways && (AUTOROTATES.has(loader) || ROTATE_AFTER.has(loader));

    // The size asked for, from the upright picture (orientations 5-8 swap the sides), checked
    // against the pixel cap before any work.
    const size = requestedSize(options);
    let resize: { width: number; height: number; crop: boolean } | undefined;
    if (size) {
      const swap = turned && orientation >= 5;
      const upright = { width: field(swap ? 'height' : 'width') || 1, height: field(swap ? 'width' : 'height') || 1 };
      const target = outputSize(upright, size);
      if (target.width * target.height > limits.maxImagePixels) {
        throw new ConvertdError('invalid_option', `Options "width"/"height": ${target.width} × ${target.height} pixels is more than this service's limit of ${limits.maxImagePixels}.`, { option: size.width !== undefined ? 'width' : 'height', reason: 'past the pixel limit', maximum_pixels: limits.maxImagePixels });
      }
      resize = { ...target, crop: size.fit === 'crop' };
    }

    // Metadata (EXIF with its GPS position, XMP, IPTC) is removed unless strip=false. vips' strip
    // removes the colour profile too: a picture with one (an iPhone's Display P3 HEIC) is first
    // turned into sRGB, which a file without a profile is taken to be, so its colours stay.
    const strip = booleanOption(options, 'strip') !== false;
    const toSrgb = strip && /^icc-profile-data: /m.test(header.stdout);
    const quality = numberOption(options, 'quality');
    const settings = [
      ...saver.settings.filter((setting) => !(quality !== undefined && setting.startsWith('Q='))),
      ...(quality !== undefined && saver.defaultQuality !== undefined ? [`Q=${quality}`] : []),
      ...(strip ? ['strip'] : []),
    ];
    const target = `${path.basename(output)}${settings.length > 0 ? `[${settings.join(',')}]` : ''}`;

    // What happens after decoding, each a vips operation from one file to the next.
    const operations: Array<(from: string, to: string) => string[]> = [];
    // Linear-light floats (OpenEXR) into sRGB, which the PNG saver then writes in 8 bits.
    if (LINEAR_LIGHT.has(from) || ANY_PIXELS.has(from)) operations.push((a, b) => ['colourspace', a, b, 'srgb']);
    // A PNG or WebP with an EXIF orientation: decoded, then turned upright.
    if (sideways && ROTATE_AFTER.has(loader)) operations.push((a, b) => ['autorot', a, b]);
    if (resize) {
      const { width, height, crop } = resize;
      operations.push((a, b) => [
        'thumbnail', a, b, String(width), '--height', String(height), '--no-rotate',
        ...(crop ? ['--crop', 'centre'] : ['--size', 'force']),
        ...(toSrgb ? ['--export-profile', 'srgb'] : []),
      ]);
    } else if (toSrgb) {
      operations.push((a, b) => ['icc_transform', a, b, 'srgb', '--embedded']);
    }

    // Debian's libvips 8.14.1 writes a WebP's EXIF (GPS position included) even with strip set
    // (measured): the pixels reach the WebP saver through a PNG saved without metadata, and the
    // WebP then holds only the small EXIF block libvips makes itself (orientation, resolution, size).
    const throughBarePng = strip && to === 'webp';
    const chainTarget = throughBarePng ? 'bare.png[compression=1,strip]' : target;
    const chainBytes = throughBarePng ? stageBytes : limits.maxOutputBytes;
    const loadArgs = sideways && AUTOROTATES.has(loader) ? ['--autorotate'] : [];
    let result = await run('/usr/bin/vips', [loader, path.basename(input), operations.length > 0 ? 'stage0.v' : chainTarget, ...loadArgs], operations.length > 0 ? stageBytes : chainBytes);
    for (const [index, operation] of operations.entries()) {
      if (result.exitCode !== 0) break;
      signal.throwIfAborted();
      const last = index === operations.length - 1;
      result = await run('/usr/bin/vips', operation(`stage${index}.v`, last ? chainTarget : `stage${index + 1}.v`), last ? chainBytes : stageBytes);
    }
    if (throughBarePng && result.exitCode === 0) {
      signal.throwIfAborted();
      result = await run('/usr/bin/vips', ['pngload', 'bare.png', target]);
    }
    if (result.exitCode !== 0 && /load|read|decode|premature|truncat|corrupt|error in tile|invalid/i.test(result.stderr)) {
      throw new ConvertdError('corrupt_input', `The image could not be decoded (${lastErrorLine(result.stderr)}): it may be damaged or truncated.`);
    }
    ensureSuccess(result, 'vips');
  }
}
