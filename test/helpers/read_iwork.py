"""Reads the words an Apple iWork package holds, without LibreOffice (libetonyek): what a test
compares a conversion's output with. Prints {"kind": ..., "text": ...} as JSON.

    read_iwork.py FILE

- A package that carries Apple's own rendering of its pages (QuickLook/Preview.pdf, which Pages
  '09 writes): that PDF's text, by pdftotext (poppler; LibreOffice plays no part).
- Otherwise, Pages, Numbers and Keynote '09 (XML): the text of the paragraphs (sf:p) and table cells (the
  sfa:s of sf:ct, the numbers of sf:n) of the document's body: for Keynote the slides alone (not
  the theme's master slides), never template placeholders (sf:ghost-text), which no page shows.
- The binary format (Index/*.iwa, at the top or in a bundle's Index.zip): every UTF-8 string of
  every protobuf message, after undoing IWA's Snappy chunks (a small decoder below). That is more
  than a page shows (style and font names too), so a test looks for the output's words in it.
Python's standard library (zipfile, gzip, xml.dom.minidom), and pdftotext for a preview.
"""
import gzip
import io
import json
import subprocess
import sys
import tempfile
import xml.dom.minidom
import zipfile

SF = "http://developer.apple.com/namespaces/sf"
SFA = "http://developer.apple.com/namespaces/sfa"
KEY = "http://developer.apple.com/namespaces/keynote2"


def members_in_bundle(archive):
    """name -> ZipInfo, seen through a single top folder (a zipped document bundle)."""
    names = archive.namelist()
    top = names[0].split("/")[0] if names and "/" in names[0] else ""
    if top and all(n == top + "/" or n.startswith(top + "/") for n in names):
        return {n[len(top) + 1:]: n for n in names if n != top + "/"}
    return {n: n for n in names}


def xml_words(data, keynote):
    document = xml.dom.minidom.parseString(data)
    roots = document.getElementsByTagNameNS(KEY, "slide-list") if keynote else [document.documentElement]
    parts = []

    def walk(node):
        if node.nodeType == node.ELEMENT_NODE and node.namespaceURI == SF and node.localName == "ghost-text":
            return
        if node.nodeType == node.TEXT_NODE:
            parts.append(node.data)
        if node.nodeType == node.ELEMENT_NODE and node.namespaceURI == SF and node.localName == "ct" and node.hasAttributeNS(SFA, "s"):
            parts.append(" " + node.getAttributeNS(SFA, "s") + " ")
        if node.nodeType == node.ELEMENT_NODE and node.namespaceURI == SF and node.localName == "n" and node.hasAttributeNS(SF, "v"):
            parts.append(" " + node.getAttributeNS(SF, "v") + " ")
        for child in node.childNodes:
            walk(child)
        if node.nodeType == node.ELEMENT_NODE and node.localName in ("p", "t", "n", "br", "tab"):
            parts.append(" ")

    for root in roots:
        for body in root.getElementsByTagNameNS(SF, "text-body") + root.getElementsByTagNameNS(SF, "datasource"):
            walk(body)
    return "".join(parts)


def snappy(block):
    """A raw Snappy block, decoded."""
    at = 0
    while block[at] & 0x80:
        at += 1
    at += 1
    out = bytearray()
    while at < len(block):
        tag = block[at]
        at += 1
        kind = tag & 3
        if kind == 0:
            length = tag >> 2
            if length >= 60:
                extra = length - 59
                length = int.from_bytes(block[at:at + extra], "little")
                at += extra
            out += block[at:at + length + 1]
            at += length + 1
            continue
        if kind == 1:
            length, offset = ((tag >> 2) & 7) + 4, ((tag >> 5) << 8) | block[at]
            at += 1
        elif kind == 2:
            length, offset = (tag >> 2) + 1, int.from_bytes(block[at:at + 2], "little")
            at += 2
        else:
            length, offset = (tag >> 2) + 1, int.from_bytes(block[at:at + 4], "little")
            at += 4
        for _ in range(length):
            out.append(out[-offset])
    return bytes(out)


def iwa_chunks(data):
    at, out = 0, bytearray()
    while at + 4 <= len(data):
        length = int.from_bytes(data[at + 1:at + 4], "little")
        out += snappy(data[at + 4:at + 4 + length])
        at += 4 + length
    return bytes(out)


def varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def protobuf_strings(data, found, depth=0):
    """Every length-delimited field of a message that is UTF-8 text, and those of nested messages.
    Returns False when `data` does not parse as a message."""
    at = 0
    try:
        while at < len(data):
            key, at = varint(data, at)
            wire = key & 7
            if wire == 0:
                _, at = varint(data, at)
            elif wire == 1:
                at += 8
            elif wire == 5:
                at += 4
            elif wire == 2:
                length, at = varint(data, at)
                value = data[at:at + length]
                if len(value) != length:
                    return False
                at += length
                if depth > 30 or not protobuf_strings(value, found, depth + 1):
                    try:
                        found.append(value.decode("utf-8"))
                    except UnicodeDecodeError:
                        pass
            else:
                return False
        return at == len(data)
    except IndexError:
        return False


def iwa_text(archive, names):
    found = []
    for name in names:
        raw = archive.read(name) if name.endswith(".iwa") else b""
        # Snappy chunks start with a 0 byte; a few members are LZFSE ("bvx..."): no text of the pages.
        if raw[:1] == b"\0":
            data = iwa_chunks(raw)
            at = 0
            while at < len(data):  # objects: a varint header length, the ArchiveInfo, its messages
                length, at = varint(data, at)
                header, at = data[at:at + length], at + length
                lengths = []
                protobuf_message_lengths(header, lengths)
                for size in lengths:
                    protobuf_strings(data[at:at + size], found)
                    at += size
    return " ".join(found)


def protobuf_message_lengths(header, lengths):
    """The lengths (field 3) of each MessageInfo (field 2) of an ArchiveInfo."""
    at = 0
    while at < len(header):
        key, at = varint(header, at)
        if key & 7 == 0:
            _, at = varint(header, at)
        elif key & 7 == 2:
            length, at = varint(header, at)
            if key >> 3 == 2:
                info, inner = header[at:at + length], 0
                while inner < len(info):
                    ikey, inner = varint(info, inner)
                    if ikey & 7 == 0:
                        value, inner = varint(info, inner)
                        if ikey >> 3 == 3:
                            lengths.append(value)
                    elif ikey & 7 == 2:
                        ilength, inner = varint(info, inner)
                        inner += ilength
                    else:
                        inner += 8 if ikey & 7 == 1 else 4
            at += length
        else:
            at += 8 if key & 7 == 1 else 4


def main():
    archive = zipfile.ZipFile(sys.argv[1])
    members = members_in_bundle(archive)
    if "QuickLook/Preview.pdf" in members:
        with tempfile.NamedTemporaryFile(suffix=".pdf") as preview:
            preview.write(archive.read(members["QuickLook/Preview.pdf"]))
            preview.flush()
            text = subprocess.run(["pdftotext", "-q", preview.name, "-"], capture_output=True, text=True, check=True).stdout
        print(json.dumps({"kind": "preview", "text": text}))
        return
    for name, keynote in (("index.apxl", True), ("index.apxl.gz", True), ("index.xml", False), ("index.xml.gz", False)):
        if name in members:
            data = archive.read(members[name])
            if name.endswith(".gz"):
                data = gzip.decompress(data)
            print(json.dumps({"kind": "xml", "text": xml_words(data, keynote)}))
            return
    if "Index.zip" in members:
        inner = zipfile.ZipFile(io.BytesIO(archive.read(members["Index.zip"])))
        print(json.dumps({"kind": "iwa", "text": iwa_text(inner, inner.namelist())}))
        return
    print(json.dumps({"kind": "iwa", "text": iwa_text(archive, [n for n in archive.namelist() if n.startswith("Index/")])}))


if __name__ == "__main__":
    main()
