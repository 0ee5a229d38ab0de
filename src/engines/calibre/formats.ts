// The formats the calibre engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them). DjVu, whose text layer calibre also reads, is the
// djvulibre engine's format.
import type { FormatDefinition } from '../../formats/catalogue.ts';

/**
 * The type and creator (bytes 60-67 of a Palm database header) of the Palm ebooks calibre's PDB
 * input reads (calibre/ebooks/pdb/__init__.py, FORMAT_READERS): PalmDOC, eReader, zTXT, Plucker,
 * Haodoo and Adobe Reader's PDF-in-PDB. A Mobipocket book is a Palm database too ("BOOKMOBI"),
 * recognised by file-type as mobi.
 */
const PALM_EBOOKS = new Set(['TEXtREAd', 'PNRdPPrs', 'PNPdPPrs', 'zTXTGPlm', 'DataPlkr', 'BOOKMTIT', 'BOOKMTIU', '.pdfADBE']);
/** Where a Palm database's record list starts, and the size of one entry (offset, attributes, id). */
const RECORD_LIST = 78;
const RECORD_ENTRY = 8;

/**
 * A Palm database holding an ebook: a known type/creator, a NUL-terminated name in the first 32
 * bytes, at least one record, and record offsets that start after the record list and never
 * go backwards (as far as the head shows them).
 */
export function isPalmEbook(head: Buffer): boolean {
  if (head.length < RECORD_LIST + RECORD_ENTRY || !PALM_EBOOKS.has(head.toString('latin1', 60, 68))) return false;
  if (!head.subarray(0, 32).includes(0)) return false;
  const records = head.readUInt16BE(76);
  if (records === 0) return false;
  let previous = RECORD_LIST + records * RECORD_ENTRY;
  for (let i = 0; i < records && RECORD_LIST + (i + 1) * RECORD_ENTRY <= head.length; i++) {
    const offset = head.readUInt32BE(RECORD_LIST + i * RECORD_ENTRY);
    if (offset < previous) return false;
    previous = offset;
  }
  return true;
}

/** A signature that is a fixed string of bytes at the start of the file (given in latin1). */
function startsWith(magic: string): (head: Buffer) => boolean {
  const bytes = Buffer.from(magic, 'latin1');
  return (head) => head.subarray(0, bytes.length).equals(bytes);
}

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'epub', name: 'EPUB ebook', category: 'ebook', mediaType: 'application/epub+zip', extensions: ['epub'], detect: 'magic' },
  { id: 'mobi', name: 'Mobipocket ebook', category: 'ebook', mediaType: 'application/x-mobipocket-ebook', extensions: ['mobi', 'prc'], detect: 'magic' },
  // Kindle KF8 and Mobipocket share the BOOKMOBI signature; the name tells what the client calls it.
  { id: 'azw3', name: 'Kindle ebook (KF8)', category: 'ebook', mediaType: 'application/vnd.amazon.mobi8-ebook', extensions: ['azw3', 'azw'], detect: 'magic', signatureOf: 'mobi', nameDecides: true },
  // PalmDOC and its kin, often named .mobi or .prc: recognised by content, read by calibre's PDB input.
  { id: 'pdb', name: 'Palm database ebook', category: 'ebook', mediaType: 'application/vnd.palm', extensions: ['pdb'], detect: 'magic', signature: isPalmEbook },
  { id: 'fb2', name: 'FictionBook', category: 'ebook', mediaType: 'application/x-fictionbook+xml', extensions: ['fb2'], detect: 'extension' },
  // The older ebook formats calibre reads, each told by its own first bytes.
  { id: 'lit', name: 'Microsoft Reader ebook', category: 'ebook', mediaType: 'application/x-ms-reader', extensions: ['lit'], detect: 'magic', signature: startsWith('ITOLITLS') },
  { id: 'lrf', name: 'Sony BBeB ebook', category: 'ebook', mediaType: 'application/x-sony-bbeb', extensions: ['lrf'], detect: 'magic', signature: startsWith('L\0R\0F\0\0\0') },
  { id: 'rb', name: 'Rocket eBook', category: 'ebook', mediaType: 'application/x-rocketbook', extensions: ['rb'], detect: 'magic', signature: startsWith('\xb0\x0c\xb0\x0c\x02\x00NUVO') },
  { id: 'snb', name: 'Shanda Bambook ebook', category: 'ebook', mediaType: 'application/x-snb-ebook', extensions: ['snb'], detect: 'magic', signature: startsWith('SNBP000B') },
  { id: 'tcr', name: 'Psion TCR ebook', category: 'ebook', mediaType: 'application/x-psion-tcr', extensions: ['tcr'], detect: 'magic', signature: startsWith('!!8-Bit!!') },
  // eReader's Palm Markup Language: plain text with backslash codes, no signature.
  { id: 'pml', name: 'Palm Markup Language', category: 'ebook', mediaType: 'text/x-pml', extensions: ['pml'], detect: 'extension' },
  // ZIP and 7-Zip files of a known layout: the content is an archive, the name tells what it holds.
  { id: 'htmlz', name: 'HTMLZ ebook (zipped HTML)', category: 'ebook', mediaType: 'application/x-htmlz', extensions: ['htmlz'], detect: 'magic', signatureOf: 'zip', nameDecides: true },
  { id: 'txtz', name: 'TXTZ ebook (zipped text)', category: 'ebook', mediaType: 'application/x-txtz', extensions: ['txtz'], detect: 'magic', signatureOf: 'zip', nameDecides: true },
  { id: 'pmlz', name: 'PMLZ ebook (zipped Palm Markup)', category: 'ebook', mediaType: 'application/x-pmlz', extensions: ['pmlz'], detect: 'magic', signatureOf: 'zip', nameDecides: true },
  { id: 'cbz', name: 'Comic book (ZIP)', category: 'ebook', mediaType: 'application/vnd.comicbook+zip', extensions: ['cbz'], detect: 'magic', signatureOf: 'zip', nameDecides: true },
  { id: 'cb7', name: 'Comic book (7-Zip)', category: 'ebook', mediaType: 'application/x-cb7', extensions: ['cb7'], detect: 'magic', signatureOf: '7z', nameDecides: true },
  { id: 'cbc', name: 'Comic book collection', category: 'ebook', mediaType: 'application/x-cbc', extensions: ['cbc'], detect: 'magic', signatureOf: 'zip', nameDecides: true },
];
