#!/usr/bin/python3
"""Font conversion for convertd with Debian's fontTools: ttf, otf, woff, woff2, ttx.

    fonts.py INPUT OUTPUT TARGET [SOURCE]   (TARGET: ttf, otf, woff, woff2 or ttx; SOURCE ttx
                                             when the input is fontTools' XML)

TTX is fontTools' own XML form of a font (every table, outlines included): a font becomes one
with saveXML, and one is compiled back into a binary font with importXML, then converted as any
other font. Its XML is parsed by expat, which resolves no external entity and refuses entity
expansion beyond its amplification limit (a "billion laughs").

WOFF and WOFF2 are wrappers: the outlines inside stay as they are. A font with PostScript (CFF)
outlines becomes a TrueType font by converting its cubic curves to quadratic ones (cu2qu, within
1 unit), as fontTools' otf2ttf snippet does. A font with TrueType outlines becomes an OTF by the
reverse, which is exact: each quadratic segment is one cubic (control points P0 + 2/3 (P1 - P0)
and P2 + 2/3 (P1 - P2)); only the rounding of those control points to whole units moves them, by
half a unit at most. Exit code 3 means "this font cannot become that target" (the message says
why), 2 "not a font fontTools can read".
"""
import io
import sys

from fontTools.fontBuilder import FontBuilder
from fontTools.pens.cu2quPen import Cu2QuPen
from fontTools.pens.recordingPen import DecomposingRecordingPen
from fontTools.pens.reverseContourPen import ReverseContourPen
from fontTools.pens.t2CharStringPen import T2CharStringPen
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTFont, TTLibError, newTable

# Tables that only TrueType outlines use: the outlines themselves, their instructions (hinting)
# and the device metrics computed from the hinted outlines. A CFF font carries its own hints.
TRUETYPE_ONLY_TABLES = ("glyf", "loca", "fpgm", "prep", "cvt ", "hdmx", "LTSH", "VDMX", "TSI0", "TSI1", "TSI2", "TSI3", "TSI5")


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


def truetype_to_cff(font):
    """Replaces the glyf outlines with CFF charstrings of the same geometry. Components are
    drawn in place (CFF has no composite glyphs); contours are reversed, since TrueType's outer
    contours run clockwise and PostScript's counter-clockwise."""
    glyph_order = font.getGlyphOrder()
    glyph_set = font.getGlyphSet()
    metrics = font["hmtx"].metrics
    charstrings = {}
    for name in glyph_order:
        # Components are drawn out first: reversing the glyph's contours must reverse theirs too.
        outline = DecomposingRecordingPen(glyph_set)
        glyph_set[name].draw(outline)
        pen = T2CharStringPen(metrics[name][0], None)
        outline.replay(ReverseContourPen(pen))
        charstrings[name] = pen.getCharString()
    names = font["name"]
    ps_name = str(names.getDebugName(6) or "").strip() or "Converted"
    info = {key: str(value) for key, value in (
        ("FullName", names.getDebugName(4)), ("FamilyName", names.getDebugName(1)),
        ("Notice", names.getDebugName(0)), ("version", names.getDebugName(5))) if value}
    builder = FontBuilder(font=font)
    builder.isTTF = False
    builder.setupCFF(ps_name.replace(" ", ""), info, charstrings, {})
    for tag in TRUETYPE_ONLY_TABLES:
        if tag in font:
            del font[tag]
    maxp = font["maxp"]
    maxp.tableVersion = 0x00005000  # CFF fonts carry only the glyph count in maxp
    for field in list(vars(maxp)):
        if field.startswith("max") and field != "maxp":
            delattr(maxp, field)
    # The glyph names live in the CFF charset: post format 3 stores none.
    post = font["post"]
    post.formatType = 3.0
    for field in ("extraNames", "mapping", "glyphOrder"):
        if hasattr(post, field):
            delattr(post, field)
    font.sfntVersion = "OTTO"


def main():
    source, output, target = sys.argv[1:4]
    from_ttx = sys.argv[4:5] == ["ttx"]
    try:
        if from_ttx:
            font = TTFont(recalcTimestamp=False)
            font.importXML(source)
            # Compiled and read back, so that a table the XML got wrong fails here, as a damaged
            # binary font would, and not halfway through writing the output.
            compiled = io.BytesIO()
            font.save(compiled)
            compiled.seek(0)
            font = TTFont(compiled, recalcTimestamp=False)
        else:
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
        if "gvar" in font or "fvar" in font:
            # A variable TrueType font would need CFF2 outlines with their own variation data.
            print("variable TrueType fonts cannot be converted to OTF here: choose ttf, woff or woff2", file=sys.stderr)
            return 3
        truetype_to_cff(font)
    if target == "ttx":
        font.flavor = None
        font.saveXML(output)
        return 0
    font.flavor = target if target in ("woff", "woff2") else None
    font.save(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
