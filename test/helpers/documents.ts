// Sample documents made by the tests themselves: text formats written here, the others made from
// them with the tools directly (pandoc, soffice --convert-to, ebook-convert), never through the
// service. Every sample holds the word MARKER, which the tests look for in the outputs.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { strToU8, zipSync } from 'fflate';

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

export const TEXT_SAMPLES: Readonly<Record<string, string>> = {
  md: `# ${MARKER} report\n\nThe **${MARKER.toLowerCase()}** swims *fast*.\n\n| kind | count |\n|------|-------|\n| fish | 2 |\n`,
  gfm: `# ${MARKER} report\n\nThe ~~slow~~ **${MARKER.toLowerCase()}** swims.\n\n- [x] done\n`,
  rst: `${MARKER} report\n${'='.repeat(MARKER.length + 7)}\n\nThe *${MARKER.toLowerCase()}* swims.\n`,
  org: `* ${MARKER} report\nThe /${MARKER.toLowerCase()}/ swims.\n`,
  textile: `h1. ${MARKER} report\n\nThe *${MARKER.toLowerCase()}* swims.\n`,
  mediawiki: `= ${MARKER} report =\n\nThe '''${MARKER.toLowerCase()}''' swims.\n`,
  jira: `h1. ${MARKER} report\n\nThe *${MARKER.toLowerCase()}* swims.\n`,
  latex: `\\documentclass{article}\n\\begin{document}\n\\section{${MARKER} report}\nThe ${MARKER.toLowerCase()} swims.\n\\end{document}\n`,
  html: `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${MARKER}</title></head><body><h1>${MARKER} report</h1><p>The ${MARKER.toLowerCase()} swims.</p></body></html>\n`,
  txt: `${MARKER} report\n\nThe ${MARKER.toLowerCase()} swims.\n`,
  ipynb: JSON.stringify({
    cells: [{ cell_type: 'markdown', metadata: {}, source: [`# ${MARKER} report\n`, '\n', 'The fish swims.'] }],
    metadata: {}, nbformat: 4, nbformat_minor: 5,
  }),
  docbook: `<?xml version="1.0" encoding="UTF-8"?>\n<article xmlns="http://docbook.org/ns/docbook" version="5.0"><title>${MARKER} report</title><para>The ${MARKER.toLowerCase()} swims.</para></article>\n`,
  opml: `<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0"><head><title>${MARKER}</title></head><body><outline text="${MARKER} report"><outline text="The fish swims."/></outline></body></opml>\n`,
  fodt: flatOdf('application/vnd.oasis.opendocument.text', `<office:text><text:h text:outline-level="1">${MARKER} report</text:h><text:p>The fish swims.</text:p></office:text>`),
  fods: flatOdf('application/vnd.oasis.opendocument.spreadsheet', `<office:spreadsheet><table:table table:name="Fish"><table:table-row><table:table-cell office:value-type="string"><text:p>name</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>count</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell office:value-type="string"><text:p>${MARKER}</text:p></table:table-cell><table:table-cell office:value-type="float" office:value="2"><text:p>2</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell office:value-type="string"><text:p>trout</text:p></table:table-cell><table:table-cell office:value-type="float" office:value="5"><text:p>5</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>`),
  fodp: flatOdf('application/vnd.oasis.opendocument.presentation', `<office:presentation><draw:page draw:name="one"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="4cm"><draw:text-box><text:p>${MARKER} slide</text:p></draw:text-box></draw:frame></draw:page><draw:page draw:name="two"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="4cm"><draw:text-box><text:p>Second slide</text:p></draw:text-box></draw:frame></draw:page></office:presentation>`),
  fodg: flatOdf('application/vnd.oasis.opendocument.graphics', `<office:drawing><draw:page draw:name="one"><draw:rect svg:x="2cm" svg:y="2cm" svg:width="8cm" svg:height="3cm"><text:p>${MARKER}</text:p></draw:rect></draw:page></office:drawing>`),
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
    samples.wpd = wordPerfect(`${MARKER} report\nThe fish swims.\n`);

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

const DOCX_NAMESPACES = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"';

/** A picture run that shows relationship `id`, embedded (`r:embed`) or linked (`r:link`). */
function pictureRun(id: string, how: 'embed' | 'link'): string {
  return `<w:r><w:drawing><wp:inline><wp:extent cx="5000000" cy="5000000"/><wp:docPr id="1" name="p"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="1" name="p.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:${how}="${id}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="5000000" cy="5000000"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>`;
}

/** A field run: `instruction` (INCLUDETEXT "...", say) with `shown` as its last computed result. */
export function fieldRuns(instruction: string, shown: string): string {
  return `<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> ${instruction} </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>${shown}</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>`;
}

/**
 * A DOCX written by hand: one paragraph of `text`, then optionally an embedded PNG `picture`, a
 * picture linked to an outside URL (`linkedPicture`, an external relationship), and extra runs.
 */
export function handmadeDocx(parts: { text: string; picture?: Uint8Array; linkedPicture?: string; runs?: string }): Buffer {
  const relationships = [
    parts.picture ? '<Relationship Id="rPic" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/p.png"/>' : '',
    parts.linkedPicture ? `<Relationship Id="rLink" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="${parts.linkedPicture}" TargetMode="External"/>` : '',
  ].join('');
  const runs = `<w:r><w:t>${parts.text}</w:t></w:r>${parts.picture ? pictureRun('rPic', 'embed') : ''}${parts.linkedPicture ? pictureRun('rLink', 'link') : ''}${parts.runs ?? ''}`;
  const files: Record<string, Uint8Array> = {
    '[Content_Types].xml': strToU8('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'),
    '_rels/.rels': strToU8('<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'),
    'word/_rels/document.xml.rels': strToU8(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${relationships}</Relationships>`),
    'word/document.xml': strToU8(`<?xml version="1.0" encoding="UTF-8"?><w:document ${DOCX_NAMESPACES}><w:body><w:p>${runs}</w:p></w:body></w:document>`),
  };
  if (parts.picture) files['word/media/p.png'] = parts.picture;
  return Buffer.from(zipSync(files));
}
