// The formats the rsvg engine adds to the catalogue: SVG, which it reads. It also writes EPS and
// PostScript, which the ghostscript engine adds (it reads them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** An XML document whose root element is <svg>, possibly after a declaration, comments and a doctype. */
const SVG_ROOT = /^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>[]*(\[[\s\S]*?\])?\s*>\s*)*<svg[\s>]/i;

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'svg', name: 'SVG vector image', category: 'vector', mediaType: 'image/svg+xml', extensions: ['svg'], detect: 'magic', signature: (_head, text) => SVG_ROOT.test(text) },
];
