// Structured data (csv, tsv, json, ndjson, yaml, toml, xml, xlsx, ods) with well-kept npm libraries,
// in a pool of warm, sandboxed Node processes (the context's node pool, loading convert.ts): parsing a
// 25 MB document takes the CPU for a while, which must not stall the service's event loop, and
// hostile content stays contained. The processes see node_modules, src and package.json
// read-only (not the data dir), and their heap is capped.
import { fileURLToPath } from 'node:url';
import type { ProcessPool } from '../../process/pool/index.ts';
import type { EngineContext } from '../module.ts';
import { narrow, numberOption, OPTIONS, type OptionSpec } from '../options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import type { DataOptions } from './convert.ts';
import { PooledEngine } from '../support/pooled-engine.ts';

const MODULE = fileURLToPath(new URL('./convert.ts', import.meta.url));

const FORMATS = ['csv', 'tsv', 'json', 'ndjson', 'yaml', 'toml', 'xml', 'xlsx', 'ods'];
/**
 * Tree formats (more-trees.ts) that convert to and from every data format above and each other,
 * directly only (chainable: false): a property list or a MessagePack message is wanted as JSON,
 * YAML or a table, not as a PDF or a picture of one; and the dozens of spreadsheet formats that
 * reach json through LibreOffice would otherwise each list all six as targets.
 */
const MORE = ['plist', 'json5', 'ini', 'properties', 'msgpack', 'cbor'];
const WORKBOOKS = new Set(['xlsx', 'ods']);
/**
 * Between two workbook formats this engine carries values only; LibreOffice, when installed, keeps
 * styles, formulas and charts (its edges cost 4), so these edges cost more and serve only as the
 * fallback. Edges into a workbook from another format cost more than one step too, so that no chain
 * through this engine (xlsx → csv → ods, which also turned every number into text) is ever cheaper
 * than either direct edge: 1 + INTO_WORKBOOK > BETWEEN_WORKBOOKS > LibreOffice's 4.
 */
const BETWEEN_WORKBOOKS = 5.5;
const INTO_WORKBOOK = 5;
/**
 * The outputs written pretty-printed, and the indentation they take: YAML's block style needs at
 * least one space per level; JSON and XML are written on one line with 0.
 */
const INDENTED: Readonly<Record<string, OptionSpec>> = {
  json: OPTIONS.indent,
  xml: OPTIONS.indent,
  yaml: narrow(OPTIONS.indent, { minimum: 1, description: 'Spaces per level of nesting in the YAML output (1-8; YAML has no one-line block form).' }),
};

/**
 * A conversion's options: `sheet` where a workbook becomes one table (csv, tsv) or the records of
 * one (json, yaml, ...), never into another workbook (every sheet is LibreOffice's to carry);
 * `delimiter` into csv; `indent` into the pretty-printed formats.
 */
function optionsOf(from: string, to: string): OptionSpec[] {
  const specs: OptionSpec[] = [];
  if (WORKBOOKS.has(from) && !WORKBOOKS.has(to)) specs.push(OPTIONS.sheet);
  if (to === 'csv') specs.push(OPTIONS.delimiter);
  const indent = INDENTED[to];
  if (indent) specs.push(indent);
  return specs;
}

/**
 * Formats that also convert to themselves, for their options: a comma CSV made a semicolon one,
 * a JSON, YAML or XML document re-indented or made compact (api-contract.md, "Same format").
 */
const SAME_FORMAT = ['csv', 'json', 'yaml', 'xml'];

/** OPTIONS.delimiter's characters, checked again here: the value becomes csv-stringify's separator. */
const DELIMITERS = new RegExp(`^(?:${OPTIONS.delimiter.pattern})$`);

const EDGES: ConversionEdge[] = [
  ...FORMATS.flatMap((from) => FORMATS.filter((to) => to !== from).map((to): ConversionEdge => ({
    from, to, cost: !WORKBOOKS.has(to) ? 1 : WORKBOOKS.has(from) ? BETWEEN_WORKBOOKS : INTO_WORKBOOK, options: optionsOf(from, to),
    // A workbook built from one table has one sheet: a `sheet` asked of it later is not the upload's.
    ...(WORKBOOKS.has(to) && !WORKBOOKS.has(from) ? { resets: ['sheet'] } : {}),
  }))),
  ...SAME_FORMAT.map((format): ConversionEdge => ({ from: format, to: format, cost: 1, options: optionsOf(format, format) })),
  ...[...FORMATS, ...MORE].flatMap((from) => [...FORMATS, ...MORE].filter((to) => to !== from && (MORE.includes(from) || MORE.includes(to))).map((to): ConversionEdge => ({
    from, to, cost: WORKBOOKS.has(to) ? INTO_WORKBOOK : 1, options: optionsOf(from, to), chainable: false,
    ...(WORKBOOKS.has(to) ? { resets: ['sheet'] } : {}),
  }))),
];

export class DataEngine extends PooledEngine implements Engine {
  readonly id = 'data';
  /** Its probe keeps no state: a pass may be remembered by the edges that passed (probe-cache.ts). */
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  readonly pool: ProcessPool;
  private readonly withScratchDir: EngineContext<unknown>['withScratchDir'];

  constructor(context: EngineContext<unknown>) {
    super();
    this.withScratchDir = context.withScratchDir;
    this.pool = context.pools.node({
      label: 'the data converter',
      logName: 'data',
      module: MODULE,
      heapMb: 768,
      tooComplex: 'The data is too large or too deeply nested to convert.',
    });
  }

  estimateSeconds(inputBytes: number): number {
    return 0.05 + inputBytes / 3_000_000;
  }

  async probe(): Promise<void> {
    const json = await this.convertSample(this.withScratchDir, 'probe.csv', 'name,size\nconvertd,1\n', 'probe.json', { from: 'csv', to: 'json' });
    const parsed = JSON.parse(json) as Array<{ name: string }>;
    if (parsed[0]?.name !== 'convertd') throw new Error('the data converter wrote something unexpected');
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, limits, signal } = request;
    // Values parsed and checked at submission (a sheet name is any text without control
    // characters: it is only compared with the workbook's names, never used as a path or argument).
    const { sheet, delimiter } = request.options;
    const options: DataOptions = {
      ...(typeof sheet === 'string' ? { sheet } : {}),
      ...(typeof delimiter === 'string' && DELIMITERS.test(delimiter) ? { delimiter } : {}),
      ...(numberOption(request.options, 'indent') !== undefined ? { indent: numberOption(request.options, 'indent') } : {}),
    };
    await this.pool.convert(input, output, { from, to, options }, limits.timeoutMs, signal);
  }
}
