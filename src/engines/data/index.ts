// Structured data (csv, tsv, json, ndjson, yaml, toml, xml, xlsx, ods; plist, json5, ini, properties, msgpack, cbor) with npm libraries, in warm sandboxed Node processes.
import { defineEngine } from '../module.ts';
import { DataEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'data',
  summary: '`convert.ts` in pooled, sandboxed Node processes (heap cap)',
  packages: { debian: [], npm: ['@msgpack/msgpack', 'cbor2', 'csv-parse', 'csv-stringify', 'dot-properties', 'exceljs', 'fast-xml-parser', 'fflate', 'ini', 'json5', 'plist', 'saxes', 'smol-toml', 'yaml'] },
  formats: FORMATS,
  create: (context) => new DataEngine(context),
});
