// PNG and JPEG → PDF with img2pdf: the image goes into the PDF as it is (JPEG) or losslessly
// (PNG), one page the size of the image. Other image formats reach PDF through PNG. img2pdf
// refuses images with an alpha channel (PDF images have none), so those are first flattened onto
// white with sharp.
import fs from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { ConvertdError } from '../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE, runProcess } from '../process/runner.ts';
import type { ConversionEdge, ConvertRequest, Engine } from './types.ts';

const IMG2PDF = '/usr/bin/img2pdf';
const EDGES: ConversionEdge[] = [{ from: 'png', to: 'pdf', cost: 2 }, { from: 'jpg', to: 'pdf', cost: 2 }];

export class Img2PdfEngine implements Engine {
  readonly id = 'img2pdf';
  readonly timeoutSeconds = 60;
  readonly edges = EDGES;
  readonly reportsProgress = false;

  estimateSeconds(inputBytes: number): number {
    return 0.5 + inputBytes / 5_000_000;
  }

  async probe(): Promise<void> {
    const result = await runProcess(IMG2PDF, ['--version'], { cwd: '/', timeoutMs: 20_000, captureStdout: true });
    if (result.exitCode !== 0) throw new Error(`img2pdf did not run: ${lastErrorLine(result.stderr)}`);
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, workDir, limits, signal } = request;
    let source = input;
    if (from === 'png') {
      const image = sharp(input, { limitInputPixels: limits.maxImagePixels, failOn: 'error' });
      const metadata = await image.metadata().catch(() => {
        throw new ConvertdError('corrupt_input', 'The PNG could not be read: check that it is a valid image.');
      });
      if (metadata.hasAlpha) {
        source = path.join(workDir, 'flattened.png');
        await image.flatten({ background: '#ffffff' }).png().toFile(source);
      }
    }
    try {
      const result = await runProcess(IMG2PDF, ['--output', path.basename(output), '--', `./${path.basename(source)}`], {
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
