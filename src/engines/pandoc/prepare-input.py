"""Rewrites a docx or odt upload so that pandoc 2.17's readers keep what they would drop:

- docx: a chart (a drawing of a word/charts/chartN.xml part) is dropped without a trace, so each
  chart's title and data (the categories and the values of every series, as cached in the chart
  part) are written as a paragraph and a table right after the paragraph holding the chart.
- odt: the rows of a table's <table:table-header-rows> (a header repeated on every page, which
  LibreOffice and pandoc's own writer use for a table's first row) are dropped
  (https://github.com/jgm/pandoc/issues/9327), so they are made ordinary rows.

    prepare-input.py docx|odt INPUT OUTPUT

Writes OUTPUT only when INPUT needs it; exits 0 either way. Runs in the engine's sandbox
(no network, only the job's directory writable, file size and memory capped). Uses the standard
library only; the parts it reads are capped in size, and a chart part with a DTD is skipped (no
entity expansion).
"""
import posixpath
import re
import sys
import xml.etree.ElementTree as ET
import zipfile

NS = {
    "c": "http://schemas.openxmlformats.org/drawingml/2006/chart",
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "rel": "http://schemas.openxmlformats.org/package/2006/relationships",
}
WORD_MAIN = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
CHART_RELATIONSHIP = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/chart"
DOCUMENT = "word/document.xml"
DOCUMENT_RELS = "word/_rels/document.xml.rels"
ODF_CONTENT = "content.xml"
# The largest document part and chart part read; a larger one is left as it is.
MAX_DOCUMENT = 256 * 1024 * 1024
MAX_CHART = 16 * 1024 * 1024
# Charts carried per document, and points per series: beyond these the table would not be read.
MAX_CHARTS = 500
MAX_POINTS = 10_000


class Skip(Exception):
    pass


def escape(text):
    # xml.sax.saxutils.escape, written out: importing xml.sax.saxutils imports urllib.request
    # (http.client, email), 45 ms of a run's 130 ms here (python3 -X importtime).
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def read(archive, name, cap):
    info = archive.getinfo(name)
    if info.file_size > cap:
        raise Skip("%s is larger than %d bytes" % (name, cap))
    with archive.open(info) as part:
        data = part.read(cap + 1)
    if len(data) > cap:
        raise Skip("%s is larger than %d bytes" % (name, cap))
    return data


def parse(data):
    if re.search(rb"<!DOCTYPE", data[:4096]):
        raise Skip("a DTD in a chart part")
    return ET.fromstring(data)


def texts(element, path):
    return "".join(node.text or "" for node in element.iterfind(path, NS)).strip()


def points(element):
    """The cached points of a c:cat, c:val, c:xVal or c:yVal, by index."""
    values = {}
    if element is None:
        return values
    for point in element.iterfind(".//c:pt", NS):
        index = point.get("idx")
        if index is not None and index.isdigit() and int(index) < MAX_POINTS:
            values[int(index)] = texts(point, "c:v")
    return values


def number(text):
    """A cached value as written, but 0.30000000000000004 as 0.3."""
    try:
        value = float(text)
    except ValueError:
        return text
    return text if len(text) <= 12 else "%.10g" % value


def chart_data(root):
    chart = root.find("c:chart", NS)
    if chart is None:
        raise Skip("no c:chart")
    title = texts(chart, "c:title/c:tx//a:t") or texts(chart, "c:title/c:tx//c:v")
    series = []
    categories = {}
    for serie in chart.iterfind("c:plotArea/*/c:ser", NS):
        name = texts(serie, "c:tx//c:v") or "Series %d" % (len(series) + 1)
        values = points(serie.find("c:val", NS)) or points(serie.find("c:yVal", NS))
        if not categories:
            categories = points(serie.find("c:cat", NS)) or points(serie.find("c:xVal", NS))
        series.append((name, values))
    return title, categories, series


def paragraph(w, text):
    return '<{w}:p><{w}:r><{w}:t xml:space="preserve">{text}</{w}:t></{w}:r></{w}:p>'.format(w=w, text=escape(text))


def table(w, categories, series):
    count = max([max(indexed) + 1 for indexed in [categories] + [values for _, values in series] if indexed] or [0])
    if count == 0 or not series:
        return ""

    def row(cells, header=False):
        properties = "<{w}:trPr><{w}:tblHeader/></{w}:trPr>".format(w=w) if header else ""
        return "<{w}:tr>{p}{cells}</{w}:tr>".format(w=w, p=properties, cells="".join(
            "<{w}:tc>{p}</{w}:tc>".format(w=w, p=paragraph(w, cell)) for cell in cells))

    rows = [row([""] + [name for name, _ in series], header=True)]
    for index in range(count):
        label = categories.get(index, str(index + 1))
        rows.append(row([label] + [number(values.get(index, "")) for _, values in series]))
    grid = "".join("<{w}:gridCol {w}:w=\"2000\"/>".format(w=w) for _ in range(len(series) + 1))
    return ('<{w}:tbl><{w}:tblPr><{w}:tblLook {w}:firstRow="1"/></{w}:tblPr><{w}:tblGrid>{grid}</{w}:tblGrid>{rows}</{w}:tbl>'
            .format(w=w, grid=grid, rows="".join(rows)))


def rewrite(archive, target, replaced):
    """A copy of `archive` at `target` with the parts in `replaced` (name → bytes) replaced. The
    others are stored, not compressed again: the copy is read once, by pandoc, in this job. An
    ODF mimetype entry stays first."""
    infos = sorted(archive.infolist(), key=lambda info: info.filename != "mimetype")
    with zipfile.ZipFile(target, "w") as output:
        for info in infos:
            if info.filename in replaced:
                output.writestr(info.filename, replaced[info.filename], zipfile.ZIP_DEFLATED)
            elif not info.is_dir():
                with archive.open(info) as part, output.open(zipfile.ZipInfo(info.filename, info.date_time), "w") as copy:
                    while True:
                        chunk = part.read(1024 * 1024)
                        if not chunk:
                            break
                        copy.write(chunk)


def docx_charts(archive, target):
    names = set(archive.namelist())
    if DOCUMENT not in names or DOCUMENT_RELS not in names:
        return
    relationships = parse(read(archive, DOCUMENT_RELS, MAX_CHART))
    charts = {}
    for relationship in relationships.iterfind("rel:Relationship", NS):
        if relationship.get("Type") == CHART_RELATIONSHIP and relationship.get("TargetMode") != "External":
            target_path = relationship.get("Target", "")
            part = target_path.lstrip("/") if target_path.startswith("/") else posixpath.normpath(posixpath.join("word", target_path))
            if part in names:
                charts[relationship.get("Id")] = part
    if not charts:
        return

    document = read(archive, DOCUMENT, MAX_DOCUMENT).decode("utf-8")
    if "<!DOCTYPE" in document[:4096]:
        return
    prefix = re.search(r'xmlns:([\w.-]+)="%s"' % re.escape(WORD_MAIN), document[:65536])
    if not prefix:
        return
    w = prefix.group(1)
    paragraph_end = "</%s:p>" % w
    inserts = {}  # offset just past a paragraph's end → the chart blocks to put there
    seen = set()
    for reference in re.finditer(r'<(?:[\w.-]+:)?chart\s[^>]*?\b[\w.-]+:id="([^"]+)"', document):
        part = charts.get(reference.group(1))
        end = document.find(paragraph_end, reference.end())
        # A chart drawn twice in one paragraph (mc:Choice and its mc:Fallback) is carried once.
        if part is None or end < 0 or (end, part) in seen or len(seen) >= MAX_CHARTS:
            continue
        seen.add((end, part))
        try:
            title, categories, series = chart_data(parse(read(archive, part, MAX_CHART)))
        except (Skip, ET.ParseError):
            continue
        block = paragraph(w, "Chart: %s" % title if title else "Chart") + table(w, categories, series)
        inserts.setdefault(end + len(paragraph_end), []).append(block)
    if not inserts:
        return

    pieces = []
    last = 0
    for offset in sorted(inserts):
        pieces.append(document[last:offset])
        pieces.extend(inserts[offset])
        last = offset
    pieces.append(document[last:])
    rewritten = "".join(pieces).encode("utf-8")
    try:
        ET.fromstring(rewritten)
    except ET.ParseError:
        return  # the surgery went wrong somewhere: pandoc gets the file as it came
    rewrite(archive, target, {DOCUMENT: rewritten})


def odt_header_rows(archive, target):
    if ODF_CONTENT not in archive.namelist():
        return
    content = read(archive, ODF_CONTENT, MAX_DOCUMENT)
    if b"table-header-rows" not in content:
        return
    # The wrapper's tags go; the rows inside stay where they are, now the table's first rows.
    rewritten = re.sub(rb"</?[\w.-]+:table-header-rows\s*/?>", b"", content)
    rewrite(archive, target, {ODF_CONTENT: rewritten})


def main():
    fmt, source, target = sys.argv[1], sys.argv[2], sys.argv[3]
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError):
        return  # not for us to judge: pandoc reports it
    try:
        if fmt == "docx":
            docx_charts(archive, target)
        elif fmt == "odt":
            odt_header_rows(archive, target)
    except Skip:
        return


main()
