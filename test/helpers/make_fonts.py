#!/usr/bin/python3
"""Builds two small test fonts from nothing with fontTools' FontBuilder: a TrueType font
(sample.ttf) and a CFF-flavoured OpenType font (sample.otf), each with the glyphs .notdef,
space, A, a, o and degree, in the directory given as the only argument. The "o" is round:
quadratic curves in the TrueType font (runs of off-curve points, as real TrueType fonts have),
cubic ones in the CFF font, so that converting between them has curves to convert. The degree
sign is a small "o" raised: in the TrueType font a composite glyph (a scaled, moved component),
as accented letters are in real fonts; CFF has no components, so there it is drawn out."""
import os
import sys

from fontTools.fontBuilder import FontBuilder
from fontTools.pens.reverseContourPen import ReverseContourPen
from fontTools.pens.t2CharStringPen import T2CharStringPen
from fontTools.pens.transformPen import TransformPen
from fontTools.pens.ttGlyphPen import TTGlyphPen

GLYPHS = [".notdef", "space", "A", "a", "o", "degree"]
CMAP = {32: "space", 65: "A", 97: "a", 111: "o", 0xB0: "degree"}
WIDTHS = {".notdef": 600, "space": 500, "A": 600, "a": 600, "o": 640, "degree": 400}
# The degree sign: the "o" at 40 %, moved up and right (xx, xy, yx, yy, dx, dy).
DEGREE_TRANSFORM = (0.4, 0, 0, 0.4, 72, 450)
NAMES = dict(familyName="ConvertdTest", styleName="Regular", psName="ConvertdTest-Regular", version="Version 1.0")


def draw(pen, name):
    if name == "space":
        return
    if name == "degree":
        draw(TransformPen(pen, DEGREE_TRANSFORM), "o")
        return
    if name == "o":
        # An outer ring and a counter, each two quadratic runs of two off-curve points
        # (implied on-curve points between them), drawn in opposite directions.
        for (cx, cy, rx, ry, sign) in ((320, 250, 260, 260, -1), (320, 250, 150, 170, 1)):
            pen.moveTo((cx, cy - ry))
            pen.qCurveTo((cx + sign * rx, cy - ry), (cx + sign * rx, cy + ry), (cx, cy + ry))
            pen.qCurveTo((cx - sign * rx, cy + ry), (cx - sign * rx, cy - ry), (cx, cy - ry))
            pen.closePath()
        return
    top = 700 if name == "A" else 500
    pen.moveTo((100, 0))
    pen.lineTo((300, top))
    pen.lineTo((500, 0))
    pen.closePath()


def build(directory, truetype):
    fb = FontBuilder(1000, isTTF=truetype)
    fb.setupGlyphOrder(GLYPHS)
    fb.setupCharacterMap(CMAP)
    if truetype:
        glyphs = {}
        for name in GLYPHS:
            pen = TTGlyphPen(glyphs)  # the glyphs so far: a component must be one of them
            if name == "degree":
                pen.addComponent("o", DEGREE_TRANSFORM)
            else:
                draw(pen, name)
            glyphs[name] = pen.glyph()
        fb.setupGlyf(glyphs)
        metrics = {name: (WIDTHS[name], getattr(glyphs[name], "xMin", 0)) for name in GLYPHS}
    else:
        charstrings = {}
        for name in GLYPHS:
            pen = T2CharStringPen(WIDTHS[name], None)
            # PostScript outlines run the other way round: outer contours counter-clockwise.
            draw(ReverseContourPen(pen), name)
            charstrings[name] = pen.getCharString()
        fb.setupCFF(NAMES["psName"], {"FullName": NAMES["psName"]}, charstrings, {})
        metrics = {name: (WIDTHS[name], (charstrings[name].calcBounds(None) or (0,))[0]) for name in GLYPHS}
    fb.setupHorizontalMetrics(metrics)
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupNameTable(NAMES)
    fb.setupOS2(sTypoAscender=800, usWinAscent=800, usWinDescent=200)
    fb.setupPost()
    fb.save(os.path.join(directory, "sample.ttf" if truetype else "sample.otf"))


if __name__ == "__main__":
    build(sys.argv[1], True)
    build(sys.argv[1], False)
