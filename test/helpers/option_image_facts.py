#!/usr/bin/python3
"""Facts about images for the options tests, read by libraries the engines do not use.

Reads a JSON list of jobs on stdin and prints a JSON list of results in the same order:
  {"op": "make", ...}: writes the test inputs (see make()).
  {"op": "metadata", "file": path}: the EXIF a reader finds: {"exif": bool, "gps": bool, "make": str|None}.
    Pillow for what it reads (JPEG, PNG, WebP, TIFF); Debian's vipsheader for HEIC, JPEG XL and
    JPEG 2000, which Pillow lacks here.
  {"op": "edge", "file": path, "row": y}: along row y, how many pixels are neither near black nor
    near white: the width of the drawn edges in pixels (a vector rendered at its size has sharp
    edges; a small bitmap scaled up smears each over several pixels).
  {"op": "reference", "source": path, "fallback": path, "out": path, "width": w, "height": h, "fit": ...}:
    the source (or the fallback, the same picture in a format Pillow reads) resized by Pillow to the size a resize should give (Lanczos; `crop` fills the box
    and cuts the middle, as ImageOps.fit does), for an SSIM against the engine's result.
  {"op": "srgb", "file": path, "x": x, "y": y}: the pixel at x, y, turned into sRGB by littleCMS
    (Pillow's ImageCms) from the file's own ICC profile.
"""
import io
import json
import os
import subprocess
import sys

from PIL import Image, ImageCms, ImageOps

VIPS_ENV = {k: v for k, v in os.environ.items() if k != 'VIPSHOME'}
# What the test photo's EXIF says: a camera make and a GPS position.
MAKE = 'ConvertdTestCamera'


def make(job):
    """The photo (a 640 x 480 fractal with fine detail, so that encoder quality shows) as a JPEG
    with EXIF (a camera make and a GPS position), and the same photo with a Display P3 profile."""
    photo = Image.effect_mandelbrot((640, 480), (-2.2, -1.4, 0.9, 1.4), 60).convert('L')
    colour = Image.merge('RGB', (photo, photo.point(lambda v: (v * 3) % 256), photo.point(lambda v: 255 - v)))
    exif = Image.Exif()
    exif[0x010F] = MAKE
    exif[0x8825] = {1: 'N', 2: (48.0, 51.0, 30.0), 3: 'E', 4: (2.0, 17.0, 40.0)}
    colour.save(job['jpg'], quality=95, exif=exif.tobytes())
    # A flat colour tagged Display P3 (vips' own copy of the profile, attached as it is, the
    # pixels unchanged): in sRGB its red is stronger and its green and blue weaker.
    flat = job['p3'] + '.untagged.jpg'
    Image.new('RGB', (64, 48), (200, 120, 60)).save(flat, quality=98)
    subprocess.run(['vips', 'copy', flat, job['p3'] + '[Q=98,profile=p3]'], env=VIPS_ENV, check=True, capture_output=True)
    return {}


def metadata(job):
    path = job['file']
    try:
        im = Image.open(path)
        exif = im.getexif()
        gps = exif.get_ifd(0x8825) if 0x8825 in exif else {}
        return {'exif': len(exif) > 0, 'gps': len(gps) > 0, 'make': exif.get(0x010F), 'reader': 'pillow'}
    except Exception:
        header = subprocess.run(['vipsheader', '-a', path], env=VIPS_ENV, capture_output=True, text=True, check=True).stdout
        fields = [line.split(':', 1)[0] for line in header.splitlines()]
        make_line = next((line for line in header.splitlines() if line.startswith('exif-ifd0-Make:')), None)
        return {
            'exif': any(f.startswith('exif-') for f in fields),
            'gps': any(f.startswith('exif-ifd3-GPS') for f in fields),
            'make': make_line.split(':', 1)[1].split('(')[0].strip() if make_line else None,
            'reader': 'vipsheader',
        }


def edge(job):
    im = Image.open(job['file']).convert('RGBA')
    white = Image.new('RGBA', im.size, (255, 255, 255, 255))
    grey = Image.alpha_composite(white, im).convert('L')
    row = [grey.getpixel((x, job['row'])) for x in range(grey.width)]
    return {'blurred': sum(1 for v in row if 32 < v < 224), 'width': grey.width}


def reference(job):
    # The source as Pillow shows it; the sample's PNG for formats Pillow does not read (HEIC, JPEG XL).
    try:
        im = Image.open(job['source'])
        im.load()
    except Exception:
        im = Image.open(job['fallback'])
    im = ImageOps.exif_transpose(im).convert('RGBA')
    size = (job['width'], job['height'])
    if job.get('fit') == 'crop':
        out = ImageOps.fit(im, size, Image.Resampling.LANCZOS)
    else:
        out = im.resize(size, Image.Resampling.LANCZOS)
    out.save(job['out'])
    return {}


def srgb(job):
    im = Image.open(job['file'])
    profile = im.info.get('icc_profile')
    rgb = im.convert('RGB')
    if profile:
        source = ImageCms.ImageCmsProfile(io.BytesIO(profile))
        rgb = ImageCms.profileToProfile(rgb, source, ImageCms.createProfile('sRGB'), outputMode='RGB')
    return {'pixel': list(rgb.getpixel((job['x'], job['y'])))}


def main():
    jobs = json.load(sys.stdin)
    results = []
    for job in jobs:
        try:
            results.append(globals()[job['op']](job))
        except Exception as error:  # reported per job
            results.append({'error': f'{type(error).__name__}: {error}'})
    json.dump(results, sys.stdout)


if __name__ == '__main__':
    main()
