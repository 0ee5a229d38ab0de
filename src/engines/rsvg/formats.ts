// The formats the rsvg engine adds to the catalogue: SVG, which it reads, and the PostScript
// formats it writes (no engine reads PostScript uploads: docs/security.md).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** An XML document whose root element is <svg>, possibly after a declaration, comments and a doctype. */
const SVG_ROOT = /^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE[^>[]*(\[[\s\S]*?\])?\s*>\s*)*<svg[\s>]/i;

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'svg', name: 'SVG vector image', category: 'vector', mediaType: 'image/svg+xml', extensions: ['svg'], detect: 'magic', signature: (_head, text) => SVG_ROOT.test(text) },
  { id: 'eps', name: 'Encapsulated PostScript', category: 'vector', mediaType: 'application/postscript', extensions: ['eps'], detect: 'magic' },
  { id: 'ps', name: 'PostScript document', category: 'vector', mediaType: 'application/postscript', extensions: ['ps'], detect: 'magic' },
];
