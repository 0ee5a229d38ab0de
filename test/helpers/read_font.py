#!/usr/bin/python3
"""Reads a font for the tests, independently of the service's conversion code.

    read_font.py FONT [SOURCE TEXT]
        prints JSON facts read with fontTools: the wrapper (flavor), the outline kind, the
        tables, the character map, the glyph count, each glyph's advance width, its outline's
        bounds (the curves' own extremes, not their control points) and its signed area (the
        sign tells the contour direction). Given a SOURCE font and a TEXT, also "render": TEXT
        rendered with both fonts by FreeType (Pillow), the rasteriser browsers and desktops
        use, at RENDER_SIZE pixels to the em: {"ink": pixels the source inks, "differing":
        pixels whose coverage differs by more than half}.
"""
import json
import sys

from fontTools.pens.areaPen import AreaPen
from fontTools.pens.boundsPen import BoundsPen
from fontTools.ttLib import TTFont

RENDER_SIZE = 200


def facts(path):
    font = TTFont(path, lazy=False)
    glyph_set = font.getGlyphSet()
    order = font.getGlyphOrder()
    bounds, areas = {}, {}
    for name in order:
        pen = BoundsPen(glyph_set)
        glyph_set[name].draw(pen)
        bounds[name] = pen.bounds and [round(v, 2) for v in pen.bounds]
        area = AreaPen(glyph_set)
        glyph_set[name].draw(area)
        areas[name] = round(area.value, 1)
    outlines = "cff" if "CFF " in font else "cff2" if "CFF2" in font else "truetype" if "glyf" in font else None
    return {
        "flavor": font.flavor,
        "outlines": outlines,
        "tables": sorted(font.keys()),
        "cmap": {str(code): name for code, name in sorted(font.getBestCmap().items())},
        "glyphCount": len(order),
        "advances": {name: font["hmtx"][name][0] for name in order},
        "family": font["name"].getDebugName(1),
        "bounds": bounds,
        "areas": areas,
    }


def render(path, text):
    from PIL import Image, ImageDraw, ImageFont
    # FreeType reads the file itself, WOFF and WOFF2 included: fontTools plays no part here.
    font = ImageFont.truetype(path, RENDER_SIZE)
    image = Image.new("L", (RENDER_SIZE * (len(text) + 1), RENDER_SIZE * 2), 0)
    ImageDraw.Draw(image).text((RENDER_SIZE // 2, RENDER_SIZE // 2), text, font=font, fill=255)
    return image


def over_half(image):
    """How many pixels of a greyscale image are above half intensity."""
    return image.point(lambda value: 255 if value > 127 else 0).histogram()[255]


def compare(source, output, text):
    from PIL import ImageChops
    a, b = render(source, text), render(output, text)
    return {"ink": over_half(a), "differing": over_half(ImageChops.difference(a, b))}


if __name__ == "__main__":
    result = facts(sys.argv[1])
    if len(sys.argv) > 3:
        result["render"] = compare(sys.argv[2], sys.argv[1], sys.argv[3])
    print(json.dumps(result))
