// The formats the potrace engine adds to the catalogue: outlines it writes and no engine reads
// yet. Recognised by name only (detect 'extension': a DXF is text, a GeoJSON is JSON), so an
// upload of one is named for what it is and answered with no targets rather than as unknown.
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'dxf', name: 'AutoCAD DXF drawing', category: 'vector', mediaType: 'image/vnd.dxf', extensions: ['dxf'], detect: 'extension' },
  { id: 'geojson', name: 'GeoJSON', category: 'vector', mediaType: 'application/geo+json', extensions: ['geojson'], detect: 'extension' },
];
