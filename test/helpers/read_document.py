"""Reads a converted document with tools independent of the engines that wrote it, and prints
{"text": ..., "pages": ...} as JSON: the text it holds, for the test to look for the sample's words
in, and for PDF the page count.

    read_document.py FILE FORMAT
    read_document.py --batch < lines of ["FILE", "FORMAT"]   (one JSON answer a line, {"error": ...} for an invalid file)

Exits 1 with a message on stderr when the file is not a valid FORMAT. For slides (reveal.js, Slidy,
DZSlides, Beamer) the answer also lists each slide's text ("slides"). Uses Python's standard
library (zipfile, xml, html.parser, json), Pillow for images, and poppler/qpdf for PDF (no
engine of the service writes PDF with poppler, and qpdf belongs to none)), groff for man pages and ms
documents, GNU makeinfo for Texinfo (neither belongs to an engine).
"""
import html.parser
import json
import re
import struct
import subprocess
import sys
import xml.dom.minidom
import zipfile


class Invalid(Exception):
    """The file is not a valid document of the format asked for."""


def fail(message):
    raise Invalid(message)


def xml_text(data, separators=None, hidden=(), names=False):
    """The text nodes of an XML document. With `separators` (local element names), text runs on
    across other elements, as a word split over two runs of a docx or two spans of an ODF file
    does, and a space stands only where one of those elements begins or ends; without, between
    every two text nodes. Elements named in `hidden` (field codes, deleted text) are left out.
    With `names`, element names count as text too: a data file's XML keeps column names so."""
    try:
        document = xml.dom.minidom.parseString(data)
    except Exception as error:
        fail("not well-formed XML: %s" % error)
    parts = []

    def walk(node):
        if node.nodeType == node.TEXT_NODE or node.nodeType == node.CDATA_SECTION_NODE:
            parts.append(node.data)
            if separators is None:
                parts.append(" ")
            return
        name = (node.localName or "") if node.nodeType == node.ELEMENT_NODE else ""
        if name in hidden:
            return
        breaks = separators is not None and name in separators
        if names and name:
            parts.append(" %s " % name)
        if breaks:
            parts.append(" ")
        for child in node.childNodes:
            walk(child)
        if breaks:
            parts.append(" ")

    walk(document)
    return "".join(parts)


class HtmlText(html.parser.HTMLParser):
    """The text a browser shows: script and style content left out."""

    def __init__(self):
        super().__init__()
        self.parts = []
        self.tags = 0
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        self.tags += 1
        if tag in ("script", "style"):
            self.hidden += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.hidden > 0:
            self.hidden -= 1

    def handle_data(self, data):
        if self.hidden == 0:
            self.parts.append(data)


def html_text(data, strict=True):
    parser = HtmlText()
    parser.feed(data.decode("utf-8", "replace") if isinstance(data, bytes) else data)
    if strict and parser.tags == 0:
        fail("no HTML elements")
    return " ".join(parser.parts)


# The part of each zip-based format that must exist, and the parts whose text is read.
ZIP_FORMATS = {
    "docx": ("word/document.xml", r"^word/(document|header\d*|footer\d*|footnotes|endnotes)\.xml$"),
    "xlsx": ("xl/workbook.xml", r"^xl/(sharedStrings|worksheets/sheet\d+)\.xml$"),
    "pptx": ("ppt/presentation.xml", r"^ppt/slides/slide\d+\.xml$"),
    "odt": ("content.xml", r"^(content|styles)\.xml$"),  # styles.xml: the page headers and footers
    "ods": ("content.xml", r"^content\.xml$"),
    "odp": ("content.xml", r"^content\.xml$"),
    "odg": ("content.xml", r"^content\.xml$"),
    "epub": ("META-INF/container.xml", r"\.(x?html|xml)$"),
}
# Per format, the elements between which words of the text are apart (see xml_text), and those
# whose text is not shown.
ODF_SEPARATORS = {"p", "h", "s", "tab", "line-break", "table-cell", "list-item", "frame"}
SEPARATORS = {
    "docx": ({"p", "tab", "br", "cr", "tc"}, {"instrText", "delText"}),
    "pptx": ({"p", "br"}, {"tableStyleId"}),
    "xlsx": ({"si", "c", "v", "is"}, ()),
    "odt": (ODF_SEPARATORS, ()), "ods": (ODF_SEPARATORS, ()), "odp": (ODF_SEPARATORS, ()), "odg": (ODF_SEPARATORS, ()),
}
ODF_MIMETYPES = {
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "odg": "application/vnd.oasis.opendocument.graphics",
    "epub": "application/epub+zip",
}


def zip_text(path, fmt):
    required, pattern = ZIP_FORMATS[fmt]
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as error:
        fail("not a zip package: %s" % error)
    names = archive.namelist()
    if required not in names:
        fail("%s lacks %s" % (fmt, required))
    if fmt in ODF_MIMETYPES and archive.read("mimetype").decode() != ODF_MIMETYPES[fmt]:
        fail("wrong mimetype entry")
    texts = []
    for name in names:
        if re.search(pattern, name) and not name.startswith("META-INF/"):
            data = archive.read(name)
            texts.append(html_text(data) if name.endswith(".html") else xml_text(data, *SEPARATORS.get(fmt, (None, ()))))
    return " ".join(texts)


def palmdoc_decompress(data):
    out = bytearray()
    i = 0
    while i < len(data):
        c = data[i]
        i += 1
        if c == 0 or 9 <= c <= 0x7F:
            out.append(c)
        elif 1 <= c <= 8:
            out += data[i:i + c]
            i += c
        elif c >= 0xC0:
            out += b" " + bytes([c ^ 0x80])
        elif i < len(data):
            pair = (c << 8) | data[i]
            i += 1
            distance = (pair >> 3) & 0x7FF
            for _ in range((pair & 7) + 3):
                if distance == 0 or distance > len(out):
                    return bytes(out)
                out.append(out[-distance])
    return bytes(out)


def mobi_text(path):
    data = open(path, "rb").read()
    if data[60:68] != b"BOOKMOBI":
        fail("no BOOKMOBI signature")
    count = struct.unpack(">H", data[76:78])[0]
    offsets = [struct.unpack(">I", data[78 + 8 * n:82 + 8 * n])[0] for n in range(count)] + [len(data)]
    record0 = data[offsets[0]:offsets[1]]
    compression, _, _, text_records = struct.unpack(">HHIH", record0[:10])
    if compression not in (1, 2):
        fail("unexpected compression %d" % compression)
    text = bytearray()
    for n in range(1, 1 + text_records):
        record = data[offsets[n]:offsets[n + 1]]
        text += palmdoc_decompress(record) if compression == 2 else record
    # A MOBI book's text is HTML: its words are what the markup shows.
    return html_text(text.decode("utf-8", "replace"), strict=False)


def pdf_text(path, fmt):
    check = subprocess.run(["qpdf", "--check", path], capture_output=True, text=True)
    if check.returncode not in (0, 3):  # 3: warnings only
        fail("qpdf --check: %s" % (check.stdout + check.stderr)[-500:])
    info = subprocess.run(["pdfinfo", path], capture_output=True, text=True)
    pages = re.search(r"^Pages:\s+(\d+)", info.stdout, re.M)
    if info.returncode != 0 or not pages or int(pages.group(1)) < 1:
        fail("pdfinfo: no pages")
    if fmt == "pdfa":
        meta = subprocess.run(["pdfinfo", "-meta", path], capture_output=True, text=True).stdout
        if not re.search(r"pdfaid:part\W+2", meta):
            fail("no PDF/A-2 identification in the XMP metadata")
        if "/OutputIntents" not in subprocess.run(["qpdf", "--qdf", "--object-streams=disable", path, "-"], capture_output=True).stdout.decode("latin1"):
            fail("no output intent")
    return subprocess.run(["pdftotext", "-enc", "UTF-8", path, "-"], capture_output=True, text=True).stdout, int(pages.group(1))


# RTF destinations whose text is not the document's (tables of fonts, colours, styles; pictures,
# field instructions and other machine data).
RTF_SKIPPED = {
    "fonttbl", "colortbl", "stylesheet", "info", "pict", "themedata", "colorschememapping", "datastore",
    "latentstyles", "listtable", "listoverridetable", "rsidtbl", "generator", "xmlnstbl", "mmathPr",
    "fldinst", "object", "objdata", "revtbl", "pgdsctbl",
}


# RTF font charsets and the code pages their \\'hh bytes are in.
RTF_CHARSETS = {
    0: "cp1252", 128: "cp932", 129: "cp949", 134: "gbk", 136: "big5", 161: "cp1253", 162: "cp1254",
    177: "cp1255", 178: "cp1256", 186: "cp1257", 204: "cp1251", 222: "cp874", 238: "cp1250",
}


def rtf_text(data):
    """The text of an RTF file: control words dropped, \\'hh (in the current font's charset, else
    the document's code page) and \\uN decoded, skipped destinations left out."""
    source = data.decode("latin1")
    codepage = re.search(r"\\ansicpg(\d+)", source[:4096])
    default = "cp%s" % codepage.group(1) if codepage else "cp1252"
    try:
        "".encode(default)
    except LookupError:
        default = "cp1252"
    fonts = {int(number): RTF_CHARSETS.get(int(charset), default)
             for number, charset in re.findall(r"\\f(\d+)[^;{}]*?\\fcharset(\d+)", source)}
    parts = []
    escaped = bytearray()  # consecutive \\'hh bytes: one character may take two (Shift-JIS, GBK)
    stack = [[False, None, False]]  # per group: skipped (a destination)? its font; hidden (\\v)?
    token = re.compile(r"\\'([0-9a-fA-F]{2})|\\u(-?\d+) ?|\\([a-zA-Z]+)(-?\d+)? ?|\\(.)|([{}])|([^\\{}]+)", re.S)
    fresh_group = False
    pending_skip = 0
    fallback = 1  # \\ucN: the bytes after \\uN that stand in for it in readers without Unicode

    def flush():
        if escaped:
            parts.append(escaped.decode(fonts.get(stack[-1][1], default), "replace"))
            escaped.clear()

    for match in token.finditer(source):
        hexa, uni, word, number, symbol, brace, text = match.groups()
        if hexa is None:
            flush()
        if brace == "{":
            stack.append(list(stack[-1]))
            fresh_group = True
            continue
        if brace == "}":
            if len(stack) > 1:
                stack.pop()
            continue
        if (symbol == "*" or word in RTF_SKIPPED) and fresh_group:
            stack[-1][0] = True
        if word == "f" and number is not None:
            stack[-1][1] = int(number)
        if word == "uc" and number is not None:
            fallback = int(number)
        if word == "v":  # hidden text, not shown
            stack[-1][2] = number != "0"
        fresh_group = False
        if stack[-1][0] or stack[-1][2]:
            continue
        if word in ("par", "line", "tab", "cell", "row", "sect", "page"):
            parts.append(" ")
        elif hexa is not None:
            if pending_skip:
                pending_skip -= 1
            else:
                escaped.append(int(hexa, 16))
        elif uni is not None:
            parts.append(chr(int(uni) % 65536))
            pending_skip = fallback
        elif symbol is not None and symbol in "\\{}":
            parts.append(symbol)
        elif text is not None:
            text = text.replace("\r", "").replace("\n", "")
            if pending_skip and text:
                dropped = min(pending_skip, len(text))
                text = text[dropped:]
                pending_skip -= dropped
            parts.append(text)
    flush()
    return "".join(parts)


def latex_text(source):
    """The prose of a LaTeX document: its body, without comments, commands and environment names
    (arguments stay, as they are mostly text: section titles, emphasis, captions)."""
    body = re.search(r"\\begin\{document\}(.*?)(\\end\{document\}|$)", source, re.S)
    text = body.group(1) if body else source
    text = re.sub(r"(?<!\\)%.*", " ", text)
    text = re.sub(r"\\(begin|end)\s*\{[^}]*\}(\{[^}]*\}|\[[^\]]*\])*", " ", text)
    text = re.sub(r"\\(label|ref|cite|includegraphics|url|href|eqref|pageref|hypertarget)\s*(\[[^\]]*\])?\{[^}]*\}", " ", text)
    text = re.sub(r"\\[a-zA-Z@]+\*?", " ", text)
    return text


def json_strings(value, parts):
    """Every string of a JSON document, keys and values, in order."""
    if isinstance(value, str):
        parts.append(value)
    elif isinstance(value, list):
        for item in value:
            json_strings(item, parts)
    elif isinstance(value, dict):
        for key, item in value.items():
            parts.append(key)
            json_strings(item, parts)
    return parts


def ole_text(data):
    """Runs of printable text in an OLE file, 8-bit and UTF-16: Word, Excel and PowerPoint keep text either way."""
    # 8-bit runs: ASCII only, since any byte is a Latin-1 letter and would glue to a word's end.
    runs = re.findall(r"[\x20-\x7e]{3,}", data.decode("latin1"))
    for start in (0, 1):
        runs += re.findall(r"[\x20-\x7e\u00a0-\u024f\u2010-\u201f]{3,}", data[start:].decode("utf-16-le", "replace"))
    return "\n".join(runs)


def image_text(path, fmt):
    from PIL import Image, ImageStat
    expected = {"png": "PNG", "jpg": "JPEG", "tiff": "TIFF", "webp": "WEBP"}[fmt]
    image = Image.open(path)
    image.load()
    if image.format != expected:
        fail("Pillow reads %s, not %s" % (image.format, expected))
    mean = sum(ImageStat.Stat(image.convert("L")).mean)
    if mean >= 254.99 or image.width < 16 or image.height < 16:
        fail("a blank or tiny image (%dx%d, mean %.2f)" % (image.width, image.height, mean))
    return ""


def pages_zip_text(path):
    """A ZIP of pages (target zip, option each; default PNG): members page-001.<ext>, ... in order,
    each read as its own format; the text is theirs joined, the page count the members'."""
    import tempfile
    archive = zipfile.ZipFile(path)
    names = archive.namelist()
    if not names:
        fail("an empty ZIP")
    texts = []
    with tempfile.TemporaryDirectory() as folder:
        for index, name in enumerate(names):
            match = re.fullmatch(r"page-(\d{3,})\.(png|jpg|tiff|webp|txt|pdf)", name)
            if not match or int(match.group(1)) != index + 1:
                fail("member %d is %r, not page-%03d.<format>" % (index + 1, name, index + 1))
            member = archive.extract(name, folder)
            fmt = match.group(2)
            if fmt == "pdf":
                texts.append(pdf_text(member, fmt)[0])
            elif fmt == "txt":
                texts.append(open(member, encoding="utf-8").read())
            else:
                texts.append(image_text(member, fmt))
    return " ".join(texts), len(names)


# Root elements of the XML vocabularies pandoc writes (their text is read as any XML's).
XML_ROOTS = {"tei": "TEI", "jats": "article", "icml": "Document"}


def xml_vocabulary_text(data, fmt):
    """The text of a TEI, JATS or ICML document, which must parse and have its vocabulary's root."""
    text = xml_text(data)
    root = xml.dom.minidom.parseString(data).documentElement.localName
    if root != XML_ROOTS[fmt]:
        fail("the root element is <%s>, not <%s>" % (root, XML_ROOTS[fmt]))
    return text


def troff_text(path, fmt):
    """A man page or ms document as groff typesets it (text, no overstriking): groff, not pandoc, reads it."""
    macros = {"man": "-man", "ms": "-ms"}[fmt]
    result = subprocess.run(["groff", "-k", macros, "-Tutf8", "-P-cbou", path], capture_output=True)
    if result.returncode != 0:
        fail("groff %s failed: %s" % (macros, result.stderr.decode("utf-8", "replace").strip()))
    return result.stdout.decode("utf-8", "replace")


def texinfo_text(path):
    """A Texinfo document as GNU makeinfo formats it to plain text (it refuses an invalid one)."""
    result = subprocess.run(["makeinfo", "--plaintext", "--no-split", "-o", "-", path], capture_output=True)
    if result.returncode != 0:
        fail("makeinfo failed: %s" % result.stderr.decode("utf-8", "replace").strip())
    return result.stdout.decode("utf-8", "replace")


def context_text(source):
    """The prose of a ConTeXt document: between \\starttext and \\stoptext, commands left out."""
    body = re.search(r"\\starttext(.*?)\\stoptext", source, re.S)
    if not body:
        fail("not a complete ConTeXt document (no \\starttext ... \\stoptext)")
    text = re.sub(r"(?<!\\)%.*", " ", body.group(1))
    return re.sub(r"\\[a-zA-Z]+", " ", text)


class SlideText(html.parser.HTMLParser):
    """The text of each slide of an HTML slide show: reveal.js and DZSlides make each a <section>
    (reveal.js marks them class "slide"), Slidy a <div class="slide">."""

    def __init__(self, fmt):
        super().__init__()
        self.fmt = fmt
        self.slides = []
        self.depth = 0
        self.stack = []

    def is_slide(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if self.fmt == "slidy":
            return tag == "div" and "slide" in classes
        if self.fmt == "revealjs":
            return tag == "section" and "slide" in classes
        return tag == "section"

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "meta", "link", "hr", "input"):
            return
        opens = self.is_slide(tag, attrs)
        self.stack.append(opens)
        if opens:
            self.slides.append("")
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in ("br", "img", "meta", "link", "hr", "input") or not self.stack:
            return
        if self.stack.pop():
            self.depth -= 1

    def handle_data(self, data):
        if self.depth > 0:
            self.slides[-1] += " " + data


def slide_texts(data, fmt):
    """Each slide's text, in order."""
    source = data.decode("utf-8", "replace")
    if fmt == "beamer":
        # Each frame, and each section's page (pandoc's template gives every \\section and
        # \\subsection a frame of its own through \\AtBeginSection).
        return [match.group(1) or match.group(2) for match in re.finditer(r"\\begin\{frame\}(.*?)\\end\{frame\}|\\(?:sub)?section\{([^}]*)\}", source, re.S)]
    parser = SlideText(fmt)
    parser.feed(source)
    return parser.slides


def read(path, fmt):
    pages = None
    data = open(path, "rb").read()
    if not data:
        fail("empty file")
    if fmt in ZIP_FORMATS:
        text = zip_text(path, fmt)
    elif fmt in ("doc", "xls", "ppt"):
        if not data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
            fail("not an OLE compound file")
        text = ole_text(data)
    elif fmt in ("mobi", "azw3"):
        text = mobi_text(path)
    elif fmt in ("pdf", "pdfa"):
        text, pages = pdf_text(path, fmt)
    elif fmt == "zip":
        text, pages = pages_zip_text(path)
    elif fmt in ("png", "jpg", "tiff", "webp"):
        text = image_text(path, fmt)
    elif fmt == "svg":
        text = xml_text(data)
        if b"<svg" not in data[:4096]:
            fail("no <svg> root element")
    elif fmt in ("eps", "ps"):
        if not data.startswith(b"%!PS"):
            fail("no %!PS header")
        text = ""
    elif fmt == "rtf":
        if not data.startswith(b"{\\rtf"):
            fail("no {\\rtf header")
        text = rtf_text(data)
    elif fmt == "html":
        text = html_text(data)
    elif fmt in ("fb2", "docbook", "opml"):
        text = xml_text(data)
    elif fmt in XML_ROOTS:
        text = xml_vocabulary_text(data, fmt)
    elif fmt in ("revealjs", "slidy", "dzslides"):
        text = html_text(data)
    elif fmt in ("man", "ms"):
        text = troff_text(path, fmt)
    elif fmt == "texinfo":
        text = texinfo_text(path)
    elif fmt == "beamer":
        source = data.decode("utf-8")
        if not re.search(r"\\documentclass(\[[^\]]*\])?\{beamer\}", source) or not re.search(r"\\begin\{frame\}|\\(sub)?section\{", source):
            fail("not a Beamer document (no \\documentclass{beamer}, or neither a frame nor a section)")
        # The title page shows the preamble's \title; a frame's title is its environment's argument,
        # which latex_text drops with the environment; a section shows on its own section page.
        titles = " ".join(re.findall(r"\\(?:sub)?title\{([^}]*)\}", source.split("\\begin{document}")[0]))
        body = re.search(r"\\begin\{document\}(.*?)\\end\{document\}", source, re.S)
        text = re.sub(r"\\(begin|end)\s*\{[^}]*\}", " ", body.group(1) if body else source)
        text = titles + " " + re.sub(r"\\[a-zA-Z@]+\*?", " ", re.sub(r"(?<!\\)%.*", " ", text))
    elif fmt == "context":
        text = context_text(data.decode("utf-8"))
    elif fmt == "csljson":
        try:
            items = json.loads(data)
        except ValueError as error:
            fail("not JSON: %s" % error)
        if not isinstance(items, list) or not all(isinstance(item, dict) and "id" in item and "type" in item for item in items):
            fail("not CSL JSON (an array of items with an id and a type)")
        text = " ".join(json_strings(items, []))
    elif fmt in ("bibtex", "biblatex"):
        text = data.decode("utf-8")
        if not re.search(r"^@[a-zA-Z]+\{[^,\s]+,", text, re.M):
            fail("no BibTeX entry (@type{key,)")
    elif fmt == "xml":
        text = xml_text(data, names=True)
    elif fmt in ("ipynb", "json"):
        try:
            text = " ".join(json_strings(json.loads(data), []))
        except ValueError as error:
            fail("not JSON: %s" % error)
    elif fmt == "tex":  # a LaTeX source, read for its prose
        text = latex_text(data.decode("utf-8", "replace"))
    elif fmt == "latex":
        text = data.decode("utf-8")
        if "\\begin{document}" not in text:
            fail("not a complete LaTeX document")
    else:  # plain text and markup: valid UTF-8 is all that can be asked
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            fail("not UTF-8: %s" % error)
    answer = {"text": text, "pages": pages}
    if fmt in ("revealjs", "slidy", "dzslides", "beamer"):
        answer["slides"] = slide_texts(data, fmt)
    return answer


def main():
    if sys.argv[1:] == ["--batch"]:
        from line_requests import requests
        for line in requests():
            path, fmt = json.loads(line)
            try:
                answer = read(path, fmt)
            except Invalid as error:
                answer = {"error": str(error)}
            except Exception as error:  # a reader's own failure on a broken file: that file's answer
                answer = {"error": "%s: %s" % (type(error).__name__, error)}
            print(json.dumps(answer), flush=True)
        return
    try:
        print(json.dumps(read(sys.argv[1], sys.argv[2])))
    except Invalid as error:
        sys.stderr.write(str(error) + "\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
