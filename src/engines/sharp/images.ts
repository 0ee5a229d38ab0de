// Raster image conversions with sharp (the libvips bundled in its npm package), run inside a
// pooled, sandboxed Node process (engine.ts starts the pool, src/process/pool/node-host.ts loads
// this module): decoding hostile images happens there, under the sandbox's memory cgroup and
// time limit, never in the service. Its own guards come first: sharp's pixel limit, a frame cap
// checked on the header before decoding, `failOn: 'error'` and sharp's timeout.
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp, { type Metadata, type OutputInfo, type Sharp, type SharpOptions } from 'sharp';
import { ConvertdError } from '../../errors.ts';
import { MAX_ANIMATION_FRAMES } from '../../formats/input-caps.ts';
import type { Handlers } from '../../process/pool/node-host.ts';
import { booleanOption, enumOption, numberOption, rgbOption, type StepOptions } from '../options.ts';
import { outputSize, requestedSize } from '../support/raster-options.ts';
import { pageName, writeZip, type ZipMember } from '../support/zip-writer.ts';
import { isRaster, RASTER_FORMATS, type RasterFormat } from './formats.ts';

// One libvips thread per image and no operation cache: throughput comes from running one pooled
// process per concurrent job, and the cache would only hold hostile inputs in memory.
sharp.cache(false);
sharp.concurrency(1);

const ANIMATED = new Set<string>(['gif', 'webp']);
/** Frames an animated input may have before it is refused as a frame bomb: the input's own cap, checked before any route (formats/input-caps.ts), held here too. */
const MAX_FRAMES = MAX_ANIMATION_FRAMES;

/**
 * Encoder settings a user would call sensible: good quality at a speed that finishes a 25 MB
 * photo in seconds. AVIF at sharp's default effort took 49 s for one 12-megapixel photo here
 * (measured bare), and effort 2 with 4:2:0 chroma still 8.7 s; effort 0 takes 1.6 s for the
 * same SSIM (0.9396 against 0.9397) and 18% more bytes (BENCHMARKS.md, change 37).
 */
function encode(image: Sharp, to: RasterFormat, options: StepOptions = {}): Sharp {
  const quality = numberOption(options, 'quality');
  const background = rgbOption(options) ?? { r: 255, g: 255, b: 255 };
  switch (to) {
    case 'png': return image.png({ compressionLevel: 6 });
    case 'jpg': return image.flatten({ background: { r: background.r, g: background.g, b: background.b } }).jpeg({ quality: quality ?? 85 });
    case 'webp': return image.webp({ quality: quality ?? 82, effort: 4 });
    case 'avif': return image.avif({ quality: quality ?? 55, effort: 0, chromaSubsampling: '4:2:0' });
    case 'gif': return image.gif({ effort: 7 });
    case 'tiff': return image.tiff({ compression: 'deflate' });
  }
}

const SHARP_FORMAT_NAME: Record<RasterFormat, string> = {
  png: 'png', jpg: 'jpeg', webp: 'webp', avif: 'heif', gif: 'gif', tiff: 'tiff',
};

/** Sorts a libvips failure into the job error a user can act on. */
function classify(error: unknown, stage: 'read' | 'write'): ConvertdError {
  const text = error instanceof Error ? error.message : String(error);
  if (/pixel limit/i.test(text)) return new ConvertdError('input_too_complex', 'The image has more pixels than this service processes: send a smaller image.');
  if (/timeout/i.test(text)) return new ConvertdError('timeout');
  if (stage === 'read' || /premature|corrupt|truncat|invalid|bad |not a|unsupported image|read error|vipsjpeg|png|load/i.test(text)) {
    return new ConvertdError('corrupt_input', `The image could not be decoded (${text.split('\n')[0]}): it may be damaged or truncated.`);
  }
  return new ConvertdError('conversion_failed', `The image could not be encoded: ${text.split('\n')[0]}`);
}

/** Encodes and decodes a tiny image in every format: a build without a codec fails here, not on a user's job. */
async function workingFormats(): Promise<string[]> {
  const sample = sharp({ create: { width: 8, height: 8, channels: 4, background: { r: 200, g: 30, b: 60, alpha: 1 } } });
  const working: string[] = [];
  for (const format of RASTER_FORMATS) {
    try {
      const encoded = await encode(sample.clone(), format).toBuffer();
      const meta = await sharp(encoded).metadata();
      if (meta.format === SHARP_FORMAT_NAME[format] && meta.width === 8) working.push(format);
    } catch {
      // left out of the working set
    }
  }
  return working;
}

interface ImageRequest {
  readonly input: string;
  readonly output: string;
  readonly from: string;
  readonly to: string;
  readonly maxImagePixels: number;
  readonly timeoutSeconds: number;
  /** The parsed options of the step (engines/options.ts), as JSON crossed the pool's pipe. */
  readonly options?: StepOptions;
}

const SHARP_FIT = { max: 'inside', crop: 'cover', scale: 'fill' } as const;

/** The image's header (size, frames, orientation), read before any pixel is decoded. */
async function headerOf(input: string, options: SharpOptions): Promise<Metadata> {
  try {
    return await sharp(input, options).metadata();
  } catch (error) {
    throw classify(error, 'read');
  }
}

async function convertImage({ input, output, from, to, maxImagePixels, timeoutSeconds, options = {} }: ImageRequest): Promise<void> {
  if (!isRaster(from) || !isRaster(to)) throw new ConvertdError('conversion_failed', `sharp does not convert ${from} to ${to}.`);
  const sharpOptions: SharpOptions = { failOn: 'error', limitInputPixels: maxImagePixels };
  const meta = await headerOf(input, sharpOptions);
  const frames = meta.pages ?? 1;
  const animated = ANIMATED.has(from) && ANIMATED.has(to) && frames > 1;
  if (animated && frames > MAX_FRAMES) {
    throw new ConvertdError('input_too_complex', `The animation has ${frames} frames; this service converts at most ${MAX_FRAMES}.`);
  }
  if ((meta.width ?? 0) * (meta.height ?? 0) * (animated ? frames : 1) > maxImagePixels) {
    throw new ConvertdError('input_too_complex', 'The image has more pixels than this service processes: send a smaller image.');
  }
  let image = sharp(input, { ...sharpOptions, animated })
    .timeout({ seconds: Math.max(1, timeoutSeconds) })
    .rotate(); // apply the EXIF orientation: the result is upright, with or without its metadata
  const size = requestedSize(options);
  if (size) {
    // The size of an upright frame (orientations 5-8 swap the sides), checked against the pixel cap before any work.
    const swapped = (meta.orientation ?? 1) >= 5;
    const upright = { width: (swapped ? meta.height : meta.width) ?? 1, height: ((swapped ? meta.width : meta.pageHeight ?? meta.height) ?? 1) };
    const target = outputSize(upright, size);
    if (target.width * target.height * (animated ? frames : 1) > maxImagePixels) {
      throw new ConvertdError('invalid_option', `Options "width"/"height": ${target.width} × ${target.height} pixels${animated ? ` × ${frames} frames` : ''} is more than this service's limit.`, { option: size.width !== undefined ? 'width' : 'height', reason: 'past the pixel limit' });
    }
    image = image.resize({ width: target.width, height: target.height, fit: SHARP_FIT[size.fit] });
  }
  // Metadata is stripped unless the client asks to keep it (strip=false): EXIF carries GPS positions.
  if (booleanOption(options, 'strip') === false) image = image.keepMetadata();
  try {
    await encode(image, to, options).toFile(output);
  } catch (error) {
    throw classify(error, 'write');
  }
}

/**
 * Frames decoded per call, in pixels (64 MiB of RGBA): a GIF's frame n is drawn over the frames
 * before it, so decoding each frame alone would decode the start of the animation again for every
 * frame; decoding runs of frames keeps that bounded without holding a long animation in memory.
 */
const FRAME_RUN_PIXELS = 16 * 1024 * 1024;

interface FramesRequest extends ImageRequest {
  readonly maxOutputBytes: number;
}

/**
 * Every frame of an animated GIF or WebP as an image of its own (`each`: png by default), with
 * the raster options applied to each, in a ZIP (frame-001.png, ...): api-contract.md, "Several
 * files in one result". A still image gives a ZIP of one frame.
 */
async function framesToZip({ input, output, from, maxImagePixels, maxOutputBytes, timeoutSeconds, options = {} }: FramesRequest): Promise<void> {
  if (!ANIMATED.has(from)) throw new ConvertdError('conversion_failed', `sharp does not take the frames of ${from} apart.`);
  const each = enumOption<RasterFormat>(options, 'each') ?? 'png';
  if (!isRaster(each)) throw new ConvertdError('conversion_failed', `sharp does not write frames as ${each}.`);
  const sharpOptions: SharpOptions = { failOn: 'error', limitInputPixels: maxImagePixels };
  const meta = await headerOf(input, sharpOptions);
  const frames = meta.pages ?? 1;
  if (frames > MAX_FRAMES) throw new ConvertdError('input_too_complex', `The animation has ${frames} frames; this service converts at most ${MAX_FRAMES}.`);
  const width = meta.width ?? 1;
  const height = meta.pageHeight ?? meta.height ?? 1;
  if (width * height * frames > maxImagePixels) {
    throw new ConvertdError('input_too_complex', 'The animation has more pixels (frames × width × height) than this service processes: send a smaller one.');
  }
  const size = requestedSize(options);
  const target = size ? outputSize({ width, height }, size) : undefined;
  if (target && size && target.width * target.height * frames > maxImagePixels) {
    throw new ConvertdError('invalid_option', `Options "width"/"height": ${target.width} × ${target.height} pixels × ${frames} frames is more than this service's limit.`, { option: size.width !== undefined ? 'width' : 'height', reason: 'past the pixel limit' });
  }
  const dir = path.dirname(output);
  const members: ZipMember[] = [];
  const run = Math.max(1, Math.floor(FRAME_RUN_PIXELS / (width * height)));
  try {
    for (let first = 0; first < frames; first += run) {
      const count = Math.min(run, frames - first);
      const { data, info } = await sharp(input, { ...sharpOptions, page: first, pages: count })
        .timeout({ seconds: Math.max(1, timeoutSeconds) })
        .ensureAlpha().raw().toBuffer({ resolveWithObject: true });
      const frameBytes = width * height * info.channels;
      for (let index = 0; index < count; index++) {
        const number = first + index + 1;
        let frame = sharp(data.subarray(index * frameBytes, (index + 1) * frameBytes), { raw: { width, height, channels: info.channels } });
        if (target && size) frame = frame.resize({ width: target.width, height: target.height, fit: SHARP_FIT[size.fit] });
        const file = path.join(dir, `frame-${number}`);
        await encode(frame, each, options).toFile(file);
        members.push({ name: pageName('frame', number, frames, each), file });
      }
    }
  } catch (error) {
    throw error instanceof ConvertdError ? error : classify(error, 'read');
  }
  try {
    await writeZip(output, members, maxOutputBytes);
  } finally {
    await Promise.all(members.map((member) => rm(member.file, { force: true })));
  }
}

/** A PNG of the image (of one page of a multi-page file, 0-based) flattened onto white: for img2pdf, which refuses transparency. */
async function flattenOntoWhite({ input, output, maxImagePixels, timeoutSeconds, page }: Omit<ImageRequest, 'from' | 'to'> & { page?: number }): Promise<void> {
  try {
    await sharp(input, { failOn: 'error', limitInputPixels: maxImagePixels, ...(Number.isSafeInteger(page) && page! >= 0 ? { page } : {}) })
      .timeout({ seconds: Math.max(1, timeoutSeconds) })
      .flatten({ background: '#ffffff' }).png().toFile(output);
  } catch (error) {
    throw classify(error, 'read');
  }
}

/**
 * A binary PGM (P5) of the image's luminance, flattened onto white (a transparent area is
 * background, not shape): what potrace reads. libvips does not write PGM through sharp, so its raw
 * 8-bit grey pixels get the four-line header here; the first frame of an animation only.
 */
async function greymap({ input, output, maxImagePixels, timeoutSeconds }: Omit<ImageRequest, 'from' | 'to'>): Promise<void> {
  let pixels: { data: Buffer; info: OutputInfo };
  try {
    pixels = await sharp(input, { failOn: 'error', limitInputPixels: maxImagePixels })
      .timeout({ seconds: Math.max(1, timeoutSeconds) })
      .rotate()
      .flatten({ background: '#ffffff' }).greyscale().toColourspace('b-w').raw()
      .toBuffer({ resolveWithObject: true });
  } catch (error) {
    throw classify(error, 'read');
  }
  const { data, info } = pixels;
  if (info.channels !== 1 || data.length !== info.width * info.height) {
    throw new ConvertdError('conversion_failed', `The image's grey pixels came out with ${info.channels} channels.`);
  }
  try {
    await writeFile(output, Buffer.concat([Buffer.from(`P5\n${info.width} ${info.height}\n255\n`, 'latin1'), data]));
  } catch (error) {
    // Past RLIMIT_FSIZE (the output cap) the write fails with EFBIG: the greymap alone is larger than any result may be.
    if ((error as NodeJS.ErrnoException).code === 'EFBIG') throw new ConvertdError('output_too_large');
    throw error;
  }
}

export const handlers: Handlers = {
  probe: () => workingFormats(),
  convert: (request) => convertImage(request as unknown as ImageRequest),
  flatten: (request) => flattenOntoWhite(request as unknown as ImageRequest),
  frames: (request) => framesToZip(request as unknown as FramesRequest),
  greymap: (request) => greymap(request as unknown as ImageRequest),
};
