// The formats the poppler engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'pdf', name: 'PDF document', category: 'document', mediaType: 'application/pdf', extensions: ['pdf'], detect: 'magic' },
];
