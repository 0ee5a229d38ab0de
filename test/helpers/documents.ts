// Sample documents made by the tests themselves: text formats written here, the others made from
// them with the tools directly (pandoc, soffice --convert-to, ebook-convert), never through the
// service. Every sample holds the word MARKER, which the tests look for in the outputs.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';

// No fi, fl or ff in it: Ghostscript 10.0 writes a wrong ToUnicode entry for ligatures in PDF/A, so
// their text does not extract (README, known limitations).
export const MARKER = 'Quokkabird';

const FLAT_ODF_NS = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"';
const flatOdf = (mime: string, body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n<office:document ${FLAT_ODF_NS} office:version="1.2" office:mimetype="${mime}"><office:body>${body}</office:body></office:document>\n`;

/** A WordPerfect 5.1 file: a 16-byte header (signature, document offset, product and file type, version) and the text. */
function wordPerfect(text: string): Buffer {
  const header = Buffer.alloc(16);
  header.write('\xffWPC', 0, 'latin1');
  header.writeUInt32LE(16, 4);
  header.set([1, 0x0a, 0, 1], 8);
  return Buffer.concat([header, Buffer.from(text.replace(/\n/g, '\x0a'), 'latin1')]);
}

/** Every sample's heading, and a sentence of ordinary words the tests look for in each output (word recall). */
export const TITLE = `${MARKER} report`;
export const BODY = 'A small brown quokkabird swims across the quiet river at dawn while seven herons watch.';
/** BODY with one word in the markup's emphasis, so that the readers' inline parsing is on the path too. */
const stressed = (open: string, close = open) => BODY.replace('quiet', `${open}quiet${close}`);
/** The spreadsheet samples' rows: a header, then two rows with a number and a note each. */
const ROWS: ReadonlyArray<readonly [string, string, string]> = [
  ['name', 'count', 'note'],
  [MARKER, '2', 'swims across the quiet river'],
  ['trout', '5', 'seven herons watch at dawn'],
];
const cell = (value: string) => /^\d+$/.test(value)
  ? `<table:table-cell office:value-type="float" office:value="${value}"><text:p>${value}</text:p></table:table-cell>`
  : `<table:table-cell office:value-type="string"><text:p>${value}</text:p></table:table-cell>`;
const slide = (name: string, lines: string[]) => `<draw:page draw:name="${name}"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="22cm" svg:height="8cm"><draw:text-box>${lines.map((line) => `<text:p>${line}</text:p>`).join('')}</draw:text-box></draw:frame></draw:page>`;
/** The presentation sample's two slides: a test checks that a PDF of it has two pages. */
const SLIDES = [[`${MARKER} slide`, 'A small brown quokkabird swims across the quiet river.'], ['Second slide', 'Seven herons watch at dawn.']];

export const TEXT_SAMPLES: Readonly<Record<string, string>> = {
  md: `# ${TITLE}\n\n${stressed('*')}\n\n| kind | count |\n|------|-------|\n| fish | 2 |\n`,
  gfm: `# ${TITLE}\n\n${stressed('**')} The ~~slow~~ heron waits.\n\n- [x] done\n`,
  rst: `${TITLE}\n${'='.repeat(TITLE.length)}\n\n${stressed('*')}\n`,
  org: `* ${TITLE}\n${stressed('/')}\n`,
  textile: `h1. ${TITLE}\n\n${stressed('_')}\n`,
  mediawiki: `= ${TITLE} =\n\n${stressed("'''")}\n`,
  jira: `h1. ${TITLE}\n\n${stressed('*')}\n`,
  latex: `\\documentclass{article}\n\\begin{document}\n\\section{${TITLE}}\n${stressed('\\emph{', '}')}\n\\end{document}\n`,
  html: `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${MARKER}</title></head><body><h1>${TITLE}</h1><p>${stressed('<em>', '</em>')}</p></body></html>\n`,
  txt: `${TITLE}\n\n${BODY}\n`,
  ipynb: JSON.stringify({
    cells: [{ cell_type: 'markdown', metadata: {}, source: [`# ${TITLE}\n`, '\n', stressed('*')] }],
    metadata: {}, nbformat: 4, nbformat_minor: 5,
  }),
  docbook: `<?xml version="1.0" encoding="UTF-8"?>\n<article xmlns="http://docbook.org/ns/docbook" version="5.0"><title>${TITLE}</title><para>${stressed('<emphasis>', '</emphasis>')}</para></article>\n`,
  opml: `<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0"><head><title>${MARKER}</title></head><body><outline text="${TITLE}"><outline text="${BODY}"/></outline></body></opml>\n`,
  // "The fish swims." is a paragraph of its own: test/hostile-documents.test.ts puts hostile content in its place.
  fodt: flatOdf('application/vnd.oasis.opendocument.text', `<office:text><text:h text:outline-level="1">${TITLE}</text:h><text:p>${BODY}</text:p><text:p>The fish swims.</text:p></office:text>`),
  fods: flatOdf('application/vnd.oasis.opendocument.spreadsheet', `<office:spreadsheet><table:table table:name="Fish">${ROWS.map((row) => `<table:table-row>${row.map(cell).join('')}</table:table-row>`).join('')}</table:table></office:spreadsheet>`),
  fodp: flatOdf('application/vnd.oasis.opendocument.presentation', `<office:presentation>${SLIDES.map((lines, n) => slide(`slide${n + 1}`, lines)).join('')}</office:presentation>`),
  fodg: flatOdf('application/vnd.oasis.opendocument.graphics', `<office:drawing><draw:page draw:name="one"><draw:rect svg:x="2cm" svg:y="2cm" svg:width="8cm" svg:height="3cm"><text:p>${MARKER}</text:p></draw:rect></draw:page></office:drawing>`),
};

/** The words of a text as the recall checks count them: lower case, split on anything not a letter. */
export function wordsOf(text: string): string[] {
  return text.toLowerCase().split(/[^\p{L}]+/u).filter((word) => word !== '');
}

/** The share of `words` (each counted once) found among the words of `text`. */
export function recall(words: readonly string[], text: string): { recall: number; missing: string[] } {
  const wanted = [...new Set(words)];
  const found = new Set(wordsOf(text));
  const missing = wanted.filter((word) => !found.has(word));
  return { recall: wanted.length === 0 ? 1 : (wanted.length - missing.length) / wanted.length, missing };
}

const COMMON_WORDS = wordsOf(`${TITLE} ${BODY}`);
/** The words each text sample shows a reader (markup and attribute names aside). */
const TEXT_SAMPLE_WORDS: Readonly<Record<string, readonly string[]>> = {
  md: [...COMMON_WORDS, 'kind', 'count', 'fish'],
  gfm: [...COMMON_WORDS, ...wordsOf('The slow heron waits. done')],
  rst: COMMON_WORDS, org: COMMON_WORDS, textile: COMMON_WORDS, mediawiki: COMMON_WORDS, jira: COMMON_WORDS,
  latex: COMMON_WORDS, html: COMMON_WORDS, txt: COMMON_WORDS, ipynb: COMMON_WORDS, docbook: COMMON_WORDS, opml: COMMON_WORDS,
  wpd: COMMON_WORDS,
  fodt: [...COMMON_WORDS, 'fish'],
  fods: wordsOf(ROWS.flat().join(' ')),
  fodp: wordsOf(SLIDES.flat().join(' ')),
  fodg: [MARKER.toLowerCase()],
};
/** Which sample each generated format is made from, and how. */
const SOFFICE_MADE: ReadonlyArray<[string, string]> = [
  ['doc', 'fodt'], ['rtf', 'fodt'], ['pdf', 'fodt'],
  ['xls', 'fods'], ['xlsx', 'fods'], ['ods', 'fods'],
  ['ppt', 'fodp'], ['pptx', 'fodp'], ['odp', 'fodp'],
  ['odg', 'fodg'],
];

const { VIPSHOME: _vipsHome, ...toolEnv } = process.env;
function run(program: string, args: string[], cwd: string): void {
  execFileSync(program, args, { cwd, env: toolEnv, stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });
}

/** Every sample, by format id. Takes some seconds: soffice starts cold once per target format. */
export async function documentSamples(): Promise<Record<string, Buffer>> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'convertd-docs-'));
  try {
    const samples: Record<string, Buffer> = {};
    for (const [format, text] of Object.entries(TEXT_SAMPLES)) {
      await fs.writeFile(path.join(dir, `sample.${format}`), text);
      if (format !== 'fodg') samples[format] = Buffer.from(text);
    }
    samples.wpd = wordPerfect(`${TITLE}\n${BODY}\n`);

    for (const format of ['docx', 'odt', 'epub']) {
      run('pandoc', ['--from', 'markdown', '--to', format === 'epub' ? 'epub3' : format, '--metadata', `title=${MARKER}`, '--output', `sample.${format}`, 'sample.md'], dir);
    }
    const profile = `file://${path.join(dir, 'lo-profile')}`;
    const byTarget = new Map<string, string[]>();
    for (const [target, source] of SOFFICE_MADE) byTarget.set(target, [...(byTarget.get(target) ?? []), `sample.${source}`]);
    for (const [target, sources] of byTarget) {
      run('soffice', [`-env:UserInstallation=${profile}`, '--headless', '--convert-to', target, '--outdir', dir, ...sources], dir);
    }
    for (const format of ['mobi', 'azw3', 'fb2']) run('ebook-convert', ['sample.epub', `sample.${format}`], dir);

    for (const format of ['docx', 'odt', 'epub', 'mobi', 'azw3', 'fb2', ...SOFFICE_MADE.map(([target]) => target)]) {
      samples[format] = await fs.readFile(path.join(dir, `sample.${format}`));
    }
    return samples;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** The sample each generated one is made from (pandoc and ebook-convert start from the Markdown). */
const ORIGIN: Readonly<Record<string, string>> = {
  ...Object.fromEntries(['docx', 'odt', 'epub', 'mobi', 'azw3', 'fb2'].map((format) => [format, 'md'])),
  ...Object.fromEntries(SOFFICE_MADE),
};

/** The words a reader sees in each sample, by format id: a generated sample has its origin's. */
export function sampleWords(format: string): readonly string[] {
  const words = TEXT_SAMPLE_WORDS[format] ?? TEXT_SAMPLE_WORDS[ORIGIN[format] ?? ''];
  if (!words) throw new Error(`no word list for the ${format} sample`);
  return words;
}

/**
 * The number of pages a sample declares itself, where it does: slides of a presentation, the
 * <Pages> of a docx's docProps/app.xml, the page count of a PDF. A binary PowerPoint file is
 * not parsed here: it has the slides of the flat ODF it was made from.
 */
export function declaredPages(format: string, data: Uint8Array): number | undefined {
  const zipped = () => unzipSync(data, { filter: (entry) => /^(ppt\/slides\/slide\d+\.xml|docProps\/app\.xml|content\.xml)$/.test(entry.name) });
  const pages = (xml: string) => xml.match(/<draw:page[\s>]/g)?.length;
  switch (format) {
    case 'pptx': return Object.keys(zipped()).filter((name) => name.startsWith('ppt/slides/')).length;
    case 'odp': return pages(strFromU8(zipped()['content.xml'] ?? new Uint8Array()));
    case 'fodp': return pages(strFromU8(data));
    case 'ppt': return pages(TEXT_SAMPLES[ORIGIN.ppt!]!);
    case 'docx': {
      const app = zipped()['docProps/app.xml'];
      const declared = app && /<Pages>(\d+)<\/Pages>/.exec(strFromU8(app))?.[1];
      return declared ? Number(declared) : undefined;
    }
    case 'pdf': {
      const info = execFileSync('pdfinfo', ['-'], { input: data, encoding: 'utf8' });
      return Number(/^Pages:\s+(\d+)/m.exec(info)?.[1]);
    }
    default: return undefined;
  }
}

const DOCX_NAMESPACES = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"';

/** A picture run that shows relationship `id`, embedded (`r:embed`) or linked (`r:link`). */
function pictureRun(id: string, how: 'embed' | 'link'): string {
  return `<w:r><w:drawing><wp:inline><wp:extent cx="5000000" cy="5000000"/><wp:docPr id="1" name="p"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="1" name="p.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:${how}="${id}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="5000000" cy="5000000"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>`;
}

/** A field run: `instruction` (INCLUDETEXT "...", say) with `shown` as its last computed result. */
export function fieldRuns(instruction: string, shown: string): string {
  return `<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> ${instruction} </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>${shown}</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>`;
}

/** A bar chart: its title, and one series of values over categories. */
export interface ChartSample {
  readonly title: string;
  readonly series: string;
  readonly categories: readonly string[];
  readonly values: readonly number[];
}

const CHART_NS = 'http://schemas.openxmlformats.org/drawingml/2006/chart';

/** A run drawing the chart of relationship `id`, as Word writes one. */
function chartRun(id: string): string {
  return `<w:r><w:drawing><wp:inline><wp:extent cx="5000000" cy="3000000"/><wp:docPr id="2" name="Chart 1"/><a:graphic><a:graphicData uri="${CHART_NS}"><c:chart xmlns:c="${CHART_NS}" r:id="${id}"/></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>`;
}

/** A chart part (c:chartSpace) with the chart's title and its one bar series, values cached as Word caches them. */
function chartPart(chart: ChartSample): string {
  const points = (values: readonly (string | number)[]) => `<c:ptCount val="${values.length}"/>${values.map((value, i) => `<c:pt idx="${i}"><c:v>${value}</c:v></c:pt>`).join('')}`;
  return `<?xml version="1.0" encoding="UTF-8"?><c:chartSpace xmlns:c="${CHART_NS}" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><c:chart><c:title><c:tx><c:rich><a:bodyPr/><a:p><a:r><a:t>${chart.title}</a:t></a:r></a:p></c:rich></c:tx></c:title><c:plotArea><c:barChart><c:barDir val="col"/><c:grouping val="clustered"/><c:ser><c:idx val="0"/><c:order val="0"/><c:tx><c:strRef><c:f>Sheet1!$B$1</c:f><c:strCache>${points([chart.series])}</c:strCache></c:strRef></c:tx><c:cat><c:strRef><c:f>Sheet1!$A$2:$A$${chart.categories.length + 1}</c:f><c:strCache>${points(chart.categories)}</c:strCache></c:strRef></c:cat><c:val><c:numRef><c:f>Sheet1!$B$2:$B$${chart.values.length + 1}</c:f><c:numCache><c:formatCode>General</c:formatCode>${points(chart.values)}</c:numCache></c:numRef></c:val></c:ser><c:axId val="1"/><c:axId val="2"/></c:barChart><c:catAx><c:axId val="1"/><c:scaling><c:orientation val="minMax"/></c:scaling><c:axPos val="b"/><c:crossAx val="2"/></c:catAx><c:valAx><c:axId val="2"/><c:scaling><c:orientation val="minMax"/></c:scaling><c:axPos val="l"/><c:crossAx val="1"/></c:valAx></c:plotArea></c:chart></c:chartSpace>`;
}

/**
 * A DOCX written by hand: one paragraph of `text`, then optionally an embedded PNG `picture`, a
 * picture linked to an outside URL (`linkedPicture`, an external relationship), and extra runs;
 * with `chart`, a second paragraph holding only that chart (word/charts/chart1.xml).
 */
export function handmadeDocx(parts: { text: string; picture?: Uint8Array; linkedPicture?: string; runs?: string; chart?: ChartSample }): Buffer {
  const relationships = [
    parts.picture ? '<Relationship Id="rPic" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/p.png"/>' : '',
    parts.linkedPicture ? `<Relationship Id="rLink" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="${parts.linkedPicture}" TargetMode="External"/>` : '',
    parts.chart ? '<Relationship Id="rChart" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/chart" Target="charts/chart1.xml"/>' : '',
  ].join('');
  const runs = `<w:r><w:t>${parts.text}</w:t></w:r>${parts.picture ? pictureRun('rPic', 'embed') : ''}${parts.linkedPicture ? pictureRun('rLink', 'link') : ''}${parts.runs ?? ''}`;
  const chartParagraph = parts.chart ? `<w:p>${chartRun('rChart')}</w:p>` : '';
  const chartType = parts.chart ? '<Override PartName="/word/charts/chart1.xml" ContentType="application/vnd.openxmlformats-officedocument.drawingml.chart+xml"/>' : '';
  const files: Record<string, Uint8Array> = {
    '[Content_Types].xml': strToU8(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>${chartType}</Types>`),
    '_rels/.rels': strToU8('<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'),
    'word/_rels/document.xml.rels': strToU8(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${relationships}</Relationships>`),
    'word/document.xml': strToU8(`<?xml version="1.0" encoding="UTF-8"?><w:document ${DOCX_NAMESPACES}><w:body><w:p>${runs}</w:p>${chartParagraph}</w:body></w:document>`),
  };
  if (parts.picture) files['word/media/p.png'] = parts.picture;
  if (parts.chart) files['word/charts/chart1.xml'] = strToU8(chartPart(parts.chart));
  return Buffer.from(zipSync(files));
}

/**
 * An EPUB 3 written by hand, beside handmadeDocx: one chapter (chapter.xhtml) whose body is `body`
 * (HTML) under a heading `title`, `head` added to its head; `files` are further members (pictures),
 * `manifest` further manifest items and `metadata` further metadata, as the test needs them. The
 * mimetype member comes first and stored, as EPUB requires.
 */
export function handmadeEpub(parts: { title: string; body: string; head?: string; files?: Record<string, Uint8Array>; manifest?: string; metadata?: string }): Buffer {
  const chapter = `<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>${parts.title}</title>${parts.head ?? ''}</head><body><h1>${parts.title}</h1>${parts.body}</body></html>`;
  const opf = `<?xml version="1.0" encoding="UTF-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:uuid:12345678-1234-1234-1234-123456789abc</dc:identifier><dc:title>${parts.title}</dc:title><dc:language>en</dc:language><meta property="dcterms:modified">2026-01-01T00:00:00Z</meta>${parts.metadata ?? ''}</metadata><manifest><item id="ch" href="chapter.xhtml" media-type="application/xhtml+xml"/><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>${parts.manifest ?? ''}</manifest><spine><itemref idref="ch"/></spine></package>`;
  const nav = `<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>nav</title></head><body><nav epub:type="toc"><ol><li><a href="chapter.xhtml">${parts.title}</a></li></ol></nav></body></html>`;
  const container = '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>';
  const members: Record<string, Uint8Array> = { 'META-INF/container.xml': strToU8(container), 'OEBPS/content.opf': strToU8(opf), 'OEBPS/chapter.xhtml': strToU8(chapter), 'OEBPS/nav.xhtml': strToU8(nav) };
  for (const [name, data] of Object.entries(parts.files ?? {})) members[`OEBPS/${name}`] = data;
  return Buffer.from(zipSync({ mimetype: [strToU8('application/epub+zip'), { level: 0 }], ...members }));
}

/**
 * A PDF with no text layer, as a scanner writes one: a page that is only a picture (of a framed
 * shape, no lettering), saved by Pillow, which adds no text of its own.
 */
export function scannedPdf(): Buffer {
  const script = [
    'import io, sys',
    'from PIL import Image, ImageDraw',
    "page = Image.new('RGB', (850, 1100), 'white')",
    'draw = ImageDraw.Draw(page)',
    "draw.rectangle((80, 80, 770, 1020), outline='black', width=6)",
    "draw.ellipse((250, 300, 600, 650), fill='navy')",
    'out = io.BytesIO()',
    "page.save(out, 'PDF', resolution=100)",
    'sys.stdout.buffer.write(out.getvalue())',
  ].join('\n');
  return execFileSync('/usr/bin/python3', ['-c', script], { maxBuffer: 16 * 1024 * 1024 });
}
