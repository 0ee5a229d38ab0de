"""Reads a traced outline (svg, eps, dxf, geojson) with tools that are not potrace and compares its
shape with the black/white shape of a reference picture.

    trace_check.py KIND OUTPUT REFERENCE THRESHOLD INVERT WIDTH HEIGHT

KIND is svg (parsed as XML, drawn by rsvg-convert), eps (drawn by Ghostscript), pdf (drawn by
pdftoppm, its pictures counted by pdfimages), dxf (its ENTITIES'
polylines read from the group codes, filled even-odd by Pillow) or geojson (parsed as JSON, its
rings filled even-odd by Pillow). A vertex may lie up to a pixel outside the image: potrace's
curves round a dithered edge pixel past it. REFERENCE is thresholded at THRESHOLD percent of full
brightness (darker is shape; INVERT=1 swaps). Prints JSON: the share of pixels where both agree,
the shape's bounding box (x0, y0, x1, y1, y down), and what the format itself said (paths, fill
colour at the shape's most covered pixel, entities)."""
import json, os, subprocess, sys, tempfile, xml.etree.ElementTree as ET
from PIL import Image, ImageChops, ImageDraw

kind, output, reference, threshold, invert, width, height = sys.argv[1:8]
threshold, invert, width, height = float(threshold), invert == '1', int(width), int(height)
facts = {}
tmp = tempfile.mkdtemp()


def even_odd(rings):
    """Rings (lists of (x, y), y down) filled even-odd: the XOR of each ring's fill."""
    shape = Image.new('1', (width, height), 0)
    for ring in rings:
        if len(ring) < 3:
            continue
        one = Image.new('1', (width, height), 0)
        ImageDraw.Draw(one).polygon(ring, fill=1)
        shape = ImageChops.logical_xor(shape, one)
    return shape


if kind == 'svg':
    root = ET.parse(output).getroot()
    ns = '{http://www.w3.org/2000/svg}'
    facts['paths'] = len(root.findall(f'.//{ns}path'))
    facts['fills'] = sorted({g.get('fill') for g in root.iter() if g.get('fill')})
    facts['size'] = [root.get('width'), root.get('height')]
    png = os.path.join(tmp, 'drawn.png')
    subprocess.run(['rsvg-convert', '-w', str(width), '-h', str(height), '--background-color=white', '-o', png, output], check=True)
    drawn = Image.open(png).convert('RGB')
elif kind == 'eps':
    text = open(output, 'rb').read().decode('latin1')
    box = next(line for line in text.splitlines() if line.startswith('%%BoundingBox:'))
    facts['bounding_box'] = [int(v) for v in box.split()[1:]]
    png = os.path.join(tmp, 'drawn.png')
    subprocess.run(['gs', '-q', '-dSAFER', '-dBATCH', '-dNOPAUSE', '-sDEVICE=png16m', '-r72', '-dEPSCrop', f'-sOutputFile={png}', output], check=True)
    drawn = Image.open(png).convert('RGB')
elif kind == 'pdf':
    # Drawn by poppler at the page's own size (potrace's page is the image's, in points); the
    # pictures it holds counted by pdfimages: a traced PDF holds none, only the outline.
    listed = subprocess.run(['pdfimages', '-list', output], check=True, capture_output=True, text=True).stdout.splitlines()[2:]
    facts['images'] = len([line for line in listed if line.strip()])
    facts['pages'] = int(next(line for line in subprocess.run(['pdfinfo', output], check=True, capture_output=True, text=True).stdout.splitlines() if line.startswith('Pages:')).split()[1])
    subprocess.run(['pdftoppm', '-png', '-singlefile', '-scale-to-x', str(width), '-scale-to-y', str(height), output, os.path.join(tmp, 'drawn')], check=True)
    drawn = Image.open(os.path.join(tmp, 'drawn.png')).convert('RGB')
elif kind == 'dxf':
    lines = open(output, encoding='latin1').read().splitlines()
    pairs = [(lines[i].strip(), lines[i + 1].strip()) for i in range(0, len(lines) - 1, 2)]
    sections, current, entities = [], None, []
    for index, (code, value) in enumerate(pairs):
        if code == '0' and value == 'SECTION':
            current = pairs[index + 1][1]
            sections.append(current)
        elif code == '0' and current == 'ENTITIES':
            entities.append(value)
    facts['sections'] = sections
    facts['entities'] = {name: entities.count(name) for name in sorted(set(entities))}
    rings, ring, xs = [], None, []
    in_entities = False
    x = None
    for code, value in pairs:
        if code == '2' and value == 'ENTITIES':
            in_entities = True
        if not in_entities:
            continue
        if code == '0' and value in ('POLYLINE', 'LWPOLYLINE'):
            ring = []
            rings.append(ring)
        elif code == '10':
            x = float(value)
        elif code == '20' and ring is not None and x is not None:
            ring.append((x, height - float(value)))
            xs.append((x, float(value)))
    facts['within'] = all(-1 <= px <= width + 1 and -1 <= py <= height + 1 for px, py in xs)
    shape = even_odd(rings)
    drawn = Image.new('RGB', (width, height), 'white')
    drawn.paste((0, 0, 0), mask=shape)
elif kind == 'geojson':
    data = json.load(open(output))
    facts['type'] = data.get('type')
    facts['geometries'] = sorted({f['geometry']['type'] for f in data['features']})
    rings = []
    for feature in data['features']:
        geometry = feature['geometry']
        polygons = [geometry['coordinates']] if geometry['type'] == 'Polygon' else geometry['coordinates']
        for polygon in polygons:
            for ring in polygon:
                rings.append([(px, height - py) for px, py in ring])
    facts['within'] = all(-1 <= px <= width + 1 and -1 <= py <= height + 1 for ring in rings for px, py in ring)
    shape = even_odd(rings)
    drawn = Image.new('RGB', (width, height), 'white')
    drawn.paste((0, 0, 0), mask=shape)
else:
    raise SystemExit(f'unknown kind {kind}')

facts['drawn_size'] = list(drawn.size)
drawn = drawn.resize((width, height)) if drawn.size != (width, height) else drawn
cut = threshold * 255 / 100
ref = Image.open(reference).convert('RGBA')
flat = Image.new('RGBA', ref.size, (255, 255, 255, 255))
flat.alpha_composite(ref)
ref_dark = [(v < cut) != invert for v in flat.convert('L').getdata()]
out_dark = [v < 128 for v in drawn.convert('L').getdata()]
facts['share'] = sum(a == b for a, b in zip(ref_dark, out_dark)) / len(out_dark)
facts['dark'] = sum(out_dark) / len(out_dark)
dark = [(i % width, i // width) for i, d in enumerate(out_dark) if d]
facts['bbox'] = [min(p[0] for p in dark), min(p[1] for p in dark), max(p[0] for p in dark) + 1, max(p[1] for p in dark) + 1] if dark else None
if dark:
    # The colour of the shape where it is drawn: the most common dark pixel's colour in the render.
    colours = {}
    for (px, py) in dark:
        c = drawn.getpixel((px, py))
        colours[c] = colours.get(c, 0) + 1
    facts['colour'] = '#%02x%02x%02x' % max(colours, key=colours.get)
print(json.dumps(facts))
