// The options every raster target takes (api-contract.md, "Conversion options"), declared once for
// the engines that write raster images (sharp, vips, ImageMagick, and the renderers of pages and
// vectors): `quality` where the encoder is lossy, `width`/`height`/`fit`, `strip`, and `background`
// where the target has no transparency. Each engine maps the parsed values to its own calls.
import { narrow, numberOption, OPTIONS, enumOption, type OptionSpec, type StepOptions } from '../options.ts';

export interface RasterTarget {
  /** The encoder's quality when none is given: present only for lossy targets. */
  readonly defaultQuality?: number;
  /** False for targets that cannot hold transparency: they take `background`. */
  readonly alpha: boolean;
  /** Whether the engine can keep metadata (strip=false); otherwise `strip` is not offered. */
  readonly keepsMetadata?: boolean;
}

/** The options of a conversion to a raster target. */
export function rasterOptions(target: RasterTarget): OptionSpec[] {
  const specs: OptionSpec[] = [OPTIONS.width, OPTIONS.height, OPTIONS.fit];
  if (target.defaultQuality !== undefined) specs.push(narrow(OPTIONS.quality, { default: target.defaultQuality }));
  if (target.keepsMetadata !== false) specs.push(OPTIONS.strip);
  if (!target.alpha) specs.push(OPTIONS.background);
  return specs;
}

export type Fit = 'max' | 'crop' | 'scale';

/** The size asked for, or undefined when neither width nor height was given. */
export function requestedSize(options: StepOptions): { width: number | undefined; height: number | undefined; fit: Fit } | undefined {
  const width = numberOption(options, 'width');
  const height = numberOption(options, 'height');
  if (width === undefined && height === undefined) return undefined;
  return { width, height, fit: enumOption<Fit>(options, 'fit') ?? 'max' };
}

/**
 * The output size of an image of `source` pixels asked to be `size`: one side alone keeps the
 * aspect ratio; both with `max` fit inside them, `crop` and `scale` give exactly them.
 */
export function outputSize(source: { width: number; height: number }, size: NonNullable<ReturnType<typeof requestedSize>>): { width: number; height: number } {
  const { width, height, fit } = size;
  if (width !== undefined && height !== undefined) {
    if (fit !== 'max') return { width, height };
    const scale = Math.min(width / source.width, height / source.height);
    return { width: Math.max(1, Math.round(source.width * scale)), height: Math.max(1, Math.round(source.height * scale)) };
  }
  if (width !== undefined) return { width, height: Math.max(1, Math.round(source.height * width / source.width)) };
  return { width: Math.max(1, Math.round(source.width * height! / source.height)), height: height! };
}
