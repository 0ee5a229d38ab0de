// PNG and JPEG → PDF with img2pdf: the image goes into the PDF as it is (JPEG) or losslessly
// (PNG), one page the size of the image. Other image formats reach PDF through PNG. img2pdf
// refuses images with transparency (PDF images have none), so those are first flattened onto
// white by sharp's sandboxed processes; whether a PNG has any is read from its chunk headers.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { RasterImages } from '../capabilities.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const IMG2PDF = '/usr/bin/img2pdf';
// A PDF made of one image has no pages of the upload's to choose or resolution to render at: a
// page_range or pixel_density asked of a later step (png → pdf → jpg) is not the upload's, so
// the planner never takes this detour for them (planner.ts, `resets`).
const MADE_HERE = ['page_range', 'pixel_density'];
const EDGES: ConversionEdge[] = [{ from: 'png', to: 'pdf', cost: 2, resets: MADE_HERE }, { from: 'jpg', to: 'pdf', cost: 2, resets: MADE_HERE }];

/**
 * Whether a PNG has transparency: an alpha channel (colour types 4 and 6) or a tRNS chunk, which
 * comes before the image data. Reads the chunk headers only; a damaged file answers false and
 * img2pdf reports it.
 */
async function pngHasTransparency(file: string): Promise<boolean> {
  const handle = await fs.open(file, 'r');
  try {
    const header = Buffer.alloc(8);
    let offset = 8; // the signature
    for (let chunks = 0; chunks < 1000; chunks++) {
      const { bytesRead } = await handle.read(header, 0, 8, offset);
      if (bytesRead < 8) return false;
      const length = header.readUInt32BE(0);
      const type = header.toString('latin1', 4, 8);
      if (type === 'IHDR') {
        const colourType = Buffer.alloc(1);
        await handle.read(colourType, 0, 1, offset + 8 + 9);
        if (colourType[0] === 4 || colourType[0] === 6) return true;
      }
      if (type === 'tRNS') return true;
      if (type === 'IDAT' || type === 'IEND') return false;
      offset += 12 + length;
    }
    return false;
  } finally {
    await handle.close();
  }
}

export class Img2PdfEngine implements Engine {
  readonly id = 'img2pdf';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 60;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;
  private readonly images: RasterImages;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
    this.images = context.use('raster-images');
  }

  estimateSeconds(inputBytes: number): number {
    return 0.5 + inputBytes / 5_000_000;
  }

  async probe(): Promise<void> {
    const result = await this.context.run(IMG2PDF, ['--version'], { cwd: '/', timeoutMs: 20_000, captureStdout: true });
    if (result.exitCode !== 0) throw new Error(`img2pdf did not run: ${lastErrorLine(result.stderr)}`);
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, workDir, limits, signal } = request;
    let source = input;
    if (from === 'png' && await pngHasTransparency(input)) {
      source = path.join(workDir, 'flattened.png');
      await this.images.flattenOntoWhite(input, source, limits, signal);
    }
    try {
      const result = await this.context.run(IMG2PDF, ['--output', path.basename(output), '--', `./${path.basename(source)}`], {
        cwd: workDir, timeoutMs: limits.timeoutMs, signal, limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      });
      if (result.exitCode !== 0 && /cannot identify|invalid|corrupt|truncated/i.test(result.stderr)) {
        throw new ConvertdError('corrupt_input', `The image could not be read (${lastErrorLine(result.stderr)}).`);
      }
      ensureSuccess(result, 'img2pdf');
    } finally {
      if (source !== input) await fs.rm(source, { force: true });
    }
  }
}
