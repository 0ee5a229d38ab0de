// The e-mail formats the email engine adds to the catalogue. An EML message and an mbox mailbox
// are plain text with no signature of their own: recognised by name, as the other text formats
// are, and their content is checked by the engine (messages.ts) before anything is rendered. An
// Outlook MSG is an OLE compound file, told apart from Word, Excel and PowerPoint files by its
// property stream (sniff.ts prefers the format the name says when several streams match: an
// Outlook message carries its attached .doc's own stream names inside it).
import type { FormatDefinition } from '../../formats/catalogue.ts';

export const FORMATS: readonly FormatDefinition[] = [
  { id: 'eml', name: 'E-mail message (EML)', category: 'email', mediaType: 'message/rfc822', extensions: ['eml'], detect: 'extension' },
  { id: 'mbox', name: 'Mailbox (mbox)', category: 'email', mediaType: 'application/mbox', extensions: ['mbox', 'mbx'], detect: 'extension' },
  { id: 'msg', name: 'Outlook message (MSG)', category: 'email', mediaType: 'application/vnd.ms-outlook', extensions: ['msg'], detect: 'magic', compoundStreams: ['__properties_version1.0'] },
];
