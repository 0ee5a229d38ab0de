// Structured data (csv, tsv, json, ndjson, yaml, toml, xml, xlsx, ods) with well-kept npm libraries,
// in a Node child process inside the sandbox (data/convert.ts): parsing a 25 MB document takes
// the CPU for a while, which must not stall the service's event loop, and hostile content stays
// contained. The child sees node_modules, src and package.json read-only (not the data dir),
// and its heap is capped.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConvertdError } from '../errors.ts';
import { ensureSuccess, lastErrorLine, runProcess } from '../process/runner.ts';
import { withProbeDir } from './probe-dir.ts';
import type { ConversionEdge, ConvertRequest, Engine } from './types.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./data/convert.ts', import.meta.url));
const READ_ONLY = [path.join(ROOT, 'node_modules'), path.join(ROOT, 'src'), path.join(ROOT, 'package.json')];
const NODE_ARGS = ['--max-old-space-size=768', '--disable-warning=ExperimentalWarning', SCRIPT];

const FORMATS = ['csv', 'tsv', 'json', 'ndjson', 'yaml', 'toml', 'xml', 'xlsx', 'ods'];
const WORKBOOKS = new Set(['xlsx', 'ods']);
// Between two workbook formats this engine carries values only; LibreOffice, when installed, keeps
// styles, formulas and charts, so these edges cost more and serve only as the fallback.
const EDGES: ConversionEdge[] = FORMATS.flatMap((from) => FORMATS.filter((to) => to !== from).map((to) => ({
  from, to, cost: WORKBOOKS.has(from) && WORKBOOKS.has(to) ? 6 : 1,
})));

export class DataEngine implements Engine {
  readonly id = 'data';
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;

  estimateSeconds(inputBytes: number): number {
    return 0.4 + inputBytes / 3_000_000;
  }

  async probe(): Promise<void> {
    await withProbeDir('data', async (dir) => {
      const { writeFile, readFile } = await import('node:fs/promises');
      await writeFile(path.join(dir, 'probe.csv'), 'name,size\nconvertd,1\n');
      const result = await runProcess(process.execPath, [...NODE_ARGS, 'probe.csv', 'probe.json', 'csv', 'json'], { cwd: dir, timeoutMs: 30_000, readOnly: READ_ONLY });
      ensureSuccess(result, 'the data converter');
      const parsed = JSON.parse(await readFile(path.join(dir, 'probe.json'), 'utf8')) as Array<{ name: string }>;
      if (parsed[0]?.name !== 'convertd') throw new Error('the data converter wrote something unexpected');
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, workDir, limits, signal } = request;
    const result = await runProcess(process.execPath, [...NODE_ARGS, path.basename(input), path.basename(output), from, to], {
      cwd: workDir, timeoutMs: limits.timeoutMs, signal, readOnly: READ_ONLY, limits: { fileSizeBytes: limits.maxOutputBytes },
    });
    const detail = lastErrorLine(result.stderr);
    if (result.exitCode === 2) throw new ConvertdError('corrupt_input', `The file could not be read: ${detail}.`);
    if (result.exitCode === 3) throw new ConvertdError('conversion_failed', `The data cannot become ${to}: ${detail}.`);
    if (/heap out of memory|allocation failed/i.test(result.stderr)) throw new ConvertdError('input_too_complex', 'The data is too large or too deeply nested to convert.');
    ensureSuccess(result, 'the data converter');
  }
}
