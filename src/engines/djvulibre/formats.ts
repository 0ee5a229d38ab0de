// The formats the djvulibre engine adds to the catalogue (id, name, category, media type,
// extensions, and how the sniffer recognises them). calibre reads the same format's text layer
// into ebooks, by this id.
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** A DjVu file: an IFF85 form ("AT&TFORM") of type DJVU (one page) or DJVM (several). */
function isDjvu(head: Buffer): boolean {
  return head.toString('latin1', 0, 8) === 'AT&TFORM' && ['DJVU', 'DJVM'].includes(head.toString('latin1', 12, 16));
}

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'djvu', name: 'DjVu document', category: 'document', mediaType: 'image/vnd.djvu', extensions: ['djvu', 'djv'], detect: 'magic', signature: isDjvu },
];
