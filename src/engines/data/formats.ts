// The formats the data engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'csv', name: 'Comma-separated values', category: 'data', mediaType: 'text/csv', extensions: ['csv'], detect: 'extension' },
  { id: 'tsv', name: 'Tab-separated values', category: 'data', mediaType: 'text/tab-separated-values', extensions: ['tsv', 'tab'], detect: 'extension' },
  { id: 'json', name: 'JSON', category: 'data', mediaType: 'application/json', extensions: ['json'], detect: 'extension' },
  { id: 'ndjson', name: 'Newline-delimited JSON', category: 'data', mediaType: 'application/x-ndjson', extensions: ['ndjson', 'jsonl'], detect: 'extension' },
  { id: 'yaml', name: 'YAML', category: 'data', mediaType: 'application/yaml', extensions: ['yaml', 'yml'], detect: 'extension' },
  { id: 'toml', name: 'TOML', category: 'data', mediaType: 'application/toml', extensions: ['toml'], detect: 'extension' },
  { id: 'xml', name: 'XML', category: 'data', mediaType: 'application/xml', extensions: ['xml'], detect: 'extension' },
  { id: 'xlsx', name: 'Excel workbook', category: 'spreadsheet', mediaType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', extensions: ['xlsx'], detect: 'magic', encryptedInCompoundFile: true },
  { id: 'ods', name: 'OpenDocument spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.oasis.opendocument.spreadsheet', extensions: ['ods'], detect: 'magic' },
];
