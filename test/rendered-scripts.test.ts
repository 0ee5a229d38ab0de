// Text in every common script is drawn, not just carried: documents holding a line of each script
// (html, txt, md, docx, odt, rtf, epub, svg) become pdf and png through the HTTP API, the page is rendered by
// poppler (pdf) or taken as is (png), and each line is read back with tesseract in its own language
// (test/helpers/read_scripts.py). A missing font draws boxes, which read as nothing: such a line fails
// however right the PDF's text layer is. And Office fonts are replaced by metric-compatible ones,
// as pdffonts shows (src/engines/support/fonts/substitutes.conf).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { convert, fetchCatalogue, type CatalogueEntry } from './helpers/client.ts';
import { handmadeDocx } from './helpers/documents.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

/** One line per script, top to bottom, with the tesseract language that reads it. */
const LINES: ReadonlyArray<{ lang: string; html: string; text: string }> = [
  { lang: 'eng', html: 'en', text: 'Quokkabird' },
  { lang: 'jpn', html: 'ja', text: '日本語の文書です' },
  { lang: 'chi_sim', html: 'zh-Hans', text: '中文文档测试' },
  { lang: 'kor', html: 'ko', text: '한국어 문서입니다' },
  { lang: 'ara', html: 'ar', text: 'مرحبا بالعالم' },
  { lang: 'heb', html: 'he', text: 'שלום עולם' },
  { lang: 'hin', html: 'hi', text: 'नमस्ते दुनिया' },
  { lang: 'ben', html: 'bn', text: 'বাংলা ভাষা' },
  { lang: 'tam', html: 'ta', text: 'தமிழ் மொழி' },
  { lang: 'tha', html: 'th', text: 'ภาษาไทย' },
  { lang: 'khm', html: 'km', text: 'ភាសាខ្មែរ' },
  { lang: 'amh', html: 'am', text: 'ሰላም ዓለም' },
  { lang: 'ell', html: 'el', text: 'Ελληνικά γράμματα' },
  { lang: 'rus', html: 'ru', text: 'Русский текст' },
  { lang: 'emoji', html: 'und', text: '😀 🐟 🌍' },
];

/**
 * The share of a line's characters tesseract must read back. Drawn text reads at 0.67-1.0 here
 * (Khmer's stacked consonants are the hardest); boxes read as nothing or as stray Latin letters,
 * near 0.
 */
const MIN_RECALL = 0.5;
/** Resolution PDF pages are rendered at for reading: lines of 11 pt are 15 pixels high, enough once scaled. */
const RENDER_DPI = 100;

const SOURCES: Readonly<Record<string, () => Promise<Buffer>>> = {
  txt: async () => Buffer.from(LINES.map((line) => line.text).join('\n\n') + '\n'),
  md: async () => Buffer.from(LINES.map((line) => line.text).join('\n\n') + '\n'),
  html: async () => Buffer.from(`<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n${LINES.map((line) => `<p lang="${line.html}">${line.text}</p>`).join('\n')}\n</body></html>\n`),
  svg: async () => {
    const rows = LINES.map((line, index) => `<text x="20" y="${40 + index * 34}" font-family="sans-serif" font-size="20">${line.text}</text>`);
    return Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="480" height="${60 + LINES.length * 34}"><rect width="100%" height="100%" fill="white"/>${rows.join('')}</svg>\n`);
  },
  // Made from the markdown by pandoc run directly, never through the service.
  docx: () => pandoc('docx'),
  odt: () => pandoc('odt'),
  // The issue's own example: a Japanese RTF came back as boxes. And an ebook, which calibre renders.
  rtf: () => pandoc('rtf'),
  epub: () => pandoc('epub'),
};

async function pandoc(format: string): Promise<Buffer> {
  const dir = await tempDir('convertd-scripts-');
  const source = path.join(dir, 'scripts.md');
  await fs.writeFile(source, await SOURCES.md!());
  execFileSync('pandoc', [source, '--standalone', '--metadata', 'pagetitle=Scripts', '--from', 'markdown', '--to', format, '--output', path.join(dir, `scripts.${format}`)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const made = await fs.readFile(path.join(dir, `scripts.${format}`));
  return format === 'epub' ? withoutTitlePage(made) : made;
}

/**
 * pandoc 2.17 opens an EPUB with a title page, which would be the first page of its PDF and picture:
 * taken out of the reading order, the lines come first.
 */
function withoutTitlePage(epub: Buffer): Buffer {
  const files = unzipSync(epub);
  const opf = Object.keys(files).find((name) => name.endsWith('.opf'))!;
  files[opf] = strToU8(strFromU8(files[opf]!).replace(/<itemref idref="title_page[^"]*"[^>]*\/>/, ''));
  const { mimetype, ...rest } = files;
  return Buffer.from(zipSync({ mimetype: [mimetype!, { level: 0 }], ...rest }));
}

interface LineReading { lang: string; text: string; read?: string; recall?: number; glyphs?: number; distinct?: boolean }

function readLines(image: string): LineReading[] {
  const spec = JSON.stringify(LINES.map(({ lang, text }) => ({ lang, text })));
  try {
    return JSON.parse(execFileSync('/usr/bin/python3', [path.resolve('test/helpers/read_scripts.py'), image, spec], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as LineReading[];
  } catch (error) {
    assert.fail(`the page could not be read: ${(error as { stderr?: string }).stderr ?? String(error)}`);
  }
}

/** pdffonts' font names without their subset prefix (ABCDEF+Carlito-Regular → Carlito-Regular). */
function pdfFonts(file: string): string[] {
  const listing = execFileSync('pdffonts', [file], { encoding: 'utf8' }).split('\n').slice(2).filter(Boolean);
  return listing.map((row) => row.split(/\s+/)[0]!.replace(/^[A-Z]{6}\+/, ''));
}

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];

before(async () => {
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off' });
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server?.stop();
});

describe('every script is drawn, in pdf and png outputs', { concurrency: 2 }, () => {
  for (const source of Object.keys(SOURCES)) {
    for (const target of ['pdf', 'png']) {
      test(`${source} → ${target}`, async (t) => {
        assert.ok(catalogue.find((entry) => entry.id === source)?.targets.includes(target), `${source} → ${target} is not advertised`);
        const { bytes } = await convert(server.url, await SOURCES[source]!(), `scripts.${source}`, target);
        let page = await writeTemp(bytes, `scripts.${target}`);
        if (target === 'pdf') {
          const prefix = page.replace(/\.pdf$/, '');
          execFileSync('pdftoppm', ['-r', String(RENDER_DPI), '-f', '1', '-l', '1', '-png', '-singlefile', page, prefix]);
          page = `${prefix}.png`;
        }
        const misread: string[] = [];
        const lines = readLines(page);
        const weakest = lines.filter((line) => line.recall !== undefined).sort((a, b) => a.recall! - b.recall!)[0];
        if (weakest) t.diagnostic(`weakest line: ${weakest.lang} at ${weakest.recall}`);
        for (const line of lines) {
          if (line.lang === 'emoji') {
            // Three different emoji draw three different shapes; missing ones draw one box three times.
            if (!line.distinct || (line.glyphs ?? 0) < 3) misread.push(`emoji: ${line.glyphs} glyphs, distinct: ${line.distinct}`);
          } else if ((line.recall ?? 0) < MIN_RECALL) {
            misread.push(`${line.lang}: "${line.text}" read as "${line.read}" (${line.recall})`);
          }
        }
        assert.deepEqual(misread, [], `${source} → ${target}: lines not drawn:\n${misread.join('\n')}`);
      });
    }
  }
});

test('Office fonts become their metric-compatible substitutes in a PDF, and CJK fonts a CJK font', async () => {
  const run = (font: string, text: string, slot = 'ascii') => `<w:r><w:rPr><w:rFonts w:${slot}="${font}"${slot === 'ascii' ? ` w:hAnsi="${font}"` : ''}/></w:rPr><w:t xml:space="preserve">${text} </w:t></w:r>`;
  const docx = handmadeDocx({
    text: '',
    runs: [
      run('Calibri', 'Calibri text'), run('Cambria', 'Cambria text'), run('Arial', 'Arial text'),
      run('Times New Roman', 'Times text'), run('Courier New', 'Courier text'),
      run('MS Mincho', '明朝体の文書', 'eastAsia'), run('SimHei', '黑体中文', 'eastAsia'),
    ].join(''),
  });
  const { bytes } = await convert(server.url, docx, 'office-fonts.docx', 'pdf');
  const fonts = pdfFonts(await writeTemp(bytes, 'office-fonts.pdf'));
  const expected: Record<string, RegExp> = {
    Calibri: /^Carlito/, Cambria: /^Caladea/, Arial: /^LiberationSans/, 'Times New Roman': /^LiberationSerif/,
    'Courier New': /^LiberationMono/, 'MS Mincho': /^NotoSerifCJK/, SimHei: /^NotoSansCJK/,
  };
  for (const [named, substitute] of Object.entries(expected)) {
    assert.ok(fonts.some((font) => substitute.test(font)), `${named}: no ${substitute} among the PDF's fonts ${fonts.join(', ')}`);
  }
});
