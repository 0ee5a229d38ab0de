#!/usr/bin/env python3
"""Pixels of an image, or of every image in a ZIP (members in name order), read by Pillow.

    sample_pixels.py FILE POINTS_JSON

POINTS_JSON is a list of [x, y] positions as fractions of the width and height (0..1). Prints
JSON: a list of {name, format, width, height, mode, pixels: [[r, g, b, a], ...]}, one per image,
the alpha 255 where the image has none. The tests compare these with where the PostScript they
wrote put its shapes: an output decoded by Pillow, never by the engine that wrote it.
"""
import io
import json
import sys
import zipfile

from PIL import Image


def facts(name, data, points):
    image = Image.open(io.BytesIO(data))
    image.load()
    rgba = image.convert('RGBA')
    pixels = []
    for x, y in points:
        px = min(image.width - 1, max(0, int(x * image.width)))
        py = min(image.height - 1, max(0, int(y * image.height)))
        pixels.append(list(rgba.getpixel((px, py))))
    return {'name': name, 'format': image.format, 'width': image.width, 'height': image.height, 'mode': image.mode, 'pixels': pixels}


def main():
    path, points = sys.argv[1], json.loads(sys.argv[2])
    with open(path, 'rb') as handle:
        data = handle.read()
    if data[:4] == b'PK\x03\x04':
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = sorted(info.filename for info in archive.infolist() if not info.is_dir())
            print(json.dumps([facts(name, archive.read(name), points) for name in names]))
    else:
        print(json.dumps([facts(path, data, points)]))


if __name__ == '__main__':
    main()
