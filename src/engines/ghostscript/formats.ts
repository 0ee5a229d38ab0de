// The formats the ghostscript engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'pdfa', name: 'PDF/A-2b archival document', category: 'document', mediaType: 'application/pdf', extensions: ['pdfa'], detect: 'magic', fileExtension: 'pdf', signatureOf: 'pdf' },
];
