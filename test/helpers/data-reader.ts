// A data file's records as read_data.py reads them (Python's standard library, PyYAML, plistlib,
// msgpack, cbor2: not the npm libraries convertd uses), through one long-lived `read_data.py
// --serve` per test file (python-server.ts): a data suite checks some two hundred outputs, and
// each Python start with its modules cost more than the conversion it checked.
import path from 'node:path';
import { PythonServer } from './python-server.ts';

export type DataRecords = Array<Record<string, unknown>>;

const reader = new PythonServer<[string, string, boolean, boolean], { records?: DataRecords; error?: string }>(
  [path.join(import.meta.dirname, 'read_data.py'), '--serve'], 'read_data.py --serve');

/**
 * The records of `file` read as `format`: values as text, or with `typed` as the format types
 * them; `formulas` reads a workbook's cached formula results (read_data.py's header says more).
 */
export async function readData(file: string, format: string, { typed = false, formulas = false } = {}): Promise<DataRecords> {
  const answer = await reader.request([file, format, typed, formulas]);
  if (answer.error !== undefined) throw new Error(`read_data.py could not read ${format}: ${answer.error}`);
  return answer.records!;
}
