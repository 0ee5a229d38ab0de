// Raster images through sharp (the libvips bundled in its npm package). It runs in-process on
// libuv's thread pool, so it has no process to sandbox: its guards are sharp's own pixel limit,
// a frame cap checked on the header before decoding, `failOn: 'error'` and sharp's timeout.
import sharp, { type Metadata, type Sharp, type SharpOptions } from 'sharp';
import { ConvertdError } from '../errors.ts';
import type { ConversionEdge, ConvertRequest, Engine } from './types.ts';

// One libvips thread per image and no operation cache: throughput comes from running
// CONVERTD_CONCURRENCY images side by side, and the cache would only hold hostile inputs in memory.
sharp.cache(false);
sharp.concurrency(1);

const FORMATS = ['png', 'jpg', 'webp', 'avif', 'gif', 'tiff'] as const;
type RasterFormat = (typeof FORMATS)[number];
const ANIMATED = new Set<string>(['gif', 'webp']);
/** Frames an animated input may have before it is refused as a frame bomb. */
const MAX_FRAMES = 1000;

// Costs for the planner: AVIF encoding is several times slower than the rest.
const EDGES: ConversionEdge[] = FORMATS.flatMap((from) =>
  FORMATS.filter((to) => to !== from).map((to) => ({ from, to, cost: to === 'avif' ? 3 : 1 })),
);

function isRaster(id: string): id is RasterFormat {
  return (FORMATS as readonly string[]).includes(id);
}

/**
 * Encoder settings a user would call sensible: good quality at a speed that finishes a 25 MB
 * photo in seconds. AVIF at sharp's default effort took 49 s for one 12-megapixel photo here
 * (shared/stack.md); effort 2 with 4:2:0 chroma takes about a second at similar visual quality.
 */
function encode(image: Sharp, to: RasterFormat): Sharp {
  switch (to) {
    case 'png': return image.png({ compressionLevel: 6 });
    case 'jpg': return image.flatten({ background: '#ffffff' }).jpeg({ quality: 85 });
    case 'webp': return image.webp({ quality: 82, effort: 4 });
    case 'avif': return image.avif({ quality: 55, effort: 2, chromaSubsampling: '4:2:0' });
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

export class SharpEngine implements Engine {
  readonly id = 'sharp';
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;

  estimateSeconds(inputBytes: number, _from: string, to: string): number {
    const base = 0.2 + inputBytes / 4_000_000;
    return to === 'avif' ? base * 3 : base;
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    // Really encode and decode a tiny image in every format: a build without a codec fails here,
    // not on a user's job.
    const sample = sharp({ create: { width: 8, height: 8, channels: 4, background: { r: 200, g: 30, b: 60, alpha: 1 } } });
    const working = new Set<string>();
    for (const format of FORMATS) {
      try {
        const encoded = await encode(sample.clone(), format).toBuffer();
        const meta = await sharp(encoded).metadata();
        if (meta.format === SHARP_FORMAT_NAME[format] && meta.width === 8) working.add(format);
      } catch {
        // left out of the working set
      }
    }
    if (working.size < 2) throw new Error('sharp could not encode and decode its image formats');
    return EDGES.filter((edge) => working.has(edge.from) && working.has(edge.to));
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, limits } = request;
    if (!isRaster(from) || !isRaster(to)) throw new ConvertdError('conversion_failed', `sharp does not convert ${from} to ${to}.`);

    const options: SharpOptions = { failOn: 'error', limitInputPixels: limits.maxImagePixels };
    let meta: Metadata;
    try {
      meta = await sharp(input, options).metadata();
    } catch (error) {
      throw classify(error, 'read');
    }
    const frames = meta.pages ?? 1;
    const animated = ANIMATED.has(from) && ANIMATED.has(to) && frames > 1;
    if (animated && frames > MAX_FRAMES) {
      throw new ConvertdError('input_too_complex', `The animation has ${frames} frames; this service converts at most ${MAX_FRAMES}.`);
    }
    if ((meta.width ?? 0) * (meta.height ?? 0) * (animated ? frames : 1) > limits.maxImagePixels) {
      throw new ConvertdError('input_too_complex', 'The image has more pixels than this service processes: send a smaller image.');
    }
    request.signal.throwIfAborted();

    const image = sharp(input, { ...options, animated })
      .timeout({ seconds: Math.max(1, Math.ceil(limits.timeoutMs / 1000)) })
      .rotate(); // apply the EXIF orientation, since metadata is not carried over
    try {
      await encode(image, to).toFile(output);
    } catch (error) {
      throw classify(error, 'write');
    }
  }
}
