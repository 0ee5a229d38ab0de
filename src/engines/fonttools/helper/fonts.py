#!/usr/bin/python3
"""Font conversion for convertd with Debian's fontTools: ttf, otf, woff, woff2.

    fonts.py INPUT OUTPUT TARGET     (TARGET: ttf, otf, woff or woff2)

WOFF and WOFF2 are wrappers: the outlines inside stay as they are. A font with PostScript (CFF)
outlines becomes a TrueType font by converting its cubic curves to quadratic ones (cu2qu), as
fontTools' otf2ttf snippet does. The reverse is not offered. Exit code 3 means "this font
cannot become that target" (the message says why), 2 "not a font fontTools can read".
"""
import sys

from fontTools.pens.cu2quPen import Cu2QuPen
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTFont, TTLibError, newTable


def cff_to_truetype(font):
    glyph_order = font.getGlyphOrder()
    glyph_set = font.getGlyphSet()
    font["loca"] = newTable("loca")
    font["glyf"] = glyf = newTable("glyf")
    glyf.glyphOrder = glyph_order
    glyf.glyphs = {}
    for name in glyph_order:
        pen = TTGlyphPen(glyph_set)
        glyph_set[name].draw(Cu2QuPen(pen, 1.0, reverse_direction=True))
        glyf[name] = pen.glyph()
    font["maxp"] = maxp = newTable("maxp")
    maxp.tableVersion = 0x00010000
    for field in ("maxZones",):
        setattr(maxp, field, 1)
    for field in ("maxTwilightPoints", "maxStorage", "maxFunctionDefs", "maxInstructionDefs",
                  "maxStackElements", "maxSizeOfInstructions"):
        setattr(maxp, field, 0)
    maxp.maxComponentElements = max(
        [len(getattr(g, "components", [])) for g in glyf.glyphs.values()] or [0])
    post = font["post"]
    post.formatType = 2.0
    post.extraNames = []
    post.mapping = {}
    post.glyphOrder = glyph_order
    del font["CFF "]
    if "VORG" in font:
        del font["VORG"]
    font["head"].glyphDataFormat = 0
    font.sfntVersion = "\x00\x01\x00\x00"


def main():
    source, output, target = sys.argv[1:4]
    try:
        font = TTFont(source, recalcTimestamp=False)
        font.getGlyphOrder()
    except (TTLibError, Exception) as error:  # fontTools raises many kinds on garbage
        print(f"not a readable font: {error}", file=sys.stderr)
        return 2
    is_cff = "CFF " in font or "CFF2" in font
    if target == "ttf" and is_cff:
        if "CFF2" in font:
            print("variable CFF2 fonts cannot be converted to TrueType here", file=sys.stderr)
            return 3
        cff_to_truetype(font)
    elif target == "otf" and not is_cff:
        print("this font has TrueType outlines: choose ttf, woff or woff2 as the target", file=sys.stderr)
        return 3
    font.flavor = target if target in ("woff", "woff2") else None
    font.save(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
