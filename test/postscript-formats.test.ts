// EPS and PostScript uploads, read by Ghostscript (issue #30; src/engines/ghostscript/postscript.ts):
// every pair the catalogue lists for them converts through the HTTP API, and each output is read
// by tools other than Ghostscript (pdfinfo and pdftotext for PDF, Pillow for images, Python's
// zipfile for ZIPs of pages) and compared with what the PostScript written here draws: its words,
// its page count and size, its shapes' colours where the program puts them. Then the hostile
// programs of docs/security.md#ghostscript-and-postscript: each ends in a documented error or a
// contained output, files outside the job are neither read nor written, and an endless loop ends
// at the PostScript time limit.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { convert, download, fetchCatalogue, submit, submitOk, waitForJob, type CatalogueEntry, type ProgressRecord } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

/** What eps and ps become: Ghostscript's PDF and PNG, and what the catalogue chains after the PDF. */
const TARGETS = ['jpg', 'pdf', 'pdfa', 'png', 'tiff', 'webp', 'zip'];
/** Their vector targets, through Ghostscript's PDF: converted and checked in vector-formats.test.ts. */
const VECTOR_TARGETS: Record<string, readonly string[]> = { eps: ['dxf', 'emf', 'ps', 'svg', 'wmf'], ps: ['dxf', 'emf', 'eps', 'svg', 'wmf'] };
/** A small time limit for PostScript programs, so that the endless loop below ends soon. */
const POSTSCRIPT_SECONDS = 10;
/**
 * A small output cap (a page of the PostScript document as an uncompressed TIFF, 6.3 MB, fits), so
 * that a program drawing a large picture of noise passes it.
 */
const MAX_OUTPUT_BYTES = 8 * 1024 * 1024;
/** Pages rendered without pixel_density: 150 dots per inch (72 points). */
const SCALE = 150 / 72;
/** How far a colour may be from the one drawn (JPEG and WebP move flat colours a little). */
const COLOUR_TOLERANCE = 40;

const TITLE = 'Marmalade Observatory';
const SENTENCE = 'Seven quiet lanterns drift above the harbour after midnight';
const wordsOf = (text: string) => text.split(/[^\p{L}\p{N}]+/u).filter(Boolean);

/**
 * An EPS of 300 × 150 points whose bounding box does not start at the origin (so a page that is not
 * cropped to it shows): a title and a sentence, a red square and a green disc, nothing elsewhere.
 */
const EPS = `%!PS-Adobe-3.0 EPSF-3.0
%%BoundingBox: 36 48 336 198
%%Title: sample
%%EndComments
1 0 0 setrgbcolor 56 68 80 60 rectfill
0 1 0 setrgbcolor newpath 296 123 25 0 360 arc fill
0 0 0.6 setrgbcolor /Helvetica-Bold findfont 14 scalefont setfont 56 178 moveto (${TITLE}) show
0 0 0 setrgbcolor /Helvetica findfont 8 scalefont setfont 56 160 moveto (${SENTENCE}.) show
%%EOF
`;
/** Where the EPS's shapes are, as fractions of its width and height from the top left. */
const EPS_POINTS = { square: [60 / 300, 1 - 50 / 150], disc: [260 / 300, 1 - 75 / 150], empty: [150 / 300, 1 - 10 / 150] } as const;

/** Each page's own word and the colour of its square. */
const PAGES = [{ word: 'Amberfield', rgb: [255, 0, 0] }, { word: 'Bramblewick', rgb: [0, 255, 0] }, { word: 'Cinderholm', rgb: [0, 0, 255] }] as const;
/** A three-page PostScript document on US Letter: on each page a title, the sentence, a square of the page's colour. */
const PS = `%!PS-Adobe-3.0
%%Pages: 3
%%EndComments
<< /PageSize [612 792] >> setpagedevice
${PAGES.map(({ word, rgb }, index) => `%%Page: ${index + 1} ${index + 1}
0 0 0 setrgbcolor /Times-Bold findfont 20 scalefont setfont 72 720 moveto (${word} ${TITLE}) show
/Times-Roman findfont 11 scalefont setfont 72 690 moveto (${SENTENCE}.) show
${rgb.map((c) => c / 255).join(' ')} setrgbcolor 150 200 300 300 rectfill
showpage`).join('\n')}
%%EOF
`;
/** Where a page's square is and where the page is empty, as fractions from the top left. */
const PS_POINTS = { square: [300 / 612, 1 - 350 / 792], empty: [300 / 612, 1 - 100 / 792] } as const;

interface Picture { name: string; format: string; width: number; height: number; mode: string; pixels: number[][] }

/** Pillow's reading of an image, or of each image of a ZIP, at the given points. */
function pictures(file: string, points: ReadonlyArray<readonly [number, number]>): Picture[] {
  const output = execFileSync('/usr/bin/python3', [path.resolve(import.meta.dirname, 'helpers', 'sample_pixels.py'), file, JSON.stringify(points)], { encoding: 'utf8' });
  return JSON.parse(output) as Picture[];
}

function assertColour(pixel: readonly number[], rgb: readonly number[], where: string): void {
  assert.ok(pixel[3]! > 200, `${where}: transparent (${pixel})`);
  assert.ok(rgb.every((c, i) => Math.abs(pixel[i]! - c) <= COLOUR_TOLERANCE), `${where}: ${pixel.slice(0, 3)} is not ${rgb}`);
}

function assertSize(picture: Picture, width: number, height: number, where: string): void {
  assert.ok(Math.abs(picture.width - width) <= 1 && Math.abs(picture.height - height) <= 1, `${where}: ${picture.width} × ${picture.height}, expected ${width} × ${height}`);
}

/**
 * pdfinfo's page count, first page size and PDF/A claim (its XMP's pdfaid part and conformance), and
 * pdftotext's words (poppler: not the engine that wrote the PDF).
 */
function readPdf(file: string): { pages: number; width: number; height: number; pdfa: string | undefined; words: string[] } {
  const info = execFileSync('pdfinfo', [file], { encoding: 'utf8' });
  const meta = execFileSync('pdfinfo', ['-meta', file], { encoding: 'utf8' });
  const xmp = (name: string) => new RegExp(`pdfaid:${name}(?:=["']|>)([^"'<]+)`).exec(meta)?.[1];
  const size = /Page size:\s*([\d.]+) x ([\d.]+)/.exec(info)!;
  return {
    pages: Number(/^Pages:\s*(\d+)/m.exec(info)?.[1]),
    width: Number(size[1]),
    height: Number(size[2]),
    pdfa: xmp('part') ? `PDF/A-${xmp('part')}${xmp('conformance')?.toLowerCase()}` : undefined,
    words: wordsOf(execFileSync('pdftotext', [file, '-'], { encoding: 'utf8' })),
  };
}

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let scratch: string;

before(async () => {
  [server, scratch] = await Promise.all([
    startServer({
      // No LibreOffice work here: one warm process is enough, and the service starts sooner.
      CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_LIBREOFFICE_POOL: '1',
      CONVERTD_GHOSTSCRIPT_POSTSCRIPT_SECONDS: String(POSTSCRIPT_SECONDS), CONVERTD_MAX_OUTPUT_BYTES: String(MAX_OUTPUT_BYTES),
    }),
    tempDir('convertd-postscript-'),
  ]);
  catalogue = await fetchCatalogue(server.url);
});

after(async () => {
  await server?.stop();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

let outputs = 0;
/** Converts (with options, if any) and writes the result to the scratch folder. */
async function convertToFile(data: string | Buffer, name: string, target: string, options: Record<string, string> = {}): Promise<{ file: string; record: ProgressRecord }> {
  let bytes: Buffer;
  let record: ProgressRecord;
  if (Object.keys(options).length === 0) {
    ({ bytes, record } = await convert(server.url, Buffer.from(data), name, target));
  } else {
    const final = await finish(await submitWith(data, name, target, options));
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    record = final;
    bytes = (await download(server.url, final.download_url!)).bytes;
  }
  const file = path.join(scratch, `out-${outputs++}.${target}`);
  await fs.writeFile(file, bytes);
  return { file, record };
}

function submitWith(data: string | Buffer, name: string, target: string, options: Record<string, string>): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([Buffer.from(data)]), name);
  form.append('target', target);
  for (const [key, value] of Object.entries(options)) form.append(key, value);
  return fetch(`${server.url}/api/convert`, { method: 'POST', body: form });
}

/** The final record of a submitted job. */
async function finish(response: Response): Promise<ProgressRecord> {
  const body = await response.json() as { job_id: string };
  assert.equal(response.status, 200, JSON.stringify(body));
  return (await waitForJob(server.url, body.job_id, { timeoutMs: 120_000 })).final;
}

test('eps and ps are vector formats read by content, listed with exactly the targets tested here and the vector ones', () => {
  for (const id of ['eps', 'ps']) {
    const entry = catalogue.find((f) => f.id === id);
    assert.ok(entry, `${id} missing from /api/formats`);
    assert.equal(entry.category, 'vector');
    assert.equal(entry.media_type, 'application/postscript');
    assert.deepEqual([...entry.targets].sort(), [...TARGETS, ...VECTOR_TARGETS[id]!].sort(), `${id}'s targets`);
  }
});

describe('every pair of eps and ps converts and keeps the drawing', { concurrency: 4 }, () => {
  // Named so that only the content can tell what they are.
  for (const target of TARGETS) {
    test(`eps → ${target}`, async () => {
      const { file, record } = await convertToFile(EPS, 'drawing.data', target);
      assert.equal(record.source, 'eps');
      if (target === 'pdf' || target === 'pdfa') {
        const pdf = readPdf(file);
        assert.equal(pdf.pages, 1);
        // The page is the bounding box, not a sheet of paper around it.
        assert.deepEqual([Math.round(pdf.width), Math.round(pdf.height)], [300, 150]);
        assert.deepEqual(pdf.words, [...wordsOf(TITLE), ...wordsOf(SENTENCE)]);
        if (target === 'pdfa') assert.match(pdf.pdfa ?? '', /PDF\/A-2b/);
        return;
      }
      const points = [EPS_POINTS.square, EPS_POINTS.disc, EPS_POINTS.empty];
      const images = pictures(file, points);
      assert.equal(images.length, 1, 'one page');
      const [image] = images as [Picture];
      assertSize(image, 300 * SCALE, 150 * SCALE, `eps → ${target}`);
      assertColour(image.pixels[0]!, [255, 0, 0], `eps → ${target}: the square`);
      assertColour(image.pixels[1]!, [0, 255, 0], `eps → ${target}: the disc`);
      // The PNG keeps the EPS's transparency outside the drawing; the others are on white.
      if (target === 'png') assert.equal(image.pixels[2]![3], 0, 'transparent outside the drawing');
      else assertColour(image.pixels[2]!, [255, 255, 255], `eps → ${target}: white outside the drawing`);
    });

    test(`ps → ${target}`, async () => {
      const { file, record } = await convertToFile(PS, 'document.data', target);
      assert.equal(record.source, 'ps');
      if (target === 'pdf' || target === 'pdfa') {
        const pdf = readPdf(file);
        assert.equal(pdf.pages, 3, 'every page');
        assert.deepEqual([Math.round(pdf.width), Math.round(pdf.height)], [612, 792]);
        assert.deepEqual(pdf.words, PAGES.flatMap(({ word }) => [word, ...wordsOf(TITLE), ...wordsOf(SENTENCE)]));
        if (target === 'pdfa') assert.match(pdf.pdfa ?? '', /PDF\/A-2b/);
        return;
      }
      const images = pictures(file, [PS_POINTS.square, PS_POINTS.empty]);
      // A ZIP holds every page; an image is the first page.
      const expected = target === 'zip' ? PAGES : PAGES.slice(0, 1);
      assert.equal(images.length, expected.length, 'pages');
      for (const [index, image] of images.entries()) {
        assertSize(image, 612 * SCALE, 792 * SCALE, `ps → ${target}, page ${index + 1}`);
        assertColour(image.pixels[0]!, expected[index]!.rgb, `ps → ${target}, page ${index + 1}: the square`);
        assertColour(image.pixels[1]!, [255, 255, 255], `ps → ${target}, page ${index + 1}: white paper`);
      }
    });
  }
});

describe('content decides, and the options of a page', { concurrency: 4 }, () => {
  test('an EPS named .ps is an EPS, a PostScript document named .eps or .jpg is PostScript', async () => {
    const eps = await convertToFile(EPS, 'drawing.ps', 'pdf');
    assert.equal(eps.record.source, 'eps');
    assert.equal(Math.round(readPdf(eps.file).width), 300, 'cropped to its bounding box');
    for (const name of ['letter.eps', 'photo.jpg']) {
      const { file, record } = await convertToFile(PS, name, 'png');
      assert.equal(record.source, 'ps');
      assertColour(pictures(file, [PS_POINTS.square])[0]!.pixels[0]!, PAGES[0].rgb, `${name}: page 1`);
    }
  });

  test('a DOS EPS binary (C5 D0 D3 C6 header, a TIFF preview beside the PostScript) converts its PostScript', async () => {
    const postscript = Buffer.from(EPS);
    const preview = Buffer.from('II*\0not a real preview');
    const header = Buffer.alloc(30);
    header.write('c5d0d3c6', 0, 'hex');
    header.writeUInt32LE(30, 4);
    header.writeUInt32LE(postscript.length, 8);
    header.writeUInt32LE(30 + postscript.length, 20); // TIFF preview offset
    header.writeUInt32LE(preview.length, 24);
    header.writeUInt16LE(0xffff, 28); // no checksum
    const { file, record } = await convertToFile(Buffer.concat([header, postscript, preview]), 'logo.bin', 'pdf');
    assert.equal(record.source, 'eps');
    assert.deepEqual(readPdf(file).words, [...wordsOf(TITLE), ...wordsOf(SENTENCE)]);
  });

  test('ps → pdf with page_range keeps those pages, in order', async () => {
    const { file } = await convertToFile(PS, 'document.ps', 'pdf', { page_range: '2-3' });
    const pdf = readPdf(file);
    assert.equal(pdf.pages, 2);
    assert.deepEqual(pdf.words.filter((word) => PAGES.some((page) => page.word === word)), ['Bramblewick', 'Cinderholm']);
  });

  test('ps → png and ps → jpg render the page page_range names', async () => {
    for (const [target, page] of [['png', 3], ['jpg', 2]] as const) {
      const { file } = await convertToFile(PS, 'document.ps', target, { page_range: String(page) });
      assertColour(pictures(file, [PS_POINTS.square])[0]!.pixels[0]!, PAGES[page - 1]!.rgb, `ps → ${target}, page ${page}`);
    }
  });

  test('a page_range past the last page ends in invalid_option', async () => {
    const final = await finish(await submitWith(PS, 'document.ps', 'png', { page_range: '7' }));
    assert.equal(final.error?.code, 'invalid_option');
  });

  test('eps → png at a pixel_density is drawn at that resolution', async () => {
    const { file } = await convertToFile(EPS, 'drawing.eps', 'png', { pixel_density: '72' });
    const [image] = pictures(file, [EPS_POINTS.square]) as [Picture];
    assertSize(image, 300, 150, 'at 72 dpi');
    assertColour(image.pixels[0]!, [255, 0, 0], 'the square');
  });
});

describe('hostile PostScript: SAFER, a temp dir of its own, the sandbox and the limits', { concurrency: 2 }, () => {
  // A folder of the host's /tmp (the tests run outside the sandbox) with a secret in it, and the
  // places the programs try to write.
  let host: string;
  let secret: string;
  before(async () => {
    host = await tempDir('convertd-ps-host-');
    secret = `secret-${path.basename(host)}`;
    await fs.writeFile(path.join(host, secret), 'Zanzibar rutabaga sesquipedalian\n');
  });
  after(async () => { await fs.rm(host, { recursive: true, force: true }); });

  const program = (body: string) => `%!PS-Adobe-3.0\n/Helvetica findfont 10 scalefont setfont 72 720 moveto\n${body}\n72 40 moveto (end of program) show showpage\n`;
  const failed = async (body: string) => {
    const final = await finish(await submit(server.url, Buffer.from(program(body)), 'hostile.ps', 'pdf'));
    assert.equal(final.status, 'error');
    assert.doesNotMatch(JSON.stringify(final.error), /root:|Zanzibar/, 'nothing read leaks into the message');
    return final.error!;
  };

  test('reading /etc/passwd or a file of the host\'s /tmp is refused as unsafe_input', async () => {
    for (const file of ['/etc/passwd', '@HOST@']) {
      const error = await failed(`(${file === '@HOST@' ? path.join(host, secret) : file}) (r) file 200 string readstring pop show`);
      assert.equal(error.code, 'unsafe_input', JSON.stringify(error));
    }
  });

  test('a program that catches the refusal goes on, and its PDF holds nothing of the file', async () => {
    const body = '{ (/etc/passwd) (r) file 200 string readstring pop } stopped { (access denied ) } if show';
    const { file } = await convertToFile(program(body), 'catch.ps', 'pdf');
    const { words } = readPdf(file);
    assert.ok(words.includes('denied'), words.join(' '));
    assert.ok(!words.includes('root'), 'nothing of /etc/passwd');
  });

  test('%pipe% commands and writing files outside the job are refused, and nothing is written', async () => {
    const canaries = ['pipe', 'written', 'device'].map((name) => path.join(host, `canary-${name}`));
    const attempts = [
      `(%pipe%touch ${canaries[0]}) (w) file`,
      `(${canaries[1]}) (w) file dup (gotcha) writestring closefile`,
      `<< /OutputFile (${canaries[2]}) >> setpagedevice`,
      // SAFER cannot be lifted from inside.
      `<< /PermitFileReading [(/*)] >> setuserparams (/etc/passwd) (r) file 100 string readstring pop show`,
    ];
    for (const attempt of attempts) {
      const error = await failed(attempt);
      assert.ok(['unsafe_input', 'corrupt_input'].includes(error.code), `${attempt}: ${JSON.stringify(error)}`);
    }
    for (const canary of canaries) assert.equal(await fs.stat(canary).then(() => true, () => false), false, `${canary} was written`);
  });

  test('listing /tmp shows only the program\'s own empty temp folder, never the host\'s files', async () => {
    const body = '/y 700 def (/tmp/*) { 72 y moveto show /y y 12 sub def } 4096 string filenameforall';
    const { file } = await convertToFile(program(body), 'list.ps', 'pdf');
    const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
    assert.ok(!text.includes(secret) && !text.includes('convertd-ps-host'), 'the host\'s /tmp is not visible');
    const listed = text.split('\n').map((line) => line.trim()).filter((line) => line.startsWith('/'));
    assert.ok(listed.every((line) => line.includes('/gs-temp/')), `listed: ${listed.join(', ')}`);
  });

  test('an endless loop ends as timeout at the PostScript limit, and the service goes on', { timeout: 120_000 }, async () => {
    const jobId = await submitOk(server.url, Buffer.from(program('{} loop')), 'loop.ps', 'pdf');
    const { final } = await waitForJob(server.url, jobId, { timeoutMs: 90_000 });
    assert.equal(final.error?.code, 'timeout', JSON.stringify(final.error));
    await convertToFile(EPS, 'after.eps', 'pdf');
  });

  test('more pages than the page cap end in input_too_complex', { timeout: 120_000 }, async () => {
    const error = await failed('1 1 2100 { pop 72 72 moveto (page) show showpage } for');
    assert.equal(error.code, 'input_too_complex', JSON.stringify(error));
  });

  test('a page of noise past the output cap ends in output_too_large', async () => {
    // Kept losslessly (pdfwrite would otherwise make a JPEG of it): 12 MB that do not compress.
    const noise = '<< /AutoFilterColorImages false /ColorImageFilter /FlateEncode /DownsampleColorImages false >> setdistillerparams '
      + '/s 6000 string def gsave 500 500 scale 2000 2000 8 [2000 0 0 -2000 0 2000] { 0 1 5999 { s exch rand -16 bitshift 255 and put } for s } false 3 colorimage grestore';
    const error = await failed(noise);
    assert.equal(error.code, 'output_too_large', JSON.stringify(error));
  });

  test('an empty program, a broken one and a huge page end in documented errors', async () => {
    for (const [data, code] of [
      ['%!PS-Adobe-3.0\n%%EOF\n', 'conversion_failed'],
      ['%!PS-Adobe-3.0\n72 72 moveto (unfinished {{{ show\n', 'corrupt_input'],
      ['%!PS-Adobe-3.0\n<< /PageSize [900000 900000] >> setpagedevice 0 0 moveto 9 9 lineto stroke showpage\n', 'corrupt_input'],
    ] as const) {
      const final = await finish(await submit(server.url, Buffer.from(data), 'bad.ps', 'png'));
      assert.equal(final.error?.code, code, `${data.slice(15, 50)}: ${JSON.stringify(final.error)}`);
    }
  });
});
