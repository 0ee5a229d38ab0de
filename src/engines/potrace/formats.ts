// The formats the potrace engine adds to the catalogue: outlines it writes and no engine reads
// yet. Recognised by name only (detect 'extension': a DXF is text), so an upload of one is named
// for what it is and answered with no targets rather than as unknown. GeoJSON, which potrace also
// writes, is the gdal engine's format (gdal/formats.ts), used here by its id: a format is defined
// once in the catalogue (assembly.ts refuses a second definition of an id).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'dxf', name: 'AutoCAD DXF drawing', category: 'vector', mediaType: 'image/vnd.dxf', extensions: ['dxf'], detect: 'extension' },
];
