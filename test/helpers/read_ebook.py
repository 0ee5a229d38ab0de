#!/usr/bin/python3
"""Reads ebooks calibre wrote, with code that is not calibre's, for test/ebook-formats.test.ts.

Reads a JSON list of jobs on stdin, each {"path": file, "format": id, "pages": [picture, ...]
(optional)}, and prints a JSON list of results in the same order, each {"text": the words the
book shows, "pictures": how many pictures it holds, "matches": for each of "pages", the best
correlation (-1..1) of that page with a picture of the book} or {"error": why it is not a valid
file of its format}. One Python start for many files (Pillow and numpy take a while to import).

The formats of today (epub, docx, fb2, mobi, azw3, pdf, txt) are read by read_document.py's
readers; the older ones here, each from its published layout: PalmDOC (pdb), BBeB (lrf: its
text streams, zlib-compressed UTF-16), Rocket eBook (rb: a table of entries, the text in zlib
chunks), Shanda Bambook (snb: its plain files in bzip2 blocks), Psion TCR (a dictionary of 256
strings, each byte of the text one of them), PMLZ/HTMLZ/TXTZ (ZIP files of PML, HTML or text).
Pictures are compared as calibre's comic output makes them (a page scaled to fit the reader's
screen in its proportions, white around it): each page is fitted so into a white canvas of the
picture's size, then both are turned grey, reduced to 32x32 and correlated (Pearson).
"""
import bz2
import contextlib
import io
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


class Invalid(Exception):
    pass


def load_read_document():
    """read_document.py's functions, without running its command line (it runs only as __main__)."""
    path = os.path.join(HERE, "read_document.py")
    source = open(path).read()
    namespace = {"__name__": "read_document"}
    exec(compile(source, path, "exec"), namespace)
    return namespace


RD = load_read_document()


def call(function, *args):
    """A read_document.py reader, whose failure (a message and exit 1) becomes Invalid."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return function(*args)
    except SystemExit:
        raise Invalid(err.getvalue().strip())


def palm_records(data, kinds):
    """The records of a Palm database whose type and creator are one of `kinds`."""
    if data[60:68] not in kinds:
        raise Invalid("type/creator %r" % data[60:68])
    count = struct.unpack(">H", data[76:78])[0]
    offsets = [struct.unpack(">I", data[78 + 8 * n:82 + 8 * n])[0] for n in range(count)] + [len(data)]
    return [data[offsets[n]:offsets[n + 1]] for n in range(count)]


def pdb_text(data):
    records = palm_records(data, (b"TEXtREAd",))
    compression, _, length, count = struct.unpack(">HHIH", records[0][:10])
    if compression not in (1, 2):
        raise Invalid("PalmDOC compression %d" % compression)
    text = b"".join(RD["palmdoc_decompress"](r) if compression == 2 else r for r in records[1:1 + count])
    return text.decode("cp1252", "replace")


def lrf_text(data):
    if not data.startswith(b"L\0R\0F\0\0\0"):
        raise Invalid("no LRF signature")
    parts = []
    # A stream: tag F554 (flags), F504 (size), F505 (start), the bytes, F506 (end). Flag 0x100:
    # zlib-compressed, after a 4-byte uncompressed size.
    for match in re.finditer(rb"\x54\xf5(..)\x04\xf5(....)\x05\xf5", data, re.S):
        flags = struct.unpack("<H", match.group(1))[0]
        size = struct.unpack("<I", match.group(2))[0]
        stream = data[match.end():match.end() + size]
        if flags & 0x100:
            try:
                stream = zlib.decompress(stream[4:])
            except zlib.error as error:
                raise Invalid("a damaged stream: %s" % error)
        # In a text stream, tag F5CC is a string: its length in bytes, then UTF-16LE.
        for text in re.finditer(rb"\xcc\xf5(..)", stream, re.S):
            length = struct.unpack("<H", text.group(1))[0]
            parts.append(stream[text.end():text.end() + length].decode("utf-16-le", "replace"))
    return " ".join(parts)


def rb_text(data):
    if not data.startswith(b"\xb0\x0c\xb0\x0c\x02\x00NUVO"):
        raise Invalid("no Rocket eBook signature")
    toc = struct.unpack("<I", data[0x18:0x1c])[0]
    count = struct.unpack("<I", data[toc:toc + 4])[0]
    parts = []
    for n in range(count):
        entry = data[toc + 4 + 44 * n:toc + 48 + 44 * n]
        name = entry[:32].rstrip(b"\0").decode("latin1")
        size, offset, flags = struct.unpack("<III", entry[32:44])
        if not name.endswith(".html"):
            continue
        body = data[offset:offset + size]
        if flags & 8:  # compressed: the chunk count, the text's length, each chunk's size, the chunks
            chunks, _ = struct.unpack("<II", body[:8])
            sizes = struct.unpack("<%dI" % chunks, body[8:8 + 4 * chunks])
            position, text = 8 + 4 * chunks, b""
            for chunk in sizes:
                text += zlib.decompress(body[position:position + chunk])
                position += chunk
            body = text
        parts.append(RD["html_text"](body.decode("cp1252", "replace"), False))
    if not parts:
        raise Invalid("no HTML entry")
    return " ".join(parts)


def snb_text(data):
    if not data.startswith(b"SNBP000B"):
        raise Invalid("no SNB signature")
    files = struct.unpack(">i", data[20:24])[0]
    compressed = struct.unpack(">i", data[28:32])[0]
    names = zlib.decompress(data[44:44 + compressed])[files * 12:].split(b"\0")
    if not any(name.startswith(b"snbc/") for name in names):
        raise Invalid("no chapter (snbc/) among %r" % names)
    # The plain files (XML) are bzip2-compressed blocks: every one found is read.
    parts, position = [], 0
    while True:
        position = data.find(b"BZh", position)
        if position < 0:
            break
        try:
            parts.append(bz2.BZ2Decompressor().decompress(data[position:]).decode("utf-8", "replace"))
        except (OSError, EOFError):
            pass
        position += 3
    # The text is in CDATA sections: their brackets go first, then the tags.
    return " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"<!\[CDATA\[|\]\]>", " ", part)) for part in parts)


def tcr_text(data):
    if not data.startswith(b"!!8-Bit!!"):
        raise Invalid("no TCR signature")
    position, words = 9, []
    for _ in range(256):
        length = data[position]
        words.append(data[position + 1:position + 1 + length])
        position += 1 + length
    return b"".join(words[byte] for byte in data[position:]).decode("cp1252", "replace")


def pml_text(text):
    """PML's words: codes (\\p, \\x, \\B, \\Cn="...", \\m="..."...) left out."""
    return re.sub(r'\\(?:[A-Za-z]\d?(?:="[^"]*")?|\\)', " ", text)


def zipped(path, pattern):
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as error:
        raise Invalid("not a ZIP file: %s" % error)
    names = [name for name in archive.namelist() if re.search(pattern, name)]
    if not names:
        raise Invalid("no member like %s among %s" % (pattern, archive.namelist()))
    return [archive.read(name).decode("utf-8", "replace") for name in names]


def text_of(path, fmt):
    data = open(path, "rb").read()
    if not data:
        raise Invalid("empty file")
    if fmt in ("epub", "docx"):
        return call(RD["zip_text"], path, fmt)
    if fmt in ("mobi", "azw3"):
        return call(RD["mobi_text"], path)
    if fmt == "pdf":
        return call(RD["pdf_text"], path, fmt)[0]
    if fmt == "fb2":
        return call(RD["xml_text"], data)
    if fmt == "txt":
        return data.decode("utf-8")
    if fmt == "htmlz":
        return " ".join(RD["html_text"](page) for page in zipped(path, r"^index\.html$"))
    if fmt == "txtz":
        return " ".join(zipped(path, r"^index\.txt$"))
    if fmt == "pmlz":
        return " ".join(pml_text(page) for page in zipped(path, r"\.pml$"))
    readers = {"pdb": pdb_text, "lrf": lrf_text, "rb": rb_text, "snb": snb_text, "tcr": tcr_text}
    if fmt in readers:
        return readers[fmt](data)
    raise Invalid("no reader for %s" % fmt)


def pictures_of(path, fmt):
    """The pictures a book holds, decoded by Pillow."""
    found = []
    if fmt == "epub":
        archive = zipfile.ZipFile(path)
        found = [archive.read(n) for n in archive.namelist() if re.search(r"\.(png|jpe?g|gif)$", n, re.I)]
    elif fmt in ("mobi", "azw3"):
        records = palm_records(open(path, "rb").read(), (b"BOOKMOBI",))
        found = [r for r in records if r[:3] == b"\xff\xd8\xff" or r[:8] == b"\x89PNG\r\n\x1a\n" or r[:4] == b"GIF8"]
    elif fmt == "pdf":
        with tempfile.TemporaryDirectory() as directory:
            subprocess.run(["pdfimages", "-png", path, os.path.join(directory, "i")], check=True, capture_output=True)
            found = [open(os.path.join(directory, n), "rb").read() for n in sorted(os.listdir(directory))]
    return [Image.open(io.BytesIO(picture)) for picture in found]


# A flat page (one grey all over) has no pattern to correlate: it matches a flat picture whose grey
# is within this many levels of its own. calibre's normalising moved the corpus's flat pages 10 to
# 23 levels (76 → 87, 150 → 127, 29 → 39).
FLAT_TOLERANCE = 32


def thumbnail(image):
    """A picture as calibre's comic output compares: grey, 32x32; its mean, and its pattern centred and scaled."""
    grey = np.asarray(image.convert("L").resize((32, 32), Image.BILINEAR), dtype=np.float64)
    mean = grey.mean()
    grey = grey - mean
    norm = np.sqrt((grey * grey).sum())
    return (mean, grey / norm if norm > 1e-6 * 32 * 32 else None)


def fitted(page, size):
    """The page as calibre places it on a screen of `size`: scaled to fit, centred, white around it."""
    scale = min(size[0] / page.width, size[1] / page.height)
    inner = page.convert("RGB").resize((max(1, round(page.width * scale)), max(1, round(page.height * scale))), Image.BILINEAR)
    canvas = Image.new("RGB", size, "white")
    canvas.paste(inner, ((size[0] - inner.width) // 2, (size[1] - inner.height) // 2))
    return canvas


def likeness(page, picture):
    """Pearson correlation of two thumbnails; for two flat ones, 1 when their greys are close."""
    if page[1] is None or picture[1] is None:
        return 1.0 if page[1] is None and picture[1] is None and abs(page[0] - picture[0]) <= FLAT_TOLERANCE else 0.0
    return float((page[1] * picture[1]).sum())


def main():
    results = []
    for job in json.load(sys.stdin):
        try:
            text = text_of(job["path"], job["format"]) if not job.get("pages") else ""
            result = {"text": text}
            if job.get("pages"):
                pictures = [(p.size, thumbnail(p)) for p in pictures_of(job["path"], job["format"])]
                result["pictures"] = len(pictures)
                pages = [Image.open(page) for page in job["pages"]]
                result["matches"] = [max([likeness(thumbnail(fitted(page, size)), p) for size, p in pictures] or [-1.0]) for page in pages]
            results.append(result)
        except (Invalid, OSError, ValueError, struct.error, IndexError, zlib.error, subprocess.CalledProcessError) as error:
            results.append({"error": "%s: %s" % (type(error).__name__, error)})
    print(json.dumps(results))


main()
