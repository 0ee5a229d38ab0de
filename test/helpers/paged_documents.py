"""Writes the paged samples of test/options-documents.test.ts into a directory, as flat ODF:

  pages.fodt   three pages; page N holds the word WORDS[N] and a picture of COLOURS[N] (a noisy
               JPEG, so that a PDF of it is heavy with pictures and a page image shows its colour)
  slides.fodp  three slides, slide N with WORDS[N]
  sheets.fods  three sheets, sheet N with WORDS[N] (one printed page each)
  long.fods    one sheet of <long rows> rows, printed on hundreds of pages

The test turns them into docx, odt, pptx, xlsx and PDF with soffice itself, never with the service.
Run with Debian's /usr/bin/python3 (Pillow, numpy): paged_documents.py <dir> <long rows>.
"""
import base64
import io
import sys

import numpy
from PIL import Image

WORDS = ["Alphaword", "Bravoword", "Charlieword"]
COLOURS = [(210, 40, 40), (40, 180, 60), (40, 60, 210)]

NS = " ".join([
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"',
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"',
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"',
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"',
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"',
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"',
    'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"',
    'xmlns:xlink="http://www.w3.org/1999/xlink"',
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"',
])
BREAK = ('<office:automatic-styles><style:style style:name="PB" style:family="paragraph">'
         '<style:paragraph-properties fo:break-before="page"/></style:style></office:automatic-styles>')


def document(mime, body, styles=""):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<office:document %s office:version="1.2" office:mimetype="%s">%s'
            '<office:body>%s</office:body></office:document>\n' % (NS, mime, styles, body))


def picture(colour, seed):
    """A 900 x 1200 photo-like JPEG of `colour`: smooth waves of light and some grain, large at
    quality 95 (as a camera's pictures are), with a clear mean colour."""
    generator = numpy.random.default_rng(seed)
    y, x = numpy.mgrid[0:1200, 0:900]
    waves = 30 * numpy.sin(x / 37.0 + seed) * numpy.cos(y / 53.0)
    grain = generator.integers(-8, 9, size=(1200, 900, 3))
    pixels = numpy.clip(numpy.array(colour) + waves[..., None] + grain, 0, 255).astype(numpy.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=95)
    return base64.b64encode(out.getvalue()).decode("ascii")


def paragraph(text, first):
    return '<text:p%s>%s</text:p>' % ("" if first else ' text:style-name="PB"', text)


def main():
    folder, long_rows = sys.argv[1], int(sys.argv[2])
    pages = "".join(
        paragraph("Page %s" % word, index == 0)
        + '<text:p><draw:frame draw:name="p%d" text:anchor-type="as-char" svg:width="12cm" svg:height="16cm">'
          '<draw:image><office:binary-data>%s</office:binary-data></draw:image></draw:frame></text:p>'
          % (index, picture(COLOURS[index], index))
        for index, word in enumerate(WORDS))
    with open(folder + "/pages.fodt", "w") as out:
        out.write(document("application/vnd.oasis.opendocument.text", "<office:text>%s</office:text>" % pages, BREAK))

    slides = "".join(
        '<draw:page draw:name="s%d"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="5cm">'
        '<draw:text-box><text:p>Slide %s</text:p></draw:text-box></draw:frame></draw:page>' % (index, word)
        for index, word in enumerate(WORDS))
    with open(folder + "/slides.fodp", "w") as out:
        out.write(document("application/vnd.oasis.opendocument.presentation", "<office:presentation>%s</office:presentation>" % slides))

    sheets = "".join(
        '<table:table table:name="S%d"><table:table-row><table:table-cell office:value-type="string">'
        '<text:p>Sheet %s</text:p></table:table-cell></table:table-row></table:table>' % (index, word)
        for index, word in enumerate(WORDS))
    with open(folder + "/sheets.fods", "w") as out:
        out.write(document("application/vnd.oasis.opendocument.spreadsheet", "<office:spreadsheet>%s</office:spreadsheet>" % sheets))

    # A long workbook: one sheet of <long rows> rows of six cells, some 53 rows to a printed page.
    cells = "".join('<table:table-cell office:value-type="string"><text:p>row %%d, column %d</text:p></table:table-cell>' % column for column in range(6))
    rows = "".join("<table:table-row>%s</table:table-row>" % (cells.replace("%d", str(row + 1))) for row in range(long_rows))
    with open(folder + "/long.fods", "w") as out:
        out.write(document("application/vnd.oasis.opendocument.spreadsheet", '<office:spreadsheet><table:table table:name="Long">%s</table:table></office:spreadsheet>' % rows))

if __name__ == "__main__":
    main()
