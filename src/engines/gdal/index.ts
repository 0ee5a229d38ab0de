// Geodata through GDAL's ogr2ogr: GeoJSON, TopoJSON, KML, KMZ, GPX, GML, GeoPackage, FlatGeobuf
// and zipped shapefiles, each to every other it writes.
import { defineEngine } from '../module.ts';
import { REFERENCE_BLAS_PACKAGES, referenceBlasEnvironment } from '../support/reference-blas.ts';
import { GdalEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'gdal',
  summary: 'ogr2ogr (GDAL 3.6) on an upload whose content was checked against its format, every other driver skipped (GDAL_SKIP), nothing fetched; ZIPs through /vsizip/ after their member names were checked',
  packages: { debian: ['gdal-bin', ...REFERENCE_BLAS_PACKAGES] },
  formats: FORMATS,
  environment: referenceBlasEnvironment,
  create: (context) => new GdalEngine(context),
});
