#!/usr/bin/python3
"""Reads a data file with Python's standard library (and PyYAML), independently of the npm
libraries convertd uses, and prints its records as JSON: a list of flat objects with text values,
or with --typed, each value as the format types it (numbers, booleans and text in json, ndjson,
yaml and toml; number, boolean and text cells in xlsx and ods; text only in csv, tsv and xml).

    read_data.py FILE FORMAT [--typed] [--formulas]

XML is mapped as convertd documents it: attributes as "@_name" keys, text beside them as "#text",
names with the prefixes the document wrote. --formulas reads a source workbook's cached formula
results (by default a formula in an xlsx is refused: convertd never writes one).

TSV is read as IANA text/tab-separated-values: no quoting, a quote is a plain character.
"""
import csv
import io
import json
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


def main():
    path, fmt = sys.argv[1], sys.argv[2]
    typed = "--typed" in sys.argv[3:]
    formulas = "--formulas" in sys.argv[3:]
    text = None if fmt in ("xlsx", "ods") else read_text(path)
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
    elif fmt == "xml":
        records = unwrap(parse_xml(open(path, "rb").read()))  # the bytes: expat follows the declared encoding
    else:
        raise SystemExit(f"unknown format {fmt}")
    value = (lambda v: v) if typed else str
    flat = [{str(k): value(v) for k, v in record.items()} if isinstance(record, dict) else {"value": value(record)} for record in records]
    print(json.dumps(flat, ensure_ascii=False))


main()
