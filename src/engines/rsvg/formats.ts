// The formats the rsvg engine adds to the catalogue: SVG and gzip-compressed SVG, which it reads.
// It also writes EPS and PostScript, which the ghostscript engine adds (it reads them).
import { constants, gunzipSync } from 'node:zlib';
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** An XML document whose root element is <svg>, possibly after a declaration, comments and a doctype. */
const SVG_ROOT = /^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>[]*(\[[\s\S]*?\])?\s*>\s*)*<svg[\s>]/i;

/** Whether these bytes start an SVG document (after a byte-order mark and white space). */
export function startsAsSvg(bytes: Buffer): boolean {
  return SVG_ROOT.test(bytes.toString('utf8').replace(/^\uFEFF/, '').trimStart());
}

/** Compressed bytes of an .svgz looked into for the root element (a few KiB of XML once inflated). */
const SVGZ_PEEK_BYTES = 2048;
/** What those bytes may inflate to: past it the file is no drawing's start (a bomb), and not an svgz. */
const SVGZ_PEEK_LIMIT = 4 * 1024 * 1024;

/** A gzip stream whose first inflated bytes are an SVG document's start. */
function isGzippedSvg(head: Buffer): boolean {
  if (head[0] !== 0x1f || head[1] !== 0x8b) return false;
  try {
    // Z_SYNC_FLUSH: inflate what these bytes hold without asking for the stream's end.
    const start = gunzipSync(head.subarray(0, SVGZ_PEEK_BYTES), { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: SVGZ_PEEK_LIMIT });
    return startsAsSvg(start);
  } catch {
    return false;
  }
}

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'svg', name: 'SVG vector image', category: 'vector', mediaType: 'image/svg+xml', extensions: ['svg'], detect: 'magic', signature: (_head, text) => SVG_ROOT.test(text) },
  { id: 'svgz', name: 'SVG vector image, gzip-compressed', category: 'vector', mediaType: 'image/svg+xml', extensions: ['svgz'], detect: 'magic', signature: (head) => isGzippedSvg(head) },
];
