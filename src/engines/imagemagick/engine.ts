// ImageMagick 6, only for raster formats nothing else here reads or writes (BMP, ICO, TGA, PSD,
// PCX, Netpbm, XPM, DDS), and only to and from PNG: the planner chains through sharp for the
// rest. Never for SVG, PostScript or PDF. Every call names the coder explicitly (a PostScript
// file named .tga is parsed as TGA, not run), and ImageMagick sees only the allow-list policy
// shipped beside this file in policy/policy.xml (no delegates, few coders, memory, area, disk,
// time and frame limits), inside the sandbox (docs/security.md#imagemagick).
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const CONVERT = '/usr/bin/convert-im6.q16';
const POLICY_DIR = fileURLToPath(new URL('./policy/', import.meta.url));

/** ImageMagick coder per format id. */
const CODER: Record<string, string> = {
  png: 'PNG', bmp: 'BMP', ico: 'ICO', tga: 'TGA', psd: 'PSD', pcx: 'PCX', ppm: 'PPM', pgm: 'PGM', pbm: 'PBM', xpm: 'XPM', dds: 'DDS',
};
const READS = ['bmp', 'ico', 'tga', 'psd', 'pcx', 'ppm', 'pgm', 'pbm', 'xpm', 'dds'];
const WRITES = ['bmp', 'ico', 'tga', 'pcx', 'ppm', 'pgm', 'pbm', 'xpm'];

const EDGES: ConversionEdge[] = [
  ...READS.map((from) => ({ from, to: 'png', cost: 3 })),
  ...WRITES.map((to) => ({ from: 'png', to, cost: 3 })),
];

const ENV = { MAGICK_CONFIGURE_PATH: POLICY_DIR, MAGICK_THREAD_LIMIT: '1' };

export class ImageMagickEngine implements Engine {
  readonly id = 'imagemagick';
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 0.3 + inputBytes / 3_000_000;
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    return withScratchDir(async (dir) => {
      const policy = await run(CONVERT, ['-list', 'policy'], { cwd: dir, timeoutMs: 20_000, env: ENV, readOnly: [POLICY_DIR], captureStdout: true });
      if (!policy.stdout.includes(path.join(POLICY_DIR, 'policy.xml'))) throw new Error('ImageMagick did not load convertd\'s policy.xml');
      const working = new Set<string>(['png']);
      // A sample written by hand (a Netpbm header and pixels): no generator coder is allowed.
      await fs.writeFile(path.join(dir, 'sample.ppm'), Buffer.concat([Buffer.from('P6\n8 8\n255\n'), Buffer.alloc(8 * 8 * 3, 200)]));
      const png = await run(CONVERT, ['PPM:sample.ppm', 'PNG:probe.png'], { cwd: dir, timeoutMs: 20_000, env: ENV, readOnly: [POLICY_DIR] });
      ensureSuccess(png, 'ImageMagick');
      for (const format of WRITES) {
        const out = await run(CONVERT, ['PNG:probe.png', `${CODER[format]}:probe.${format}`], { cwd: dir, timeoutMs: 20_000, env: ENV, readOnly: [POLICY_DIR] });
        const back = out.exitCode === 0
          ? await run(CONVERT, [`${CODER[format]}:probe.${format}`, 'PNG:back.png'], { cwd: dir, timeoutMs: 20_000, env: ENV, readOnly: [POLICY_DIR] })
          : undefined;
        if (back?.exitCode === 0) working.add(format);
      }
      // Read-only formats (PSD, DDS) cannot be made here; they are advertised with their coder.
      for (const format of READS) if (!WRITES.includes(format)) working.add(format);
      if (working.size < 3) throw new Error('ImageMagick converts none of its formats here');
      return EDGES.filter((e) => working.has(e.from) && working.has(e.to));
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, workDir, limits, signal } = request;
    const inCoder = CODER[from];
    const outCoder = CODER[to];
    if (!inCoder || !outCoder) throw new ConvertdError('conversion_failed', `ImageMagick does not convert ${from} to ${to} here.`);
    const args = [
      // The first frame: PSD's flattened composite, an icon's first image.
      `${inCoder}:${path.basename(input)}[0]`,
      '-auto-orient',
      // Icons hold at most 256x256.
      ...(to === 'ico' ? ['-resize', '256x256>'] : []),
      '-strip',
      `${outCoder}:${path.basename(output)}`,
    ];
    const result = await this.context.run(CONVERT, args, {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, env: ENV, readOnly: [POLICY_DIR],
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
    if (result.exitCode !== 0) {
      const detail = lastErrorLine(result.stderr);
      if (/ResourceLimit|width or height exceeds|too large|exceeds limit/i.test(detail)) {
        throw new ConvertdError('input_too_complex', `The image exceeds a processing limit (${detail}): send a smaller image.`);
      }
      if (/CorruptImage|ImproperImageHeader|insufficient image data|unexpected end|NegativeOrZeroImageSize|not a|decode/i.test(detail)) {
        throw new ConvertdError('corrupt_input', `The image could not be decoded (${detail}): it may be damaged or truncated.`);
      }
    }
    ensureSuccess(result, 'ImageMagick');
  }
}
