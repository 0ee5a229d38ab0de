// Ebooks with calibre's ebook-convert: epub, mobi, azw3 and fb2 among themselves, and to docx,
// txt and pdf; Palm database ebooks (pdb: PalmDOC, eReader, zTXT...) read only. calibre picks its
// input plugin by the file's extension and runs `.recipe` files as Python (docs/security.md#calibre):
// the input here is always the service's own `input.<format>`, with the format one of the five
// above (a PalmDOC book uploaded as .mobi is sniffed as pdb, so calibre gets `input.pdb`). calibre's HTML input also takes in files next to the
// input, so the job directory holds nothing else of value; and it runs in the OS sandbox.
// PDF output renders with Qt WebEngine (Chromium): its own sandbox cannot start inside ours, so it
// is switched off there, the bubblewrap sandbox standing in for it. No address-space cap: it
// breaks Chromium: under a 4 GB RLIMIT_AS it writes no PDF and still exits 0 (docs/security.md#resource-limits).
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const EBOOK_CONVERT = '/usr/bin/ebook-convert';
const READS = ['epub', 'mobi', 'azw3', 'fb2', 'pdb'];
const WRITES = ['epub', 'mobi', 'azw3', 'fb2', 'docx', 'txt', 'pdf'];

const EDGES: ConversionEdge[] = READS.flatMap((from) => WRITES.filter((to) => to !== from).map((to) => ({
  from,
  to,
  // calibre starts slowly; its PDF of a book is still better paginated than the alternatives.
  cost: to === 'pdf' ? 5 : 6,
})));

const ENV = {
  QT_QPA_PLATFORM: 'offscreen',
  QTWEBENGINE_CHROMIUM_FLAGS: '--no-sandbox --disable-gpu',
  CALIBRE_NO_NATIVE_FILEDIALOGS: '1',
};

export class CalibreEngine implements Engine {
  readonly id = 'calibre';
  readonly timeoutSeconds = 600;
  readonly edges = EDGES;
  readonly reportsProgress = true;
  private readonly context: EngineContext<unknown>;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number, _from: string, to: string): number {
    return (to === 'pdf' ? 3 : 1.5) + inputBytes / 500_000;
  }

  async probe(): Promise<void> {
    const result = await this.context.run(EBOOK_CONVERT, ['--version'], { cwd: '/', timeoutMs: 30_000, captureStdout: true, env: ENV });
    if (!/calibre/i.test(result.stdout)) throw new Error(`ebook-convert did not run: ${lastErrorLine(result.stderr)}`);
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, workDir, limits, signal, onProgress } = request;
    if (!READS.includes(from)) throw new Error(`calibre is not used to read ${from}`);
    const result = await this.context.run(EBOOK_CONVERT, [`./${path.basename(input)}`, `./${path.basename(output)}`], {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, env: ENV,
      limits: { fileSizeBytes: limits.maxOutputBytes },
      // calibre prints its progress as "12% Converting input to HTML...".
      onStdoutLine: (line) => {
        const percent = /^\s*(\d{1,3})% /.exec(line);
        if (percent) onProgress(Number(percent[1]) / 100);
      },
    });
    if (result.exitCode !== 0 && /DRM|encrypted/i.test(result.stderr)) {
      throw new ConvertdError('encrypted_input', 'The ebook is protected by DRM: this service converts DRM-free books only.');
    }
    if (result.exitCode !== 0 && /not a valid|Invalid|BadZipFile|unpack/i.test(result.stderr)) {
      throw new ConvertdError('corrupt_input', `calibre could not read the ebook (${lastErrorLine(result.stderr)}).`);
    }
    ensureSuccess(result, 'ebook-convert');
  }
}
