// The formats the imagemagick engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

const MNG_SIGNATURE = Buffer.from('8a4d4e470d0a1a0a', 'hex');
const JNG_SIGNATURE = Buffer.from('8b4a4e470d0a1a0a', 'hex');

/**
 * An X window dump: a header of 4-byte fields in either byte order, whose second field is the
 * version (7, X11), then the header's size, pixmap format (0-2) and depth (1-32) in range.
 */
function xwdHeader(head: Buffer): boolean {
  if (head.length < 100) return false;
  return [head.readUInt32BE.bind(head), head.readUInt32LE.bind(head)].some((read) => {
    const [size, version, format, depth] = [read(0), read(4), read(8), read(12)];
    return version === 7 && size >= 100 && size <= 4096 && format <= 2 && depth >= 1 && depth <= 32;
  });
}

/**
 * A PICT file: a 512-byte header for applications (any content), then the picture's size and
 * frame, then the version opcode: 0x0011 0x02FF for version 2, 0x11 0x01 for version 1.
 */
function pictHeader(head: Buffer): boolean {
  if (head.length < 528) return false;
  return (head.readUInt16BE(522) === 0x0011 && head.readUInt16BE(524) === 0x02ff) || (head[522] === 0x11 && head[523] === 0x01);
}

/**
 * A CALS raster: header records of 128 bytes of "name: value" text, the first of them one of
 * those MIL-STD-1840 puts first (ImageMagick's own test), and the pixel count among them.
 */
function calsHeader(head: Buffer): boolean {
  const text = head.toString('latin1', 0, Math.min(head.length, 2048));
  return /^(srcdocid:|version: MIL-STD-1840|rorient:)/.test(text) && /rpelcnt:\s*\d+,\s*\d+/.test(text);
}

/** DEC SIXEL: ESC P (or the 8-bit DCS, 0x90), then its numeric parameters and "q". */
function sixelStart(head: Buffer): boolean {
  const introducer = head[0] === 0x1b && head[1] === 0x50 ? 2 : head[0] === 0x90 ? 1 : 0;
  return introducer > 0 && /^[0-9;]*q/.test(head.toString('latin1', introducer, 32));
}

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'bmp', name: 'Windows bitmap', category: 'image', mediaType: 'image/bmp', extensions: ['bmp', 'dib'], detect: 'magic' },
  { id: 'ico', name: 'Windows icon', category: 'image', mediaType: 'image/vnd.microsoft.icon', extensions: ['ico'], detect: 'magic' },
  { id: 'tga', name: 'Truevision TGA image', category: 'image', mediaType: 'image/x-tga', extensions: ['tga', 'icb', 'vda', 'vst'], detect: 'extension' },
  { id: 'psd', name: 'Photoshop document (flattened)', category: 'image', mediaType: 'image/vnd.adobe.photoshop', extensions: ['psd'], detect: 'magic' },
  { id: 'pcx', name: 'PCX image', category: 'image', mediaType: 'image/x-pcx', extensions: ['pcx'], detect: 'magic', signature: (head) => head[0] === 0x0a && [0, 2, 3, 4, 5].includes(head[1]!) && head[2] === 1 && [1, 2, 4, 8].includes(head[3]!) },
  { id: 'ppm', name: 'Netpbm colour image', category: 'image', mediaType: 'image/x-portable-pixmap', extensions: ['ppm', 'pnm'], detect: 'magic', signature: (head) => /^P[36][ \t\r\n#]/.test(head.toString('latin1', 0, 3)) },
  { id: 'pgm', name: 'Netpbm greyscale image', category: 'image', mediaType: 'image/x-portable-graymap', extensions: ['pgm'], detect: 'magic', signature: (head) => /^P[25][ \t\r\n#]/.test(head.toString('latin1', 0, 3)) },
  { id: 'pbm', name: 'Netpbm bitmap', category: 'image', mediaType: 'image/x-portable-bitmap', extensions: ['pbm'], detect: 'magic', signature: (head) => /^P[14][ \t\r\n#]/.test(head.toString('latin1', 0, 3)) },
  { id: 'xpm', name: 'X pixmap', category: 'image', mediaType: 'image/x-xpixmap', extensions: ['xpm'], detect: 'magic', signature: (_head, text) => text.startsWith('/* XPM */') },
  { id: 'dds', name: 'DirectDraw surface', category: 'image', mediaType: 'image/vnd-ms.dds', extensions: ['dds'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === 'DDS ' },
  // Added for issue #30: each with ImageMagick's coder named in engine.ts and allowed by name in
  // policy/policy.xml. Signatures as file(1)'s magic describes them; the few formats without one
  // (WBMP, OTB) are taken by their extension and still decoded by their own coder only.
  { id: 'xbm', name: 'X bitmap (black and white)', category: 'image', mediaType: 'image/x-xbitmap', extensions: ['xbm'], detect: 'magic', signature: (_head, text) => /^#define[ \t]+\S*width[ \t]+\d+/.test(text) },
  { id: 'xwd', name: 'X window dump', category: 'image', mediaType: 'image/x-xwindowdump', extensions: ['xwd'], detect: 'magic', signature: (head) => xwdHeader(head) },
  { id: 'sgi', name: 'SGI (Irix RGB) image', category: 'image', mediaType: 'image/x-sgi', extensions: ['sgi', 'rgb', 'rgba', 'bw'], detect: 'magic', signature: (head) => head.length >= 8 && head.readUInt16BE(0) === 474 && head[2]! <= 1 && (head[3] === 1 || head[3] === 2) && [1, 2, 3].includes(head.readUInt16BE(4)) },
  { id: 'ras', name: 'Sun raster image', category: 'image', mediaType: 'image/x-sun-raster', extensions: ['ras', 'sun', 'im1', 'im8', 'im24', 'im32'], detect: 'magic', signature: (head) => head.length >= 32 && head.readUInt32BE(0) === 0x59a66a95 },
  { id: 'pam', name: 'Netpbm PAM image', category: 'image', mediaType: 'image/x-portable-arbitrarymap', extensions: ['pam'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 3) === 'P7\n' && head.includes('ENDHDR') },
  { id: 'pfm', name: 'Portable float map (HDR)', category: 'image', mediaType: 'image/x-portable-floatmap', extensions: ['pfm'], detect: 'magic', signature: (head) => /^P[Ff][ \t\r\n]/.test(head.toString('latin1', 0, 3)) },
  { id: 'hdr', name: 'Radiance HDR image', category: 'image', mediaType: 'image/vnd.radiance', extensions: ['hdr', 'rgbe'], detect: 'magic', signature: (head) => /^#\?(RADIANCE|RGBE)/.test(head.toString('latin1', 0, 12)) },
  { id: 'dpx', name: 'DPX (SMPTE 268M) image', category: 'image', mediaType: 'image/x-dpx', extensions: ['dpx'], detect: 'magic', signature: (head) => ['SDPX', 'XPDS'].includes(head.toString('latin1', 0, 4)) },
  { id: 'cin', name: 'Cineon image', category: 'image', mediaType: 'image/x-cineon', extensions: ['cin'], detect: 'magic', signature: (head) => head.length >= 8 && [0x802a5fd7, 0xd75f2a80].includes(head.readUInt32BE(0)) },
  { id: 'fits', name: 'FITS image (greyscale)', category: 'image', mediaType: 'image/fits', extensions: ['fits', 'fit', 'fts'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 9) === 'SIMPLE  =' },
  { id: 'miff', name: 'ImageMagick MIFF image', category: 'image', mediaType: 'image/x-miff', extensions: ['miff'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 14) === 'id=ImageMagick' },
  { id: 'mng', name: 'MNG image (first frame)', category: 'image', mediaType: 'video/x-mng', extensions: ['mng'], detect: 'magic', signature: (head) => head.subarray(0, 8).equals(MNG_SIGNATURE) },
  { id: 'jng', name: 'JNG image (JPEG Network Graphics)', category: 'image', mediaType: 'image/x-jng', extensions: ['jng'], detect: 'magic', signature: (head) => head.subarray(0, 8).equals(JNG_SIGNATURE) },
  { id: 'cur', name: 'Windows cursor', category: 'image', mediaType: 'image/x-win-bitmap', extensions: ['cur'], detect: 'magic' },
  { id: 'pict', name: 'Apple PICT image', category: 'image', mediaType: 'image/x-pict', extensions: ['pict', 'pct'], detect: 'magic', signature: (head) => pictHeader(head) },
  { id: 'tim', name: 'PlayStation TIM image', category: 'image', mediaType: 'image/x-tim', extensions: ['tim'], detect: 'magic', signature: (head) => head.length >= 20 && head.readUInt32LE(0) === 0x10 && [0, 1, 2, 3, 8, 9].includes(head.readUInt32LE(4)) },
  { id: 'viff', name: 'Khoros VIFF image', category: 'image', mediaType: 'image/x-viff', extensions: ['viff', 'xv'], detect: 'magic', signature: (head) => head[0] === 0xab && head[1] === 0x01 && head[2] === 0x01 && head[3] === 0x03 },
  // A DCX is a directory of PCX pages (fax and scanner software): the first page is read; one page
  // is written, flattened onto white (with an alpha plane it would be a 4-plane PCX that few
  // readers, Pillow among them, take).
  { id: 'dcx', name: 'DCX multi-page PCX (first page)', category: 'image', mediaType: 'image/x-dcx', extensions: ['dcx'], detect: 'magic', signature: (head) => head.length >= 8 && head.readUInt32LE(0) === 0x3ade68b1 },
  // Wave 3 of #30. A JPEG 2000 codestream (no JP2 boxes around it: FF 4F FF 51, which file-type
  // calls "j2c"); the boxed JP2 is vips' (vips/formats.ts).
  { id: 'j2k', name: 'JPEG 2000 codestream', category: 'image', mediaType: 'image/x-jp2-codestream', extensions: ['j2k', 'j2c', 'jpc'], detect: 'magic', signature: (head) => head.length >= 4 && head.readUInt32BE(0) === 0xff4fff51 },
  // DEC SIXEL, terminal graphics (a Device Control String).
  { id: 'sixel', name: 'DEC SIXEL graphics', category: 'image', mediaType: 'image/x-sixel', extensions: ['sixel', 'six'], detect: 'magic', signature: (head) => sixelStart(head) },
  { id: 'cals', name: 'CALS raster (type 1, black and white)', category: 'image', mediaType: 'image/x-cals', extensions: ['cals', 'cal'], detect: 'magic', signature: (head) => calsHeader(head) },
  // VICAR (NASA/JPL planetary images): a text label that starts with its own size.
  { id: 'vicar', name: 'VICAR image (greyscale)', category: 'image', mediaType: 'image/x-vicar', extensions: ['vicar', 'vic'], detect: 'magic', signature: (head) => /^LBLSIZE=\s*\d+/.test(head.toString('latin1', 0, 24)) },
  // PGX, one component of JPEG 2000's conformance tests: "PG", byte order, sign, depth, size.
  { id: 'pgx', name: 'PGX image (greyscale)', category: 'image', mediaType: 'image/x-pgx', extensions: ['pgx'], detect: 'magic', signature: (head) => /^PG[ \t]*(ML|LM)[ \t]*[+-]?[ \t]*\d+[ \t]+\d+[ \t]+\d+\s/.test(head.toString('latin1', 0, 64)) },
  // GIMP's own format, read with its layers flattened (file-type knows its "gimp xcf " magic).
  { id: 'xcf', name: 'GIMP image (flattened)', category: 'image', mediaType: 'image/x-xcf', extensions: ['xcf'], detect: 'magic' },
  { id: 'wbmp', name: 'Wireless bitmap (WBMP)', category: 'image', mediaType: 'image/vnd.wap.wbmp', extensions: ['wbmp'], detect: 'extension' },
  { id: 'otb', name: 'Nokia over-the-air bitmap', category: 'image', mediaType: 'image/x-otb', extensions: ['otb'], detect: 'extension' },
];
