// The formats the ffmpeg engine adds to the catalogue (id, name, category, media type, extensions,
// and how the sniffer recognises them).
import type { FormatDefinition } from '../../formats/catalogue.ts';
import { MEDIA_CONTAINERS } from './containers.ts';

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'mp3', name: 'MP3 audio', category: 'audio', mediaType: 'audio/mpeg', extensions: ['mp3'], detect: 'magic' },
  { id: 'wav', name: 'WAV audio', category: 'audio', mediaType: 'audio/wav', extensions: ['wav'], detect: 'magic' },
  { id: 'flac', name: 'FLAC audio', category: 'audio', mediaType: 'audio/flac', extensions: ['flac'], detect: 'magic' },
  { id: 'ogg', name: 'Ogg Vorbis audio', category: 'audio', mediaType: 'audio/ogg', extensions: ['ogg', 'oga'], detect: 'magic' },
  { id: 'opus', name: 'Opus audio', category: 'audio', mediaType: 'audio/opus', extensions: ['opus'], detect: 'magic' },
  { id: 'm4a', name: 'MPEG-4 audio (AAC)', category: 'audio', mediaType: 'audio/mp4', extensions: ['m4a'], detect: 'magic' },
  { id: 'aiff', name: 'AIFF audio', category: 'audio', mediaType: 'audio/aiff', extensions: ['aiff', 'aif', 'aifc'], detect: 'magic' },
  // An ASF container holds Windows Media audio or video alike; only the name tells them apart.
  { id: 'wma', name: 'Windows Media audio', category: 'audio', mediaType: 'audio/x-ms-wma', extensions: ['wma'], detect: 'magic', signatureOf: 'wmv', nameDecides: true },
  { id: 'ac3', name: 'Dolby Digital (AC-3) audio', category: 'audio', mediaType: 'audio/ac3', extensions: ['ac3'], detect: 'magic' },
  { id: 'amr', name: 'AMR audio', category: 'audio', mediaType: 'audio/amr', extensions: ['amr'], detect: 'magic' },
  { id: 'mp4', name: 'MPEG-4 video', category: 'video', mediaType: 'video/mp4', extensions: ['mp4'], detect: 'magic' },
  { id: 'webm', name: 'WebM video', category: 'video', mediaType: 'video/webm', extensions: ['webm'], detect: 'magic' },
  { id: 'mkv', name: 'Matroska video', category: 'video', mediaType: 'video/x-matroska', extensions: ['mkv'], detect: 'magic' },
  { id: 'mov', name: 'QuickTime video', category: 'video', mediaType: 'video/quicktime', extensions: ['mov', 'qt'], detect: 'magic' },
  { id: 'avi', name: 'AVI video', category: 'video', mediaType: 'video/x-msvideo', extensions: ['avi'], detect: 'magic' },
  { id: 'mpeg', name: 'MPEG-1/2 video', category: 'video', mediaType: 'video/mpeg', extensions: ['mpeg', 'mpg'], detect: 'magic' },
  { id: 'flv', name: 'Flash video', category: 'video', mediaType: 'video/x-flv', extensions: ['flv'], detect: 'magic' },
  { id: '3gp', name: '3GPP video', category: 'video', mediaType: 'video/3gpp', extensions: ['3gp', '3g2'], detect: 'magic' },
  { id: 'wmv', name: 'Windows Media video', category: 'video', mediaType: 'video/x-ms-wmv', extensions: ['wmv', 'asf'], detect: 'magic' },
  { id: 'ogv', name: 'Ogg Theora video', category: 'video', mediaType: 'video/ogg', extensions: ['ogv'], detect: 'magic' },
  { id: 'm4v', name: 'MPEG-4 video (iTunes)', category: 'video', mediaType: 'video/x-m4v', extensions: ['m4v'], detect: 'magic' },
  ...MEDIA_CONTAINERS,
];
