// Geodata packed as a ZIP: a zipped ESRI shapefile (the .shp, .shx, .dbf and side files of one or
// more shapefiles, and nothing else), known by the members its central directory lists
// (zip-directory.ts), and a KMZ (Google Earth's zipped KML: the main document is doc.kml, or the
// first .kml, at the top). file-type calls both plain "zip"; the sniffer asks here for the
// shapefile (ooxml-shortcut.ts, packageKind). A KMZ is a ZIP named .kmz (gdal/formats.ts): by its
// members alone, an archive that merely holds a KML first (a KML beside its CSV export) would no
// longer convert as the archive it is. The gdal engine reads the same lists to choose and check
// what GDAL opens.
import type { FileTypeResult } from 'file-type';
import type { ZipMember } from './zip-directory.ts';

/** The parts a zipped shapefile may hold: the three required ones and the usual side files. */
const SHAPEFILE_PARTS = /\.(shp|shx|dbf|prj|cpg|qix|sbn|sbx|fix|atx|ain|aih|ixs|mxs|qpj|shp\.xml)$/i;

/** The members that are files (a directory entry ends with "/"). */
function files(members: readonly ZipMember[]): ZipMember[] {
  return members.filter((member) => !member.name.endsWith('/'));
}

/** The .shp members of a ZIP that holds shapefile parts and nothing else, or undefined. */
export function shapefileMembers(members: readonly ZipMember[]): string[] | undefined {
  const all = files(members);
  if (all.length === 0 || !all.every((member) => SHAPEFILE_PARTS.test(member.name))) return undefined;
  const shapes = all.filter((member) => /\.shp$/i.test(member.name)).map((member) => member.name);
  return shapes.length > 0 ? shapes : undefined;
}

/** The main KML document of a KMZ: doc.kml at the top, or else the archive's first member when it is a .kml at the top. */
export function kmzDocument(members: readonly ZipMember[]): string | undefined {
  const all = files(members);
  const doc = all.find((member) => member.name.toLowerCase() === 'doc.kml');
  if (doc) return doc.name;
  const first = all[0]?.name;
  return first && /^[^/\\]+\.kml$/i.test(first) ? first : undefined;
}

export const ZIPPED_SHAPEFILE: FileTypeResult = { ext: 'shp', mime: 'application/x-shapefile+zip' } as FileTypeResult;

/** A zipped shapefile by the members, or undefined. */
export function geodataPackageKind(members: readonly ZipMember[]): FileTypeResult | undefined {
  return shapefileMembers(members) ? ZIPPED_SHAPEFILE : undefined;
}
