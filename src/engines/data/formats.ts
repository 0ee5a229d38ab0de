// The formats the data engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** An XML property list: its DOCTYPE or its root element, after an optional XML declaration and comments. */
const XML_PLIST = /^(?:<\?xml[^>]*\?>\s*)?(?:<!--[\s\S]*?-->\s*)*(?:<!DOCTYPE\s+plist\b|<plist[\s>])/;

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'csv', name: 'Comma-separated values', category: 'data', mediaType: 'text/csv', extensions: ['csv'], detect: 'extension' },
  { id: 'tsv', name: 'Tab-separated values', category: 'data', mediaType: 'text/tab-separated-values', extensions: ['tsv', 'tab'], detect: 'extension' },
  { id: 'json', name: 'JSON', category: 'data', mediaType: 'application/json', extensions: ['json'], detect: 'extension' },
  { id: 'ndjson', name: 'Newline-delimited JSON', category: 'data', mediaType: 'application/x-ndjson', extensions: ['ndjson', 'jsonl'], detect: 'extension' },
  { id: 'yaml', name: 'YAML', category: 'data', mediaType: 'application/yaml', extensions: ['yaml', 'yml'], detect: 'extension' },
  { id: 'toml', name: 'TOML', category: 'data', mediaType: 'application/toml', extensions: ['toml'], detect: 'extension' },
  { id: 'xml', name: 'XML', category: 'data', mediaType: 'application/xml', extensions: ['xml'], detect: 'extension' },
  { id: 'plist', name: 'Apple property list', category: 'data', mediaType: 'application/x-plist', extensions: ['plist'], detect: 'magic', signature: (head, text) => head.toString('latin1', 0, 8) === 'bplist00' || XML_PLIST.test(text) },
  // JSON5, INI and .properties have no signature (an INI file and a .properties file can be the same bytes): their names tell them.
  { id: 'json5', name: 'JSON5', category: 'data', mediaType: 'application/json5', extensions: ['json5'], detect: 'extension' },
  { id: 'ini', name: 'INI configuration', category: 'data', mediaType: 'text/plain', extensions: ['ini'], detect: 'extension' },
  { id: 'properties', name: 'Java properties', category: 'data', mediaType: 'text/x-java-properties', extensions: ['properties'], detect: 'extension' },
  // MessagePack has no signature; CBOR has an optional one (the self-describing tag 55799, d9 d9 f7), taken when present.
  { id: 'msgpack', name: 'MessagePack', category: 'data', mediaType: 'application/vnd.msgpack', extensions: ['msgpack'], detect: 'extension' },
  { id: 'cbor', name: 'CBOR', category: 'data', mediaType: 'application/cbor', extensions: ['cbor'], detect: 'extension', signature: (head) => head[0] === 0xd9 && head[1] === 0xd9 && head[2] === 0xf7 },
  { id: 'xlsx', name: 'Excel workbook', category: 'spreadsheet', mediaType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', extensions: ['xlsx'], detect: 'magic', encryptedInCompoundFile: true },
  { id: 'ods', name: 'OpenDocument spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.oasis.opendocument.spreadsheet', extensions: ['ods'], detect: 'magic' },
];
