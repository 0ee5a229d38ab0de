"""Reads a geodata file without GDAL (the standard library only) and prints, as JSON, its
features: how many, their names and every vertex. Used by geodata-formats.test.ts to check what
the gdal engine wrote. Usage: geodata_check.py FORMAT FILE.

Formats: geojson (json), kml and kmz (xml.etree; zipfile), gpx and gml (xml.etree), gpkg
(sqlite3, the GeoPackage geometry header and WKB parsed here), fgb (the magic and the header's
feature count only: a FlatGeobuf's features are FlatBuffers tables), shp (a ZIP of .shp, .dbf and
.cpg parsed with struct)."""
import io
import json
import sqlite3
import struct
import sys
import xml.etree.ElementTree as ET
import zipfile


def local(tag):
    return tag.rsplit('}', 1)[-1]


def wkb(data, at=0):
    """Vertices of a WKB geometry from `at`: (list of (x, y), position after it)."""
    order = '<' if data[at] == 1 else '>'
    kind = struct.unpack_from(order + 'I', data, at + 1)[0]
    at += 5
    dims = 2
    if kind > 1000:  # ISO Z/M/ZM
        dims = 2 + (kind // 1000 in (1, 2)) + (kind // 1000 == 3) * 2
        kind %= 1000
    if kind & 0x80000000:
        dims = 3
        kind &= 0xffff
    vertices = []

    def points(count, at):
        for _ in range(count):
            x, y = struct.unpack_from(order + 'dd', data, at)
            vertices.append((x, y))
            at += 8 * dims
        return at

    if kind == 1:
        at = points(1, at)
    elif kind == 2:
        count = struct.unpack_from(order + 'I', data, at)[0]
        at = points(count, at + 4)
    elif kind == 3:
        rings = struct.unpack_from(order + 'I', data, at)[0]
        at += 4
        for _ in range(rings):
            count = struct.unpack_from(order + 'I', data, at)[0]
            at = points(count, at + 4)
    elif kind in (4, 5, 6, 7):
        parts = struct.unpack_from(order + 'I', data, at)[0]
        at += 4
        for _ in range(parts):
            inner, at = wkb(data, at)
            vertices.extend(inner)
    else:
        raise ValueError('WKB type %d' % kind)
    return vertices, at


def coordinate_tuples(text):
    """The x, y of each "x,y[,z]" tuple of a KML <coordinates> or GML 2 <gml:coordinates> element."""
    return [tuple(float(v) for v in tuple_.split(',')[:2]) for tuple_ in text.split()]


def from_kml(text):
    root = ET.fromstring(text)
    features = []
    for placemark in root.iter():
        if local(placemark.tag) != 'Placemark':
            continue
        name = next((e.text for e in placemark if local(e.tag) == 'name'), None)
        vertices = []
        for e in placemark.iter():
            if local(e.tag) == 'coordinates' and e.text:
                vertices.extend(coordinate_tuples(e.text))
        features.append((name, vertices))
    return features


def from_gpx(text):
    root = ET.fromstring(text)
    features = []
    for e in root:
        kind = local(e.tag)
        if kind not in ('wpt', 'rte', 'trk'):
            continue
        name = next((c.text for c in e if local(c.tag) == 'name'), None)
        vertices = [(float(p.get('lon')), float(p.get('lat'))) for p in e.iter() if local(p.tag) in ('wpt', 'rtept', 'trkpt')]
        features.append((name, vertices))
    return features


def from_gml(text):
    root = ET.fromstring(text)
    features = []
    for member in root:
        if local(member.tag) not in ('featureMember', 'member', 'featureMembers'):
            continue
        for feature in (member if local(member.tag) == 'featureMembers' else list(member)):
            name = next((e.text for e in feature.iter() if local(e.tag) in ('name', 'Name')), None)
            vertices = []
            for e in feature.iter():
                if local(e.tag) in ('pos', 'posList') and e.text:
                    numbers = [float(v) for v in e.text.split()]
                    vertices.extend(zip(numbers[0::2], numbers[1::2]))
                elif local(e.tag) == 'coordinates' and e.text:
                    vertices.extend(coordinate_tuples(e.text))
            features.append((name, vertices))
    return features


def from_gpkg(path):
    db = sqlite3.connect(path)
    features = []
    for (table,) in db.execute("SELECT table_name FROM gpkg_contents WHERE data_type = 'features'"):
        column = db.execute('SELECT column_name FROM gpkg_geometry_columns WHERE table_name = ?', (table,)).fetchone()[0]
        names = [row[1] for row in db.execute('PRAGMA table_info("%s")' % table)]
        for row in db.execute('SELECT * FROM "%s"' % table):
            record = dict(zip(names, row))
            blob = record[column]
            flags = blob[3]
            envelope = [0, 32, 48, 48, 64][(flags >> 1) & 7]
            vertices, _ = wkb(blob, 8 + envelope)
            features.append((record.get('name', record.get('Name')), vertices))
    return features


def from_shp_zip(data):
    archive = zipfile.ZipFile(io.BytesIO(data))
    features = []
    for member in archive.namelist():
        if not member.lower().endswith('.shp'):
            continue
        stem = member[:-4]
        shp = archive.read(member)
        dbf = archive.read(stem + '.dbf')
        encoding = 'latin-1'
        if stem + '.cpg' in archive.namelist():
            encoding = archive.read(stem + '.cpg').decode().strip().lower().replace('utf-8', 'utf-8') or encoding
        # .dbf: header, field descriptors, then fixed-width records
        count, header_length, record_length = struct.unpack_from('<IHH', dbf, 4)
        fields = []
        at = 32
        while dbf[at] != 0x0D:
            fields.append((dbf[at:at + 11].split(b'\0')[0].decode(), dbf[at + 16]))
            at += 32
        names = []
        for i in range(count):
            record = dbf[header_length + i * record_length + 1: header_length + (i + 1) * record_length]
            offset = 0
            values = {}
            for field, length in fields:
                values[field] = record[offset:offset + length].decode(encoding).strip()
                offset += length
            names.append(values.get('name', values.get('Name')))
        # .shp: 100-byte header, then records (big-endian number and length, little-endian content)
        at = 100
        index = 0
        while at < len(shp):
            length = struct.unpack_from('>I', shp, at + 4)[0] * 2
            content = shp[at + 8: at + 8 + length]
            kind = struct.unpack_from('<i', content, 0)[0]
            vertices = []
            if kind in (1, 11, 21):
                vertices.append(struct.unpack_from('<dd', content, 4))
            elif kind in (8, 18, 28):
                n = struct.unpack_from('<i', content, 36)[0]
                vertices.extend(struct.unpack_from('<dd', content, 40 + 16 * i) for i in range(n))
            elif kind in (3, 5, 13, 15, 23, 25):
                parts, n = struct.unpack_from('<ii', content, 36)
                base = 44 + 4 * parts
                vertices.extend(struct.unpack_from('<dd', content, base + 16 * i) for i in range(n))
            features.append((names[index] if index < len(names) else None, vertices))
            index += 1
            at += 8 + length
    return features


def from_fgb(data):
    assert data[:3] == b'fgb' and data[3] == 3, 'no FlatGeobuf magic'
    table = 12 + struct.unpack_from('<I', data, 12)[0]  # the header's root table (after magic and size)
    vtable = table - struct.unpack_from('<i', data, table)[0]
    vtable_length = struct.unpack_from('<H', data, vtable)[0]
    field = 8  # features_count, the ninth field of Header
    slot = vtable + 4 + 2 * field
    offset = struct.unpack_from('<H', data, slot)[0] if slot < vtable + vtable_length else 0
    count = struct.unpack_from('<Q', data, table + offset)[0] if offset else 0
    return [(None, [])] * count


def main():
    kind, path = sys.argv[1], sys.argv[2]
    data = open(path, 'rb').read()
    if kind == 'geojson':
        doc = json.loads(data)
        features = []
        for f in doc['features']:
            vertices = []

            def walk(c):
                if isinstance(c[0], (int, float)):
                    vertices.append((c[0], c[1]))
                else:
                    for inner in c:
                        walk(inner)
            walk(f['geometry']['coordinates'])
            features.append((f['properties'].get('name', f['properties'].get('Name')), vertices))  # KML's field is Name
    elif kind == 'kml':
        features = from_kml(data)
    elif kind == 'kmz':
        features = from_kml(zipfile.ZipFile(io.BytesIO(data)).read('doc.kml'))
    elif kind == 'gpx':
        features = from_gpx(data)
    elif kind == 'gml':
        features = from_gml(data)
    elif kind == 'gpkg':
        features = from_gpkg(path)
    elif kind == 'shp':
        features = from_shp_zip(data)
    elif kind == 'fgb':
        features = from_fgb(data)
    else:
        raise SystemExit('unknown format ' + kind)
    print(json.dumps({'count': len(features), 'names': [n for n, _ in features], 'vertices': [v for _, vs in features for v in vs]}, ensure_ascii=False))


main()
