// Hostile documents (docs/security.md: LibreOffice, pandoc, calibre, PDF): linked resources are never fetched, local
// files never reach an output, PDFs that would run for ever or need a password are refused with
// a documented code, and a damaged file is an error, never a crash of the service.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { strFromU8, unzipSync, zipSync } from 'fflate';
import { convert, expectError, fetchCatalogue, finalsForTargets, submit, submitOk, waitForJob } from './helpers/client.ts';
import { fieldRuns, handmadeDocx, MARKER, TEXT_SAMPLES } from './helpers/documents.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import fs from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';

let server: RunningServer;
let beacon: http.Server;
const beaconHits: string[] = [];

before(async () => {
  beacon = http.createServer((request, response) => {
    beaconHits.push(request.url ?? '');
    response.end('x');
  });
  await new Promise<void>((resolve) => beacon.listen(0, '127.0.0.1', resolve));
  // pandoc gets 20 s per step here, so that pathological markdown meets its limit within the test.
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_MAX_ATTEMPTS: '1', CONVERTD_ENGINE_TIMEOUTS: 'pandoc=20' });
});

after(async () => {
  await server?.stop();
  beacon?.close();
});

const beaconUrl = () => `http://127.0.0.1:${(beacon.address() as AddressInfo).port}`;

async function failsWith(data: Buffer, filename: string, target: string, code: string): Promise<void> {
  const jobId = await submitOk(server.url, data, filename, target);
  const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
  assert.equal(final.status, 'error', `${filename} → ${target} should fail`);
  assert.equal(final.error?.code, code, JSON.stringify(final.error));
  assert.ok((final.error?.message.length ?? 0) > 10);
}

/** A minimal PDF written by hand: one empty page of the given size, or a given page count. */
function handmadePdf(width: number, height: number): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${width} ${height}] >>`,
  ];
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

test('LibreOffice fetches no linked image: nothing reaches a server named in the document', async () => {
  const fodt = TEXT_SAMPLES.fodt!.replace('<text:p>The fish swims.</text:p>',
    `<text:p><draw:frame svg:width="2cm" svg:height="2cm"><draw:image xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="${beaconUrl()}/linked.png" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/></draw:frame>The fish swims.</text:p>`);
  const html = `<html><body><p>Beacon</p><img src="${beaconUrl()}/html.png"><iframe src="${beaconUrl()}/frame.html"></iframe></body></html>`;
  await convert(server.url, Buffer.from(fodt), 'linked.fodt', 'pdf');
  await convert(server.url, Buffer.from(html), 'linked.html', 'pdf');
  await convert(server.url, Buffer.from(html), 'linked.html', 'docx');
  assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
});

test('pandoc puts no local file and no URL into an output', async () => {
  // An image named by an absolute path and by a URL, embedded into docx and epub output.
  const markdown = `# Report\n\n![host](/etc/hostname)\n\n![remote](${beaconUrl()}/pandoc.png)\n\nText.\n`;
  for (const target of ['docx', 'epub', 'odt']) {
    const { bytes } = await convert(server.url, Buffer.from(markdown), 'images.md', target);
    const entries = unzipSync(new Uint8Array(bytes));
    const media = Object.keys(entries).filter((name) => /media|images|Pictures/i.test(name) && !name.endsWith('/'));
    assert.deepEqual(media, [], `${target} embeds ${media.join(', ')}`);
  }
  // Include directives: the file is not there to include (the sandbox shows the job's directory
  // only), so the job fails or comes out without it, never with it.
  const passwd = await fs.readFile('/etc/passwd', 'utf8');
  const firstLine = passwd.split('\n')[0]!;
  for (const [name, text] of [['include.rst', 'Title\n=====\n\n.. include:: /etc/passwd\n'], ['include.org', '* Title\n#+INCLUDE: "/etc/passwd" src text\n']] as const) {
    const jobId = await submitOk(server.url, Buffer.from(text), name, 'html');
    const { final } = await waitForJob(server.url, jobId);
    if (final.status === 'done') {
      const output = await (await fetch(`${server.url}${final.download_url}`)).text();
      assert.ok(!output.includes(firstLine), `${name}: /etc/passwd reached the output`);
    } else {
      assert.ok(['conversion_failed', 'corrupt_input'].includes(final.error!.code), JSON.stringify(final.error));
    }
  }
  assert.deepEqual(beaconHits, []);
});

test('calibre never sees a recipe: a .recipe upload is refused as an unknown format', async () => {
  const recipe = 'from calibre.web.feeds.news import BasicNewsRecipe\nclass X(BasicNewsRecipe):\n    title = "x"\n';
  await expectError(await submit(server.url, Buffer.from(recipe), 'evil.recipe', 'epub'), 415, 'unsupported_format');
});

test('PDFs: a password is encrypted_input, too many pages or a giant page is input_too_complex, garbage is corrupt_input', { timeout: 300_000 }, async () => {
  const dir = await tempDir('convertd-pdfs-');
  const plain = path.join(dir, 'plain.pdf');
  await fs.writeFile(plain, handmadePdf(595, 842));
  // qpdf (a test tool, not an engine) makes the variants.
  execFileSync('qpdf', ['--encrypt', 'secret', 'owner', '256', '--', plain, path.join(dir, 'locked.pdf')]);
  execFileSync('qpdf', ['--empty', '--pages', plain, Array(2001).fill('1').join(','), '--', path.join(dir, 'long.pdf')]);

  await failsWith(await fs.readFile(path.join(dir, 'locked.pdf')), 'locked.pdf', 'txt', 'encrypted_input');
  await failsWith(await fs.readFile(path.join(dir, 'long.pdf')), 'long.pdf', 'txt', 'input_too_complex');
  await failsWith(await fs.readFile(path.join(dir, 'long.pdf')), 'long.pdf', 'pdfa', 'input_too_complex');
  await failsWith(handmadePdf(100_000, 100_000), 'giant.pdf', 'png', 'input_too_complex');
  await failsWith(Buffer.from('%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R >>\nnonsense'), 'broken.pdf', 'png', 'corrupt_input');
  // The first page of a long PDF is still a fine thumbnail.
  const { bytes } = await convert(server.url, await fs.readFile(path.join(dir, 'long.pdf')), 'long.pdf', 'png');
  assert.ok(bytes.length > 0);
  await fs.rm(dir, { recursive: true, force: true });
});

test('a PDF of 2,001 pages meets the page cap on every route that reads its pages, to every target; a picture of its first page is still made', { timeout: 600_000 }, async () => {
  const dir = await tempDir('convertd-pdfs-');
  const plain = path.join(dir, 'plain.pdf');
  await fs.writeFile(plain, handmadePdf(595, 842));
  execFileSync('qpdf', ['--empty', '--pages', plain, Array(2001).fill('1').join(','), '--', path.join(dir, 'long.pdf')]);
  const long = await fs.readFile(path.join(dir, 'long.pdf'));
  const catalogue = await fetchCatalogue(server.url);
  const category = (id: string) => catalogue.find((entry) => entry.id === id)?.category;
  const targets = catalogue.find((entry) => entry.id === 'pdf')!.targets;
  assert.ok(targets.length >= 8 && targets.includes('zip') && targets.includes('txt'), `pdf's targets: ${targets.join(' ')}`);
  const ends = await finalsForTargets(server.url, long, 'long.pdf', targets, { inFlight: 4, timeoutMs: 300_000 });
  for (const { target, final } of ends) {
    // A picture is of the first page alone (poppler renders that page only, MuPDF its SVG, Inkscape
    // its metafile or DXF, Ghostscript its EPS); a ZIP holds a picture of every page.
    if (category(target) === 'image' || ['svg', 'eps', 'emf', 'wmf', 'dxf'].includes(target)) assert.equal(final.status, 'done', `${target}: ${JSON.stringify(final.error)}`);
    else {
      assert.equal(final.error?.code, 'input_too_complex', `long.pdf → ${target}: ${JSON.stringify(final.error ?? final.status)}`);
      assert.match(final.error.message, /2001 pages|more than 2000 pages|up to 2000 pages/, target);
    }
  }
  await fs.rm(dir, { recursive: true, force: true });
});

test('a damaged office file is a documented error, and the service goes on', async () => {
  const { bytes: docx } = await convert(server.url, Buffer.from(TEXT_SAMPLES.md!), 'sample.md', 'docx');
  // Keep the package (so it is still recognised as a Word document) but break its main part.
  const entries = unzipSync(new Uint8Array(docx));
  const broken = Buffer.from(strFromU8(entries['word/document.xml']!).slice(0, 300), 'utf8');
  const damaged = Buffer.from(zipSync({ ...entries, 'word/document.xml': new Uint8Array(broken) }));
  const jobId = await submitOk(server.url, damaged, 'damaged.docx', 'pdf');
  const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
  if (final.status === 'error') assert.ok(['corrupt_input', 'conversion_failed'].includes(final.error!.code), JSON.stringify(final.error));
  // Whatever LibreOffice made of it, the next document converts.
  const { bytes } = await convert(server.url, Buffer.from(TEXT_SAMPLES.fodt!), 'next.fodt', 'pdf');
  assert.ok(bytes.subarray(0, 5).toString() === '%PDF-');
});

/** A local file every sandbox can read (BASE_READ_ONLY binds /etc/fonts): its content must never reach an output. */
const LOCAL_FILE = '/etc/fonts/fonts.conf';
const LOCAL_MARK = '<fontconfig>';

test('DOCX fields and external relationships: INCLUDETEXT, INCLUDEPICTURE and a linked picture fetch nothing and read no local file', async () => {
  const docx = handmadeDocx({
    text: MARKER,
    linkedPicture: `${beaconUrl()}/docx-linked.png`,
    runs: fieldRuns(`INCLUDETEXT "${LOCAL_FILE}"`, 'included text') + fieldRuns(`INCLUDEPICTURE "${beaconUrl()}/docx-field.png" \\d`, 'picture'),
  });
  for (const target of ['txt', 'pdf', 'odt']) {
    const jobId = await submitOk(server.url, docx, 'fields.docx', target);
    const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
    assert.equal(final.status, 'done', JSON.stringify(final.error));
    const bytes = Buffer.from(await (await fetch(`${server.url}${final.download_url}`)).arrayBuffer());
    const text = target === 'pdf' ? execFileSync('pdftotext', ['-', '-'], { input: bytes, encoding: 'utf8' })
      : target === 'odt' ? strFromU8(unzipSync(new Uint8Array(bytes))['content.xml']!) : bytes.toString('utf8');
    assert.ok(text.includes(MARKER), `${target}: the document's own text is there`);
    assert.ok(!text.includes(LOCAL_MARK) && !text.includes('fontconfig'), `${target}: ${LOCAL_FILE} reached the output`);
  }
  assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
});

test('a spreadsheet\'s WEBSERVICE formula reaches no server', async () => {
  const fods = `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:of="urn:oasis:names:tc:opendocument:xmlns:of:1.2" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.spreadsheet"><office:body><office:spreadsheet><table:table table:name="S"><table:table-row><table:table-cell office:value-type="string"><text:p>${MARKER}</text:p></table:table-cell><table:table-cell table:formula="of:=WEBSERVICE(&quot;${beaconUrl()}/webservice&quot;)" office:value-type="string" office:string-value="cached"><text:p>cached</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet></office:body></office:document>`;
  for (const target of ['csv', 'pdf', 'xlsx']) await convert(server.url, Buffer.from(fods), 'webservice.fods', target);
  assert.deepEqual(beaconHits, [], 'no request may leave a conversion');
});

test('LaTeX \\input and \\include read no local file', async () => {
  const latex = `\\documentclass{article}\n\\begin{document}\n${MARKER}\n\n\\input{${LOCAL_FILE}}\n\n\\include{${LOCAL_FILE.replace(/\.conf$/, '')}}\n\\end{document}\n`;
  for (const target of ['html', 'docx']) {
    const jobId = await submitOk(server.url, Buffer.from(latex), 'input.tex', target);
    const { final } = await waitForJob(server.url, jobId);
    if (final.status === 'error') {
      assert.ok(['conversion_failed', 'corrupt_input'].includes(final.error!.code), JSON.stringify(final.error));
      continue;
    }
    const bytes = Buffer.from(await (await fetch(`${server.url}${final.download_url}`)).arrayBuffer());
    const text = target === 'docx' ? strFromU8(unzipSync(new Uint8Array(bytes))['word/document.xml']!) : bytes.toString('utf8');
    assert.ok(text.includes(MARKER));
    assert.ok(!text.includes('fontconfig'), `${target}: ${LOCAL_FILE} reached the output`);
  }
});

test('pathological markdown (50,000 nested brackets) ends at its limit with a documented error while other jobs convert', { timeout: 180_000 }, async () => {
  const started = Date.now();
  const jobId = await submitOk(server.url, Buffer.from(`${'['.repeat(50_000)}a${']'.repeat(50_000)}\n`), 'brackets.md', 'html');
  // Meanwhile the service serves others.
  const { bytes } = await convert(server.url, Buffer.from(TEXT_SAMPLES.md!), 'meanwhile.md', 'html');
  assert.ok(bytes.toString('utf8').includes(MARKER));
  const { final } = await waitForJob(server.url, jobId, { timeoutMs: 120_000 });
  assert.equal(final.status, 'error');
  assert.ok(['timeout', 'input_too_complex'].includes(final.error!.code), JSON.stringify(final.error));
  assert.ok(Date.now() - started < 90_000, 'it stopped at its limit');
});

test('PostScript named .pdf is taken as PostScript by its content, never read as a PDF; a listing it prints reaches no output', async () => {
  // Its program runs under Ghostscript's PostScript defences (postscript-formats.test.ts tries them
  // all); the names it prints go to gs's standard output, and a program that draws nothing is not
  // presented as a blank PDF/A.
  const postscript = '%!PS-Adobe-3.0\n(/tmp) (*) { = } 1024 string filenameforall\nshowpage\n';
  const jobId = await submitOk(server.url, Buffer.from(postscript), 'list.pdf', 'pdfa');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.source, 'ps');
  assert.equal(final.error?.code, 'conversion_failed', JSON.stringify(final.error));
});

test('an ODF section linked to a local file and an HTML iframe of a file:// URL bring nothing local into the output', async () => {
  const fodt = TEXT_SAMPLES.fodt!.replace('<text:p>The fish swims.</text:p>',
    `<text:p>The fish swims.</text:p><text:section text:name="linked"><text:section-source xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="file://${LOCAL_FILE}" xlink:type="simple" text:filter-name="Text (encoded)"/><text:p>section placeholder</text:p></text:section>`);
  const html = `<html><body><p>${MARKER}</p><iframe src="file://${LOCAL_FILE}"></iframe><object data="file://${LOCAL_FILE}"></object></body></html>`;
  for (const [data, name, target] of [[fodt, 'section.fodt', 'txt'], [fodt, 'section.fodt', 'pdf'], [html, 'frame.html', 'pdf'], [html, 'frame.html', 'docx'], [html, 'frame.html', 'txt']] as const) {
    const { bytes } = await convert(server.url, Buffer.from(data), name, target);
    const text = target === 'pdf' ? execFileSync('pdftotext', ['-', '-'], { input: bytes, encoding: 'utf8' })
      : target === 'docx' ? strFromU8(unzipSync(new Uint8Array(bytes))['word/document.xml']!) : bytes.toString('utf8');
    assert.ok(!text.includes('fontconfig'), `${name} → ${target}: ${LOCAL_FILE} reached the output`);
  }
});

test('a PDF whose one content stream inflates to 200 MB is refused or converted within its limits, and the service goes on', { timeout: 180_000 }, async () => {
  // A page whose content stream is 200 MB of spaces, compressed to about 200 KB.
  const inflated = zlib.deflateSync(Buffer.alloc(200 * 1024 * 1024, 0x20), { level: 9 });
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>',
  ];
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n', 'latin1')];
  const offsets: number[] = [];
  let length = parts[0]!.length;
  const add = (chunk: Buffer) => { parts.push(chunk); length += chunk.length; };
  objects.forEach((object, i) => { offsets.push(length); add(Buffer.from(`${i + 1} 0 obj\n${object}\nendobj\n`, 'latin1')); });
  offsets.push(length);
  add(Buffer.from(`4 0 obj\n<< /Length ${inflated.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'));
  add(inflated);
  add(Buffer.from('\nendstream\nendobj\n', 'latin1'));
  const xref = length;
  add(Buffer.from(`xref\n0 5\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`, 'latin1'));
  const bomb = Buffer.concat(parts);
  assert.ok(bomb.length < 1024 * 1024);
  for (const target of ['png', 'txt', 'pdfa']) {
    const jobId = await submitOk(server.url, bomb, 'flate.pdf', target);
    const { final } = await waitForJob(server.url, jobId, { timeoutMs: 150_000 });
    if (final.status === 'error') assert.ok(['input_too_complex', 'timeout', 'corrupt_input', 'conversion_failed'].includes(final.error!.code), JSON.stringify(final.error));
  }
  const { bytes } = await convert(server.url, handmadePdf(595, 842), 'next.pdf', 'png');
  assert.ok(bytes.length > 0);
});

test('password-protected office files end in encrypted_input: ODF, Word and Excel 97-2003, and an encrypted OOXML package', { timeout: 240_000 }, async () => {
  // LibreOffice itself writes the protected files, through its UNO API (helpers/encrypt-office.py).
  const dir = await tempDir('convertd-locked-');
  await fs.chmod(dir, 0o755);
  await fs.writeFile(path.join(dir, 'sample.fodt'), TEXT_SAMPLES.fodt!);
  await fs.writeFile(path.join(dir, 'sample.fods'), TEXT_SAMPLES.fods!);
  const save = (source: string, target: string, filter: string, password: string) => {
    execFileSync('/usr/bin/python3', [path.join(import.meta.dirname, 'helpers', 'encrypt-office.py'), path.join(dir, source), path.join(dir, target), filter, password], { stdio: 'ignore', timeout: 120_000 });
    return fs.readFile(path.join(dir, target));
  };
  for (const [source, target, filter] of [['sample.fodt', 'locked.odt', 'writer8'], ['sample.fodt', 'locked.doc', 'MS Word 97'], ['sample.fods', 'locked.ods', 'calc8'], ['sample.fods', 'locked.xls', 'MS Excel 97']] as const) {
    await failsWith(await save(source, target, filter, 'secret'), target, 'pdf', 'encrypted_input');
  }
  // Office writes a protected docx as an OLE file holding an "EncryptedPackage" stream: made here
  // by renaming the main stream of an unprotected .doc, which converts as it is (the control).
  const plain = await save('sample.fodt', 'plain.doc', 'MS Word 97', '');
  const { bytes } = await convert(server.url, plain, 'plain.doc', 'txt');
  assert.ok(bytes.toString('utf8').includes(MARKER));
  const name = plain.indexOf(Buffer.from('WordDocument\0', 'utf16le'));
  assert.ok(name > 0 && name % 128 === 0, 'the directory entry of the WordDocument stream');
  const renamed = Buffer.from(plain);
  renamed.fill(0, name, name + 64);
  renamed.write('EncryptedPackage\0', name, 'utf16le');
  renamed.writeUInt16LE(34, name + 0x40);
  await failsWith(renamed, 'locked.docx', 'pdf', 'encrypted_input');
  await fs.rm(dir, { recursive: true, force: true });
});
