// The formats the fonttools engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'ttf', name: 'TrueType font', category: 'font', mediaType: 'font/ttf', extensions: ['ttf'], detect: 'magic' },
  { id: 'otf', name: 'OpenType font (CFF)', category: 'font', mediaType: 'font/otf', extensions: ['otf'], detect: 'magic' },
  { id: 'woff', name: 'Web Open Font Format', category: 'font', mediaType: 'font/woff', extensions: ['woff'], detect: 'magic' },
  { id: 'woff2', name: 'Web Open Font Format 2', category: 'font', mediaType: 'font/woff2', extensions: ['woff2'], detect: 'magic' },
];
