// ImageMagick 6, only for raster formats nothing else here reads or writes (BMP, ICO, TGA, PSD,
// PCX, Netpbm, XPM, DDS), and only to and from PNG: the planner chains through sharp for the
// rest. Never for SVG, PostScript or PDF. Every call names the coder explicitly (a PostScript
// file named .tga is parsed as TGA, not run), and ImageMagick sees only the allow-list policy
// shipped beside this file in policy/policy.xml (no delegates, few coders, memory, area, disk,
// time and frame limits), inside the sandbox (docs/security.md#imagemagick).
// The raster options (support/raster-options.ts) become ImageMagick's own operators, built from
// the parsed numbers and colours: -resize/-extent, -background, and -strip left out for strip=false.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../../errors.ts';
import { declaredImageSize } from '../../formats/input-caps.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { OtherRasterImages } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import { booleanOption, narrow, rgbHex, rgbOption, type OptionSpec } from '../options.ts';
import { outputSize, rasterOptions, requestedSize } from '../support/raster-options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const CONVERT = '/usr/bin/convert-im6.q16';
const IDENTIFY = '/usr/bin/identify-im6.q16';
const POLICY_DIR = fileURLToPath(new URL('./policy/', import.meta.url));

/** ImageMagick coder per format id. */
const CODER: Record<string, string> = {
  png: 'PNG', bmp: 'BMP', ico: 'ICO', tga: 'TGA', psd: 'PSD', pcx: 'PCX', ppm: 'PPM', pgm: 'PGM', pbm: 'PBM', xpm: 'XPM', dds: 'DDS',
  xbm: 'XBM', xwd: 'XWD', sgi: 'SGI', ras: 'SUN', pam: 'PAM', pfm: 'PFM', hdr: 'HDR', dpx: 'DPX', cin: 'CIN', fits: 'FITS',
  miff: 'MIFF', mng: 'MNG', jng: 'JNG', cur: 'CUR', pict: 'PICT', tim: 'TIM', viff: 'VIFF', wbmp: 'WBMP', otb: 'OTB',
  dcx: 'DCX',
  // Wave 3 of #30: the JPEG 2000 codestream (OpenJPEG), DEC SIXEL, CALS type 1 (a CCITT group 4
  // raster), VICAR (NASA/JPL), PGX (JPEG 2000's test format) and GIMP's XCF.
  j2k: 'J2K', sixel: 'SIXEL', cals: 'CALS', vicar: 'VICAR', pgx: 'PGX', xcf: 'XCF',
};
/**
 * Written formats whose result another decoder here reads (Pillow, ffmpeg, Debian's vips, or a
 * few lines of Python for the simplest), so that every pair is checked by a tool that is not
 * ImageMagick (test/raster-formats.test.ts).
 */
const WRITES_ADDED = ['xbm', 'xwd', 'sgi', 'ras', 'pam', 'pfm', 'hdr', 'dpx', 'fits', 'mng', 'jng', 'cur', 'wbmp', 'otb', 'dcx', 'j2k', 'sixel', 'cals', 'vicar', 'pgx'];
/**
 * Read only: nothing here but ImageMagick itself decodes what it would write (MIFF, its own
 * format; Cineon, VIFF), PICT is a legacy QuickDraw picture kept for reading old files,
 * ImageMagick has no TIM writer, and none for GIMP's XCF (its layers are flattened when read).
 */
const READS_ONLY_ADDED = ['pict', 'tim', 'cin', 'miff', 'viff', 'xcf'];
const WRITES = ['bmp', 'ico', 'tga', 'pcx', 'ppm', 'pgm', 'pbm', 'xpm', ...WRITES_ADDED];
const READS = ['bmp', 'ico', 'tga', 'psd', 'pcx', 'ppm', 'pgm', 'pbm', 'xpm', 'dds', ...WRITES_ADDED, ...READS_ONLY_ADDED];
/**
 * Targets with no alpha channel. ImageMagick drops the channel and shows whatever colour the
 * transparent pixels happen to hold (often black); they are flattened onto white instead, as
 * sharp does for JPEG and img2pdf's input is, so a transparent PNG looks the same in every target.
 */
const NO_ALPHA = new Set(['ppm', 'pgm', 'pbm', 'xbm', 'xwd', 'ras', 'pfm', 'hdr', 'dpx', 'fits', 'jng', 'wbmp', 'otb', 'dcx', 'sixel', 'cals', 'vicar', 'pgx']);
/** Black-and-white targets: dithered (BILEVEL below). CALS type 1 is a fax-coded bilevel raster. */
const BILEVEL_TARGETS = new Set(['pbm', 'xbm', 'wbmp', 'otb', 'cals']);
/**
 * Targets of one grey plane of 8 bits: FITS (as astronomy's viewers show a FITS image: a colour
 * picture would be a cube of three planes that they show as three images); VICAR and PGX, whose
 * ImageMagick writers keep only one plane. The brightness weighs the channels as BT.601 does
 * (ImageMagick's plain "Gray" came out a fifth darker on the sample).
 */
const GREY_TARGETS = new Set(['fits', 'vicar', 'pgx']);
/**
 * Floating-point formats hold linear light (Radiance HDR, PFM; what readers such as vips assume):
 * written from sRGB by ImageMagick's linear "RGB" colourspace, and read back into sRGB. Written
 * as they were, a vips reader showed the sample a third brighter.
 */
const LINEAR = new Set(['hdr', 'pfm']);
/** Icons and cursors hold at most 256 x 256; their largest image is converted. */
const ICONS = new Set(['ico', 'cur']);
/**
 * Black and white by an ordered (8x8 Bayer) dither of the grey image, which keeps each area's
 * brightness (grey by BT.601's weights: ImageMagick's plain "Gray" made the sample a fifth
 * darker than its luma). The PBM coder's own reduction thresholds flat areas: a flat grey of 100 came out
 * all black and one of 128 all white, and a picture of red and half-transparent blue lost a third
 * of its mean brightness (test/image-pairs.test.ts compares the brightness).
 */
const BILEVEL = ['-grayscale', 'Rec601Luma', '-ordered-dither', 'o8x8'];

/**
 * Which image of an icon to convert: the largest (then the deepest), as viewers and Pillow
 * show it. ImageMagick's [0] is the first in the directory, often the 16x16 one. Reads the
 * ICONDIR header (6 bytes) and its 16-byte entries; anything odd gives 0 and ImageMagick's own
 * checks then decide.
 */
export async function largestIcon(file: string): Promise<number> {
  const handle = await fs.open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(6 + 16 * 256), 0, 6 + 16 * 256, 0);
    // Type 1 is an icon, 2 a cursor: the same directory.
    if (bytesRead < 6 || buffer.readUInt16LE(0) !== 0 || ![1, 2].includes(buffer.readUInt16LE(2))) return 0;
    const count = Math.min(buffer.readUInt16LE(4), Math.floor((bytesRead - 6) / 16));
    let best = 0;
    let bestKey = -1;
    for (let index = 0; index < count; index++) {
      const entry = 6 + 16 * index;
      // A width or height byte of 0 means 256.
      const side = (offset: number) => buffer[entry + offset] || 256;
      const key = side(0) * side(1) * 64 + Math.min(buffer.readUInt16LE(entry + 6), 63);
      if (key > bestKey) [best, bestKey] = [index, key];
    }
    return best;
  } finally {
    await handle.close();
  }
}

/**
 * ImageMagick 6's CUR coder writes an icon's directory (type 1, bit depths where a cursor has its
 * hot spot), which every reader then takes for an icon: the directory is made a cursor's (type 2)
 * with its hot spot at the top left corner, the pixels stay as written.
 */
async function markAsCursor(file: string): Promise<void> {
  const handle = await fs.open(file, 'r+');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(6 + 16 * 256), 0, 6 + 16 * 256, 0);
    if (bytesRead < 6 || buffer.readUInt16LE(0) !== 0 || buffer.readUInt16LE(2) !== 1) return;
    const count = Math.min(buffer.readUInt16LE(4), Math.floor((bytesRead - 6) / 16));
    buffer.writeUInt16LE(2, 2);
    for (let index = 0; index < count; index++) buffer.fill(0, 6 + 16 * index + 4, 6 + 16 * index + 8);
    await handle.write(buffer, 0, 6 + 16 * count, 0);
  } finally {
    await handle.close();
  }
}

/** Icons hold at most 256 x 256. */
const ICON_SIDE = 256;

/**
 * A SIXEL picture ends with the String Terminator (ESC \, or 0x9C): one without it was cut short,
 * and ImageMagick would show the rows that arrived as a whole picture.
 */
async function sixelComplete(file: string): Promise<boolean> {
  const handle = await fs.open(file, 'r');
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, 16);
    const { buffer } = await handle.read(Buffer.alloc(length), 0, length, size - length);
    const tail = buffer.toString('latin1').trimEnd();
    return tail.endsWith('\x1b\\') || tail.endsWith('\x9c');
  } finally {
    await handle.close();
  }
}

/**
 * The canvas of a GIMP XCF, as its header declares it (formats/input-caps.ts reads it, and has
 * held it to the pixel cap before this engine runs). ImageMagick reads the layers as separate
 * images, each at its offset on a canvas of its own size; the engine puts them on the document's
 * canvas to flatten them.
 */
export async function xcfCanvas(file: string): Promise<{ width: number; height: number }> {
  const handle = await fs.open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(22), 0, 22, 0);
    const canvas = declaredImageSize('xcf', buffer.subarray(0, bytesRead));
    if (!canvas) throw new ConvertdError('corrupt_input', 'The GIMP image has no complete XCF header: it may be damaged or truncated.');
    return canvas;
  } finally {
    await handle.close();
  }
}

/**
 * The options of each target: none of them is lossy (no `quality`); those without transparency
 * take `background`; only PNG has a place for the metadata a source may carry (a PSD's EXIF and
 * XMP), the others hold none, so `strip` is offered for PNG alone (the rest are always bare).
 */
function targetOptions(to: string): OptionSpec[] {
  const specs = rasterOptions({ alpha: !NO_ALPHA.has(to), keepsMetadata: to === 'png' });
  if (!ICONS.has(to)) return specs;
  return specs.map((spec) => (spec.name === 'width' || spec.name === 'height') && spec.type === 'integer'
    ? narrow(spec, { maximum: ICON_SIDE, description: `${spec.description} An icon holds at most ${ICON_SIDE} × ${ICON_SIDE}.` })
    : spec);
}

const EDGES: ConversionEdge[] = [
  ...READS.map((from) => ({ from, to: 'png', cost: 3, options: targetOptions('png') })),
  ...WRITES.map((to) => ({ from: 'png', to, cost: 3, options: targetOptions(to) })),
  // Each written format to itself (a BMP resized), a route of its own for the options.
  ...WRITES.map((format) => ({ from: format, to: format, cost: 3, options: targetOptions(format) })),
];

/**
 * GLIBC_TUNABLES: ImageMagick 6 writes every black-and-white format (PBM, XBM, WBMP, OTB, CALS)
 * through QuantizeImage, which allocates a 128 MiB colour cache and fills it, whatever the
 * picture's size: 0.7-1 s of CPU for a 96 × 64 image, nearly all of it page faults and the fill.
 * Asking glibc's malloc for transparent huge pages cuts that to about a fifth here (six PBM writes
 * in the sandbox: 6.5 s of CPU → 1.1-1.5 s) and leaves every other conversion as it was. glibc
 * reads the page size from /sys/kernel/mm/transparent_hugepage, so that one directory is bound
 * read-only (THP_SETTINGS; docs/security.md#the-sandbox); without it the setting does nothing.
 */
const THP_SETTINGS = '/sys/kernel/mm/transparent_hugepage';
const READ_ONLY = [POLICY_DIR, THP_SETTINGS];
const ENV = { MAGICK_CONFIGURE_PATH: POLICY_DIR, MAGICK_THREAD_LIMIT: '1', GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' };
/**
 * The probe's runs, each of which writes or reads every format: the black-and-white writers
 * (PBM, XBM, WBMP, OTB, and CALS twice) quantise even an 8 × 8 image for about half a second of
 * CPU each, and a machine busy with other work took over 20 s for all of them.
 */
const PROBE_TIMEOUT_MS = 60_000;

export class ImageMagickEngine implements Engine {
  readonly id = 'imagemagick';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;
  /** Its PNG of a format sharp does not read, for other engines (tesseract's BMP). */
  readonly capabilities: { readonly 'other-raster-images': OtherRasterImages };

  constructor(context: EngineContext<unknown>) {
    this.context = context;
    this.capabilities = {
      'other-raster-images': {
        toPng: (request, output) => this.convert({ ...request, output, to: 'png', options: {}, onProgress: () => {} }),
      },
    };
  }

  estimateSeconds(inputBytes: number): number {
    return 0.3 + inputBytes / 3_000_000;
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    return withScratchDir(async (dir) => {
      const policy = await run(CONVERT, ['-list', 'policy'], { cwd: dir, timeoutMs: 20_000, env: ENV, readOnly: READ_ONLY, captureStdout: true });
      if (!policy.stdout.includes(path.join(POLICY_DIR, 'policy.xml'))) throw new Error('ImageMagick did not load convertd\'s policy.xml');
      const working = new Set<string>(['png']);
      // A sample written by hand (a Netpbm header and pixels): no generator coder is allowed.
      await fs.writeFile(path.join(dir, 'sample.ppm'), Buffer.concat([Buffer.from('P6\n8 8\n255\n'), Buffer.alloc(8 * 8 * 3, 200)]));
      const png = await run(CONVERT, ['PPM:sample.ppm', 'PNG:probe.png'], { cwd: dir, timeoutMs: 20_000, env: ENV, readOnly: READ_ONLY });
      ensureSuccess(png, 'ImageMagick');
      const convert = (args: string[]) => run(CONVERT, args, { cwd: dir, timeoutMs: PROBE_TIMEOUT_MS, env: ENV, readOnly: READ_ONLY });
      const written = (format: string) => `${CODER[format]}:probe.${format}`;
      // Every writer in one process and every reader in another (each ImageMagick start costs
      // about 50 ms in the sandbox, and every service start probes); one by one only when that fails.
      // The black-and-white writers are not run: each quantises (ImageMagick 6 fills a 128 MB
      // colour cache for it, about half a second of CPU even for 8 x 8 pixels, a second for CALS),
      // which made this probe the slowest of the service's start. They are taken when ImageMagick
      // lists their coder as a writer, like the read-only formats below.
      const probed = WRITES.filter((format) => !BILEVEL_TARGETS.has(format));
      const [last, ...others] = [...probed].reverse();
      const all = await convert(['PNG:probe.png', ...others.flatMap((format) => ['-write', written(format)]), written(last!)]);
      const allBack = all.exitCode === 0 ? await convert([...probed.map((format) => `${written(format)}[0]`), '-append', 'PNG:back.png']) : undefined;
      if (allBack?.exitCode === 0) {
        for (const format of probed) working.add(format);
      } else {
        for (const format of probed) {
          const out = await convert(['PNG:probe.png', written(format)]);
          const back = out.exitCode === 0 ? await convert([`${written(format)}[0]`, 'PNG:back.png']) : undefined;
          if (back?.exitCode === 0) working.add(format);
        }
      }
      const coders = await run(CONVERT, ['-list', 'format'], { cwd: dir, timeoutMs: 20_000, env: ENV, readOnly: READ_ONLY, captureStdout: true });
      for (const format of BILEVEL_TARGETS) {
        if (new RegExp(`^\\s*${CODER[format]}\\*?\\s+\\S+\\s+rw`, 'm').test(coders.stdout)) working.add(format);
      }
      // Read-only formats (PSD, DDS, PICT, TIM, ...) are not made here; they are advertised with their coder.
      for (const format of READS) if (!WRITES.includes(format)) working.add(format);
      if (working.size < 3) throw new Error('ImageMagick converts none of its formats here');
      return EDGES.filter((e) => working.has(e.from) && working.has(e.to));
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, workDir, limits, signal, options } = request;
    const inCoder = CODER[from];
    const outCoder = CODER[to];
    if (!inCoder || !outCoder) throw new ConvertdError('conversion_failed', `ImageMagick does not convert ${from} to ${to} here.`);
    // One frame: PSD's flattened composite, an icon's largest image; every layer of an XCF, which
    // are flattened on the document's canvas. What the header declares (a JPEG 2000 codestream's
    // or a PGX's size: OpenJPEG, given 60000 x 60000, failed without naming the limit; an XCF's
    // canvas) was held to the pixel cap before any engine ran (formats/input-caps.ts).
    const canvas = from === 'xcf' ? await xcfCanvas(input) : undefined;
    if (from === 'sixel' && !await sixelComplete(input)) {
      throw new ConvertdError('corrupt_input', 'The SIXEL picture has no String Terminator at its end: it was cut short.');
    }
    const frame = ICONS.has(from) ? await largestIcon(input) : 0;
    const source = canvas ? `${inCoder}:${path.basename(input)}` : `${inCoder}:${path.basename(input)}[${frame}]`;
    const flatten = canvas ? ['-repage', `${canvas.width}x${canvas.height}`, '-background', 'none', '-flatten'] : [];
    const resize = requestedSize(options) ? await this.resizeArguments(source, options, to, request, canvas) : [];
    // Transparent areas of a target without alpha: white unless `background` says otherwise (a
    // colour the engine writes itself from the parsed numbers).
    const background = rgbHex(rgbOption(options) ?? { kind: 'rgb', r: 255, g: 255, b: 255 });
    const args = [
      source,
      ...flatten,
      // Linear light read as such, shown in 8-bit sRGB (a 16-bit PGM of it was read by Pillow as
      // a 32-bit integer image).
      ...(LINEAR.has(from) ? ['-set', 'colorspace', 'RGB', '-colorspace', 'sRGB', '-depth', '8'] : []),
      '-auto-orient',
      ...resize,
      // Icons hold at most 256x256.
      ...(ICONS.has(to) ? ['-resize', `${ICON_SIDE}x${ICON_SIDE}>`] : []),
      // "off" too: the Sun raster coder otherwise still wrote the (now opaque) alpha channel as a
      // 32-bit raster, which Pillow reads with its bands shifted.
      ...(NO_ALPHA.has(to) ? ['-background', background, '-alpha', 'remove', '-alpha', 'off'] : []),
      ...(BILEVEL_TARGETS.has(to) ? BILEVEL : []),
      ...(GREY_TARGETS.has(to) ? ['-grayscale', 'Rec601Luma', '-depth', '8'] : []),
      ...(LINEAR.has(to) ? ['-colorspace', 'RGB'] : []),
      // Metadata is removed unless strip=false (offered where the target can hold it).
      ...(booleanOption(options, 'strip') === false ? [] : ['-strip']),
      `${outCoder}:${path.basename(output)}`,
    ];
    const result = await this.context.run(CONVERT, args, {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, env: ENV, readOnly: READ_ONLY,
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
    if (result.exitCode !== 0) {
      // The limit's line, not the last one: ImageMagick ends with "no images defined" after it.
      const limitLine = result.stderr.split('\n').find((line) => /ResourceLimit|width or height exceeds|too large|exceeds limit/i.test(line));
      const detail = limitLine?.trim() ?? lastErrorLine(result.stderr);
      if (limitLine) {
        throw new ConvertdError('input_too_complex', `The image exceeds a processing limit (${detail}): send a smaller image.`);
      }
      // The line that says why, which may come before the last ("no images defined"); that line
      // alone means the coder gave up on the file without a reason.
      const damaged = /CorruptImage|ImproperImageHeader|insufficient image data|unexpected end|NegativeOrZeroImageSize|not a\b|decode|NotEnoughPixelData|Invalid strip|TIFFFillStrip/i;
      const cause = result.stderr.split('\n').find((line) => damaged.test(line));
      const unexplained = /^[^\n]*no images defined[^\n]*$/.test(result.stderr.trim());
      if (cause || unexplained) {
        throw new ConvertdError('corrupt_input', `The image could not be decoded (${cause?.trim() ?? detail}): it may be damaged or truncated.`);
      }
    }
    ensureSuccess(result, 'ImageMagick');
    if (to === 'cur') await markAsCursor(output);
  }

  /**
   * The -resize (and -extent) arguments for the size asked for, built from numbers, after the
   * size of the upright picture is read (identify -ping reads the header only) and the result
   * checked against the pixel cap.
   */
  private async resizeArguments(source: string, options: ConvertRequest['options'], to: string, request: ConvertRequest, canvas?: { width: number; height: number }): Promise<string[]> {
    const size = requestedSize(options)!;
    const { limits } = request;
    const upright = canvas ? { width: canvas.width || 1, height: canvas.height || 1 } : await this.uprightSize(source, request);
    const target = outputSize(upright, size);
    if (target.width * target.height > limits.maxImagePixels) {
      throw new ConvertdError('invalid_option', `Options "width"/"height": ${target.width} × ${target.height} pixels is more than this service's limit of ${limits.maxImagePixels}.`, { option: size.width !== undefined ? 'width' : 'height', reason: 'past the pixel limit', maximum_pixels: limits.maxImagePixels });
    }
    if (ICONS.has(to) && (target.width > ICON_SIDE || target.height > ICON_SIDE)) {
      throw new ConvertdError('invalid_option', `Options "width"/"height": an icon holds at most ${ICON_SIDE} × ${ICON_SIDE} pixels.`, { option: size.width !== undefined ? 'width' : 'height', reason: 'larger than an icon holds', maximum: ICON_SIDE });
    }
    const geometry = `${target.width}x${target.height}`;
    // crop: cover the box keeping the aspect ratio (^), then cut it to the box around the centre.
    if (size.fit === 'crop') return ['-resize', `${geometry}^`, '-gravity', 'center', '-extent', geometry, '+repage'];
    // max and scale: the exact size outputSize computed (the same rounding as sharp and vips).
    return ['-resize', `${geometry}!`];
  }

  /** The size of the picture once upright, from its header (identify -ping reads no pixels). */
  private async uprightSize(source: string, request: ConvertRequest): Promise<{ width: number; height: number }> {
    const { workDir, limits, signal } = request;
    const header = await this.context.run(IDENTIFY, ['-ping', '-format', '%w %h %[orientation]\\n', source], {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, env: ENV, readOnly: READ_ONLY, captureStdout: true,
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
    const match = /^(\d+) (\d+) (\w+)/.exec(header.stdout);
    if (header.exitCode !== 0 || !match) {
      throw new ConvertdError('corrupt_input', `The image could not be read (${lastErrorLine(header.stderr)}): it may be damaged or truncated.`);
    }
    const [stored, other] = [Number(match[1]), Number(match[2])];
    // Orientations 5-8 (LeftTop ... LeftBottom) swap the sides once -auto-orient has turned the picture.
    const swap = /^(LeftTop|RightTop|RightBottom|LeftBottom)$/.test(match[3]!);
    return { width: (swap ? other : stored) || 1, height: (swap ? stored : other) || 1 };
  }
}
