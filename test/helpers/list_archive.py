#!/usr/bin/python3
"""Lists an archive's members with tools other than the engine's libarchive, and prints them as
JSON: {name: {"type": "dir" | "file" | other, "size": bytes, "sha256": hex (files)}}, names without
a trailing slash.

    list_archive.py FILE FORMAT      (FORMAT: zip, 7z, tar, tar.gz, tar.bz2, tar.xz)

zip: Python's zipfile (7-Zip for methods zipfile lacks, such as Deflate64); tar and its compressed
kinds: Python's tarfile; 7z: 7-Zip (`7zz l -slt` for the members, `7zz x` for the contents).
"""
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile


def digest(data):
    return hashlib.sha256(data).hexdigest()


def with_zipfile(path):
    members = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename.rstrip("/")
            if info.is_dir():
                members[name] = {"type": "dir", "size": 0}
            else:
                data = archive.read(info)
                members[name] = {"type": "file", "size": len(data), "sha256": digest(data)}
    return members


def with_tarfile(path):
    members = {}
    with tarfile.open(path, "r:*") as archive:
        for info in archive.getmembers():
            name = info.name.rstrip("/")
            if name in ("", "."):
                continue
            if info.isdir():
                members[name] = {"type": "dir", "size": 0}
            elif info.isfile():
                data = archive.extractfile(info).read()
                members[name] = {"type": "file", "size": len(data), "sha256": digest(data)}
            else:
                members[name] = {"type": "link" if info.issym() or info.islnk() else "special", "size": info.size}
    return members


def with_7zip(path):
    listing = subprocess.run(["7zz", "l", "-slt", "-ba", "-p", path], check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout
    members = {}
    for block in listing.split("\n\n"):
        fields = dict(line.split(" = ", 1) for line in block.splitlines() if " = " in line)
        if "Path" not in fields:
            continue
        attributes = fields.get("Attributes", "")
        directory = fields.get("Folder") == "+" or "D" in attributes.split(" ")[0] or " d" in attributes
        link = " l" in attributes or fields.get("Symbolic Link") or fields.get("Hard Link")
        kind = "dir" if directory else "link" if link else "file"
        # libarchive's 7z writer (the engine's) keeps the slash tar puts after a directory's name.
        name = fields["Path"].rstrip("/") if kind == "dir" else fields["Path"]
        members[name] = {"type": kind, "size": int(fields.get("Size") or 0)}
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["7zz", "x", "-y", "-p", "-bd", f"-o{out}", path], check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        for name, member in members.items():
            if member["type"] == "file":
                with open(os.path.join(out, name), "rb") as file:
                    data = file.read()
                member["size"] = len(data)
                member["sha256"] = digest(data)
    return members


def main():
    path, fmt = sys.argv[1], sys.argv[2]
    if fmt == "zip":
        try:
            members = with_zipfile(path)
        except NotImplementedError:  # a compression method zipfile lacks (Deflate64)
            members = with_7zip(path)
    elif fmt == "7z":
        members = with_7zip(path)
    elif fmt == "tar" or fmt.startswith("tar."):
        members = with_tarfile(path)
    else:
        raise SystemExit(f"unknown archive format {fmt}")
    print(json.dumps(members, ensure_ascii=False, sort_keys=True))


main()
