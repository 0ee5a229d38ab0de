// Which target a file starts with on the page: the one people most often want from its format,
// in one table, instead of the first in alphabetical order (which made a PDF default to `pdfa` and a
// docx to `doc`). The user's own last choice for a source format wins over the table (the page keeps
// it in localStorage). No DOM here: the page's script imports it.
import type { FormatEntry } from '../../client/convertd-client.ts';
import type { Category } from '../../formats/categories.ts';

/**
 * Per source format, when it differs from its category's: the wished targets, best first. The
 * first one the service offers for the file wins; a format is never its own default (the same
 * format is there for options such as a resize, not as a conversion).
 */
const BY_SOURCE: Readonly<Record<string, readonly string[]>> = {
  // Photos: a JPEG is what people share and print; a JPEG itself most often goes to PNG or PDF.
  jpg: ['png', 'pdf'],
  heic: ['jpg'], avif: ['jpg'], jxl: ['jpg'], jp2: ['jpg'], tiff: ['jpg', 'pdf'], psd: ['png', 'jpg'],
  // A PDF: to an editable document where the service can, else its pages as images (never `pdfa`).
  pdf: ['docx', 'jpg', 'png', 'txt'],
  // Data: a CSV opens in a spreadsheet; the structured formats mostly go to JSON, JSON to CSV.
  csv: ['xlsx'], tsv: ['csv', 'xlsx'], json: ['csv', 'yaml'], ndjson: ['json', 'csv'], xml: ['json'], yaml: ['json'], toml: ['json'],
  // Markup written by hand reads best as a document; HTML mostly goes to PDF.
  md: ['pdf', 'docx', 'html'], gfm: ['pdf', 'docx', 'html'],
  // An MP3 is already what players take: to WAV for editing; a video mostly goes to MP4, an MP4 to its sound.
  mp3: ['wav', 'm4a'], mp4: ['mp3', 'webm'],
  // Vector drawings: SVG to PNG, LibreOffice drawings and PostScript to PDF.
  odg: ['pdf', 'png'], eps: ['pdf', 'png'], ps: ['pdf', 'png'],
  // Ebooks: EPUB is the common reader format; an EPUB goes to PDF.
  epub: ['pdf', 'mobi'],
  // Fonts: WOFF2 for the web; web fonts back to an installable TTF.
  woff: ['ttf', 'otf'], woff2: ['ttf', 'otf'],
  // Archives: ZIP opens everywhere; a ZIP goes to the common Unix archive.
  zip: ['tar.gz', '7z'],
};

/** Per category: the wished targets, best first. */
const BY_CATEGORY: Readonly<Record<Category, readonly string[]>> = {
  document: ['pdf', 'docx'],
  spreadsheet: ['pdf', 'xlsx'],
  presentation: ['pdf', 'pptx'],
  // Screenshots, icons, drawings: PNG keeps them sharp; a PNG itself most often goes to JPEG.
  image: ['png', 'jpg'],
  vector: ['png', 'pdf'],
  audio: ['mp3', 'wav'],
  video: ['mp4', 'mp3'],
  ebook: ['epub', 'pdf'],
  markup: ['pdf', 'html', 'docx'],
  data: ['json', 'csv', 'xlsx'],
  archive: ['zip', 'tar.gz'],
  font: ['woff2', 'ttf'],
  // SubRip opens in every player; WebVTT is what a web page's <track> wants.
  subtitle: ['srt', 'vtt'],
  // GeoJSON is what web maps and scripts read; KML opens in Google Earth, GPX on a GPS device.
  geodata: ['geojson', 'kml', 'gpx'],
  // A message is read or kept as a PDF; its HTML page is the same without the document engines.
  email: ['pdf', 'html', 'txt'],
  // GLB is one file that every viewer, web page and game engine opens; STL is what a 3D printer's slicer wants.
  '3d-model': ['glb', 'stl', 'obj'],
};

/** The target a file of `source` starts with: `remembered` when still offered, then the tables, then the first offered. */
export function defaultTarget(source: Pick<FormatEntry, 'id' | 'category' | 'targets'>, remembered?: string | null): string | undefined {
  const offered = new Set(source.targets);
  if (remembered && offered.has(remembered)) return remembered;
  const wished = [...(BY_SOURCE[source.id] ?? []), ...(BY_CATEGORY[source.category as Category] ?? [])];
  return wished.find((target) => target !== source.id && offered.has(target))
    ?? source.targets.find((target) => target !== source.id)
    ?? source.targets[0];
}
