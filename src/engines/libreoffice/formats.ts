// The formats the libreoffice engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  // Encrypted by Office: an OLE file holding the package; taken as docx when so named, so the job can say it is encrypted.
  { id: 'docx', name: 'Word document', category: 'document', mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', extensions: ['docx'], detect: 'magic', encryptedInCompoundFile: true },
  // Word, Excel and PowerPoint 97-2003 files are all OLE compound files; the streams inside tell them apart.
  { id: 'doc', name: 'Word 97-2003 document', category: 'document', mediaType: 'application/msword', extensions: ['doc'], detect: 'magic', compoundStreams: ['WordDocument'] },
  { id: 'odt', name: 'OpenDocument text', category: 'document', mediaType: 'application/vnd.oasis.opendocument.text', extensions: ['odt'], detect: 'magic' },
  { id: 'fodt', name: 'Flat OpenDocument text', category: 'document', mediaType: 'application/vnd.oasis.opendocument.text-flat-xml', extensions: ['fodt'], detect: 'extension' },
  { id: 'rtf', name: 'Rich Text Format', category: 'document', mediaType: 'application/rtf', extensions: ['rtf'], detect: 'magic' },
  // WordPerfect 5 and later: FF "WPC", then the product type (1 = WordPerfect) at byte 8.
  { id: 'wpd', name: 'WordPerfect document', category: 'document', mediaType: 'application/vnd.wordperfect', extensions: ['wpd', 'wp'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === '\xffWPC' && head[8] === 1 },
  { id: 'txt', name: 'Plain text', category: 'document', mediaType: 'text/plain; charset=utf-8', extensions: ['txt', 'text'], detect: 'extension' },
  { id: 'xls', name: 'Excel 97-2003 workbook', category: 'spreadsheet', mediaType: 'application/vnd.ms-excel', extensions: ['xls'], detect: 'magic', compoundStreams: ['Workbook', 'Book'] },
  { id: 'fods', name: 'Flat OpenDocument spreadsheet', category: 'spreadsheet', mediaType: 'application/vnd.oasis.opendocument.spreadsheet-flat-xml', extensions: ['fods'], detect: 'extension' },
  { id: 'pptx', name: 'PowerPoint presentation', category: 'presentation', mediaType: 'application/vnd.openxmlformats-officedocument.presentationml.presentation', extensions: ['pptx'], detect: 'magic', encryptedInCompoundFile: true },
  { id: 'ppt', name: 'PowerPoint 97-2003 presentation', category: 'presentation', mediaType: 'application/vnd.ms-powerpoint', extensions: ['ppt', 'pps'], detect: 'magic', compoundStreams: ['PowerPoint Document'] },
  { id: 'odp', name: 'OpenDocument presentation', category: 'presentation', mediaType: 'application/vnd.oasis.opendocument.presentation', extensions: ['odp'], detect: 'magic' },
  { id: 'fodp', name: 'Flat OpenDocument presentation', category: 'presentation', mediaType: 'application/vnd.oasis.opendocument.presentation-flat-xml', extensions: ['fodp'], detect: 'extension' },
  { id: 'odg', name: 'OpenDocument drawing', category: 'vector', mediaType: 'application/vnd.oasis.opendocument.graphics', extensions: ['odg'], detect: 'magic' },
];
