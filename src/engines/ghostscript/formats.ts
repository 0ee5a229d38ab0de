// The formats the ghostscript engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them). EPS and PostScript are its own because it is the engine that
// reads them (librsvg writes them too). Their signatures are file-type's: `%!` starts PostScript,
// `%!PS-Adobe-N.N EPSF-` an EPS, and C5 D0 D3 C6 the DOS EPS binary header (a preview beside the
// PostScript).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'pdfa', name: 'PDF/A-2b archival document', category: 'document', mediaType: 'application/pdf', extensions: ['pdfa'], detect: 'magic', fileExtension: 'pdf', signatureOf: 'pdf' },
  { id: 'eps', name: 'Encapsulated PostScript', category: 'vector', mediaType: 'application/postscript', extensions: ['eps'], detect: 'magic' },
  { id: 'ps', name: 'PostScript document', category: 'vector', mediaType: 'application/postscript', extensions: ['ps'], detect: 'magic' },
];
