#!/usr/bin/python3
"""Compares converted images with their sources, decoded by libraries the engines do not use.

Reads a JSON list of jobs on stdin, each {"output": path, "reference": path (optional),
"mode": "colour" | "bilevel" (optional), "probes": [[x, y], ...] (optional)}, and prints a JSON
list of results in the same order. With --serve, one such list a line, one answer a line, for as
long as stdin is open (test/helpers/python-server.ts): a test file's comparisons share one Python
start (Pillow and numpy take a while to import) and each reference is decoded once.

Decoding: Pillow (Debian's python3-pil) for every format it reads; XPM by read_xpm here;
Debian's vips command line (not the libvips bundled with sharp) for the rest (HEIC, AVIF, JPEG
XL, Radiance HDR), turned into an 8-bit sRGB PNG that Pillow then reads. By the file's extension:
libavcodec (ffmpeg's decoders, through PyAV) for XBM (Pillow 9.4 reads its set bits as white,
where X11, ImageMagick and ffmpeg show black), XWD, PAM, DPX and OpenEXR; a few lines here for PFM, WBMP, OTB, and for MNG and JNG
(the PNG or JPEG stream they carry, which Pillow then decodes); readers here for SIXEL, VICAR,
PGX, the vips format and GIMP's XCF (its layers composited), and for CALS (its group 4 stream
put in a TIFF for Pillow's libtiff to decode). The first frame of an animated or
multi-page file, the largest image of an icon (Pillow's choice), the merged composite of a PSD.
The reference is
turned upright by its EXIF orientation (what a viewer shows and the engines write); the output
is not, so an output that a viewer would rotate a second time does not match.

Similarity: SSIM (Wang et al. 2004) on the luma (ITU-R BT.601) of both images, each flattened
onto white first, over 7x7 windows with the usual constants, as scikit-image computes it by
default. "bilevel" is for a black-and-white output, which dithers: both are averaged over 4x4
blocks first, so that a dither pattern counts as the grey it stands for.
"""
import io
import json
import os
import struct
import subprocess
import sys
import tempfile

import re

import numpy as np
from PIL import Image, ImageColor, UnidentifiedImageError

from line_requests import requests

# What turns an image stored with each EXIF orientation upright (ImageOps.exif_transpose's table;
# that function fails on a multi-page TIFF in Pillow 9.4).
T = Image.Transpose
UPRIGHT = {2: T.FLIP_LEFT_RIGHT, 3: T.ROTATE_180, 4: T.FLIP_TOP_BOTTOM, 5: T.TRANSPOSE, 6: T.ROTATE_270, 7: T.TRANSVERSE, 8: T.ROTATE_90}
WINDOW = 7
BLOCK = 4
# sharp sets VIPSHOME in the Node process, which sends Debian's vips to the wrong module directory.
VIPS_ENV = {k: v for k, v in os.environ.items() if k != 'VIPSHOME'}


def xpm_colour(value):
    """An XPM colour: #RGB hex of any depth, None (transparent), or an X11 name."""
    if value.lower() == 'none':
        return (0, 0, 0, 0)
    if value.startswith('#'):
        digits = value[1:]
        size = len(digits) // 3
        return tuple(int(digits[i * size:(i + 1) * size], 16) * 255 // (16 ** size - 1) for i in range(3)) + (255,)
    grey = re.fullmatch(r'gr[ae]y(\d*)', value, re.I)
    if grey:
        # X11's names, not CSS's: "grey" is 190, and grey0 to grey100 a ramp rounded half up.
        level = int(int(grey.group(1)) * 255 / 100 + 0.5) if grey.group(1) else 190
        return (level, level, level, 255)
    return ImageColor.getrgb(value)[:3] + (255,)


def read_xpm(path):
    """
    XPM as ImageMagick writes it. Pillow 9.4 refuses more than one character per pixel, and with
    one it reads ImageMagick's "/* pixels */" comment line as the first row of pixels.
    """
    strings = re.findall(r'"((?:[^"\\]|\\.)*)"', open(path, encoding='latin-1').read())
    width, height, ncolours, cpp = (int(v) for v in strings[0].split()[:4])
    palette = {}
    for line in strings[1:1 + ncolours]:
        words = line[cpp:].split()
        palette[line[:cpp]] = xpm_colour(words[words.index('c') + 1])
    rows = strings[1 + ncolours:1 + ncolours + height]
    pixels = [palette[row[i:i + cpp]] for row in rows for i in range(0, width * cpp, cpp)]
    image = Image.new('RGBA', (width, height))
    image.putdata(pixels)
    if all(p[3] == 255 for p in palette.values()):
        image = image.convert('RGB')
    return image


def srgb_from_linear(values):
    """Linear light 0-1 to 8-bit sRGB (IEC 61966-2-1)."""
    v = np.clip(values, 0.0, 1.0)
    return np.where(v <= 0.0031308, v * 12.92, 1.055 * np.power(v, 1 / 2.4) - 0.055) * 255.0 + 0.5


def read_pfm(path):
    """Portable float map: "PF" (colour) or "Pf" (grey), size, scale (negative: little-endian), rows bottom first."""
    data = open(path, 'rb').read()
    fields = data.split(maxsplit=4)[:4]
    kind, width, height, scale = fields[0], int(fields[1]), int(fields[2]), float(fields[3])
    start = len(data) - width * height * (3 if kind == b'PF' else 1) * 4
    pixels = np.frombuffer(data[start:], dtype='<f4' if scale < 0 else '>f4')
    pixels = pixels.reshape(height, width, -1)[::-1] * abs(scale)
    return Image.fromarray(srgb_from_linear(pixels).astype(np.uint8).squeeze())


def png_chunks(data):
    """(type, data, start, end) of every chunk after an 8-byte PNG/MNG/JNG signature."""
    offset = 8
    while offset + 8 <= len(data):
        length = int.from_bytes(data[offset:offset + 4], 'big')
        kind = data[offset + 4:offset + 8]
        yield kind, data[offset + 8:offset + 8 + length], offset, offset + 12 + length
        offset += 12 + length


def read_mng(path):
    """The first PNG stream of an MNG (from IHDR to IEND), as a PNG file."""
    data = open(path, 'rb').read()
    start = end = None
    for kind, _body, first, last in png_chunks(data):
        if kind == b'IHDR' and start is None:
            start = first
        if kind == b'IEND' and start is not None:
            end = last
            break
    return Image.open(io.BytesIO(b'\x89PNG\r\n\x1a\n' + data[start:end]))


def read_jng(path):
    """The JPEG stream of a JNG (its JDAT chunks in order)."""
    data = open(path, 'rb').read()
    return Image.open(io.BytesIO(b''.join(body for kind, body, _s, _e in png_chunks(data) if kind == b'JDAT')))


def bits_image(width, height, rows, one_is_white):
    """A bilevel image from packed rows, most significant bit first."""
    stride = (width + 7) // 8
    bits = np.unpackbits(np.frombuffer(rows[:stride * height], dtype=np.uint8).reshape(height, stride), axis=1)[:, :width]
    return Image.fromarray(((bits if one_is_white else 1 - bits) * 255).astype(np.uint8))


def read_wbmp(path):
    """WBMP type 0: type and header bytes, width and height as multi-byte integers, rows with 1 = white."""
    data = open(path, 'rb').read()
    offset = 2
    sizes = []
    for _ in range(2):
        value = 0
        while True:
            byte = data[offset]
            offset += 1
            value = (value << 7) | (byte & 0x7f)
            if not byte & 0x80:
                break
        sizes.append(value)
    return bits_image(sizes[0], sizes[1], data[offset:], True)


def read_otb(path):
    """Nokia OTA bitmap: info byte, width, height, depth (1), rows with 1 = black, packed across rows."""
    data = open(path, 'rb').read()
    width, height = data[1], data[2]
    bits = np.unpackbits(np.frombuffer(data[4:], dtype=np.uint8))[:width * height].reshape(height, width)
    return Image.fromarray(((1 - bits) * 255).astype(np.uint8))


def read_sixel(path):
    """DEC SIXEL: ESC P (or 0x90) parameters q, raster attributes, colour registers (RGB in percent), six-pixel columns."""
    data = open(path, 'rb').read()
    start = re.match(rb'(?:\x1bP|\x90)([0-9;]*)q', data)
    if not start:
        raise ValueError('no SIXEL introducer')
    body = data[start.end():]
    end = min([i for i in (body.find(b'\x1b\\'), body.find(b'\x9c')) if i >= 0], default=len(body))
    body = body[:end].decode('latin-1')
    width = height = None
    palette = {}
    pixels = {}
    x = band = 0
    colour = 0
    repeat = 1
    index = 0
    extent = [0, 0]
    while index < len(body):
        ch = body[index]
        if ch == '"':
            m = re.match(r'"(\d+);(\d+);(\d+);(\d+)', body[index:])
            width, height = int(m.group(3)), int(m.group(4))
            index += m.end()
            continue
        if ch == '#':
            m = re.match(r'#(\d+)(?:;(\d+);(\d+);(\d+);(\d+))?', body[index:])
            colour = int(m.group(1))
            if m.group(2):
                if m.group(2) != '2':
                    raise ValueError('only RGB colour registers are read here')
                palette[colour] = tuple(round(int(m.group(k)) * 255 / 100) for k in (3, 4, 5))
            index += m.end()
            continue
        if ch == '!':
            m = re.match(r'!(\d+)', body[index:])
            repeat = int(m.group(1))
            index += m.end()
            continue
        if ch == '$':
            x = 0
        elif ch == '-':
            x = 0
            band += 1
        elif '?' <= ch <= '~':
            bits = ord(ch) - 63
            for k in range(6):
                if bits & (1 << k):
                    for dx in range(repeat):
                        pixels[(x + dx, band * 6 + k)] = colour
                        extent[1] = max(extent[1], band * 6 + k + 1)
            x += repeat
            extent[0] = max(extent[0], x)
            repeat = 1
        index += 1
    width = width or extent[0]
    height = height or extent[1]
    out = np.zeros((height, width, 4), dtype=np.uint8)
    for (px, py), c in pixels.items():
        if px < width and py < height:
            out[py, px] = palette.get(c, (0, 0, 0)) + (255,)
    image = Image.fromarray(out, 'RGBA')
    # Pixels no sixel painted are transparent; a picture painted everywhere has no transparency.
    return image.convert('RGB') if out[..., 3].min() == 255 else image

def read_cals(path):
    """CALS type 1: 16 header records of 128 bytes (rpelcnt: width,height), then a CCITT group 4 stream, decoded by Pillow's libtiff in a TIFF made around it."""
    data = open(path, 'rb').read()
    header = data[:2048].decode('latin-1')
    m = re.search(r'rpelcnt:\s*(\d+),\s*(\d+)', header)
    width, height = int(m.group(1)), int(m.group(2))
    orient = re.search(r'rorient:\s*(\d+),\s*(\d+)', header)
    stream = data[2048:]
    entries = [(256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 1), (259, 3, 1, 4), (262, 3, 1, 0),
               (273, 4, 1, 0), (277, 3, 1, 1), (278, 4, 1, height), (279, 4, 1, len(stream))]
    ifd_size = 2 + 12 * len(entries) + 4
    offset = 8 + ifd_size
    out = b'II*\x00' + struct.pack('<I', 8) + struct.pack('<H', len(entries))
    for tag, kind, count, value in entries:
        if tag == 273:
            value = offset
        out += struct.pack('<HHI', tag, kind, count) + (struct.pack('<HH', value, 0) if kind == 3 else struct.pack('<I', value))
    out += struct.pack('<I', 0) + stream
    im = Image.open(io.BytesIO(out))
    im.load()
    return im.convert('L')

def read_vicar(path):
    """VICAR: a text label of KEY=value pairs (LBLSIZE bytes), then NLB binary lines, then lines of NBB prefix bytes and NS samples, band after band (BSQ)."""
    data = open(path, 'rb').read()
    size = int(re.match(rb'LBLSIZE=\s*(\d+)', data).group(1))
    label = dict(re.findall(r"(\w+)=\s*('[^']*'|\S+)", data[:size].decode('latin-1')))
    value = lambda k, d=0: int(label.get(k, d))
    fmt = label.get('FORMAT', "'BYTE'").strip("'")
    if label.get('ORG', "'BSQ'").strip("'") != 'BSQ':
        raise ValueError('only BSQ is read here')
    dtype = {'BYTE': 'u1', 'HALF': 'i2', 'FULL': 'i4', 'REAL': 'f4'}[fmt]
    order = '<' if label.get('INTFMT', "'HIGH'").strip("'") == 'LOW' else '>'
    lines, samples, bands, prefix = value('NL'), value('NS'), value('NB', 1), value('NBB')
    recsize = value('RECSIZE')
    start = size + value('NLB') * recsize
    rows = np.frombuffer(data[start:start + lines * bands * recsize], dtype=np.uint8).reshape(bands, lines, recsize)[:, :, prefix:]
    pixels = np.ascontiguousarray(rows).view(order + dtype).reshape(bands, lines, samples).astype(np.float64)
    if fmt != 'BYTE':
        low, high = pixels.min(), pixels.max()
        pixels = (pixels - low) * 255 / max(high - low, 1e-9)
    grey = pixels[0].clip(0, 255).astype(np.uint8)
    return Image.fromarray(grey, 'L')

def read_pgx(path):
    """PGX: "PG ML|LM +|- depth width height" and one line end, then the samples (big- or little-endian)."""
    data = open(path, 'rb').read()
    m = re.match(rb'PG\s*(ML|LM)\s*([+-]?)\s*(\d+)\s+(\d+)\s+(\d+)\s', data)
    order, sign, depth, width, height = m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5))
    size = 1 if depth <= 8 else 2
    dtype = ('>' if order == b'ML' else '<') + ('i' if sign == b'-' else 'u') + str(size)
    pixels = np.frombuffer(data[m.end():m.end() + width * height * size], dtype=dtype).reshape(height, width).astype(np.float64)
    return Image.fromarray((pixels * 255 / (2 ** depth - 1)).round().clip(0, 255).astype(np.uint8), 'L')

# vips band formats (VipsBandFormat) and their numpy types: uchar, char, ushort, short, uint, int, float, double.
VIPS_FORMATS = {0: 'u1', 1: 'i1', 2: 'u2', 3: 'i2', 4: 'u4', 5: 'i4', 6: 'f4', 8: 'f8'}


def read_vips(path):
    """The vips format: a 64-byte header (magic, width, height, bands, band format, coding, interpretation...), then the pixels, band-interleaved."""
    data = open(path, 'rb').read()
    magic = data[:4]
    order = '>' if magic == b'\x08\xf2\xa6\xb6' else '<' if magic == b'\xb6\xa6\xf2\x08' else None
    if order is None:
        raise ValueError('not a vips file')
    width, height, bands, _unused, bandfmt, coding, interpretation = struct.unpack(order + '7i', data[4:32])
    if coding != 0 or bandfmt not in VIPS_FORMATS:
        raise ValueError(f'vips coding {coding} band format {bandfmt} not read here')
    dtype = np.dtype(order + VIPS_FORMATS[bandfmt])
    pixels = np.frombuffer(data[64:64 + width * height * bands * dtype.itemsize], dtype=dtype).reshape(height, width, bands)
    if bandfmt == 2:
        pixels = pixels >> 8
    pixels = pixels.astype(np.uint8)
    mode = {1: 'L', 2: 'LA', 3: 'RGB', 4: 'RGBA'}[bands]
    return Image.fromarray(pixels.squeeze() if bands == 1 else pixels, mode)


def read_xcf(path):
    """
    GIMP XCF up to version 10 (32-bit pointers), 8-bit layers of RGB, RGBA, grey or grey and alpha,
    uncompressed or RLE tiles of 64 x 64: the visible layers composited over one another (normal
    mode, at their offsets and opacity) on the canvas, bottom layer first, as GIMP flattens them.
    """
    data = open(path, 'rb').read()
    if not data.startswith(b'gimp xcf '):
        raise ValueError('not an XCF file')
    u32 = lambda at: struct.unpack_from('>I', data, at)[0]
    width, height = u32(14), u32(18)

    def properties(at):
        found = {}
        while True:
            kind, length = u32(at), u32(at + 4)
            if kind == 0:
                return found, at + 8
            found[kind] = data[at + 8:at + 8 + length]
            at += 8 + length

    image_props, at = properties(26)
    compression = image_props.get(17, b'\0')[0]
    layers = []
    while u32(at):
        layers.append(u32(at))
        at += 4
    canvas = np.zeros((height, width, 4), dtype=np.float64)
    for layer in reversed(layers):  # the file lists the top layer first
        lw, lh, kind = u32(layer), u32(layer + 4), u32(layer + 8)
        name_length = u32(layer + 12)
        props, at = properties(layer + 16 + name_length)
        x, y = struct.unpack('>ii', props[15]) if 15 in props else (0, 0)
        visible = struct.unpack('>I', props[8])[0] if 8 in props else 1
        opacity = struct.unpack('>I', props[6])[0] / 255 if 6 in props else 1.0
        if not visible:
            continue
        hierarchy = u32(at)
        bpp = u32(hierarchy + 8)
        level = u32(hierarchy + 12)
        pixels = np.zeros((lh, lw, bpp), dtype=np.uint8)
        pointer = level + 8
        for ty in range(0, lh, 64):
            for tx in range(0, lw, 64):
                tw, th = min(64, lw - tx), min(64, lh - ty)
                tile = decode_xcf_tile(data, u32(pointer), tw * th, bpp, compression)
                pixels[ty:ty + th, tx:tx + tw] = tile.reshape(th, tw, bpp)
                pointer += 4
        colour = pixels[..., :3] if kind in (0, 1) else np.repeat(pixels[..., :1], 3, axis=2)
        alpha = pixels[..., -1:] / 255.0 if kind in (1, 3) else np.ones((lh, lw, 1))
        alpha = alpha * opacity
        # The part of the layer on the canvas, composited "over" what is below.
        x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + lw, width), min(y + lh, height)
        if x0 >= x1 or y0 >= y1:
            continue
        src_c = colour[y0 - y:y1 - y, x0 - x:x1 - x].astype(np.float64)
        src_a = alpha[y0 - y:y1 - y, x0 - x:x1 - x]
        below = canvas[y0:y1, x0:x1]
        out_a = src_a + below[..., 3:] * (1 - src_a)
        out_c = (src_c * src_a + below[..., :3] * below[..., 3:] * (1 - src_a)) / np.maximum(out_a, 1e-9)
        canvas[y0:y1, x0:x1] = np.concatenate([out_c, out_a], axis=2)
    canvas[..., 3] *= 255
    return Image.fromarray(canvas.round().clip(0, 255).astype(np.uint8), 'RGBA')


def decode_xcf_tile(data, at, count, bpp, compression):
    """One tile: bpp bytes a pixel (uncompressed), or each channel in turn run-length coded (RLE)."""
    if compression == 0:
        return np.frombuffer(data[at:at + count * bpp], dtype=np.uint8)
    if compression != 1:
        raise ValueError(f'XCF compression {compression} is not read here')
    tile = np.zeros((count, bpp), dtype=np.uint8)
    for channel in range(bpp):
        values = bytearray()
        while len(values) < count:
            n = data[at]
            at += 1
            if n <= 126:  # n + 1 copies of the next byte
                values += bytes([data[at]]) * (n + 1)
                at += 1
            elif n == 127:  # a long run of copies: its length in two bytes, then the byte
                length = data[at] * 256 + data[at + 1]
                values += bytes([data[at + 2]]) * length
                at += 3
            elif n == 128:  # a long literal run: its length in two bytes, then the bytes
                length = data[at] * 256 + data[at + 1]
                values += data[at + 2:at + 2 + length]
                at += 2 + length
            else:  # 256 - n literal bytes
                values += data[at:at + 256 - n]
                at += 256 - n
        tile[:, channel] = np.frombuffer(bytes(values[:count]), dtype=np.uint8)
    return tile.reshape(-1)


def through_libavcodec(path):
    """The first picture, decoded by libavcodec through PyAV (Debian's python3-av: the decoders of
    the ffmpeg command line, in this process rather than an ffmpeg start of about 0.15 s of CPU
    for each of some 250 outputs in a whole run), reduced to 8 bits a channel as `ffmpeg -i FILE
    decoded.png` read by Pillow was: an alpha channel kept where the file has one, 16-bit and
    float values converted by swscale to 16 bits and their top 8 bits kept (the same pixels as
    that command line for every pixel format the tests' XBM, XWD, PAM, DPX and EXR files use,
    checked when it was replaced).
    """
    import av  # only here: most comparisons never need it
    with av.open(path) as container:
        frame = next(container.decode(video=0))
    components = frame.format.components
    alpha = any(component.is_alpha for component in components)
    deep = max(component.bits for component in components) > 8
    grey = not frame.format.is_rgb and not frame.format.name.startswith('pal') and len(components) - alpha == 1
    if grey and not alpha:
        if deep:
            return Image.fromarray((frame.reformat(format='gray16le').to_ndarray() >> 8).astype(np.uint8))
        return Image.fromarray(frame.reformat(format='gray').to_ndarray())
    mode = 'RGBA' if alpha else 'RGB'
    if deep:
        values = frame.reformat(format='rgba64le' if alpha else 'rgb48le').to_ndarray()
        return Image.fromarray((values >> 8).astype(np.uint8), mode)
    return Image.fromarray(frame.reformat(format='rgba' if alpha else 'rgb24').to_ndarray(), mode)


# Formats Pillow 9.4 does not read, by the file's extension: a decoder that is not ImageMagick.
BY_EXTENSION = {
    'xbm': through_libavcodec, 'xwd': through_libavcodec, 'pam': through_libavcodec, 'dpx': through_libavcodec, 'exr': through_libavcodec,
    'pfm': read_pfm, 'mng': read_mng, 'jng': read_jng, 'wbmp': read_wbmp, 'otb': read_otb,
    'sixel': read_sixel, 'cals': read_cals, 'vicar': read_vicar, 'pgx': read_pgx, 'vips': read_vips, 'xcf': read_xcf,
}


def open_image(path):
    """The first frame as an RGBA Pillow image, the format's name and the EXIF orientation."""
    special = BY_EXTENSION.get(os.path.splitext(path)[1][1:].lower())
    if special:
        im = special(path)
        im.load()
        return im, special.__name__, None
    with open(path, 'rb') as handle:
        if handle.read(9) == b'/* XPM */':
            return read_xpm(path), 'xpm-reader', None
    try:
        im = Image.open(path)  # at the first frame (a PSD's merged composite)
        # Read before load(), which closes a multi-page TIFF's file.
        orientation = im.getexif().get(0x0112)
        im.load()
        decoder = 'pillow:' + (im.format or '?')
    except (UnidentifiedImageError, OSError):
        with tempfile.TemporaryDirectory() as tmp:
            png = os.path.join(tmp, 'decoded.png')
            subprocess.run(['vips', 'colourspace', path, png, 'srgb'], check=True, env=VIPS_ENV,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            im = Image.open(png)
            im.load()
        decoder = 'vips'
        orientation = vips_orientation(path)
    return im, decoder, orientation


# Many outputs are compared with the same source: its reference is decoded once (the decoders of
# several formats are a subprocess each), again only when the file changed. The image is never
# changed in place by compare().
_references = {}


def open_reference(path):
    stat = os.stat(path)
    key = (path, stat.st_mtime_ns, stat.st_size)
    if key not in _references:
        _references[key] = open_image(path)
    return _references[key]


def vips_orientation(path):
    result = subprocess.run(['vipsheader', '-f', 'orientation', path], env=VIPS_ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        return int(result.stdout.strip())
    except ValueError:
        return None


def has_alpha(im):
    return im.mode in ('RGBA', 'LA', 'PA', 'La', 'RGBa') or 'transparency' in im.info


def rgba_array(im):
    return np.asarray(im.convert('RGBA'), dtype=np.float64)


def onto_white(rgba):
    alpha = rgba[..., 3:4] / 255.0
    return rgba[..., :3] * alpha + 255.0 * (1.0 - alpha)


def luma(rgb):
    return rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114


def window_mean(a, w):
    """Mean of every w x w window (valid positions only), through a summed-area table."""
    s = np.pad(a, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    return (s[w:, w:] - s[:-w, w:] - s[w:, :-w] + s[:-w, :-w]) / (w * w)


def ssim(x, y):
    w = min(WINDOW, x.shape[0], x.shape[1])
    n = w * w
    c1 = (0.01 * 255) ** 2
    c2 = (0.03 * 255) ** 2
    mx, my = window_mean(x, w), window_mean(y, w)
    # Sample (not population) variances, as scikit-image does.
    unbias = n / (n - 1) if n > 1 else 1.0
    vx = (window_mean(x * x, w) - mx * mx) * unbias
    vy = (window_mean(y * y, w) - my * my) * unbias
    cxy = (window_mean(x * y, w) - mx * my) * unbias
    index = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return float(index.mean())


def blocks(a, size):
    h, w = (a.shape[0] // size) * size, (a.shape[1] // size) * size
    return a[:h, :w].reshape(h // size, size, w // size, size).mean(axis=(1, 3))


def facts(im, decoder, orientation, rgba, flat):
    return {
        'width': im.width, 'height': im.height, 'mode': im.mode, 'decoder': decoder,
        'orientation': orientation, 'has_alpha': has_alpha(im),
        # Mean of each colour band after flattening onto white, 0-255.
        'means': [float(flat[..., band].mean()) for band in range(3)],
        'alpha_mean': float(rgba[..., 3].mean()),
    }


def compare(job):
    out_im, out_decoder, out_orientation = open_image(job['output'])
    out_rgba = rgba_array(out_im)
    out_flat = onto_white(out_rgba)
    result = {'output': facts(out_im, out_decoder, out_orientation, out_rgba, out_flat)}
    result['probes'] = [[int(v) for v in out_rgba[y, x]] for x, y in job.get('probes', [])]
    if not job.get('reference'):
        return result
    ref_im, ref_decoder, ref_orientation = open_reference(job['reference'])
    if ref_decoder.startswith('pillow') and ref_orientation in UPRIGHT:
        ref_im = ref_im.transpose(UPRIGHT[ref_orientation])
    ref_rgba = rgba_array(ref_im)
    ref_flat = onto_white(ref_rgba)
    result['reference'] = facts(ref_im, ref_decoder, ref_orientation, ref_rgba, ref_flat)
    if ref_rgba.shape != out_rgba.shape:
        result['ssim'] = None  # different sizes: the caller's size check reports it
        return result
    x, y = luma(ref_flat), luma(out_flat)
    if job.get('mode') == 'bilevel':
        x, y = blocks(x, BLOCK), blocks(y, BLOCK)
    result['ssim'] = ssim(x, y)
    # Largest difference of alpha between the two, 0-255 (0 when neither has any).
    result['alpha_max_difference'] = float(np.abs(ref_rgba[..., 3] - out_rgba[..., 3]).max())
    return result


def compare_all(jobs):
    results = []
    for job in jobs:
        try:
            results.append(compare(job))
        except Exception as error:  # reported per job: one undecodable file fails only its test
            results.append({'error': f'{type(error).__name__}: {error}'})
    return results


def main():
    if sys.argv[1:] == ['--serve']:
        for line in requests():
            print(json.dumps(compare_all(json.loads(line))), flush=True)
        return
    json.dump(compare_all(json.load(sys.stdin)), sys.stdout)


if __name__ == '__main__':
    main()
