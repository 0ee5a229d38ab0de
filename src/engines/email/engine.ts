// The email engine: EML, mbox and Outlook MSG become a self-contained HTML page (headers, the
// sanitised body, the list of attachments), plain text, or a ZIP of the attachments (an mbox: of
// its messages, each an .eml). Parsing runs in a pool of warm, sandboxed Node processes
// (messages.ts): a message is hostile input (MIME bombs, deeply nested parts, huge headers), and a
// parse that takes the CPU or the heap must not take the service with it. The HTML edge chains
// on, so a message also reaches PDF and the document formats through the document engines,
// which render the page in their own sandboxes with no network.
import { fileURLToPath } from 'node:url';
import type { ProcessPool } from '../../process/pool/index.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { PooledEngine } from '../support/pooled-engine.ts';

const MODULE = fileURLToPath(new URL('./messages.ts', import.meta.url));
const SOURCES = ['eml', 'msg', 'mbox'];

const EDGES: ConversionEdge[] = SOURCES.flatMap((from): ConversionEdge[] => [
  { from, to: 'html', cost: 1 },
  // The text is a final rendition: a PDF or a document is made from the page (its layout, its
  // pictures), never from the text.
  { from, to: 'txt', cost: 1, endsRoute: true },
  // The attachments themselves (an mbox's messages): for the upload only, never a step of a route.
  { from, to: 'zip', cost: 1, chainable: false, endsRoute: true },
]);

export class EmailEngine extends PooledEngine implements Engine {
  readonly id = 'email';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 60;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  readonly pool: ProcessPool;
  private readonly withScratchDir: EngineContext<unknown>['withScratchDir'];

  constructor(context: EngineContext<unknown>) {
    super();
    this.withScratchDir = context.withScratchDir;
    this.pool = context.pools.node({
      label: 'the e-mail reader',
      logName: 'email',
      module: MODULE,
      heapMb: 512,
      tooComplex: 'The message is too large or too deeply nested to read.',
    });
  }

  estimateSeconds(inputBytes: number): number {
    return 0.1 + inputBytes / 5_000_000;
  }

  async probe(): Promise<void> {
    const message = 'From: Probe <probe@example.org>\r\nTo: convertd@example.org\r\nSubject: probe\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nconvertd probe\r\n';
    const text = await this.convertSample(this.withScratchDir, 'probe.eml', message, 'probe.txt', { from: 'eml', to: 'txt' });
    if (!text.includes('convertd probe')) throw new Error('the e-mail reader wrote something unexpected');
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, limits, signal } = request;
    await this.pool.convert(input, output, { from, to, maxOutputBytes: limits.maxOutputBytes }, limits.timeoutMs, signal);
  }
}
