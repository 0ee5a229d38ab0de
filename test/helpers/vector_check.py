#!/usr/bin/python3
"""Reads vector drawings with tools that are not Inkscape (test/vector-formats.test.ts).

    vector_check.py shapes KIND FILE
        KIND emf, wmf or dxf: the records or group codes parsed here. Prints a JSON list of the
        drawn shapes: {"colour": [r, g, b] or null, "bbox": [x0, y0, x1, y1]} in the file's own
        units (EMF and WMF: logical units, y down; DXF: drawing units, y up, so y is negated here).
        EMF: every path between BEGINPATH and ENDPATH (and each poly record outside one) that is
        filled or stroked, coloured by the brush (filled) or pen (stroked) selected then. WMF:
        each POLYGON, POLYLINE and POLYPOLYGON, coloured by the selected brush or pen. DXF: each
        entity of ENTITIES with points (LINE, LWPOLYLINE, POLYLINE's VERTEXes, SPLINE control
        points, CIRCLE and ARC by centre and radius); no colour.

    vector_check.py raster KIND FILE PROBES
        KIND svg (drawn by rsvg-convert on white), pdf (pdftoppm), eps and ps (Ghostscript under
        -dSAFER), png (Pillow, flattened onto white). PROBES is a JSON list of [x, y, radius],
        fractions of the drawing's extent (the bounding box of its non-white pixels, y down).
        Prints {"bbox": [x0, y0, x1, y1] in pixels, "size": [w, h], "probes": [class, ...]}, a
        probe's class being what the window around it holds: "red", "blue" or "dark" if any
        pixel in it is so (the most frequent of those), else "white".
"""
import json, os, struct, subprocess, sys, tempfile
from PIL import Image


def bbox(points):
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return [min(xs), min(ys), max(xs), max(ys)]


def colour_ref(value):
    return [value & 0xFF, (value >> 8) & 0xFF, (value >> 16) & 0xFF]


def emf_shapes(data):
    shapes, objects, path, loose = [], {}, None, []
    brush = pen = None
    at = 0
    while at + 8 <= len(data):
        kind, size = struct.unpack_from('<II', data, at)
        if size < 8:
            break
        body = data[at + 8:at + size]
        if kind == 39:  # CREATEBRUSHINDIRECT: ihBrush, style, colour
            index, _style, colour = struct.unpack_from('<III', body, 0)
            objects[index] = ('brush', colour_ref(colour))
        elif kind == 38:  # CREATEPEN: ihPen, style, width (POINTL), colour
            index = struct.unpack_from('<I', body, 0)[0]
            objects[index] = ('pen', colour_ref(struct.unpack_from('<I', body, 16)[0]))
        elif kind == 95:  # EXTCREATEPEN: ihPen, offBmi, cbBmi, offBits, cbBits, style, width, brushStyle, colour
            index = struct.unpack_from('<I', body, 0)[0]
            objects[index] = ('pen', colour_ref(struct.unpack_from('<I', body, 32)[0]))
        elif kind == 37:  # SELECTOBJECT
            index = struct.unpack_from('<I', body, 0)[0]
            if index in objects:
                if objects[index][0] == 'brush':
                    brush = objects[index][1]
                else:
                    pen = objects[index][1]
        elif kind == 59:  # BEGINPATH
            path = []
        elif kind == 60:  # ENDPATH
            pass
        elif kind in (62, 63, 64) and path:  # FILLPATH, STROKEANDFILLPATH, STROKEPATH
            shapes.append({'colour': brush if kind != 64 else pen, 'bbox': bbox(path)})
            path = None
        elif kind in (27, 54):  # MOVETOEX, LINETO
            point = struct.unpack_from('<ii', body, 0)
            (path if path is not None else loose).append(point)
        elif kind in (2, 3, 4, 5, 6, 7):  # POLYBEZIER, POLYGON, POLYLINE, POLYBEZIERTO, POLYLINETO, POLYPOLYLINE? (32-bit)
            count = struct.unpack_from('<I', body, 16)[0]
            points = [struct.unpack_from('<ii', body, 20 + 8 * i) for i in range(count)]
            if path is not None:
                path.extend(points)
            elif points:
                shapes.append({'colour': brush if kind == 3 else pen, 'bbox': bbox(points)})
        elif kind in (85, 86, 87, 88, 89):  # the same, 16-bit
            count = struct.unpack_from('<I', body, 16)[0]
            points = [struct.unpack_from('<hh', body, 20 + 4 * i) for i in range(count)]
            if path is not None:
                path.extend(points)
            elif points:
                shapes.append({'colour': brush if kind == 86 else pen, 'bbox': bbox(points)})
        elif kind in (90, 91):  # POLYPOLYLINE16, POLYPOLYGON16: bounds, nPolys, cpts, counts, points
            polys, total = struct.unpack_from('<II', body, 16)
            points = [struct.unpack_from('<hh', body, 24 + 4 * polys + 4 * i) for i in range(total)]
            if path is not None:
                path.extend(points)
            elif points:
                shapes.append({'colour': brush if kind == 91 else pen, 'bbox': bbox(points)})
        elif kind == 14:  # EOF
            break
        at += size
    return shapes


def wmf_shapes(data):
    at = 22 if struct.unpack_from('<I', data, 0)[0] == 0x9AC6CDD7 else 0
    at += struct.unpack_from('<H', data, at + 2)[0] * 2
    table, shapes = {}, []
    brush = pen = None

    def free_slot():
        index = 0
        while index in table:
            index += 1
        return index

    while at + 6 <= len(data):
        words, function = struct.unpack_from('<IH', data, at)
        if words < 3 or function == 0:
            break
        body = data[at + 6:at + words * 2]
        if function == 0x02FC:  # CREATEBRUSHINDIRECT: style, colour, hatch
            table[free_slot()] = ('brush', colour_ref(struct.unpack_from('<I', body, 2)[0]))
        elif function == 0x02FA:  # CREATEPENINDIRECT: style, width (POINTS), colour
            table[free_slot()] = ('pen', colour_ref(struct.unpack_from('<I', body, 6)[0]))
        elif function in (0x00F7, 0x0142, 0x01F9, 0x06FF, 0x02FB, 0x0231):  # palette, DIB brush, pattern brush, region, font: take a slot
            table[free_slot()] = ('other', None)
        elif function == 0x012D:  # SELECTOBJECT
            found = table.get(struct.unpack_from('<H', body, 0)[0])
            if found and found[0] == 'brush':
                brush = found[1]
            elif found and found[0] == 'pen':
                pen = found[1]
        elif function == 0x01F0:  # DELETEOBJECT
            table.pop(struct.unpack_from('<H', body, 0)[0], None)
        elif function in (0x0324, 0x0325):  # POLYGON, POLYLINE
            count = struct.unpack_from('<h', body, 0)[0]
            points = [struct.unpack_from('<hh', body, 2 + 4 * i) for i in range(count)]
            if points:
                shapes.append({'colour': brush if function == 0x0324 else pen, 'bbox': bbox(points)})
        elif function == 0x0538:  # POLYPOLYGON
            polys = struct.unpack_from('<H', body, 0)[0]
            counts = struct.unpack_from(f'<{polys}H', body, 2)
            points = [struct.unpack_from('<hh', body, 2 + 2 * polys + 4 * i) for i in range(sum(counts))]
            if points:
                shapes.append({'colour': brush, 'bbox': bbox(points)})
        at += words * 2
    return shapes


def dxf_shapes(text):
    lines = text.replace('\r', '').split('\n')
    pairs = [(lines[i].strip(), lines[i + 1].strip()) for i in range(0, len(lines) - 1, 2)]
    shapes, in_entities, entity, points, codes = [], False, None, [], {}

    def flush():
        if entity in ('CIRCLE', 'ARC') and '10' in codes and '40' in codes:
            x, y, r = float(codes['10']), float(codes['20']), float(codes['40'])
            shapes.append({'colour': None, 'bbox': [x - r, -(y + r), x + r, -(y - r)], 'entity': entity})
        elif entity == 'LINE' and '11' in codes:
            pts = [(float(codes['10']), float(codes['20'])), (float(codes['11']), float(codes['21']))]
            shapes.append({'colour': None, 'bbox': bbox([(x, -y) for x, y in pts]), 'entity': entity})
        elif points:
            shapes.append({'colour': None, 'bbox': bbox([(x, -y) for x, y in points]), 'entity': entity})

    x = None
    for code, value in pairs:
        if code == '2' and value == 'ENTITIES' and entity == 'SECTION':
            in_entities = True
            entity = None
            continue
        if code == '0':
            if in_entities and entity not in ('POLYLINE', 'VERTEX'):
                flush()
                points, codes = [], {}
            if value == 'SEQEND' and in_entities:
                flush()
                points, codes = [], {}
            if value == 'ENDSEC' and in_entities:
                break
            entity = value if value != 'VERTEX' or entity not in ('POLYLINE', 'VERTEX') else 'VERTEX'
            if value == 'POLYLINE':
                points, codes = [], {}
            continue
        if not in_entities:
            continue
        codes[code] = value
        if entity in ('LWPOLYLINE', 'SPLINE', 'VERTEX', 'POLYLINE') and code == '10':
            x = float(value)
        elif entity in ('LWPOLYLINE', 'SPLINE', 'VERTEX', 'POLYLINE') and code == '20' and x is not None:
            points.append((x, float(value)))
            x = None
    return shapes


def render(kind, file):
    tmp = tempfile.mkdtemp()
    out = os.path.join(tmp, 'drawn.png')
    if kind == 'svg':
        subprocess.run(['rsvg-convert', '-b', 'white', '-w', '1200', '-o', out, file], check=True, capture_output=True)
    elif kind == 'pdf':
        subprocess.run(['pdftoppm', '-r', '110', '-png', '-singlefile', file, out[:-4]], check=True, capture_output=True)
    elif kind in ('eps', 'ps'):
        crop = ['-dEPSCrop'] if kind == 'eps' else []
        subprocess.run(['gs', '-dSAFER', '-dBATCH', '-dNOPAUSE', '-dQUIET', *crop, '-sDEVICE=png16m', '-r110', f'-sOutputFile={out}', file], check=True, capture_output=True)
    else:
        out = file
    image = Image.open(out)
    image.load()
    if image.mode in ('RGBA', 'LA', 'P'):
        image = image.convert('RGBA')
        white = Image.new('RGBA', image.size, (255, 255, 255, 255))
        white.alpha_composite(image)
        image = white
    return image.convert('RGB')


def classify(pixel):
    r, g, b = pixel
    if r > 150 and g < 110 and b < 110:
        return 'red'
    if b > 150 and r < 110 and g < 110:
        return 'blue'
    if r + g + b < 3 * 140:
        return 'dark'
    return None


def raster(kind, file, probes):
    image = render(kind, file)
    width, height = image.size
    pixels = image.load()
    # The extent: the bounding box of what is not near-white.
    mask = image.convert('L').point(lambda v: 255 if v < 230 else 0)
    box = mask.getbbox()
    if box is None:
        return {'bbox': None, 'size': [width, height], 'probes': ['white'] * len(probes)}
    x0, y0, x1, y1 = box
    answers = []
    for fx, fy, radius in probes:
        cx, cy = x0 + fx * (x1 - x0), y0 + fy * (y1 - y0)
        r = max(1, int(radius * max(x1 - x0, y1 - y0)))
        counts = {}
        for y in range(max(0, int(cy) - r), min(height, int(cy) + r + 1)):
            for x in range(max(0, int(cx) - r), min(width, int(cx) + r + 1)):
                found = classify(pixels[x, y])
                if found:
                    counts[found] = counts.get(found, 0) + 1
        answers.append(max(counts, key=counts.get) if counts else 'white')
    return {'bbox': [x0, y0, x1, y1], 'size': [width, height], 'probes': answers}


mode, kind, file = sys.argv[1:4]
if mode == 'shapes':
    data = open(file, 'rb').read()
    found = emf_shapes(data) if kind == 'emf' else wmf_shapes(data) if kind == 'wmf' else dxf_shapes(data.decode('latin-1'))
    print(json.dumps(found))
else:
    print(json.dumps(raster(kind, file, json.loads(sys.argv[4]))))
