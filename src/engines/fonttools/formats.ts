// The formats the fonttools engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/**
 * TTX: fontTools' XML dump of a font, a root <ttFont> (after an XML declaration, comments and a
 * document type declaration, which a hostile one may carry: the helper's parser answers it).
 */
const TTX_ROOT = /^(?:<\?xml[^>]*\?>\s*)?(?:<!--[\s\S]*?-->\s*)*(?:<!DOCTYPE\s+ttFont\b[^[>]*(?:\[[\s\S]*?\])?\s*>\s*)?(?:<!--[\s\S]*?-->\s*)*<ttFont[\s>]/;

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'ttf', name: 'TrueType font', category: 'font', mediaType: 'font/ttf', extensions: ['ttf'], detect: 'magic' },
  { id: 'otf', name: 'OpenType font (CFF)', category: 'font', mediaType: 'font/otf', extensions: ['otf'], detect: 'magic' },
  { id: 'woff', name: 'Web Open Font Format', category: 'font', mediaType: 'font/woff', extensions: ['woff'], detect: 'magic' },
  { id: 'woff2', name: 'Web Open Font Format 2', category: 'font', mediaType: 'font/woff2', extensions: ['woff2'], detect: 'magic' },
  { id: 'ttx', name: 'TTX (fontTools XML font)', category: 'font', mediaType: 'application/xml', extensions: ['ttx'], detect: 'magic', signature: (_head, text) => TTX_ROOT.test(text) },
];
