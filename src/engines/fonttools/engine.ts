// Fonts with Debian's fontTools (python3-fonttools, python3-brotli for WOFF2), through the helper
// script beside this file (helper/fonts.py) run by /usr/bin/python3 in the sandbox: ttf, otf,
// woff, woff2, and TTX (fontTools' XML form of a font). WOFF and WOFF2 wrap either kind of
// outlines; OTF (CFF outlines) becomes TTF by converting cubic curves to quadratic ones (within
// 1 unit), and TrueType outlines become OTF by the exact reverse (helper/fonts.py says how). A variable TrueType font does not become OTF (it
// would need CFF2): that job fails with a message saying so.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const PYTHON = '/usr/bin/python3';
const HELPERS = fileURLToPath(new URL('./helper/', import.meta.url));
const SCRIPT = path.join(HELPERS, 'fonts.py');

const BINARY = ['ttf', 'otf', 'woff', 'woff2'];
const EDGES: ConversionEdge[] = [
  ...['woff', 'woff2'].flatMap((to) => [{ from: 'ttf', to, cost: 1 }, { from: 'otf', to, cost: 1 }]),
  // Redrawing the outlines costs more than rewrapping them.
  { from: 'otf', to: 'ttf', cost: 2 }, { from: 'ttf', to: 'otf', cost: 2 },
  { from: 'woff', to: 'woff2', cost: 1 }, { from: 'woff2', to: 'woff', cost: 1 },
  // Unwrapping keeps the outlines, or redraws them when the target wants the other kind.
  ...['woff', 'woff2'].flatMap((from) => [{ from, to: 'ttf', cost: 2 }, { from, to: 'otf', cost: 2 }]),
  // fontTools' XML (TTX): every binary font dumped to it, and compiled back into each of them.
  ...BINARY.map((from) => ({ from, to: 'ttx', cost: 2 })),
  ...BINARY.map((to) => ({ from: 'ttx', to, cost: 2 })),
];

export class FontEngine implements Engine {
  readonly id = 'fonttools';
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
    return 0.5 + inputBytes / 500_000;
  }

  async probe(): Promise<void> {
    const check = 'import fontTools.ttLib, fontTools.pens.cu2quPen, fontTools.pens.t2CharStringPen, fontTools.fontBuilder, brotli; print(fontTools.version)';
    const { run, withScratchDir } = this.context;
    await withScratchDir(async (dir) => {
      const result = await run(PYTHON, ['-c', check], { cwd: dir, timeoutMs: 20_000, captureStdout: true });
      if (result.exitCode !== 0) throw new Error(`fontTools with brotli is not usable: ${lastErrorLine(result.stderr)}`);
      await fs.access(SCRIPT);
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, to, workDir, limits, signal } = request;
    const result = await this.context.run(PYTHON, [SCRIPT, path.basename(input), path.basename(output), to, ...(request.from === 'ttx' ? ['ttx'] : [])], {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, readOnly: [HELPERS],
      env: { PYTHONDONTWRITEBYTECODE: '1' },
      limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
    const detail = lastErrorLine(result.stderr);
    if (result.exitCode === 2) throw new ConvertdError('corrupt_input', `The font could not be read (${detail}): it may be damaged.`);
    if (result.exitCode === 3) throw new ConvertdError('conversion_failed', `This font cannot become ${to}: ${detail}.`);
    ensureSuccess(result, 'fontTools');
  }
}
