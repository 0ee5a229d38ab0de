// Geodata through GDAL's ogr2ogr (Debian's GDAL 3.6): GeoJSON, TopoJSON (read only), KML, KMZ,
// GPX, GML, GeoPackage, FlatGeobuf and zipped ESRI shapefiles, each to every other it writes.
//
// Every conversion takes two or three ogr2ogr runs, all through the sandboxed runner:
// 1. the input's layers (those with features; a GPX's per-point route_points and track_points
//    layers repeat its routes and tracks and are left out) are gathered into one layer of a
//    GeoPackage in the job's directory, with any fields a later layer adds (`-addfields`), and
//    reprojected there when the client asked for `srs`;
// 2. for GPX and shapefiles, which hold one geometry type a layer, that layer is split by type
//    (`-where OGR_GEOMETRY ...`, no client text in it): a GPX holds points (waypoints) and lines
//    (tracks), so a polygon's rings become a track; a shapefile gets points, lines and polygons
//    as three .shp files in its ZIP;
// 3. the result is written by the target's driver.
//
// Safety (docs/security.md#geodata-gdal):
// - GDAL picks a driver by probing the file's content, whatever its name: a file named .kml that
//   holds a VRT ("virtual" dataset naming /etc/passwd, or a URL, as its source) would be opened
//   as that VRT. GDAL 3.6's ogr2ogr has no `-if` to force the input driver (3.7 added it), so two
//   locks replace it: the content is checked here against the format before GDAL sees it
//   (contentMatches: the root element of an XML format, the members of a ZIP, the header of a
//   binary format), and every run deregisters all drivers but the two it needs (GDAL_SKIP, from
//   the driver list the probe read), so no VRT, WFS, CSV or other driver is there to be chosen.
// - XML with a DOCTYPE is refused (unsafe_input): no entity expansion, no external entity.
// - No network: the sandbox has none, and GDAL is told not to try (GML schemas and xlinks not
//   downloaded or resolved, HTTP timeouts of a second, no retries, /vsicurl/ allowed no file
//   extension, PROJ's network grids off), so a hostile URL costs nothing and never hangs a job.
// - A ZIP (KMZ, shapefile) is opened through /vsizip/ on a hard link of the upload, after its
//   members' names were checked (relative, no "..", all shapefiles in one folder, each with its
//   .shx and .dbf); its member count and unpacked size were held to the archive caps before any
//   engine ran (formats/input-caps.ts, as for every ZIP upload).
// - Limits as the other native engines: the job's time (shared by the runs), the output cap as
//   the file size limit, the native address-space cap.
// - Layer names come from the upload and are passed as arguments (never a shell); one that
//   starts with "-" would read as an option and is refused.
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { kmzDocument, shapefileMembers } from '../../formats/geodata-packages.ts';
import { memberName } from '../../formats/member-names.ts';
import { fileSource, zipMembers, type ZipMember } from '../../formats/zip-directory.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import { writeZip } from '../support/zip-writer.ts';
import type { EngineContext } from '../module.ts';
import { EPSG_CODES, numberOption, OPTIONS, type OptionSpec } from '../options.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { isFlatGeobuf, isGeoPackage } from './formats.ts';

const OGR2OGR = '/usr/bin/ogr2ogr';
const OGRINFO = '/usr/bin/ogrinfo';

/**
 * The driver GDAL reads each format with. KML through LIBKML where GDAL has it: the plain KML
 * driver skips Google's gx:Track, so a GPS track (the whole point of most KML from a watch or a
 * phone) came out as its start and end points alone.
 */
const READERS: Readonly<Record<string, string>> = {
  geojson: 'GeoJSON', topojson: 'TopoJSON', kml: 'LIBKML', kmz: 'LIBKML', gpx: 'GPX', gml: 'GML', gpkg: 'GPKG', fgb: 'FlatGeobuf', shp: 'ESRI Shapefile',
};
/**
 * The driver GDAL writes each format with. A KMZ is the KML driver's document zipped here as
 * doc.kml: LIBKML's KMZ puts the features in layers/*.kml behind a NetworkLink, which many
 * readers (and GDAL's own KML driver) do not follow.
 */
const WRITERS: Readonly<Record<string, string>> = {
  geojson: 'GeoJSON', kml: 'KML', kmz: 'KML', gpx: 'GPX', gml: 'GML', gpkg: 'GPKG', fgb: 'FlatGeobuf', shp: 'ESRI Shapefile',
};
/** The formats' names in messages. */
const NAMES: Readonly<Record<string, string>> = {
  geojson: 'GeoJSON', topojson: 'TopoJSON', kml: 'KML', kmz: 'KMZ', gpx: 'GPX', gml: 'GML', gpkg: 'GeoPackage', fgb: 'FlatGeobuf', shp: 'zipped shapefile',
};
/** Targets always in WGS 84 longitude/latitude (their specifications say so): no srs for them. */
const WGS84_ONLY = new Set(['kml', 'kmz', 'gpx']);

/**
 * GDAL configuration for every run (each name checked in GDAL 3.6's library): nothing fetched,
 * nothing resolved from outside the file, no side files written beside the input.
 */
const GDAL_ENV: Readonly<Record<string, string>> = {
  GML_SKIP_RESOLVE_ELEMS: 'ALL',
  GML_DOWNLOAD_WFS_SCHEMA: 'NO',
  GDAL_HTTP_TIMEOUT: '1',
  GDAL_HTTP_CONNECTTIMEOUT: '1',
  GDAL_HTTP_MAX_RETRY: '0',
  CPL_VSIL_CURL_ALLOWED_EXTENSIONS: '.convertd-none',
  CPL_VSIL_CURL_USE_HEAD: 'NO',
  GDAL_DISABLE_READDIR_ON_OPEN: 'EMPTY_DIR',
  GDAL_PAM_ENABLED: 'NO',
  OGR_ENABLE_PARTIAL_REPROJECTION: 'NO',
  LIBKML_RESOLVE_STYLE: 'NO',
  GDAL_NUM_THREADS: '1',
  PROJ_NETWORK: 'OFF',
};


/** The srs option as this engine applies it (options.ts parses "EPSG:<code>" into the code). */
const SRS: OptionSpec = {
  ...OPTIONS.srs,
  description: `Coordinate system of the result, as EPSG:<code>, one of ${EPSG_CODES.map((code) => `EPSG:${code}`).join(', ')}; default: the input's own.`,
};

const GEODATA_NOT_AFTER = ['potrace'];

function edgesFor(readable: readonly string[], writable: readonly string[]): ConversionEdge[] {
  return readable.flatMap((from) => writable.filter((to) => to !== from).map((to): ConversionEdge => ({
    from, to, cost: 2,
    // potrace's GeoJSON is a traced bitmap in pixel coordinates, no geodata to carry on with.
    notAfter: GEODATA_NOT_AFTER,
    ...(WGS84_ONLY.has(to) ? {} : { options: [SRS] }),
  })));
}

const ALL_EDGES = edgesFor(Object.keys(READERS), Object.keys(WRITERS));

/** The start-up sample: a point, a line and a polygon, one name not ASCII. */
const PROBE_GEOJSON = JSON.stringify({
  type: 'FeatureCollection',
  features: [
    { type: 'Feature', properties: { name: 'Zürich' }, geometry: { type: 'Point', coordinates: [8.54, 47.37] } },
    { type: 'Feature', properties: { name: 'line' }, geometry: { type: 'LineString', coordinates: [[0, 0], [1, 1]] } },
    { type: 'Feature', properties: { name: 'area' }, geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 0]]] } },
  ],
});
const PROBE_TOPOJSON = JSON.stringify({
  type: 'Topology',
  objects: { places: { type: 'GeometryCollection', geometries: [{ type: 'Point', coordinates: [8.54, 47.37], properties: { name: 'Zürich' } }] } },
  arcs: [],
});

interface LayerFacts {
  readonly name: string;
  readonly features: number;
  readonly hasSrs: boolean;
}

/** What GDAL's probe found (probeMemory): the drivers `ogrinfo --formats` listed, the formats that passed. */
interface GdalFacts {
  readonly drivers: readonly string[];
  readonly formats: readonly string[];
}

function isGdalFacts(facts: unknown): facts is GdalFacts {
  const strings = (value: unknown) => Array.isArray(value) && value.every((item) => typeof item === 'string');
  return typeof facts === 'object' && facts !== null && strings((facts as GdalFacts).drivers) && strings((facts as GdalFacts).formats);
}

export class GdalEngine implements Engine {
  readonly id = 'gdal';
  /**
   * The probe's facts are the drivers it listed and the formats that passed: a service started
   * again restores both without running ogrinfo (about 0.2 s of CPU at each of the tests' ~90
   * service starts).
   */
  readonly probeMemory = {
    found: (): unknown => ({ drivers: this.drivers, formats: [...new Set(this.edges.flatMap((edge) => [edge.from, edge.to]))] }),
    restore: async (facts: unknown): Promise<readonly ConversionEdge[] | undefined> => {
      if (!isGdalFacts(facts) || !facts.drivers.includes('GeoJSON')) return undefined;
      this.drivers = facts.drivers;
      const works = new Set(facts.formats);
      this.edges = ALL_EDGES.filter((edge) => works.has(edge.from) && works.has(edge.to));
      return this.edges;
    },
  };
  readonly timeoutSeconds = 300;
  readonly reportsProgress = false;
  edges: readonly ConversionEdge[] = ALL_EDGES;
  private readonly context: EngineContext<unknown>;
  /** The drivers GDAL has here, read by the probe; all but those a run needs are skipped (GDAL_SKIP). */
  private drivers: readonly string[] = [];

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 0.5 + inputBytes / 2_000_000;
  }

  /**
   * Writes the sample with every target's driver and reads each result back with its reader (one
   * ogr2ogr and one ogrinfo a format: GDAL takes a good part of a second to start); the formats
   * that fail are not advertised. TopoJSON, read only, is read from a sample of its own.
   */
  async probe(): Promise<readonly ConversionEdge[]> {
    await this.readDrivers();
    return this.context.withScratchDir(async (dir) => {
      await fs.writeFile(path.join(dir, 'sample.geojson'), PROBE_GEOJSON);
      await fs.writeFile(path.join(dir, 'sample.topojson'), PROBE_TOPOJSON);
      const run = (tool: string, args: string[], drivers: string[]) => this.context.run(tool, args, { cwd: dir, timeoutMs: 30_000, captureStdout: true, env: this.environment(drivers) });
      const reads = async (file: string, reader: string) => {
        const info = await run(OGRINFO, ['-ro', '-so', '-al', file], [reader]);
        return info.exitCode === 0 && /^Feature Count: [1-9]/m.test(info.stdout);
      };
      const works = new Set<string>();
      for (const [to, writer] of Object.entries(WRITERS)) {
        if (to === 'geojson' || to === 'kmz') continue;
        const file = to === 'shp' ? 'probe.shp.zip' : `probe.${to}`;
        // A shapefile and a GPX layer hold one geometry type: the sample's point alone.
        const single = to === 'shp' || to === 'gpx';
        const source = single ? 'sample-point.geojson' : 'sample.geojson';
        if (single) await fs.writeFile(path.join(dir, source), JSON.stringify({ type: 'FeatureCollection', features: JSON.parse(PROBE_GEOJSON).features.slice(0, 1) }));
        const wrote = await run(OGR2OGR, ['-f', writer, ...creationOptions(to), file, source], ['GeoJSON', writer]);
        const back = to === 'shp' ? `/vsizip/${path.join(dir, file)}` : file;
        if (wrote.exitCode === 0 && await reads(back, this.readerOf(to)!)) works.add(to);
        else this.context.log.warn({ format: to, stderr: wrote.stderr.slice(-500) }, 'gdal probe: format left out');
      }
      // GeoJSON is read by every route and written by the others' round trips: without it, nothing.
      if (!(await reads('sample.geojson', 'GeoJSON'))) throw new Error('ogrinfo could not read the GeoJSON sample');
      works.add('geojson');
      if (works.has('kml')) works.add('kmz');
      if (await reads('sample.topojson', 'TopoJSON')) works.add('topojson');
      this.edges = ALL_EDGES.filter((edge) => works.has(edge.from) && works.has(edge.to));
      return this.edges;
    });
  }

  /** The short names of GDAL's drivers, from `ogrinfo --formats` ("  GPX -vector- (rw+v): GPX"). */
  private async readDrivers(): Promise<void> {
    const result = await this.context.withScratchDir((dir) => this.context.run(OGRINFO, ['--formats'], { cwd: dir, timeoutMs: 20_000, captureStdout: true }));
    const names = [...result.stdout.matchAll(/^\s+(.+?) -(?:raster|vector|gnm|multidimensional)/gm)].map((match) => match[1]!.trim());
    if (result.exitCode !== 0 || !names.includes('GeoJSON')) throw new Error(`ogrinfo listed no drivers: ${lastErrorLine(result.stderr)}`);
    this.drivers = names;
  }

  /** The driver that reads `format` here: LIBKML's stand-in is the plain KML driver, when GDAL was built without it. */
  private readerOf(format: string): string | undefined {
    const reader = READERS[format];
    return reader === 'LIBKML' && !this.drivers.includes('LIBKML') ? 'KML' : reader;
  }

  /** GDAL_SKIP for a run: every driver but `keep` (names with a space cannot be listed, and are kept). */
  private environment(keep: readonly string[]): Record<string, string> {
    const skip = this.drivers.filter((name) => !keep.includes(name) && !/\s/.test(name));
    return { ...GDAL_ENV, GDAL_SKIP: skip.join(' ') };
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { from, to, workDir } = request;
    const reader = this.readerOf(from);
    const writer = WRITERS[to];
    if (!reader || !writer) throw new ConvertdError('conversion_failed', `GDAL does not convert ${from} to ${to} here.`);
    const deadline = performance.now() + request.limits.timeoutMs;
    const source = await this.sourceOf(request);
    const layers = (await this.layers(request, source, reader, deadline)).filter((layer) => layer.features > 0 && !(from === 'gpx' && /^(route|track)_points$/.test(layer.name)));
    if (layers.length === 0) throw new ConvertdError('conversion_failed', `The ${NAMES[from]} file holds no features to convert.`);
    const srs = numberOption(request.options, 'srs') ?? (WGS84_ONLY.has(to) ? 4326 : undefined);
    const staging = path.join(workDir, 'gdal-staging.gpkg');
    const splitFile = path.join(workDir, 'gdal-split.gpkg');
    const result = path.join(workDir, `gdal-result.${to === 'shp' ? 'shp.zip' : to === 'kmz' ? 'kml' : to}`);
    for (const layer of layers) {
      if (layer.name.startsWith('-')) throw new ConvertdError('conversion_failed', `The ${NAMES[from]} file has a layer named "${layer.name.slice(0, 40)}", which this service does not read (a name starting with "-").`);
    }
    const readFailure = (stderr: string) => new ConvertdError('corrupt_input', `GDAL could not read the ${NAMES[from]} file (${gdalError(stderr)}): check that it is a valid ${NAMES[from]} file, or export it again from the program that made it.`);
    const writeFailure = (stderr: string) => new ConvertdError('conversion_failed', `GDAL could not write ${NAMES[to]} (${gdalError(stderr)}).`);
    try {
      const split = to === 'gpx' || to === 'shp';
      if (layers.length === 1 && !split) {
        // One layer straight to the target (GDAL starts slowly: each run saved is a third of a small job).
        const [layer] = layers as [LayerFacts];
        const args = ['-f', writer, ...creationOptions(to), ...(srs !== undefined ? this.reprojection(request, layer, srs) : []), ...openOptions(from), result, source, layer.name, '-nln', 'features'];
        const run = await this.ogr(request, args, [reader, writer], deadline);
        if (run.exitCode !== 0) throw (READ_ERROR.test(gdalError(run.stderr)) ? readFailure : writeFailure)(run.stderr);
        await this.finish(request, result);
        return;
      }
      // 1. All layers into one.
      for (const [index, layer] of layers.entries()) {
        const reproject = srs !== undefined ? this.reprojection(request, layer, srs) : [];
        // The geometry column named `geom` whatever the source called it (a GML's is
        // geometryProperty): the split below names it in its SQL.
        const args = ['-f', 'GPKG', ...(index > 0 ? ['-append', '-addfields'] : ['-lco', 'GEOMETRY_NAME=geom']), '-nln', 'features', '-nlt', 'GEOMETRY', ...reproject, ...openOptions(from), staging, source, layer.name];
        const run = await this.ogr(request, args, [reader, 'GPKG'], deadline);
        if (run.exitCode !== 0) throw readFailure(run.stderr);
      }
      // 2. Split by geometry type for the formats that hold one type a layer (GeoPackage's own SQL
      // decides: its driver hands the -where to SQLite, which knows ST_GeometryType, not OGR_GEOMETRY).
      let last = staging;
      let names = ['features'];
      if (split) {
        const classes = to === 'gpx'
          ? [{ name: 'waypoints', where: `${TYPE} IN ${POINTS}`, type: 'POINT' }, { name: 'tracks', where: `${TYPE} NOT IN ${POINTS}`, type: 'MULTILINESTRING' }]
          : [{ name: 'points', where: `${TYPE} IN ${POINTS}`, type: 'MULTIPOINT' }, { name: 'lines', where: `${TYPE} IN ${LINES}`, type: 'MULTILINESTRING' }, { name: 'polygons', where: `${TYPE} IN ${POLYGONS}`, type: 'MULTIPOLYGON' }];
        for (const [index, { name, where, type }] of classes.entries()) {
          const explode = to === 'gpx' ? ['-explodecollections'] : [];
          const args = ['-f', 'GPKG', ...(index > 0 ? ['-update'] : []), '-nln', name, '-nlt', type, ...explode, '-where', where, splitFile, staging, 'features'];
          const run = await this.ogr(request, args, ['GPKG'], deadline);
          if (run.exitCode !== 0) throw new ConvertdError('conversion_failed', `GDAL could not sort the features by geometry type (${gdalError(run.stderr)}).`);
        }
        last = splitFile;
        // A shapefile of no features is left out of the ZIP; GPX has no layers to leave empty.
        names = to === 'shp' ? await this.nonEmptyLayers(request, splitFile, deadline) : classes.map((entry) => entry.name);
        if (names.length === 0) throw new ConvertdError('conversion_failed', `The file holds no geometry ${NAMES[to]} can store.`);
      }
      // 3. The target's driver.
      const run = await this.ogr(request, ['-f', writer, ...creationOptions(to), result, last, ...names], ['GPKG', writer], deadline);
      if (run.exitCode !== 0) throw writeFailure(run.stderr);
      await this.finish(request, result);
    } finally {
      await Promise.all([staging, splitFile, result, `${staging}-journal`, `${splitFile}-journal`].map((file) => fs.rm(file, { force: true, recursive: true })));
    }
  }

  /** Moves GDAL's result into place; a KMZ is the KML zipped as doc.kml; a GML gets the namespace it uses. */
  private async finish(request: ConvertRequest, result: string): Promise<void> {
    if (request.to === 'kmz') {
      await writeZip(request.output, [{ name: 'doc.kml', file: result }], request.limits.maxOutputBytes, undefined, request.signal);
    } else if (request.to === 'gml') {
      await declareXsi(result, request.output);
    } else {
      await fs.rename(result, request.output);
    }
  }

  /** The -s_srs/-t_srs arguments for one layer; a layer without a coordinate system cannot be reprojected. */
  private reprojection(request: ConvertRequest, layer: LayerFacts, srs: number): string[] {
    if (layer.hasSrs) return ['-t_srs', `EPSG:${srs}`];
    // KML and GPX are WGS 84 by definition, and so is GeoJSON (RFC 7946) without a crs member.
    if (['kml', 'kmz', 'gpx', 'geojson', 'topojson'].includes(request.from)) return ['-s_srs', 'EPSG:4326', '-t_srs', `EPSG:${srs}`];
    if (numberOption(request.options, 'srs') === undefined) return [];
    throw new ConvertdError('conversion_failed', `The ${NAMES[request.from]} file declares no coordinate system (a shapefile without its .prj, say), so it cannot be converted to EPSG:${srs}: convert it without srs.`);
  }

  /** What GDAL opens: the upload itself, or for a ZIP the checked member or folder through /vsizip/ on a link of it. */
  private async sourceOf(request: ConvertRequest): Promise<string> {
    const { input, from, workDir } = request;
    const head = await readHead(input, 64 * 1024);
    if (from === 'kmz' || from === 'shp') {
      const members = await membersOf(input);
      if (!members) throw new ConvertdError('corrupt_input', from === 'shp' ? 'The shapefile must be sent as a ZIP of its .shp, .shx and .dbf files (and .prj): this is no readable ZIP.' : 'The KMZ is no readable ZIP archive: check that it is a valid KMZ file.');
      for (const member of members) {
        const name = memberName(member.name);
        if (typeof name !== 'string') throw new ConvertdError('unsafe_input', `The ${NAMES[from]} cannot be opened: ${name.refused.slice(0, 160)}.`);
      }
      const link = path.join(workDir, 'gdal-source.zip');
      await fs.rm(link, { force: true });
      await fs.link(input, link).catch(() => fs.copyFile(input, link));
      if (from === 'kmz') {
        const doc = kmzDocument(members);
        if (!doc) throw new ConvertdError('corrupt_input', 'The KMZ holds no doc.kml (nor a .kml as its first member): check that it is a valid KMZ file.');
        return `/vsizip/${link}/${doc}`;
      }
      return `/vsizip/${link}${shapefileFolder(members)}`;
    }
    // Entities first: a DOCTYPE's internal subset would also hide the root element from the content check.
    if ((from === 'kml' || from === 'gpx' || from === 'gml') && /<!DOCTYPE|<!ENTITY/i.test(head.toString('utf8'))) {
      throw new ConvertdError('unsafe_input', `The ${NAMES[from]} file declares a DOCTYPE (entities): this service does not expand them. Remove the DOCTYPE and send it again.`);
    }
    if (!contentMatches(from, head)) {
      throw new ConvertdError('corrupt_input', `The file is not ${NAMES[from]}: its content is something else (another format named .${from}?). Send a real ${NAMES[from]} file.`);
    }
    return input;
  }

  /** The layers ogrinfo lists, with their feature counts and whether they have a coordinate system. */
  private async layers(request: ConvertRequest, source: string, reader: string, deadline: number): Promise<LayerFacts[]> {
    const run = await this.run(request, OGRINFO, ['-ro', '-so', '-al', '-nomd', ...openOptions(request.from), source], [reader], deadline, true);
    if (run.exitCode !== 0) {
      throw new ConvertdError('corrupt_input', `GDAL could not read the ${NAMES[request.from]} file (${gdalError(run.stderr)}): check that it is a valid ${NAMES[request.from]} file, or export it again from the program that made it.`);
    }
    const layers: LayerFacts[] = [];
    for (const block of run.stdout.split(/^Layer name: /m).slice(1)) {
      const name = block.slice(0, block.indexOf('\n'));
      const features = Number(/^Feature Count: (-?\d+)/m.exec(block)?.[1] ?? '0');
      const wkt = /^Layer SRS WKT:\n(.*)$/m.exec(block)?.[1] ?? '(unknown)';
      layers.push({ name, features: features < 0 ? 1 : features, hasSrs: wkt.trim() !== '(unknown)' });
    }
    return layers;
  }

  /** The layers of the split GeoPackage that got features. */
  private async nonEmptyLayers(request: ConvertRequest, file: string, deadline: number): Promise<string[]> {
    const facts = await this.run(request, OGRINFO, ['-ro', '-so', '-al', '-nomd', file], ['GPKG'], deadline, true);
    return facts.stdout.split(/^Layer name: /m).slice(1)
      .filter((block) => !/^Feature Count: 0$/m.test(block))
      .map((block) => block.slice(0, block.indexOf('\n')));
  }

  private ogr(request: ConvertRequest, args: string[], drivers: readonly string[], deadline: number) {
    return this.run(request, OGR2OGR, args, drivers, deadline);
  }

  private run(request: ConvertRequest, tool: string, args: string[], drivers: readonly string[], deadline: number, captureStdout = false) {
    const timeoutMs = Math.max(1, Math.round(deadline - performance.now()));
    if (timeoutMs <= 1) throw new ConvertdError('timeout');
    return this.context.run(tool, args, {
      cwd: request.workDir, timeoutMs, signal: request.signal, captureStdout,
      env: this.environment(drivers),
      limits: { fileSizeBytes: request.limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    });
  }
}

const TYPE = 'ST_GeometryType(geom)';
const POINTS = "('POINT', 'MULTIPOINT')";
const LINES = "('LINESTRING', 'MULTILINESTRING')";
const POLYGONS = "('POLYGON', 'MULTIPOLYGON')";

/** Open options: a GML's schema never downloaded, whatever its schemaLocation says. */
function openOptions(from: string): string[] {
  return from === 'gml' ? ['-oo', 'DOWNLOAD_SCHEMA=NO'] : [];
}

/** Creation options per target: UTF-8 shapefile attributes (.cpg), a GML without a side .xsd, GPX keeping the other fields. */
function creationOptions(to: string): string[] {
  if (to === 'shp') return ['-lco', 'ENCODING=UTF-8'];
  if (to === 'gml') return ['-dsco', 'XSISCHEMA=OFF', '-dsco', 'FORMAT=GML3'];
  if (to === 'gpx') return ['-dsco', 'GPX_USE_EXTENSIONS=YES'];
  return [];
}

/** The folder inside the ZIP holding the shapefiles ("" at the top, or "/roads"); they must share one, each with its .shx and .dbf. */
function shapefileFolder(members: Parameters<typeof shapefileMembers>[0]): string {
  const shapes = shapefileMembers(members);
  if (!shapes) throw new ConvertdError('corrupt_input', 'The ZIP holds no shapefile (.shp with its .shx and .dbf), or holds other files besides: send a ZIP of the shapefile\'s parts only.');
  const folders = new Set(shapes.map((name) => path.posix.dirname(name)));
  if (folders.size > 1) throw new ConvertdError('corrupt_input', 'The ZIP holds shapefiles in several folders: send them in one folder.');
  const names = new Set(members.map((member) => member.name.toLowerCase()));
  for (const shape of shapes) {
    const stem = shape.slice(0, -4).toLowerCase();
    if (!names.has(`${stem}.shx`) || !names.has(`${stem}.dbf`)) throw new ConvertdError('corrupt_input', `The shapefile ${shape} comes without its .shx or .dbf: send all its parts in the ZIP.`);
  }
  const folder = [...folders][0]!;
  return folder === '.' ? '' : `/${folder}`;
}

const XSI = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"';

/**
 * Copies GDAL's GML to `output` with the xsi namespace declared on its root. GDAL 3.6's GML
 * writer without a schema (XSISCHEMA=OFF: no side .xsd, which a single download could not
 * carry) still marks empty fields xsi:nil="true" but leaves xsi undeclared, so XML parsers
 * refused the file ("unbound prefix") whenever a field was empty, a GPX's unused ones say.
 */
async function declareXsi(result: string, output: string): Promise<void> {
  const head = (await readHead(result, 4096)).toString('latin1');
  const rootStart = head.search(/<[A-Za-z_][\w.-]*:FeatureCollection\b/);
  const rootEnd = rootStart < 0 ? -1 : head.indexOf('>', rootStart);
  if (rootEnd < 0 || head.slice(rootStart, rootEnd).includes('xmlns:xsi=')) {
    await fs.rename(result, output);
    return;
  }
  const insertAt = head.slice(0, rootEnd).replace(/\s*\/?$/, '').length;
  await pipeline(
    async function* () {
      yield Buffer.from(`${head.slice(0, insertAt)}\n     ${XSI}`, 'latin1');
      yield* createReadStream(result, { start: Buffer.byteLength(head.slice(0, insertAt), 'latin1') });
    },
    createWriteStream(output),
  );
}

/** A ZIP's member list, read from its directory by positional reads (not the whole upload into memory). */
async function membersOf(file: string): Promise<ZipMember[] | undefined> {
  const handle = await fs.open(file, 'r');
  try {
    return zipMembers(fileSource(handle.fd, (await handle.stat()).size));
  } finally {
    await handle.close();
  }
}

async function readHead(file: string, bytes: number): Promise<Buffer> {
  const handle = await fs.open(file, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** The first element of an XML text (its local name), after the declaration, comments and processing instructions. */
function rootElement(text: string): string | undefined {
  const body = text.replace(/^\uFEFF/, '').replace(/<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!DOCTYPE[^>]*>/g, '').trimStart();
  return /^<(?:[\w.-]+:)?([\w.-]+)/.exec(body)?.[1];
}

/** Whether the file's start is of the format it was taken as: GDAL would otherwise pick a driver by the content. */
export function contentMatches(format: string, head: Buffer): boolean {
  const text = head.toString('utf8').replace(/^\uFEFF/, '').trimStart();
  switch (format) {
    case 'geojson': return text.startsWith('{') && /"type"\s*:\s*"(FeatureCollection|Feature|Point|MultiPoint|LineString|MultiLineString|Polygon|MultiPolygon|GeometryCollection)"/.test(text) && !/"type"\s*:\s*"Topology"/.test(text);
    case 'topojson': return text.startsWith('{') && /"type"\s*:\s*"Topology"/.test(text);
    case 'kml': return rootElement(text) === 'kml';
    case 'gpx': return rootElement(text) === 'gpx';
    case 'gml': {
      const root = rootElement(text);
      return root !== undefined && !/^OGRVRT/i.test(root) && text.includes('http://www.opengis.net/gml');
    }
    case 'gpkg': return isGeoPackage(head);
    case 'fgb': return isFlatGeobuf(head);
    default: return false;
  }
}

/** GDAL's last "ERROR n: ..." line, shortened; its last line otherwise. */
/** GDAL's words for an input it could not read (a feature's geometry included), as opposed to a target it could not write. */
const READ_ERROR = /Unable to open|not recognized|Failed to open|cannot be parsed|parse error|Invalid/i;

function gdalError(stderr: string): string {
  // The first error says what went wrong; ogr2ogr's last ("Terminating translation prematurely
  // after failed translation of layer ...") only that it stopped.
  const errors = stderr.split('\n').filter((line) => /^ERROR \d+:/.test(line) && !/Terminating translation prematurely/.test(line));
  // Its advice on GDAL's own settings ("You may set the GML_SKIP_CORRUPTED_FEATURES configuration
  // option...") is not the client's to follow.
  return (errors[0]?.replace(/^ERROR \d+:\s*/, '').replace(/\.?\s*You may set .*$/, '') ?? lastErrorLine(stderr) ?? 'no message').slice(0, 300);
}
