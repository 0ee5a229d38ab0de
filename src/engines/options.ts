// Conversion options as data (api-contract.md, "Conversion options"). An engine declares, per
// conversion edge, the options it takes (an OptionSpec each: name, type, bounds or values,
// default, description); the planner knows from them which route supports what, the discovery
// endpoint (GET /api/formats/{source}/{target}) publishes them, and the jobs layer parses every
// value the client sent into its type here, before the job is accepted. An engine receives only
// parsed values (numbers, booleans, one of its own enum words, a PageRanges, an Rgb) and maps them
// to its own arguments: no text from a client ever reaches an argument list, a path or a filter
// (docs/options.md). The names and meanings are the contract's; the shared specs below carry them,
// and an engine narrows a spec's bounds or values to what it really does.
import { ConvertdError } from '../errors.ts';
import type { OptionDescriptor } from '../wire/shapes.ts';

export type { OptionDescriptor } from '../wire/shapes.ts';

export type OptionType = 'integer' | 'number' | 'boolean' | 'string' | 'enum';

/** One page range: `from` to `to` inclusive, 1-based; `to` undefined means "to the last page". */
export interface PageSpan {
  readonly from: number;
  readonly to: number | undefined;
}

/** A parsed `page_range`: spans in the order given, overlapping allowed (pages are kept once, in order). */
export interface PageRanges {
  readonly kind: 'pages';
  readonly spans: readonly PageSpan[];
}

export interface Rgb {
  readonly kind: 'rgb';
  readonly r: number;
  readonly g: number;
  readonly b: number;
}

/** What an engine receives for one option. */
export type OptionValue = number | boolean | string | PageRanges | Rgb;

/** The parsed options one step of a route applies, by name. */
export type StepOptions = Readonly<Record<string, OptionValue>>;

interface SpecBase {
  readonly name: string;
  readonly description: string;
  /**
   * Which step of a route applies the option when several declare it: `input` the first (page_range,
   * sheet, trim: cut as early as possible, later steps see only what is kept), `output` the last
   * (quality, codecs: the encoder that writes the result), `every` each step that declares it, the
   * route counting it where its last step does (strip: metadata kept must be kept by every step).
   */
  readonly appliesAt: 'input' | 'output' | 'every';
}

export interface NumberSpec extends SpecBase {
  readonly type: 'integer' | 'number';
  readonly minimum: number;
  readonly maximum: number;
  readonly default?: number;
}

export interface BooleanSpec extends SpecBase {
  readonly type: 'boolean';
  readonly default?: boolean;
}

export interface EnumSpec extends SpecBase {
  readonly type: 'enum';
  readonly values: readonly string[];
  readonly default?: string;
}

export interface StringSpec extends SpecBase {
  readonly type: 'string';
  /** The syntax, for the descriptor (JSON Schema's `pattern`, anchored). */
  readonly pattern: string;
  readonly default?: string;
  /** Turns a value matching `pattern` into what the engine receives; throws OptionError when it cannot. */
  parse(text: string): OptionValue;
}

export type OptionSpec = NumberSpec | BooleanSpec | EnumSpec | StringSpec;

export function describeOption(spec: OptionSpec): OptionDescriptor {
  const descriptor: OptionDescriptor = { name: spec.name, type: spec.type, description: spec.description };
  if (spec.default !== undefined) descriptor.default = spec.default;
  if (spec.type === 'integer' || spec.type === 'number') {
    descriptor.minimum = spec.minimum;
    descriptor.maximum = spec.maximum;
  } else if (spec.type === 'enum') {
    descriptor.values = [...spec.values];
  } else if (spec.type === 'string') {
    descriptor.pattern = spec.pattern;
  }
  return descriptor;
}

/** Longest option value accepted, in characters (the form's field limit is a little above it). */
export const MAX_OPTION_LENGTH = 256;

/** A value that does not fit its option: becomes 422 invalid_option with what is allowed. */
export class OptionError extends Error {}

/** The client's value (trimmed text) parsed into the spec's type; throws ConvertdError invalid_option. */
export function parseOption(spec: OptionSpec, raw: string): OptionValue {
  try {
    return parseValue(spec, raw);
  } catch (error) {
    if (!(error instanceof OptionError)) throw error;
    const { name: _name, description: _description, ...allowed } = describeOption(spec);
    throw new ConvertdError('invalid_option', `Option "${spec.name}": ${error.message}`, { option: spec.name, reason: error.message, ...allowed });
  }
}

function parseValue(spec: OptionSpec, raw: string): OptionValue {
  if (raw.length > MAX_OPTION_LENGTH) throw new OptionError(`the value is longer than ${MAX_OPTION_LENGTH} characters.`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw new OptionError('the value holds control characters (a NUL, a newline, ...).');
  const text = raw.trim();
  if (text === '') throw new OptionError('the value is empty: leave the option out to get its default.');
  switch (spec.type) {
    case 'integer':
    case 'number': {
      // Plain decimal only: no hex, exponents, "Infinity" or signs beyond a leading minus.
      const syntax = spec.type === 'integer' ? /^-?\d{1,16}$/ : /^-?(\d{1,16}(\.\d{1,9})?|\.\d{1,9})$/;
      if (!syntax.test(text)) throw new OptionError(`"${clip(text)}" is not ${spec.type === 'integer' ? 'a whole number' : 'a number'}.`);
      const value = Number(text);
      if (value < spec.minimum || value > spec.maximum) throw new OptionError(`${text} is outside ${spec.minimum}-${spec.maximum}.`);
      return value;
    }
    case 'boolean': {
      const word = text.toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(word)) return true;
      if (['false', '0', 'no', 'off'].includes(word)) return false;
      throw new OptionError(`"${clip(text)}" is not true or false.`);
    }
    case 'enum': {
      const word = text.toLowerCase();
      const found = spec.values.find((value) => value === word);
      if (found === undefined) throw new OptionError(`"${clip(text)}" is not one of ${spec.values.join(', ')}.`);
      return found;
    }
    case 'string': {
      if (!new RegExp(`^(?:${spec.pattern})$`, 'u').test(text)) throw new OptionError(`"${clip(text)}" does not match ${spec.pattern}.`);
      return spec.parse(text);
    }
  }
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

// ---------------------------------------------------------------------------------------------
// Typed reading, for engines: the value a step received, or undefined when the client gave none.

export function numberOption(options: StepOptions | undefined, name: string): number | undefined {
  const value = options?.[name];
  return typeof value === 'number' ? value : undefined;
}

/**
 * For an edge that an option turns on (ocr, trace), dearer than the route taken without it:
 * `name`=false is what that cheaper route does, refused (422) rather than taken as a reason to
 * bring the job here. `without` says what the conversion gives without the option, `with` what
 * true asks for.
 */
export function refuseFalse(options: StepOptions, name: string, without: string, withIt: string): void {
  if (booleanOption(options, name) !== false) return;
  throw new ConvertdError('invalid_option', `Option "${name}": false is what the conversion does without it (${without}): leave the option out, or send ${name}=true ${withIt}.`, { option: name, reason: 'false is the default route: leave the option out', values: [true] });
}

export function booleanOption(options: StepOptions | undefined, name: string): boolean | undefined {
  const value = options?.[name];
  return typeof value === 'boolean' ? value : undefined;
}

export function enumOption<T extends string>(options: StepOptions | undefined, name: string): T | undefined {
  const value = options?.[name];
  return typeof value === 'string' ? value as T : undefined;
}

export function pageRangeOption(options: StepOptions | undefined, name = 'page_range'): PageRanges | undefined {
  const value = options?.[name];
  return typeof value === 'object' && value.kind === 'pages' ? value : undefined;
}

export function rgbOption(options: StepOptions | undefined, name = 'background'): Rgb | undefined {
  const value = options?.[name];
  return typeof value === 'object' && value.kind === 'rgb' ? value : undefined;
}

/** `#rrggbb`, for engines whose argument takes a colour in that form (built from numbers, not from the client's text). */
export function rgbHex(colour: Rgb): string {
  return `#${[colour.r, colour.g, colour.b].map((c) => c.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * The pages a range selects out of a document of `pageCount` pages, ascending, each once. Throws
 * invalid_option when it selects none (a range past the end), found only once the job runs.
 */
export function selectPages(ranges: PageRanges, pageCount: number): number[] {
  const pages = new Set<number>();
  for (const span of ranges.spans) {
    const last = Math.min(span.to ?? pageCount, pageCount);
    for (let page = span.from; page <= last; page++) pages.add(page);
  }
  if (pages.size === 0) {
    throw new ConvertdError('invalid_option', `Option "page_range": the document has ${pageCount} page${pageCount === 1 ? '' : 's'}, and the range selects none of them.`, { option: 'page_range', reason: 'beyond the last page', maximum: pageCount });
  }
  return [...pages].sort((a, b) => a - b);
}

/**
 * The first page a range selects, checked against the document (without listing them all: a range
 * may say "1-" of 100,000 pages): for the engines that make one page of a range into one file.
 */
export function firstSelectedPage(ranges: PageRanges, pageCount: number): number {
  const first = Math.min(...ranges.spans.map((span) => span.from));
  if (first > pageCount) selectPages(ranges, pageCount); // throws invalid_option: the range selects no page
  return first;
}

/** Consecutive runs of sorted pages, for engines that take a first and a last page per call. */
export function pageRuns(pages: readonly number[]): Array<{ first: number; last: number }> {
  const runs: Array<{ first: number; last: number }> = [];
  for (const page of pages) {
    const run = runs.at(-1);
    if (run && page === run.last + 1) run.last = page;
    else runs.push({ first: page, last: page });
  }
  return runs;
}

// ---------------------------------------------------------------------------------------------
// The contract's options (api-contract.md's table). An engine uses these, narrowed with `narrow`
// where it offers less (a smaller maximum, fewer codecs).

/** Largest page number a range may name: past any document the caps let through. */
export const MAX_PAGE_NUMBER = 100_000;
/** At most this many spans in one page_range ("1,3,5,..." a thousand times is refused). */
const MAX_PAGE_SPANS = 64;

function parsePageRanges(text: string): PageRanges {
  const parts = text.split(',');
  if (parts.length > MAX_PAGE_SPANS) throw new OptionError(`at most ${MAX_PAGE_SPANS} ranges.`);
  const spans = parts.map((part): PageSpan => {
    const [fromText, toText] = part.trim().split('-').map((s) => s.trim());
    const from = Number(fromText);
    const to = toText === undefined ? from : toText === '' ? undefined : Number(toText);
    if (!Number.isInteger(from) || from < 1) throw new OptionError(`pages are numbered from 1 ("${clip(part)}").`);
    if (from > MAX_PAGE_NUMBER || (to !== undefined && to > MAX_PAGE_NUMBER)) throw new OptionError(`page numbers go up to ${MAX_PAGE_NUMBER}.`);
    if (to !== undefined && to < from) throw new OptionError(`"${clip(part)}" ends before it starts.`);
    return { from, to };
  });
  return { kind: 'pages', spans };
}

function parseColour(text: string): Rgb {
  const hex = text.replace(/^#/, '').toLowerCase();
  const full = hex.length === 3 ? [...hex].map((c) => c + c).join('') : hex;
  return { kind: 'rgb', r: parseInt(full.slice(0, 2), 16), g: parseInt(full.slice(2, 4), 16), b: parseInt(full.slice(4, 6), 16) };
}

/** Longest trim point: a day, past any duration the caps let through. */
const MAX_TRIM_SECONDS = 86_400;

/** `HH:MM:SS[.mmm]`, `MM:SS[.mmm]` or seconds (`12.5`), as a number of seconds. */
function parseTimestamp(text: string): number {
  const parts = text.split(':').map(Number);
  const seconds = parts.reduce((total, part) => total * 60 + part, 0);
  if (parts.slice(1).some((part) => part >= 60)) {
    throw new OptionError(`"${clip(text)}": minutes and seconds run from 0 to 59.`);
  }
  if (seconds > MAX_TRIM_SECONDS) throw new OptionError(`at most ${MAX_TRIM_SECONDS} seconds.`);
  return Math.round(seconds * 1000) / 1000;
}

/** The EPSG codes the srs option takes (a declared list: no text from a client reaches GDAL, only a number it knows). */
export const EPSG_CODES: readonly number[] = [4326, 4258, 4269, 3857, 3395, 3035, 2154, 25831, 25832, 25833, 27700, 28992, 31370, 2056, 32631, 32632, 32633, 5070, 3067, 3006];

function parseEpsg(text: string): number {
  const code = Number(text.slice(5));
  if (!EPSG_CODES.includes(code)) throw new OptionError(`EPSG:${code} is not one of the coordinate systems this service converts to (${EPSG_CODES.map((value) => `EPSG:${value}`).join(', ')}).`);
  return code;
}

const TIMESTAMP_PATTERN = '(\\d{1,2}:){0,2}\\d{1,5}(\\.\\d{1,3})?';

/** The largest width or height a client may ask for (the pixel cap bounds the product too). */
export const MAX_DIMENSION = 16_384;

export const OPTIONS = {
  quality: { name: 'quality', type: 'integer', minimum: 1, maximum: 100, appliesAt: 'output', description: 'Quality of the lossy encoder, 1-100: higher is better and larger.' },
  width: { name: 'width', type: 'integer', minimum: 1, maximum: MAX_DIMENSION, appliesAt: 'input', description: 'Width in pixels; given alone, the height follows the aspect ratio.' },
  height: { name: 'height', type: 'integer', minimum: 1, maximum: MAX_DIMENSION, appliesAt: 'input', description: 'Height in pixels; given alone, the width follows the aspect ratio.' },
  fit: { name: 'fit', type: 'enum', values: ['max', 'crop', 'scale'], default: 'max', appliesAt: 'input', description: 'With both width and height: fit inside them keeping the aspect ratio (max), fill them and crop the overflow (crop), or stretch (scale).' },
  strip: { name: 'strip', type: 'boolean', default: true, appliesAt: 'every', description: 'Remove metadata (EXIF, GPS position, comments, XMP) from the result; true by default, for privacy. The colour profile and the orientation are kept applied.' },
  background: { name: 'background', type: 'string', pattern: '#?([0-9a-fA-F]{6}|[0-9a-fA-F]{3})', default: '#ffffff', appliesAt: 'output', parse: parseColour, description: 'Colour behind transparent areas, as #rrggbb, for targets without transparency.' },
  pixel_density: { name: 'pixel_density', type: 'integer', minimum: 10, maximum: 600, appliesAt: 'input', description: 'Resolution in dots per inch at which pages or vector graphics are rendered.' },
  page_range: { name: 'page_range', type: 'string', pattern: '\\s*\\d{1,6}\\s*(-\\s*(\\d{1,6})?\\s*)?(,\\s*\\d{1,6}\\s*(-\\s*(\\d{1,6})?\\s*)?)*', appliesAt: 'input', parse: parsePageRanges, description: 'Which pages (slides) to convert, 1-based: "2", "1-3,5", "4-" (from 4 to the end).' },
  pdf_a: { name: 'pdf_a', type: 'boolean', default: false, appliesAt: 'output', description: 'Make the PDF a PDF/A-2b document for archiving (fonts embedded, no transparency or encryption).' },
  video_codec: { name: 'video_codec', type: 'enum', values: ['h264', 'h265', 'vp9', 'av1'], appliesAt: 'output', description: 'Video encoder.' },
  crf: { name: 'crf', type: 'integer', minimum: 0, maximum: 63, appliesAt: 'output', description: 'Constant rate factor of the video encoder: lower is better and larger.' },
  fps: { name: 'fps', type: 'number', minimum: 0.1, maximum: 120, appliesAt: 'output', description: 'Frames per second of the result.' },
  trim_start: { name: 'trim_start', type: 'string', pattern: TIMESTAMP_PATTERN, appliesAt: 'input', parse: parseTimestamp, description: 'Where the result starts: HH:MM:SS[.mmm], MM:SS or seconds.' },
  trim_end: { name: 'trim_end', type: 'string', pattern: TIMESTAMP_PATTERN, appliesAt: 'input', parse: parseTimestamp, description: 'Where the result ends (a time of the source, not a duration): HH:MM:SS[.mmm], MM:SS or seconds.' },
  audio_codec: { name: 'audio_codec', type: 'enum', values: [], appliesAt: 'output', description: 'Audio encoder, where the target container takes several.' },
  audio_bitrate: { name: 'audio_bitrate', type: 'integer', minimum: 8, maximum: 512, appliesAt: 'output', description: 'Audio bit rate in kbit/s (lossy encoders).' },
  audio_frequency: { name: 'audio_frequency', type: 'integer', minimum: 8000, maximum: 192000, appliesAt: 'output', description: 'Sample rate in Hz.' },
  audio_channels: { name: 'audio_channels', type: 'integer', minimum: 1, maximum: 8, appliesAt: 'output', description: 'Number of audio channels: 1 mono, 2 stereo, ...' },
  sheet: { name: 'sheet', type: 'string', pattern: '[^\\u0000-\\u001f\\u007f]{1,100}', appliesAt: 'input', parse: (text) => text, description: 'Which sheet of the workbook becomes the table: its name, or its number counted from 1 (default: the first).' },
  delimiter: { name: 'delimiter', type: 'string', pattern: '[,;|:^~]', default: ',', appliesAt: 'output', parse: (text) => text, description: 'Field separator of the CSV output, one character: "," (the default), ";" (for spreadsheets set to a European locale), "|", ":", "^" or "~".' },
  each: { name: 'each', type: 'enum', values: [], appliesAt: 'output', description: 'With target zip: convert every page (slide, frame, or member of an uploaded archive) to this format; the ZIP holds the results in order.' },
  indent: { name: 'indent', type: 'integer', minimum: 0, maximum: 8, default: 2, appliesAt: 'output', description: 'Spaces per level of nesting in a pretty-printed output (json, yaml, xml); 0 writes it compact, on one line, where the format allows.' },
  toc: { name: 'toc', type: 'boolean', default: false, appliesAt: 'output', description: 'Add a table of contents built from the headings.' },
  compression_level: { name: 'compression_level', type: 'integer', minimum: 0, maximum: 9, appliesAt: 'output', description: 'Compression level of the archive written: 0 fastest (zip and tar.gz then store the data uncompressed) to 9 smallest and slowest.' },
  remove_audio: { name: 'remove_audio', type: 'boolean', default: false, appliesAt: 'output', description: 'Drop the sound: the video result has no audio stream.' },
  compress: { name: 'compress', type: 'enum', values: ['low', 'medium', 'high'], appliesAt: 'output', description: 'Make the PDF smaller by resampling and recompressing its pictures (Ghostscript\'s presets): low (pictures finer than about 450 dpi brought to 300 dpi, for print), medium (150 dpi, for screens and e-readers), high (72 dpi, the smallest file). Text and vector drawings stay sharp. Default: pictures kept as they are.' },
  threshold: { name: 'threshold', type: 'integer', minimum: 0, maximum: 100, default: 50, appliesAt: 'output', description: 'Tracing: how dark a pixel must be to belong to the shape, in percent of full brightness, 0-100 (default 50): pixels darker than it are traced, the rest is background. Higher takes in lighter greys.' },
  turdsize: { name: 'turdsize', type: 'integer', minimum: 0, maximum: 10_000_000, default: 2, appliesAt: 'output', description: 'Tracing: specks (and holes) of up to this many pixels are dropped, 0 keeps every one (default 2, potrace\'s own); raise it to clean up scans and noise.' },
  invert: { name: 'invert', type: 'boolean', default: false, appliesAt: 'output', description: 'Tracing: trace the light parts instead of the dark ones (for a light drawing on a dark ground).' },
  color: { name: 'color', type: 'string', pattern: '#?([0-9a-fA-F]{6}|[0-9a-fA-F]{3})', default: '#000000', appliesAt: 'output', parse: parseColour, description: 'Tracing: the one colour the traced shapes are filled with, as #rrggbb (a single-colour trace: the picture\'s own colours are not kept).' },
  trace: { name: 'trace', type: 'boolean', default: false, appliesAt: 'output', description: 'Tracing: the PDF holds the image\'s outline as vector shapes (potrace) instead of the picture itself.' },
  skip_text: { name: 'skip_text', type: 'boolean', default: true, appliesAt: 'output', description: 'OCR of a PDF: pages that already have text keep it, as they are, and only the others are read (true, the default); false reads every page again from its picture, the text it had replaced by what OCR reads.' },
  text_to_path: { name: 'text_to_path', type: 'boolean', default: false, appliesAt: 'output', description: 'Draw the text as outlines: the drawing looks the same where its fonts are missing, but its text can no longer be selected, searched or edited.' },
  ocr: { name: 'ocr', type: 'boolean', default: false, appliesAt: 'output', description: 'Read the text of the picture (OCR) and make the PDF searchable: the picture with the text, invisible, over it.' },
  language: { name: 'language', type: 'string', pattern: '[a-z]{3}(_[a-z]{3,4})?(\\+[a-z]{3}(_[a-z]{3,4})?){0,3}', default: 'eng', appliesAt: 'output', parse: (text) => text.toLowerCase(), description: 'Language(s) of the text to read (OCR), as Tesseract\'s codes: one, or several joined with "+" (eng+rus).' },
  // Pages printed from HTML (the chromium engine), and the browser that renders them.
  page_size: { name: 'page_size', type: 'enum', values: [], appliesAt: 'output', description: 'Paper size of the PDF\'s pages.' },
  landscape: { name: 'landscape', type: 'boolean', default: false, appliesAt: 'output', description: 'Print the PDF\'s pages in landscape orientation (the paper turned: wider than tall).' },
  margin: { name: 'margin', type: 'number', minimum: 0, maximum: 100, appliesAt: 'output', description: 'Margin on every side of the PDF\'s pages, in millimetres.' },
  print_background: { name: 'print_background', type: 'boolean', default: true, appliesAt: 'output', description: 'Print background colours and images, as the page shows them on screen; false prints as a browser\'s print dialog does by default, without them.' },
  full_page: { name: 'full_page', type: 'boolean', default: true, appliesAt: 'output', description: 'The picture holds the whole page, as tall as it is; false: only the browser window (`width` × `height`).' },
  javascript: { name: 'javascript', type: 'boolean', default: false, appliesAt: 'output', description: 'Run the page\'s scripts before it is rendered. Off by default: the page then renders the same every time, and no script can loop, probe or rewrite it.' },
  srs: { name: 'srs', type: 'string', pattern: '[Ee][Pp][Ss][Gg]:\\d{4,5}', appliesAt: 'output', parse: parseEpsg, description: 'Coordinate reference system of the result, as EPSG:<code> (EPSG:4326 longitude/latitude, EPSG:3857 web Mercator, ...).' },
} as const satisfies Record<string, OptionSpec>;

/** A contract option with some of its fields changed (narrower bounds, the values an engine offers, its own default or wording). */
export function narrow(spec: NumberSpec, changes: Partial<Pick<NumberSpec, 'minimum' | 'maximum' | 'default' | 'description'>>): NumberSpec;
export function narrow(spec: EnumSpec, changes: Partial<Pick<EnumSpec, 'values' | 'default' | 'description'>>): EnumSpec;
export function narrow(spec: BooleanSpec, changes: Partial<Pick<BooleanSpec, 'default' | 'description'>>): BooleanSpec;
export function narrow(spec: StringSpec, changes: Partial<Pick<StringSpec, 'default' | 'description'>>): StringSpec;
export function narrow(spec: OptionSpec, changes: object): OptionSpec {
  return { ...spec, ...changes } as OptionSpec;
}

/**
 * Parses every value of `given` (names the route applies) with its spec, and checks those that
 * bound each other: a width and height whose product passes the pixel cap, a trim that ends
 * before it starts. Throws invalid_option; returns the parsed values.
 */
export function checkOptions(specs: readonly OptionSpec[], given: Readonly<Record<string, string>>, limits: { maxImagePixels: number }): Record<string, OptionValue> {
  const values: Record<string, OptionValue> = {};
  for (const [name, raw] of Object.entries(given)) {
    const spec = specs.find((s) => s.name === name);
    if (spec) values[name] = parseOption(spec, raw);
  }
  const { width, height, trim_start: start, trim_end: end } = values;
  if (typeof width === 'number' && typeof height === 'number' && width * height > limits.maxImagePixels) {
    throw new ConvertdError('invalid_option', `Options "width" and "height": ${width} × ${height} pixels is more than this service's limit of ${limits.maxImagePixels}.`, { option: 'width', reason: 'width × height is past the pixel limit', maximum_pixels: limits.maxImagePixels });
  }
  if (typeof start === 'number' && typeof end === 'number' && end <= start) {
    throw new ConvertdError('invalid_option', `Option "trim_end": ${end} s is not after trim_start (${start} s).`, { option: 'trim_end', reason: 'ends before trim_start', minimum: start });
  }
  return values;
}
