"""Reads rendered text back from a picture of a page, for the rendered-scripts test: were the glyphs
drawn, or boxes? Independent of every engine: Pillow finds the lines, tesseract reads them.

    read_scripts.py IMAGE SPEC_JSON

SPEC_JSON lists the page's lines from the top (a page number far below them is left out): [{"lang": "jpn", "text": "..."} ...]; a line with
"lang": "emoji" is not read (no OCR reads emoji) but cut into its glyphs, which must differ from one
another: the .notdef box a font draws for a missing glyph is the same box for every character.
Prints one JSON object per line: {"lang", "text", "read", "recall"} (recall: the share of the line's
characters found in what tesseract read), or {"lang": "emoji", "glyphs", "distinct"}.
Exits 1 when the page does not hold as many lines as the spec.
"""
import collections
import json
import subprocess
import sys
import tempfile

from PIL import Image, ImageChops

INK = 160  # grey level below which a pixel is ink (anti-aliased edges stay out)


def ink_rows(image):
    width, height = image.size
    pixels = image.load()
    return [any(pixels[x, y] < INK for x in range(width)) for y in range(height)]


def runs(flags):
    """[start, end) of each run of True."""
    found, start = [], None
    for index, flag in enumerate(flags + [False]):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            found.append([start, index])
            start = None
    return found


def lines_of(image, expected):
    bands = runs(ink_rows(image))
    if not bands:
        return []
    # Marks above or below a script's base line (Thai vowels, Devanagari matras, Arabic dots) can sit
    # apart from it by a few pixels: a gap much smaller than a line's height joins two bands.
    heights = sorted(end - start for start, end in bands)
    typical = heights[len(heights) // 2]
    merged = [bands[0]]
    for start, end in bands[1:]:
        if start - merged[-1][1] < max(2, typical // 3) and len(merged) + (len(bands) - bands.index([start, end])) > expected:
            merged[-1][1] = end
        else:
            merged.append([start, end])
    return merged


def glyph_columns(band):
    width, height = band.size
    pixels = band.load()
    return runs([any(pixels[x, y] < INK for y in range(height)) for x in range(width)])


def ocr(band, lang):
    # Tesseract reads best at a cap height of 30 pixels or more, with a white margin around the line.
    scale = max(1, round(48 / max(1, band.size[1])))
    framed = Image.new("L", (band.size[0] * scale + 40, band.size[1] * scale + 40), 255)
    framed.paste(band.resize((band.size[0] * scale, band.size[1] * scale), Image.LANCZOS), (20, 20))
    with tempfile.NamedTemporaryFile(suffix=".png") as file:
        framed.save(file.name)
        result = subprocess.run(["tesseract", file.name, "-", "-l", lang, "--psm", "7"], capture_output=True, text=True)
    return result.stdout.strip()


def recall(expected, read):
    want = collections.Counter(c for c in expected if not c.isspace())
    got = collections.Counter(c for c in read if not c.isspace())
    return sum((want & got).values()) / max(1, sum(want.values()))


def without_running_footer(found):
    """Drops a page number or footer: a last band far below the lines (gap over 4 times the usual)."""
    if len(found) < 3:
        return found
    gaps = sorted(b[0] - a[1] for a, b in zip(found, found[1:]))
    usual = gaps[len(gaps) // 2]
    return found[:-1] if found[-1][0] - found[-2][1] > 4 * max(usual, 1) else found


def main():
    image = Image.open(sys.argv[1]).convert("L")
    spec = json.loads(sys.argv[2])
    found = lines_of(image, len(spec))
    if len(found) == len(spec) + 1:
        found = without_running_footer(found)
    if len(found) != len(spec):
        sys.stderr.write("the page holds %d lines of ink, not %d: %s\n" % (len(found), len(spec), found))
        sys.exit(1)
    results = []
    for line, (top, bottom) in zip(spec, found):
        band = image.crop((0, max(0, top - 2), image.size[0], min(image.size[1], bottom + 2)))
        if line["lang"] == "emoji":
            glyphs = []
            for left, right in glyph_columns(band):
                glyphs.append(band.crop((left, 0, right, band.size[1])).resize((32, 32)))
            distinct = all(
                ImageChops.difference(a, b).getbbox() is not None and sum(ImageChops.difference(a, b).point(lambda v: 255 if v > 64 else 0).histogram()[255:]) > 20
                for i, a in enumerate(glyphs) for b in glyphs[i + 1:]
            )
            results.append({"lang": "emoji", "text": line["text"], "glyphs": len(glyphs), "distinct": distinct})
        else:
            read = ocr(band, line["lang"])
            results.append({"lang": line["lang"], "text": line["text"], "read": read, "recall": round(recall(line["text"], read), 3)})
    print(json.dumps(results, ensure_ascii=False))


main()
