// The formats the mupdf engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them). Both are ZIP packages (Open Packaging Conventions), which
// file-type calls plain "zip": formats/ooxml-shortcut.ts tells them from other packages by the
// relationship in _rels/.rels that names the document's fixed representation (its
// FixedDocumentSequence), whose type is Microsoft's for XPS and Ecma's for OpenXPS.
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'xps', name: 'XPS document', category: 'document', mediaType: 'application/vnd.ms-xpsdocument', extensions: ['xps'], detect: 'magic' },
  { id: 'oxps', name: 'OpenXPS document', category: 'document', mediaType: 'application/oxps', extensions: ['oxps'], detect: 'magic' },
];
