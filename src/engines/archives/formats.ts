// The formats the archives engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'zip', name: 'ZIP archive', category: 'archive', mediaType: 'application/zip', extensions: ['zip'], detect: 'magic' },
  { id: '7z', name: '7-Zip archive', category: 'archive', mediaType: 'application/x-7z-compressed', extensions: ['7z'], detect: 'magic' },
  { id: 'tar', name: 'tar archive', category: 'archive', mediaType: 'application/x-tar', extensions: ['tar'], detect: 'magic' },
  { id: 'tar.gz', name: 'gzip-compressed tar archive', category: 'archive', mediaType: 'application/gzip', extensions: ['tar.gz', 'tgz', 'gz'], detect: 'magic' },
  { id: 'tar.bz2', name: 'bzip2-compressed tar archive', category: 'archive', mediaType: 'application/x-bzip2', extensions: ['tar.bz2', 'tbz2', 'tbz', 'bz2'], detect: 'magic' },
  { id: 'tar.xz', name: 'xz-compressed tar archive', category: 'archive', mediaType: 'application/x-xz', extensions: ['tar.xz', 'txz', 'xz'], detect: 'magic' },
];
