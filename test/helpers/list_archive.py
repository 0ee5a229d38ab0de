#!/usr/bin/python3
"""Lists an archive's members with tools other than the engine's libarchive, and prints them as
JSON: {name: {"type": "dir" | "file" | other, "size": bytes, "sha256": hex (files)}}, names without
a trailing slash.

    list_archive.py FILE FORMAT      (FORMAT: an archive format id of the catalogue)
    list_archive.py --many FILE FORMAT FILE FORMAT ...   (a JSON list: each listing, or {"error": why})

zip: Python's zipfile (7-Zip for methods zipfile lacks, such as Deflate64); tar and its compressed
kinds: Python's tarfile, after zstd, lzip or 7-Zip (compress's .Z) undid what Python cannot;
7z, cpio, iso, xar, cab and lzh: 7-Zip (`7zz l -slt` for the members, `7zz x` for the
contents); ar and deb: binutils' ar; rar: The Unarchiver (lsar, unar; Debian's 7-Zip has no RAR), also
asked for by name ("unar", or "unar-names" for the listing alone); rpm: 7-Zip takes out the
payload, Python undoes its gzip, 7-Zip lists the cpio (the engine reads RPMs with libarchive);
squashfs, wim and arj (which the engine reads with 7-Zip): each format's own tool unpacks it
(unsquashfs, wimapply, arj) and the tree on disk is listed.
"""
import gzip
import io
import lzma
import shutil
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


def decompressed(path, fmt):
    """The tar inside a compressed tar, for the compressors Python's tarfile lacks (None: tarfile reads it)."""
    if fmt == "tar.zst":
        return subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    if fmt == "tar.lz":
        return subprocess.run(["lzip", "-dc", path], check=True, capture_output=True).stdout
    if fmt == "tar.lz4":
        return subprocess.run(["lz4", "-dc", path], check=True, capture_output=True).stdout
    if fmt == "tar.lzma":
        with open(path, "rb") as file:
            return lzma.decompress(file.read(), format=lzma.FORMAT_ALONE)
    if fmt == "tar.z":
        return subprocess.run(["7zz", "x", "-so", "-tZ", path], check=True, capture_output=True, stdin=subprocess.DEVNULL).stdout
    return None


def with_tarfile(path, fmt="tar"):
    members = {}
    data = decompressed(path, fmt)
    with (tarfile.open(fileobj=io.BytesIO(data), mode="r:") if data is not None else tarfile.open(path, "r:*")) as archive:
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
        # 7-Zip shows a xar's table of contents as a member "[TOC].xml" without a mode: not a member.
        if fields["Path"] == "[TOC].xml" and not fields.get("Mode"):
            continue
        attributes = fields.get("Attributes", "")
        # xar and cpio listings say "Type" and "Mode" (drwxr-xr-x) rather than "Folder" and "Attributes".
        mode = fields.get("Mode", "")
        directory = fields.get("Folder") == "+" or "D" in attributes.split(" ")[0] or " d" in attributes or fields.get("Type") == "directory" or mode.startswith("d")
        link = " l" in attributes or fields.get("Symbolic Link") or fields.get("Hard Link") or mode.startswith("l")
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


def with_ar(path):
    """binutils' ar lists and prints the members (7-Zip hides a Debian package's debian-binary)."""
    names = subprocess.run(["ar", "t", path], check=True, capture_output=True, text=True).stdout.splitlines()
    members = {}
    for name in names:
        data = subprocess.run(["ar", "p", path, name], check=True, capture_output=True).stdout
        members[name] = {"type": "file", "size": len(data), "sha256": digest(data)}
    return members


def with_unar(path, extract=True):
    listing = json.loads(subprocess.run(["lsar", "-json", path], check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout)
    members = {}
    for entry in listing["lsarContents"]:
        name = entry["XADFileName"].rstrip("/")
        kind = "dir" if entry.get("XADIsDirectory") else "link" if entry.get("XADIsLink") else "file"
        members[name] = {"type": kind, "size": int(entry.get("XADFileSize", 0))}
    if not extract:
        return members
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["unar", "-q", "-f", "-no-directory", "-o", out, path], check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        for name, member in members.items():
            if member["type"] == "file":
                with open(os.path.join(out, name), "rb") as file:
                    data = file.read()
                member["size"] = len(data)
                member["sha256"] = digest(data)
    return members


def walked(root):
    """A tree on disk as a listing (links not followed)."""
    members = {}
    for parent, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(parent, name)
            relative = os.path.relpath(full, root)
            if os.path.islink(full):
                members[relative] = {"type": "link", "size": len(os.readlink(full))}
            elif os.path.isdir(full):
                members[relative] = {"type": "dir", "size": 0}
            elif os.path.isfile(full):
                with open(full, "rb") as file:
                    data = file.read()
                members[relative] = {"type": "file", "size": len(data), "sha256": digest(data)}
            else:
                members[relative] = {"type": "special", "size": 0}
    return members


def unpacked(path, fmt):
    """The tree squashfs-tools, wimlib or arj unpack from an image or archive."""
    with tempfile.TemporaryDirectory() as out:
        root = os.path.join(out, "root")
        if fmt == "squashfs":
            command = ["unsquashfs", "-no-progress", "-no-xattrs", "-d", root, path]
        elif fmt == "wim":
            os.mkdir(root)
            command = ["wimapply", path, "1", root]
        else:
            os.mkdir(root)
            command = ["arj", "x", "-y", os.path.abspath(path), root + "/"]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        return walked(root)


def with_rpm(path):
    payload = subprocess.run(["7zz", "x", "-so", "-trpm", path], check=True, capture_output=True, stdin=subprocess.DEVNULL).stdout
    with tempfile.TemporaryDirectory() as out:
        cpio = os.path.join(out, "payload.cpio")
        with open(cpio, "wb") as file:
            file.write(gzip.decompress(payload))
        return with_7zip(cpio)


def main():
    if sys.argv[1] == "--many":
        results = []
        for path, fmt in zip(sys.argv[2::2], sys.argv[3::2]):
            try:
                results.append(listing(path, fmt))
            except Exception as error:  # one bad output must not hide the others' listings
                results.append({"error": f"{type(error).__name__}: {error}"})
        print(json.dumps(results, ensure_ascii=False, sort_keys=True))
        return
    print(json.dumps(listing(sys.argv[1], sys.argv[2]), ensure_ascii=False, sort_keys=True))


def listing(path, fmt):
    if fmt == "zip":
        try:
            members = with_zipfile(path)
        except NotImplementedError:  # a compression method zipfile lacks (Deflate64)
            members = with_7zip(path)
    elif fmt in ("7z", "cpio", "iso", "xar", "cab", "lzh"):
        members = with_7zip(path)
    elif fmt in ("squashfs", "wim", "arj"):
        members = unpacked(path, fmt)
    elif fmt == "rpm":
        members = with_rpm(path)
    elif fmt in ("ar", "deb"):
        members = with_ar(path)
    elif fmt in ("rar", "unar"):
        # "unar": any format The Unarchiver reads (a cabinet whose names are in a Windows code page).
        members = with_unar(path)
    elif fmt == "unar-names":
        # Names, types and sizes only, where unar lists an archive it cannot decompress.
        members = with_unar(path, extract=False)
    elif fmt == "tar" or fmt.startswith("tar."):
        members = with_tarfile(path, fmt)
    else:
        raise ValueError(f"unknown archive format {fmt}")
    return members


main()
