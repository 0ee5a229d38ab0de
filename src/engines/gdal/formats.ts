// The geodata formats the gdal engine adds to the catalogue. The text formats (GeoJSON, TopoJSON,
// KML, GPX, GML) are recognised by name (detect 'extension'), as JSON and XML are: content alone
// would take every .xml that happens to be a GPX track away from the data engine. The engine
// checks their content against the format before GDAL opens them (engine.ts, contentMatches), so
// a file named .kml that holds something else (a VRT naming /etc/passwd) never reaches a driver.
// The binary ones are recognised by content: a GeoPackage by SQLite's header and its application
// id, a FlatGeobuf by its magic bytes, a zipped shapefile by its central directory
// (formats/ooxml-shortcut.ts, geodataPackageKind), and a KMZ as a ZIP named .kmz.
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** SQLite's header, then PRAGMA application_id at offset 68: "GPKG" (GeoPackage 1.2+), "GP10"/"GP11" (1.0, 1.1). */
export function isGeoPackage(head: Buffer): boolean {
  return head.length >= 72 && head.toString('latin1', 0, 16) === 'SQLite format 3\0' && ['GPKG', 'GP10', 'GP11'].includes(head.toString('latin1', 68, 72));
}

/** FlatGeobuf: "fgb", the major version 3, "fgb", then the patch version. */
export function isFlatGeobuf(head: Buffer): boolean {
  return head.length >= 8 && head.toString('latin1', 0, 3) === 'fgb' && head[3] === 3 && head.toString('latin1', 4, 7) === 'fgb';
}

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  // potrace writes GeoJSON too (in pixel coordinates), by this id.
  { id: 'geojson', name: 'GeoJSON', category: 'geodata', mediaType: 'application/geo+json', extensions: ['geojson'], detect: 'extension' },
  { id: 'topojson', name: 'TopoJSON', category: 'geodata', mediaType: 'application/topo+json', extensions: ['topojson'], detect: 'extension' },
  { id: 'kml', name: 'Keyhole Markup Language (KML)', category: 'geodata', mediaType: 'application/vnd.google-earth.kml+xml', extensions: ['kml'], detect: 'extension' },
  // A ZIP named .kmz (as a comic is a ZIP named .cbz); the engine then looks for its doc.kml, or
  // a .kml as its first member. Named .zip, it is an archive (formats/geodata-packages.ts says why).
  { id: 'kmz', name: 'Zipped KML (KMZ)', category: 'geodata', mediaType: 'application/vnd.google-earth.kmz', extensions: ['kmz'], detect: 'magic', signatureOf: 'zip', nameDecides: true },
  { id: 'gpx', name: 'GPS Exchange Format (GPX)', category: 'geodata', mediaType: 'application/gpx+xml', extensions: ['gpx'], detect: 'extension' },
  { id: 'gml', name: 'Geography Markup Language (GML)', category: 'geodata', mediaType: 'application/gml+xml', extensions: ['gml'], detect: 'extension' },
  { id: 'gpkg', name: 'GeoPackage', category: 'geodata', mediaType: 'application/geopackage+sqlite3', extensions: ['gpkg'], detect: 'magic', signature: isGeoPackage },
  { id: 'fgb', name: 'FlatGeobuf', category: 'geodata', mediaType: 'application/vnd.flatgeobuf', extensions: ['fgb'], detect: 'magic', signature: isFlatGeobuf },
  // An ESRI shapefile is several files (.shp, .shx, .dbf, .prj, .cpg): it travels as a ZIP of
  // them, downloaded as name.shp.zip. An upload is one when its ZIP holds shapefile parts and
  // nothing else (geodataPackageKind), whatever its name (roads.zip too); a ZIP that also holds
  // anything else stays a plain zip archive. A bare .shp (which file-type knows as "shp") is taken
  // as this format too and refused by the engine, saying to send the ZIP of all the parts.
  { id: 'shp', name: 'ESRI Shapefile (zipped)', category: 'geodata', mediaType: 'application/x-shapefile+zip', extensions: ['shp', 'shp.zip'], fileExtension: 'shp.zip', detect: 'magic' },
];
