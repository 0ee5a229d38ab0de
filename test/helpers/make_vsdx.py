"""A Visio drawing (VSDX) written part by part: one page of 2 x 1 inches holding a red square
(0.1-0.9 inch) with a word in it and a blue circle (centre 1.5, 0.5, radius 0.4), the layout of
the vector tests' SVG sample. No tool here writes Visio files: the parts are those libvisio
reads (the package's relationships, the document, the page list, one page of shapes).

Usage: make_vsdx.py OUTPUT WORD
"""
import sys
import zipfile

VISIO = 'http://schemas.microsoft.com/office/visio/2012/main'
RELS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships'
PACKAGE_RELS = 'http://schemas.openxmlformats.org/package/2006/relationships'
KIND = 'http://schemas.microsoft.com/visio/2010/relationships/'


def relationships(kind, target):
    return f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PACKAGE_RELS}"><Relationship Id="rId1" Type="{KIND}{kind}" Target="{target}"/></Relationships>'


def cells(**values):
    return ''.join(f'<Cell N="{name}" V="{value}"/>' for name, value in values.items())


def shape(number, pin, size, fill, geometry, text=''):
    (x, y), (w, h) = pin, size
    return (f'<Shape ID="{number}" Type="Shape">'
            + cells(PinX=x, PinY=y, Width=w, Height=h, LocPinX=w / 2, LocPinY=h / 2, FillForegnd=fill, FillPattern=1, LinePattern=0)
            + f'<Section N="Geometry" IX="0">{cells(NoFill=0, NoLine=1)}{geometry}</Section>'
            # The word's characters 8 points high (Size is in inches), so that it stays in the square.
            + (f'<Section N="Character"><Row IX="0">{cells(Size=8 / 72)}</Row></Section><Text>{text}</Text>' if text else '') + '</Shape>')


def row(kind, index, **values):
    return f'<Row T="{kind}" IX="{index}">{cells(**values)}</Row>'


def main(output, word):
    square = ''.join([row('MoveTo', 1, X=0, Y=0), row('LineTo', 2, X=0.8, Y=0), row('LineTo', 3, X=0.8, Y=0.8), row('LineTo', 4, X=0, Y=0.8), row('LineTo', 5, X=0, Y=0)])
    # An ellipse by its centre, a point at the end of one axis and one at the end of the other.
    circle = row('Ellipse', 1, X=0.4, Y=0.4, A=0.8, B=0.4, C=0.4, D=0.8)
    page = (f'<?xml version="1.0" encoding="UTF-8"?><PageContents xmlns="{VISIO}" xmlns:r="{RELS}"><Shapes>'
            + shape(1, (0.5, 0.5), (0.8, 0.8), '#ff0000', square, word)
            + shape(2, (1.5, 0.5), (0.8, 0.8), '#0000ff', circle)
            + '</Shapes></PageContents>')
    parts = {
        '[Content_Types].xml': '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/visio/document.xml" ContentType="application/vnd.ms-visio.drawing.main+xml"/>'
        '<Override PartName="/visio/pages/pages.xml" ContentType="application/vnd.ms-visio.pages+xml"/>'
        '<Override PartName="/visio/pages/page1.xml" ContentType="application/vnd.ms-visio.page+xml"/></Types>',
        '_rels/.rels': relationships('document', 'visio/document.xml'),
        'visio/document.xml': f'<?xml version="1.0" encoding="UTF-8"?><VisioDocument xmlns="{VISIO}" xmlns:r="{RELS}"/>',
        'visio/_rels/document.xml.rels': relationships('pages', 'pages/pages.xml'),
        'visio/pages/pages.xml': f'<?xml version="1.0" encoding="UTF-8"?><Pages xmlns="{VISIO}" xmlns:r="{RELS}"><Page ID="0" Name="Page-1"><PageSheet>{cells(PageWidth=2, PageHeight=1)}</PageSheet><Rel r:id="rId1"/></Page></Pages>',
        'visio/pages/_rels/pages.xml.rels': relationships('page', 'page1.xml'),
        'visio/pages/page1.xml': page,
    }
    with zipfile.ZipFile(output, 'w', zipfile.ZIP_DEFLATED) as archive:
        for name, content in parts.items():
            archive.writestr(name, content)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
