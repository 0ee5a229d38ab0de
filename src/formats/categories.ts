// The categories a format belongs to, as /api/formats names them. A module of its own, free of
// Node types, because the wire shapes (and so the browser's client) use it too.
export const CATEGORIES = [
  'document', 'spreadsheet', 'presentation', 'image', 'vector', 'audio', 'video',
  'ebook', 'markup', 'data', 'archive', 'font', 'subtitle', 'geodata', 'email', '3d-model',
] as const;
export type Category = (typeof CATEGORIES)[number];
