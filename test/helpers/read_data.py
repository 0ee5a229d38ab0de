#!/usr/bin/python3
"""Reads a data file with Python's standard library (and PyYAML), independently of the npm
libraries convertd uses, and prints its records as JSON: a list of flat objects with text values,
or with --typed, each value as the format types it (numbers, booleans and text in json, ndjson,
yaml and toml; number, boolean and text cells in xlsx and ods; text only in csv, tsv and xml).

    read_data.py FILE FORMAT [--typed]

TSV is read as IANA text/tab-separated-values: no quoting, a quote is a plain character.
"""
import csv
import io
import json
import sys
import tomllib
import xml.etree.ElementTree as ET
import zipfile

import yaml

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def table_records(rows):
    header, *body = rows
    return [dict(zip(header, row + [""] * (len(header) - len(row)))) for row in body]


def number(text):
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def xlsx_rows(path, typed=False):
    with zipfile.ZipFile(path) as book:
        shared = []
        if "xl/sharedStrings.xml" in book.namelist():
            for item in ET.fromstring(book.read("xl/sharedStrings.xml")).findall("m:si", NS):
                shared.append("".join(t.text or "" for t in item.iter("{%s}t" % NS["m"])))
        sheet = ET.fromstring(book.read("xl/worksheets/sheet1.xml"))
        # Calc writes a boolean as =TRUE() or =FALSE() (it has no boolean type); any other formula is refused.
        if any((f.text or "").strip() not in ("TRUE()", "FALSE()") for f in sheet.iterfind(".//m:f", NS)):
            raise SystemExit("the sheet holds a formula")
        rows = []
        for row in sheet.findall(".//m:row", NS):
            values = []
            for cell in row.findall("m:c", NS):
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
            rows.append(values)
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
    for row in table.iter("{%s}table-row" % ODS["table"]):
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
            rows.append(values)
    return rows


def unwrap(tree):
    """root/item (XML) or items (TOML) or a single-key wrapper around the record list."""
    while isinstance(tree, dict) and len(tree) == 1:
        tree = next(iter(tree.values()))
    return tree if isinstance(tree, list) else [tree]


def element(node):
    children = list(node)
    if not children:
        return node.text or ""
    out = {}
    for child in children:
        value = element(child)
        if child.tag in out:
            out[child.tag] = out[child.tag] if isinstance(out[child.tag], list) else [out[child.tag]]
            out[child.tag].append(value)
        else:
            out[child.tag] = value
    return out


def main():
    path, fmt = sys.argv[1], sys.argv[2]
    typed = "--typed" in sys.argv[3:]
    text = None if fmt in ("xlsx", "ods") else open(path, encoding="utf-8-sig").read()
    if fmt in ("csv", "tsv"):
        if fmt == "tsv":
            rows = list(csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))
        else:
            rows = list(csv.reader(io.StringIO(text)))
        records = table_records(rows)
    elif fmt == "xlsx":
        records = table_records(xlsx_rows(path, typed))
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
        root = ET.fromstring(text.encode())
        records = unwrap({root.tag: element(root)})
    else:
        raise SystemExit(f"unknown format {fmt}")
    value = (lambda v: v) if typed else str
    flat = [{str(k): value(v) for k, v in record.items()} if isinstance(record, dict) else {"value": value(record)} for record in records]
    print(json.dumps(flat, ensure_ascii=False))


main()
