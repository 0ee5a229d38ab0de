// The formats the calibre engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'epub', name: 'EPUB ebook', category: 'ebook', mediaType: 'application/epub+zip', extensions: ['epub'], detect: 'magic' },
  { id: 'mobi', name: 'Mobipocket ebook', category: 'ebook', mediaType: 'application/x-mobipocket-ebook', extensions: ['mobi', 'prc'], detect: 'magic' },
  // Kindle KF8 and Mobipocket share the BOOKMOBI signature; the name tells what the client calls it.
  { id: 'azw3', name: 'Kindle ebook (KF8)', category: 'ebook', mediaType: 'application/vnd.amazon.mobi8-ebook', extensions: ['azw3', 'azw'], detect: 'magic', signatureOf: 'mobi', nameDecides: true },
  { id: 'fb2', name: 'FictionBook', category: 'ebook', mediaType: 'application/x-fictionbook+xml', extensions: ['fb2'], detect: 'extension' },
];
