#!/usr/bin/python3
"""Reads a data file with Python's standard library (and PyYAML), independently of the npm
libraries convertd uses, and prints its records as JSON: a list of flat objects with text values,
or with --typed, each value as the format types it (numbers, booleans and text in json, ndjson,
yaml and toml; number, boolean and text cells in xlsx and ods; text only in csv, tsv and xml).

    read_data.py FILE FORMAT [--typed] [--formulas]
    read_data.py --serve      (many files, one JSON request a line: see serve())

XML is mapped as convertd documents it: attributes as "@_name" keys, text beside them as "#text",
names with the prefixes the document wrote. --formulas reads a source workbook's cached formula
results (by default a formula in an xlsx is refused: convertd never writes one).

TSV is read as IANA text/tab-separated-values: no quoting, a quote is a plain character.

plist with plistlib (XML and binary), ini with configparser (records: sections named 0, 1, 2...),
msgpack and cbor with Debian's python3-msgpack and python3-cbor2; .properties and JSON5 have no
module in Debian's Python: each is read by a small reader below, written from its specification
(the Java Properties.load rules; JSON5's grammar turned into JSON text for json.loads).
"""
import configparser
import csv
import io
import json
import plistlib
import re
import sys
import tomllib
import xml.etree.ElementTree as ET
from xml.parsers import expat
import zipfile

import yaml

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def table_records(rows):
    """Rows to records keyed by the header; an empty header cell is named columnN, as convertd documents."""
    header, *body = rows
    header = [str(name).strip() or f"column{index + 1}" for index, name in enumerate(header)]
    return [dict(zip(header, row + [""] * (len(header) - len(row)))) for row in body]


def column_index(reference):
    """"BC12" → 54 (zero-based)."""
    index = 0
    for char in reference:
        if not "A" <= char <= "Z":
            break
        index = index * 26 + ord(char) - 64
    return index - 1


def number(text):
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def xlsx_rows(path, typed=False, formulas=False):
    with zipfile.ZipFile(path) as book:
        shared = []
        if "xl/sharedStrings.xml" in book.namelist():
            for item in ET.fromstring(book.read("xl/sharedStrings.xml")).findall("m:si", NS):
                shared.append("".join(t.text or "" for t in item.iter("{%s}t" % NS["m"])))
        sheet = ET.fromstring(book.read("xl/worksheets/sheet1.xml"))
        # Calc writes a boolean as =TRUE() or =FALSE() (it has no boolean type); any other formula is
        # refused (convertd never writes one), unless reading a source with --formulas (cached values).
        if not formulas and any((f.text or "").strip() not in ("TRUE()", "FALSE()") for f in sheet.iterfind(".//m:f", NS)):
            raise SystemExit("the sheet holds a formula")
        rows = []
        for row in sheet.findall(".//m:row", NS):
            # Rows and cells where their r attributes put them: blank rows between data rows stay.
            row_number = int(row.get("r", len(rows) + 1))
            rows.extend([[] for _ in range(row_number - 1 - len(rows))])
            values = []
            for cell in row.findall("m:c", NS):
                if cell.get("r"):
                    values.extend([""] * (column_index(cell.get("r")) - len(values)))
                kind, value = cell.get("t"), cell.find("m:v", NS)
                inline = cell.find("m:is/m:t", NS)
                if kind == "s":
                    values.append(shared[int(value.text)])
                elif kind == "inlineStr":
                    values.append(inline.text or "")
                elif typed and kind == "b":
                    values.append(value.text == "1")
                elif typed and kind in (None, "n") and value is not None:
                    values.append(number(value.text))
                else:
                    values.append(value.text if value is not None else "")
            while values and values[-1] == "":
                values.pop()
            rows.append(values)
        while rows and not rows[-1]:
            rows.pop()
        return rows


ODS = {
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
}


def ods_rows(path, typed=False):
    with zipfile.ZipFile(path) as book:
        if book.read("mimetype") != b"application/vnd.oasis.opendocument.spreadsheet":
            raise SystemExit("not an ODS mimetype")
        root = ET.fromstring(book.read("content.xml"))
    table = root.find(".//table:table", ODS)
    rows = []
    pending = 0  # empty rows, kept only when data follows them (as sheets declare a million empty rows)
    for row in table.iter("{%s}table-row" % ODS["table"]):
        row_repeat = int(row.get("{%s}number-rows-repeated" % ODS["table"], "1"))
        values = []
        for cell in row.findall("table:table-cell", ODS):
            repeat = int(cell.get("{%s}number-columns-repeated" % ODS["table"], "1"))
            text = "\n".join("".join(p.itertext()) for p in cell.findall("text:p", ODS))
            kind = cell.get("{%s}value-type" % ODS["office"])
            if typed and kind in ("float", "percentage", "currency"):
                text = number(cell.get("{%s}value" % ODS["office"]))
            elif typed and kind == "boolean":
                text = cell.get("{%s}boolean-value" % ODS["office"]) == "true"
            values.extend([text] * min(repeat, 1000))
        while values and values[-1] == "":
            values.pop()
        if values:
            rows.extend([[]] * pending)
            pending = 0
            rows.extend([values] * min(row_repeat, 1000))
        else:
            pending += row_repeat
    return rows


def unwrap(tree):
    """root/item (XML) or items (TOML) or a single-key wrapper around the record list."""
    while isinstance(tree, dict) and len(tree) == 1:
        tree = next(iter(tree.values()))
    return tree if isinstance(tree, list) else [tree]


class XmlTree:
    """Builds convertd's mapping of XML with expat, names as the document wrote them (no namespace
    processing): attributes as "@_name" (xmlns declarations too), text trimmed, beside child
    elements or attributes as "#text", repeated children as a list."""

    def __init__(self):
        self.stack = [{"children": [], "attributes": {}, "text": []}]

    def start(self, name, attributes):
        self.stack.append({"name": name, "children": [], "attributes": attributes, "text": []})

    def end(self, name):
        node = self.stack.pop()
        self.stack[-1]["children"].append((node["name"], self.value(node)))

    def chars(self, data):
        self.stack[-1]["text"].append(data)

    @staticmethod
    def value(node):
        text = "".join(node["text"]).strip()
        if not node["children"] and not node["attributes"]:
            return text
        # Attribute values trimmed: a documented loss of convertd's XML reader (README). Only spaces:
        # XML turns a literal line break or tab in an attribute into a space, while a character
        # reference (&#xA;) is data, which convertd keeps.
        out = {f"@_{name}": value.strip(" ") for name, value in node["attributes"].items()}
        for name, value in node["children"]:
            if name in out:
                out[name] = out[name] if isinstance(out[name], list) else [out[name]]
                out[name].append(value)
            else:
                out[name] = value
        if text:
            out["#text"] = text
        return out


def parse_xml(data):
    tree = XmlTree()
    parser = expat.ParserCreate()
    parser.StartElementHandler, parser.EndElementHandler, parser.CharacterDataHandler = tree.start, tree.end, tree.chars
    parser.Parse(data, True)
    return dict(tree.stack[0]["children"])


def read_text(path):
    data = open(path, "rb").read()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16")
    return data.decode("utf-8-sig")


def json5_to_json(text):
    """JSON5 as JSON text: comments dropped, identifier keys and single-quoted strings quoted,
    trailing commas dropped, JSON5's numbers (hex, leading +, bare dot, Infinity, NaN) spelled as
    Python's json accepts them."""
    token = re.compile(r"""\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[{}\[\]:,]|[^\s{}\[\]:,'"/]+""", re.S)
    out, position = [], 0
    for match in token.finditer(text):
        if match.start() != position:
            raise SystemExit(f"JSON5: unexpected text at {position}")
        position = match.end()
        part = match.group()
        if part[0].isspace() or part.startswith(("//", "/*")):
            continue
        if part[0] in "\"'":
            body = part[1:-1]
            value = re.sub(r"\\(?:\r\n|[\n\r\u2028\u2029])", "", body)  # line continuations
            value = re.sub(r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", lambda m: {"'": "'", '"': '"', "0": "\0"}.get(m.group(1)) or json.loads('"\\' + (("u00" + m.group(1)[1:]) if m.group(1)[0] == "x" else m.group(1)) + '"'), value)
            out.append(json.dumps(value))
        elif part in "{}[]:,":
            if part in "}]" and out and out[-1] == ",":
                out.pop()
            out.append(part)
        elif re.fullmatch(r"[+-]?(?:0[xX][0-9a-fA-F]+)", part):
            out.append(str(int(part, 16)))
        elif re.fullmatch(r"[+-]?(?:Infinity|NaN)", part):
            out.append(part.lstrip("+"))
        elif re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", part):
            number_text = part.lstrip("+")
            number_text = re.sub(r"^(-?)\.", r"\g<1>0.", number_text)
            out.append(re.sub(r"\.(?=$|[eE])", ".0", number_text))
        elif part in ("true", "false", "null"):
            out.append(part)
        else:
            out.append(json.dumps(part))  # an identifier key
    return "".join(out)


def read_properties(text):
    """Java's Properties.load: logical lines (a trailing odd backslash continues them), # and !
    comments, key ending at the first unescaped =, : or white space, escapes \\uXXXX \\t \\n..."""
    result, lines, pending = {}, text.splitlines(), None
    for raw in lines:
        line = raw.lstrip(" \t\f") if pending is not None else raw
        if pending is None:
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        logical, pending = (pending or "") + line, None
        key_chars, index = [], 0
        while index < len(logical) and logical[index] not in "=: \t\f":
            step = 2 if logical[index] == "\\" else 1  # an escaped separator belongs to the key
            key_chars.append(logical[index : index + step])
            index += step
        while index < len(logical) and logical[index] in " \t\f":
            index += 1
        if index < len(logical) and logical[index] in "=:":
            index += 1
            while index < len(logical) and logical[index] in " \t\f":
                index += 1
        unescape = lambda s: re.sub(r"\\(u[0-9a-fA-F]{4}|.)", lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "u" and len(m.group(1)) == 5 else {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(m.group(1), m.group(1)), s)
        result[unescape("".join(key_chars))] = unescape(logical[index:])
    return result


def from_dotted(flat):
    """Dotted keys (0.name) as the tree they spell; tables keyed 0, 1, 2... as lists."""
    tree = {}
    for key, value in flat.items():
        node, parts = tree, key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return as_lists(tree)


def as_lists(tree):
    if isinstance(tree, dict):
        tree = {key: as_lists(value) for key, value in tree.items()}
        if tree and list(tree) == [str(i) for i in range(len(tree))]:
            return list(tree.values())
    return tree


def read_ini(text):
    parser = configparser.ConfigParser(interpolation=None, strict=True, default_section="\0none")
    parser.optionxform = str  # keys keep their case
    parser.read_string(text)
    # A dotted section name ([people.0]) is a nested table, as INI writers that nest spell it.
    tree = {}
    for name in parser.sections():
        node = tree
        for part in name.split("."):
            node = node.setdefault(part, {})
        node.update(parser.items(name, raw=True))
    return as_lists(tree)


def read(path, fmt, typed=False, formulas=False):
    """The records of one file, as JSON-ready lists of flat objects."""
    text = None if fmt in ("xlsx", "ods", "plist", "msgpack", "cbor") else read_text(path)
    if fmt in ("csv", "tsv"):
        if fmt == "tsv":
            rows = list(csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))
        else:
            rows = list(csv.reader(io.StringIO(text)))
        records = table_records(rows)
    elif fmt == "xlsx":
        records = table_records(xlsx_rows(path, typed, formulas))
    elif fmt == "ods":
        records = table_records(ods_rows(path, typed))
    elif fmt == "json":
        records = unwrap(json.loads(text))
    elif fmt == "ndjson":
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    elif fmt == "yaml":
        records = unwrap(yaml.safe_load(text))
    elif fmt == "toml":
        records = unwrap(tomllib.loads(text))
    elif fmt == "plist":
        records = unwrap(plistlib.loads(open(path, "rb").read()))
    elif fmt == "json5":
        records = unwrap(json.loads(json5_to_json(text)))
    elif fmt == "ini":
        records = unwrap(read_ini(text))
    elif fmt == "properties":
        records = unwrap(from_dotted(read_properties(text)))
    elif fmt == "msgpack":
        import msgpack
        records = unwrap(msgpack.unpackb(open(path, "rb").read(), raw=False, strict_map_key=False))
    elif fmt == "cbor":
        import cbor2
        records = unwrap(cbor2.loads(open(path, "rb").read()))
    elif fmt == "xml":
        records = unwrap(parse_xml(open(path, "rb").read()))  # the bytes: expat follows the declared encoding
    else:
        raise SystemExit(f"unknown format {fmt}")
    value = (lambda v: v) if typed else str
    return [{str(k): value(v) for k, v in record.items()} if isinstance(record, dict) else {"value": value(record)} for record in records]


def serve():
    """--serve: one JSON request a line on stdin, [FILE, FORMAT, TYPED, FORMULAS] (the flags as
    the command line's), one JSON answer a line: {"records": [...]} or {"error": "..."}; a test
    file's many checks share one Python process (test/helpers/data-reader.ts)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        path, fmt, typed, formulas = json.loads(line)
        try:
            answer = {"records": read(path, fmt, bool(typed), bool(formulas))}
        except (Exception, SystemExit) as error:  # the test reports it; the process goes on
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer, ensure_ascii=False), flush=True)


def main():
    if sys.argv[1:] == ["--serve"]:
        return serve()
    path, fmt = sys.argv[1], sys.argv[2]
    print(json.dumps(read(path, fmt, "--typed" in sys.argv[3:], "--formulas" in sys.argv[3:]), ensure_ascii=False))


main()
