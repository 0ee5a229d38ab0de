// Geodata through GDAL's ogr2ogr (the gdal engine): every pair /api/formats lists among geojson,
// topojson, kml, kmz, gpx, gml, gpkg, fgb and shp converts through the HTTP API, and each output is
// read by test/helpers/geodata_check.py, which is not GDAL (Python's json, xml.etree, zipfile,
// sqlite3 and struct): the feature count, the names (one not ASCII) and the point's coordinates.
// A FlatGeobuf's features are FlatBuffers tables: only its magic and its header's feature count are
// read there; its names and coordinates are checked through the fgb → X conversions.
// Fixtures: the GeoJSON and the TopoJSON are written here by hand; the other sources are the
// service's own geojson → X outputs, used only once each was checked by the reader (phase 1).
// Also: the srs option (EPSG:3857 against the spherical Mercator formula, a bad code refused),
// and hostile uploads (docs/security.md#geodata-gdal): a VRT named .kml naming /etc/passwd, a GML whose
// schema and xlinks point at http://, a zipped shapefile with "../" members, a truncated
// GeoPackage; a zipped shapefile named roads.zip, and a ZIP holding one beside other files.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { zipSync, strToU8 } from 'fflate';
import { convert, download, fetchCatalogue, mapInFlight, runWithOptions, submitWithOptions, expectError, type CatalogueEntry } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const execFileAsync = promisify(execFile);
const CHECK = path.join(import.meta.dirname, 'helpers', 'geodata_check.py');
const FORMATS = ['geojson', 'topojson', 'kml', 'kmz', 'gpx', 'gml', 'gpkg', 'fgb', 'shp'];
const NAME = 'Zürich – 東京';
const POINT = [8.5417, 47.3769] as const;

const GEOJSON = JSON.stringify({
  type: 'FeatureCollection',
  features: [
    { type: 'Feature', properties: { name: NAME, rank: 1 }, geometry: { type: 'Point', coordinates: POINT } },
    { type: 'Feature', properties: { name: 'line', rank: 2 }, geometry: { type: 'LineString', coordinates: [[0, 0], [1, 1], [2, 0.5]] } },
    { type: 'Feature', properties: { name: 'poly', rank: 3 }, geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]] } },
  ],
});
const TOPOJSON = JSON.stringify({
  type: 'Topology',
  objects: {
    places: {
      type: 'GeometryCollection',
      geometries: [
        { type: 'Point', coordinates: POINT, properties: { name: NAME } },
        { type: 'LineString', arcs: [0], properties: { name: 'line' } },
      ],
    },
  },
  arcs: [[[0, 0], [1, 1], [2, 0.5]]],
});

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let work: string;
let outputs = 0;
/** The uploads by format: the hand-written ones, then the checked outputs of geojson. */
const sources = new Map<string, Buffer>([['geojson', Buffer.from(GEOJSON)], ['topojson', Buffer.from(TOPOJSON)]]);

interface Read { count: number; names: Array<string | null>; vertices: Array<[number, number]> }

async function read(label: string, format: string, bytes: Buffer): Promise<Read> {
  const file = path.join(work, `out-${outputs++}.${format}`);
  await fs.writeFile(file, bytes);
  try {
    // Not execFileSync: the other pairs' uploads and polls go on while one output is read.
    const { stdout } = await execFileAsync('/usr/bin/python3', [CHECK, format, file], { encoding: 'utf8', timeout: 30_000 });
    return JSON.parse(stdout) as Read;
  } catch (error) {
    throw new Error(`${label}: the ${format} output (${file}) could not be read: ${(error as { stderr?: string }).stderr?.trim().split('\n').at(-1) ?? String(error)}`, { cause: error });
  }
}

function near(a: readonly number[], b: readonly number[], tolerance: number): boolean {
  return Math.abs(a[0]! - b[0]!) <= tolerance && Math.abs(a[1]! - b[1]!) <= tolerance;
}

/** The output holds what the source held: its features, their names, the point where it was. */
function checkOutput(source: string, target: string, result: Read): void {
  const label = `${source} → ${target}`;
  const expected = source === 'topojson' ? 2 : 3;
  assert.equal(result.count, expected, `${label}: feature count`);
  if (target === 'fgb') return;
  assert.ok(result.names.includes(NAME), `${label}: the non-ASCII name is intact (${JSON.stringify(result.names)})`);
  assert.ok(result.names.includes('line'), `${label}: the line's name`);
  // GML 3 writes EPSG:4326 in its own axis order, latitude first.
  const found = result.vertices.some((vertex) => near(vertex, POINT, 1e-6) || (target === 'gml' && near(vertex, [POINT[1], POINT[0]], 1e-6)));
  assert.ok(found, `${label}: the point at ${POINT.join(', ')}`);
}

function upload(format: string): { bytes: Buffer; name: string } {
  return { bytes: sources.get(format)!, name: `sample.${format === 'shp' ? 'shp.zip' : format}` };
}

before(async () => {
  work = await tempDir('geodata-');
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '3', CONVERTD_MAX_ATTEMPTS: '1' });
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  await server?.stop();
});

function targetsOf(id: string): string[] {
  return (catalogue.find((entry) => entry.id === id)?.targets ?? []).filter((target) => FORMATS.includes(target));
}

test('the catalogue lists the geodata formats, in their category, past 300 formats', () => {
  for (const id of FORMATS) assert.equal(catalogue.find((entry) => entry.id === id)?.category, 'geodata', id);
  assert.ok(catalogue.length > 300, `${catalogue.length} formats`);
  // Every readable one reaches every writable one but itself; TopoJSON is read only.
  for (const id of FORMATS) assert.deepEqual(targetsOf(id).sort(), FORMATS.filter((f) => f !== id && f !== 'topojson').sort(), id);
  // A traced bitmap does not go on into geodata: a PNG reaches geojson (potrace) and nothing further.
  const png = catalogue.find((entry) => entry.id === 'png')!;
  assert.ok(png.targets.includes('geojson'));
  for (const id of ['kml', 'gpx', 'gpkg', 'shp', 'fgb']) assert.ok(!png.targets.includes(id), `png reaches ${id}`);
});

test('geojson and topojson to every target, each output read without GDAL', async () => {
  const pairs = ['geojson', 'topojson'].flatMap((source) => targetsOf(source).map((target) => ({ source, target })));
  await mapInFlight(pairs, 4, async ({ source, target }) => {
    const { bytes, name } = upload(source);
    const { bytes: out } = await convert(server.url, bytes, name, target);
    checkOutput(source, target, await read(`${source} → ${target}`, target, out));
    if (source === 'geojson') sources.set(target, out);
  });
});

test('every other advertised pair, each output read without GDAL', async () => {
  const pairs = FORMATS.filter((source) => source !== 'geojson' && source !== 'topojson')
    .flatMap((source) => targetsOf(source).map((target) => ({ source, target })));
  assert.ok(pairs.length >= 49, `${pairs.length} pairs`);
  await mapInFlight(pairs, 4, async ({ source, target }) => {
    const { bytes, name } = upload(source);
    const { bytes: out } = await convert(server.url, bytes, name, target).catch((error: Error) => {
      throw new Error(`${source} → ${target}: ${error.message}`, { cause: error });
    });
    checkOutput(source, target, await read(`${source} → ${target}`, target, out));
  });
});

test('GPX holds points and lines: a polygon becomes a track of its ring', async () => {
  const { bytes } = await convert(server.url, Buffer.from(GEOJSON), 'sample.geojson', 'gpx');
  const text = bytes.toString('utf8');
  assert.equal((text.match(/<wpt /g) ?? []).length, 1);
  assert.equal((text.match(/<trk>/g) ?? []).length, 2);
  assert.match(text, /<name>poly<\/name>/);
});

test('srs: EPSG:3857 puts the point at its spherical Mercator metres; a code off the list is refused', async () => {
  const { final } = await runWithOptions(server.url, Buffer.from(GEOJSON), 'sample.geojson', 'gpkg', { srs: 'EPSG:3857' });
  assert.equal(final.status, 'done', JSON.stringify(final.error));
  const response = await fetch(new URL(final.download_url!, server.url));
  const result = await read('srs', 'gpkg', Buffer.from(await response.arrayBuffer()));
  const R = 6378137;
  const x = R * POINT[0] * Math.PI / 180;
  const y = R * Math.log(Math.tan(Math.PI / 4 + POINT[1] * Math.PI / 360));
  assert.ok(result.vertices.some((vertex) => near(vertex, [x, y], 0.01)), `(${x}, ${y}) in ${JSON.stringify(result.vertices.slice(0, 2))}`);
  for (const bad of ['EPSG:9999', 'urn:ogc:def:crs:EPSG::4326', '+proj=longlat', 'EPSG:4326; rm']) {
    await expectError(await submitWithOptions(server.url, Buffer.from(GEOJSON), 'sample.geojson', 'gpkg', { srs: bad }), 422, 'invalid_option');
  }
});

test('a zipped shapefile named roads.zip is a shapefile, a ZIP holding one beside other files stays a zip; a KMZ is a ZIP named .kmz', async () => {
  const shp = sources.get('shp')!;
  const { record } = await convert(server.url, shp, 'roads.zip', 'geojson');
  assert.equal(record.source, 'shp');
  const members = Object.fromEntries(Object.entries((await import('fflate')).unzipSync(shp)));
  const mixed = Buffer.from(zipSync({ ...members, 'readme.txt': strToU8('roads of the district') }));
  const { record: archive } = await convert(server.url, mixed, 'bundle.zip', 'tar');
  assert.equal(archive.source, 'zip');
  // A KMZ is a ZIP named .kmz: an archive holding a KML first and its CSV export beside it stays
  // an archive (the shared corpus has one); the same bytes named .kmz are a KMZ.
  const kml = (await import('fflate')).unzipSync(sources.get('kmz')!)['doc.kml']!;
  const export_ = Buffer.from(zipSync({ 'survey.kml': kml, 'survey.csv': strToU8('name,lon,lat\nZürich,8.54,47.37\n') }));
  const { record: asArchive } = await convert(server.url, export_, 'survey.zip', 'tar');
  assert.equal(asArchive.source, 'zip');
  const { record: asKmz } = await convert(server.url, export_, 'survey.kmz', 'geojson');
  assert.equal(asKmz.source, 'kmz');
  // The other way: a tar of a shapefile's parts made a ZIP of them, which is still the zip asked
  // for (the output check once took it for a zipped shapefile and failed the job).
  const dir = await tempDir('shp-tar-');
  for (const [name, bytes] of Object.entries(members)) await fs.writeFile(path.join(dir, name), bytes);
  const tar = execFileSync('tar', ['-cf', '-', '-C', dir, ...Object.keys(members)]);
  const { record: zipped, bytes: zip } = await convert(server.url, tar, 'roads.tar', 'zip');
  assert.equal(zipped.source, 'tar');
  assert.deepEqual(Object.keys((await import('fflate')).unzipSync(zip)).sort(), Object.keys(members).sort());
});

test('hostile uploads: another driver\'s file, an external entity, an http schema, "../" members, a truncated GeoPackage', async () => {
  // A VRT dressed as KML and GML, naming /etc/passwd: refused, nothing of the file comes back.
  const vrt = '<OGRVRTDataSource><OGRVRTLayer name="x"><SrcDataSource>CSV:/etc/passwd</SrcDataSource></OGRVRTLayer></OGRVRTDataSource>';
  for (const name of ['evil.kml', 'evil.gml', 'evil.gpx']) {
    const { final } = await runWithOptions(server.url, Buffer.from(vrt), name, 'geojson');
    assert.equal(final.status, 'error', name);
    assert.equal(final.error?.code, 'corrupt_input', name);
    assert.doesNotMatch(JSON.stringify(final), /root:|nologin/, name);
  }
  // A KML declaring an external entity (the file it would read in): nothing expanded, refused.
  const entity = `<?xml version="1.0"?>\n<!DOCTYPE kml [<!ENTITY secret SYSTEM "file:///etc/passwd">]>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Placemark><name>&secret;</name><Point><coordinates>8.5,47.4</coordinates></Point></Placemark></kml>`;
  const { final: expanded } = await runWithOptions(server.url, Buffer.from(entity), 'entity.kml', 'geojson');
  assert.equal(expanded.error?.code, 'unsafe_input', JSON.stringify(expanded));
  assert.doesNotMatch(JSON.stringify(expanded), /root:|nologin/);
  // A GML naming an http schema and an xlink: converted without a fetch, in moments.
  const gml = `<?xml version="1.0" encoding="UTF-8"?>
<ogr:FeatureCollection xmlns:ogr="http://ogr.maptools.org/" xmlns:gml="http://www.opengis.net/gml" xmlns:xlink="http://www.w3.org/1999/xlink"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://ogr.maptools.org/ http://10.255.255.1/schema.xsd">
  <gml:featureMember><ogr:places fid="p.0"><ogr:geometryProperty><gml:Point srsName="EPSG:4326"><gml:coordinates>8.5417,47.3769</gml:coordinates></gml:Point></ogr:geometryProperty><ogr:name>${NAME}</ogr:name></ogr:places></gml:featureMember>
  <gml:featureMember><ogr:places fid="p.1"><ogr:geometryProperty xlink:href="http://10.255.255.1/remote.gml#g1"/><ogr:name>remote</ogr:name></ogr:places></gml:featureMember>
</ogr:FeatureCollection>`;
  const started = performance.now();
  const { final: remote } = await runWithOptions(server.url, Buffer.from(gml), 'remote.gml', 'geojson', {}, { timeoutMs: 60_000 });
  assert.ok(performance.now() - started < 30_000, 'no wait on the network');
  assert.equal(remote.status, 'done', JSON.stringify(remote.error));
  // A zipped shapefile whose members lead outside it.
  const shpMembers = (await import('fflate')).unzipSync(sources.get('shp')!);
  const escaping = Object.fromEntries(Object.entries(shpMembers).map(([name, data]) => [`../${name}`, data]));
  const { final: unsafe } = await runWithOptions(server.url, Buffer.from(zipSync(escaping)), 'escape.shp.zip', 'geojson');
  assert.equal(unsafe.status, 'error');
  assert.equal(unsafe.error?.code, 'unsafe_input');
  // A GeoPackage cut in half.
  const gpkg = sources.get('gpkg')!;
  const { final: cut } = await runWithOptions(server.url, gpkg.subarray(0, Math.floor(gpkg.length / 2)), 'cut.gpkg', 'geojson');
  assert.equal(cut.status, 'error');
  assert.equal(cut.error?.code, 'corrupt_input');
});

/** The shared corpus's geodata (public projects' sample files), when it is there. */
const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');
const CORPUS_FAMILIES = ['geojson', 'kml', 'gpx', 'gml', 'gpkg', 'shp'];
/**
 * Corpus files that do not convert, and why. CityGML 3.0's building solids are geometry GDAL 3.6
 * cannot parse ("Invalid exterior element"): the client hears corrupt_input naming that.
 */
const CORPUS_REFUSED: Readonly<Record<string, { code: string; message: RegExp }>> = {
  'citygml4j-lod2-buildings-v3.gml': { code: 'corrupt_input', message: /cannot be parsed/ },
};

test('corpus: real geodata files convert, their features all there', { skip: existsSync(CORPUS) ? false : 'no ../shared/corpus here' }, async () => {
  const files = CORPUS_FAMILIES.flatMap((family) => (existsSync(path.join(CORPUS, family)) ? readdirSync(path.join(CORPUS, family)) : [])
    .filter((name) => !name.endsWith('.gfs')).map((name) => ({ family, name, file: path.join(CORPUS, family, name) })));
  assert.ok(files.length >= 10, `${files.length} corpus files`);
  await mapInFlight(files, 3, async ({ family, name, file }) => {
    // GeoJSON files to KML (a GeoJSON target would be themselves), the others to GeoJSON.
    const target = family === 'geojson' ? 'kml' : 'geojson';
    const { final } = await runWithOptions(server.url, await fs.readFile(file), name, target, {}, { timeoutMs: 120_000 });
    const refused = CORPUS_REFUSED[name];
    if (refused) {
      assert.equal(final.error?.code, refused.code, `${name}: ${JSON.stringify(final.error)}`);
      assert.match(final.error?.message ?? '', refused.message, name);
      return;
    }
    assert.equal(final.status, 'done', `${name} → ${target}: ${JSON.stringify(final.error)}`);
    assert.equal(final.source, family, name);
    const text = (await download(server.url, final.download_url!)).bytes.toString('utf8');
    // The features the source holds (counted by the source's own structure where it is text), all there.
    const count = target === 'kml' ? (text.match(/<Placemark\b/g) ?? []).length : (JSON.parse(text) as { features: unknown[] }).features.length;
    const expected = family === 'geojson' ? (JSON.parse(await fs.readFile(file, 'utf8')) as { features: unknown[] }).features.length
      : family === 'kml' ? ((await fs.readFile(file, 'utf8')).match(/<Placemark\b/g) ?? []).length
        : family === 'gpx' ? ((await fs.readFile(file, 'utf8')).match(/<(wpt|trk|rte)\b/g) ?? []).length
          : undefined;
    if (expected !== undefined) assert.equal(count, expected, `${name} → ${target}: features`);
    else assert.ok(count > 0, `${name} → ${target}: no feature`);
  });
});
