// Structured data (csv, tsv, json, ndjson, yaml, toml, xml, xlsx, ods) with npm libraries, in warm sandboxed Node processes.
import { defineEngine } from '../module.ts';
import { DataEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'data',
  summary: '`convert.ts` in pooled, sandboxed Node processes (heap cap)',
  packages: { debian: [], npm: ['csv-parse', 'csv-stringify', 'exceljs', 'fast-xml-parser', 'fflate', 'saxes', 'smol-toml', 'yaml'] },
  formats: FORMATS,
  create: (context) => new DataEngine(context),
});
