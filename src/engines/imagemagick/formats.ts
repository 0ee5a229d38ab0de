// The formats the imagemagick engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'bmp', name: 'Windows bitmap', category: 'image', mediaType: 'image/bmp', extensions: ['bmp', 'dib'], detect: 'magic' },
  { id: 'ico', name: 'Windows icon', category: 'image', mediaType: 'image/vnd.microsoft.icon', extensions: ['ico'], detect: 'magic' },
  { id: 'tga', name: 'Truevision TGA image', category: 'image', mediaType: 'image/x-tga', extensions: ['tga', 'icb', 'vda', 'vst'], detect: 'extension' },
  { id: 'psd', name: 'Photoshop document (flattened)', category: 'image', mediaType: 'image/vnd.adobe.photoshop', extensions: ['psd'], detect: 'magic' },
  { id: 'pcx', name: 'PCX image', category: 'image', mediaType: 'image/x-pcx', extensions: ['pcx'], detect: 'magic', signature: (head) => head[0] === 0x0a && [0, 2, 3, 4, 5].includes(head[1]!) && head[2] === 1 && [1, 2, 4, 8].includes(head[3]!) },
  { id: 'ppm', name: 'Netpbm colour image', category: 'image', mediaType: 'image/x-portable-pixmap', extensions: ['ppm', 'pnm'], detect: 'magic', signature: (head) => /^P[36][ \t\r\n#]/.test(head.toString('latin1', 0, 3)) },
  { id: 'pgm', name: 'Netpbm greyscale image', category: 'image', mediaType: 'image/x-portable-graymap', extensions: ['pgm'], detect: 'magic', signature: (head) => /^P[25][ \t\r\n#]/.test(head.toString('latin1', 0, 3)) },
  { id: 'pbm', name: 'Netpbm bitmap', category: 'image', mediaType: 'image/x-portable-bitmap', extensions: ['pbm'], detect: 'magic', signature: (head) => /^P[14][ \t\r\n#]/.test(head.toString('latin1', 0, 3)) },
  { id: 'xpm', name: 'X pixmap', category: 'image', mediaType: 'image/x-xpixmap', extensions: ['xpm'], detect: 'magic', signature: (_head, text) => text.startsWith('/* XPM */') },
  { id: 'dds', name: 'DirectDraw surface', category: 'image', mediaType: 'image/vnd-ms.dds', extensions: ['dds'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === 'DDS ' },
];
