// E-mail through the email engine (issue #31): every pair /api/formats lists from eml, mbox and msg
// converts through the HTTP API, and each output is read by a tool that is not the engine:
// test/helpers/read_document.py (Python's html.parser, zipfile, pdftotext, ...) for the words of
// the message in every document format, Python's zipfile for the attachments, pdftotext and
// Pillow for the PDF (the Japanese subject as text, the message's own cid: picture as red pixels).
// Fixtures are written here: an EML by hand (an HTML body with a cid: picture, a tracking pixel
// and a remote style, a text part, two attachments, one named "../../blue.png"), an mbox of two
// messages (one body line that began with "From " and was quoted), and an Outlook MSG
// (test/helpers/outlook-message.ts). Hostile mail (docs/security.md#e-mail): nothing is fetched
// (a server here counts requests), no script survives, a bomb of nested parts and one of many
// parts end in a clear error; a file that is not a message is corrupt_input.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { unzipSync } from 'fflate';
import { convert, fetchCatalogue, mapInFlight, runWithOptions, type CatalogueEntry } from './helpers/client.ts';
import { DocumentReader } from './helpers/document-reader.ts';
import { BODY, recall, wordsOf } from './helpers/documents.ts';
import { outlookMessage } from './helpers/outlook-message.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';

const execFileAsync = promisify(execFile);
const SOURCES = ['eml', 'mbox', 'msg'] as const;
const MEDIA_TYPES = { eml: 'message/rfc822', mbox: 'application/mbox', msg: 'application/vnd.ms-outlook' };
const SUBJECT = 'Quokkabird 会議の議事録 report';
const JAPANESE = '会議の議事録';
const WORDS = wordsOf(`${SUBJECT} ${BODY}`).filter((word) => /^[a-z]+$/.test(word));
/** Targets that are pictures of the message: valid and not blank (read_document.py), no words read. */
const PICTURES = new Set(['png', 'jpg', 'tiff', 'webp']);
/** An attachment's bytes (MIME's line break before the next boundary is the boundary's). */
const NOTES = Buffer.from('herons: seven');

/** A PNG of one colour, written by hand (zlib through the test's own Node). */
async function png(width: number, height: number, rgb: readonly [number, number, number]): Promise<Buffer> {
  const { deflateSync, crc32 } = await import('node:zlib');
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type), data])));
    return Buffer.concat([length, Buffer.from(type), data, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  return Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), chunk('IHDR', header), chunk('IDAT', deflateSync(Buffer.concat(Array.from({ length: height }, () => row)))), chunk('IEND', Buffer.alloc(0))]);
}

const base64Lines = (bytes: Buffer) => bytes.toString('base64').replace(/.{76}/g, '$&\r\n');
/** RFC 2047: a header value in UTF-8, base64-encoded. */
const encodedWord = (text: string) => `=?UTF-8?B?${Buffer.from(text).toString('base64')}?=`;

function emlMessage(red: Buffer, blue: Buffer, remote: string): string {
  const html = `<html><head><style>body { background: url(${remote}/style.png) }</style><script>document.title = 'scripted'</script></head>
<body><p style="color: #c00000">${BODY.replace('quokkabird', '<b>quokkabird</b>')} ${JAPANESE}</p>
<p><img src="cid:red-square@convertd.test" alt="red square" width="120" height="90"></p>
<p><img src="${remote}/track.png" alt="tracker"> <span style="background-image: url(${remote}/span.png)">styled</span>
<a href="https://example.org/" onclick="steal()">a link</a></p></body></html>`;
  return [
    'From: Quokka Sender <sender@example.org>',
    'To: Heron Reader <reader@example.org>',
    `Subject: ${encodedWord(SUBJECT)}`,
    'Date: Tue, 03 Nov 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="outer"',
    '',
    '--outer',
    'Content-Type: multipart/alternative; boundary="alt"',
    '',
    '--alt',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: base64',
    '',
    base64Lines(Buffer.from(`${BODY} ${JAPANESE}\n`)),
    '--alt',
    'Content-Type: multipart/related; boundary="rel"',
    '',
    '--rel',
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: base64',
    '',
    base64Lines(Buffer.from(html)),
    '--rel',
    'Content-Type: image/png',
    'Content-Transfer-Encoding: base64',
    'Content-ID: <red-square@convertd.test>',
    'Content-Disposition: inline; filename="red.png"',
    '',
    base64Lines(red),
    '--rel--',
    '--alt--',
    '--outer',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Disposition: attachment; filename="notes.txt"',
    '',
    NOTES.toString(),
    '--outer',
    'Content-Type: image/png',
    'Content-Transfer-Encoding: base64',
    'Content-Disposition: attachment; filename="../../blue.png"',
    '',
    base64Lines(blue),
    '--outer--',
    '',
  ].join('\r\n');
}

/** Two messages; the second's body has a line that began with "From ", quoted as mbox does. */
function mailbox(): string {
  return [
    'From sender@example.org Tue Nov  3 10:00:00 2026',
    'From: Quokka Sender <sender@example.org>',
    'To: reader@example.org',
    `Subject: ${encodedWord(SUBJECT)}`,
    'Date: Tue, 03 Nov 2026 10:00:00 +0000',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    `${BODY} ${JAPANESE}`,
    '',
    'From heron@example.org Wed Nov  4 11:00:00 2026',
    'From: Heron <heron@example.org>',
    'To: sender@example.org',
    'Subject: Re: the herons',
    'Date: Wed, 04 Nov 2026 11:00:00 +0000',
    '',
    'Seven herons agree.',
    '>From the river bank, a reply.',
    '',
  ].join('\n');
}

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let work: string;
let tracker: http.Server;
let remote: string;
const fetched: string[] = [];
const reader = new DocumentReader();
const samples = new Map<string, Buffer>();
let red: Buffer;
let blue: Buffer;

before(async () => {
  tracker = http.createServer((request, response) => {
    fetched.push(request.url ?? '');
    response.end();
  });
  await new Promise<void>((resolve) => tracker.listen(0, '127.0.0.1', resolve));
  remote = `http://127.0.0.1:${(tracker.address() as AddressInfo).port}`;
  [server, work, red, blue] = await Promise.all([
    startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_CONCURRENCY: '4' }),
    tempDir('convertd-email-'),
    png(40, 30, [255, 0, 0]),
    png(8, 8, [0, 0, 255]),
  ]);
  catalogue = await fetchCatalogue(server.url);
  samples.set('eml', Buffer.from(emlMessage(red, blue, remote)));
  samples.set('mbox', Buffer.from(mailbox()));
  samples.set('msg', outlookMessage({
    subject: SUBJECT, senderName: 'Quokka Sender', senderAddress: 'sender@example.org',
    to: [{ name: 'Heron Reader', address: 'reader@example.org' }], date: new Date('2026-11-03T10:00:00Z'),
    body: `${BODY} ${JAPANESE}`,
    html: `<html><body><p>${BODY} ${JAPANESE}</p><img src="cid:red-square" alt="red square" width="120" height="90"><img src="${remote}/msg-track.png"></body></html>`,
    attachments: [{ name: 'notes.txt', type: 'text/plain', bytes: NOTES }, { name: 'red.png', type: 'image/png', bytes: red, contentId: 'red-square' }],
  }));
});

after(async () => {
  reader.close();
  await server?.stop();
  await new Promise((resolve) => tracker?.close(resolve));
  await fs.rm(work, { recursive: true, force: true });
});

const targetsOf = (id: string) => catalogue.find((entry) => entry.id === id)?.targets ?? [];

test('the catalogue lists eml, mbox and msg as e-mail, each to html, txt, a ZIP and (through the page) pdf and the document formats', () => {
  for (const id of SOURCES) {
    const entry = catalogue.find((format) => format.id === id);
    assert.ok(entry, `${id} missing from /api/formats`);
    assert.equal(entry.category, 'email');
    assert.equal(entry.media_type, MEDIA_TYPES[id]);
    for (const target of ['html', 'txt', 'zip', 'pdf', 'docx', 'odt']) assert.ok(entry.targets.includes(target), `${id} → ${target}`);
    assert.deepEqual([...entry.targets].sort(), [...targetsOf('eml')].sort(), `${id} has the targets eml has`);
  }
});

/** What each source's text outputs must hold: the subject's and the body's words. */
const WORDS_OF: Readonly<Record<string, readonly string[]>> = { eml: WORDS, msg: WORDS, mbox: [...WORDS, ...wordsOf('Seven herons agree')] };

test('every pair from eml, mbox and msg converts, and each output holds the message (read by another tool)', async () => {
  const pairs = SOURCES.flatMap((source) => targetsOf(source).map((target) => ({ source, target })));
  assert.ok(pairs.length >= 30, `${pairs.length} pairs`);
  const failures: string[] = [];
  await mapInFlight(pairs, 6, async ({ source, target }) => {
    const { record, bytes } = await convert(server.url, samples.get(source)!, `sample.${source}`, target, { timeoutMs: 180_000 });
    assert.equal(record.source, source);
    const file = path.join(work, `${source}-to-${target}.${target}`);
    await fs.writeFile(file, bytes);
    if (target === 'zip') return checkZip(source, bytes);
    const reading = await reader.read(file, target).catch((error: Error) => ({ error: error.message, text: '' }));
    if ('error' in reading) {
      failures.push(`${source} → ${target}: not a valid ${target}: ${reading.error}`);
      return;
    }
    if (PICTURES.has(target)) return;
    const { missing } = recall(WORDS_OF[source]!, reading.text);
    if (missing.length > 0) failures.push(`${source} → ${target}: missing ${missing.join(', ')}`);
  });
  assert.deepEqual(failures, []);
});

function checkZip(source: string, bytes: Buffer): void {
  const members = unzipSync(bytes);
  if (source === 'mbox') {
    assert.deepEqual(Object.keys(members), ['message-001.eml', 'message-002.eml']);
    const second = Buffer.from(members['message-002.eml']!).toString();
    assert.match(second, /^From: Heron <heron@example\.org>/);
    assert.match(second, /\nFrom the river bank, a reply\./, 'the quoted ">From" line is the body\'s "From" again');
    return;
  }
  // The inline picture is part of the body (in the page), not an attachment; a name with folders keeps its last part.
  const expected: Record<string, Buffer> = source === 'eml' ? { 'notes.txt': NOTES, 'blue.png': blue } : { 'notes.txt': NOTES };
  assert.deepEqual(Object.keys(members).sort(), Object.keys(expected).sort(), `${source}: the attachments`);
  for (const [name, content] of Object.entries(expected)) assert.ok(Buffer.from(members[name]!).equals(content), `${source}: ${name} is the attached bytes`);
}

test('the HTML page is safe: no script or handler, nothing remote, the cid: picture embedded, a policy that forbids loads', async () => {
  for (const source of ['eml', 'msg'] as const) {
    const { bytes } = await convert(server.url, samples.get(source)!, `sample.${source}`, 'html');
    const page = bytes.toString();
    assert.ok(page.includes(SUBJECT), `${source}: the subject, in Japanese too`);
    assert.doesNotMatch(page, /<script|onclick|steal\(\)/i, `${source}: no script`);
    assert.doesNotMatch(page, /(src|href)\s*=\s*["']?http:\/\/127\.0\.0\.1/i, `${source}: no remote image`);
    assert.doesNotMatch(page, /url\(/i, `${source}: no style that loads`);
    assert.match(page, /<img src="data:image\/png;base64,/, `${source}: the message's own picture is in the page`);
    assert.match(page, /http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:/);
    if (source === 'eml') {
      assert.match(page, /\[image: tracker\]/, 'the tracking pixel is named, not loaded');
      assert.match(page, /<li>notes\.txt \(text\/plain, 13 bytes\)<\/li>/, 'the attachments are listed');
    }
  }
});

test('the PDF of a message shows its Japanese subject as text and its own picture in red', async () => {
  const { bytes } = await convert(server.url, samples.get('eml')!, 'sample.eml', 'pdf', { timeoutMs: 180_000 });
  const file = path.join(work, 'picture.pdf');
  await fs.writeFile(file, bytes);
  const { stdout: text } = await execFileAsync('pdftotext', ['-enc', 'UTF-8', file, '-']);
  assert.ok(text.includes(JAPANESE), 'pdftotext finds the Japanese subject');
  assert.equal(recall(WORDS, text).missing.length, 0);
  await execFileAsync('pdftoppm', ['-r', '50', '-f', '1', '-l', '1', '-png', file, path.join(work, 'picture')]);
  const page = readdirSync(work).find((name) => name.startsWith('picture') && name.endsWith('.png'))!;
  const { stdout } = await execFileAsync('/usr/bin/python3', ['-c', `
import sys
from PIL import Image
image = Image.open(sys.argv[1]).convert('RGB')
print(sum(1 for (r, g, b) in image.getdata() if r > 200 and g < 70 and b < 70))`, path.join(work, page)]);
  // 40 × 30 pixels shown at 120 × 90 CSS pixels: about 75 × 56 at 50 dpi; at least a third of that.
  assert.ok(Number(stdout) > 1000, `${stdout.trim()} red pixels on the first page`);
});

test('nothing the messages name was fetched while they were converted', () => {
  assert.deepEqual(fetched, []);
});

test('hostile mail ends in a clear error, never a crash: not a message, not a mailbox, nested parts, too many parts', async () => {
  const cases: Array<{ name: string; data: Buffer; target: string; codes: string[] }> = [
    { name: 'not-mail.eml', data: Buffer.from('\u0000\u0001binary, not a message\n'), target: 'html', codes: ['corrupt_input'] },
    { name: 'not-a-mailbox.mbox', data: Buffer.from('Subject: no From line first\n\nbody\n'), target: 'txt', codes: ['corrupt_input'] },
    {
      // 3,000 multiparts, each inside the one before.
      name: 'nested.eml',
      data: Buffer.from(['From: a@example.org', 'Subject: nested', ...Array.from({ length: 3000 }, (_, i) => `Content-Type: multipart/mixed; boundary="b${i}"\n\n--b${i}`), 'Content-Type: text/plain', '', 'deep', ''].join('\n')),
      target: 'html',
      codes: ['done', 'corrupt_input', 'input_too_complex'],
    },
    {
      name: 'many-parts.eml',
      data: Buffer.from(['From: a@example.org', 'Subject: many', 'Content-Type: multipart/mixed; boundary="m"', '', ...Array.from({ length: 1500 }, (_, i) => `--m\nContent-Type: text/plain\nContent-Disposition: attachment; filename="part-${i}.txt"\n\npart ${i}`), '--m--', ''].join('\n')),
      target: 'zip',
      codes: ['input_too_complex'],
    },
  ];
  for (const { name, data, target, codes } of cases) {
    const { final } = await runWithOptions(server.url, data, name, target, {}, { timeoutMs: 120_000 });
    const outcome = final.status === 'done' ? 'done' : final.error?.code ?? final.status;
    assert.ok(codes.includes(outcome), `${name}: ${outcome} (${final.error?.message ?? ''})`);
    if (final.status !== 'done') assert.ok((final.error?.message ?? '').length > 20, `${name}: the message says what went wrong`);
  }
  // The service is still there and converting.
  const { record } = await convert(server.url, samples.get('eml')!, 'again.eml', 'txt');
  assert.equal(record.status, 'done');
});

test('an Outlook message saved without Unicode is read in its code page (Cyrillic in windows-1251)', async () => {
  const subject = 'Привет из Москвы';
  // windows-1251: А-Я are 0xC0-0xDF, а-я 0xE0-0xFF; the space is ASCII.
  const bytes = Buffer.from([...subject].map((c) => c === ' ' ? 0x20 : c.charCodeAt(0) - 0x410 + 0xc0));
  const data = outlookMessage({
    subject, ansiSubject: { codepage: 1251, bytes }, senderName: 'Sender', senderAddress: 'sender@example.org',
    to: [{ name: 'Reader', address: 'reader@example.org' }], date: new Date('2026-11-03T10:00:00Z'), body: BODY,
  });
  const { bytes: text } = await convert(server.url, data, 'cyrillic.msg', 'txt');
  assert.match(text.toString(), new RegExp(`^Subject: ${subject}$`, 'm'));
});

const CORPUS = path.resolve('..', 'shared', 'corpus');

test('corpus: real e-mail (EML, mbox, MSG) to html, txt and pdf', { skip: !existsSync(path.join(CORPUS, 'eml')) && 'no shared corpus here' }, async () => {
  const files = SOURCES.flatMap((family) => existsSync(path.join(CORPUS, family)) ? readdirSync(path.join(CORPUS, family)).map((name) => ({ family, name })) : []);
  const failures: string[] = [];
  await mapInFlight(files.flatMap((file) => ['html', 'txt', 'pdf'].map((target) => ({ ...file, target }))), 4, async ({ family, name, target }) => {
    const data = await fs.readFile(path.join(CORPUS, family, name));
    const { final } = await runWithOptions(server.url, data, name, target, {}, { timeoutMs: 180_000 });
    if (final.status !== 'done') failures.push(`${family}/${name} → ${target}: ${final.error?.code} ${final.error?.message}`);
  });
  assert.deepEqual(failures, []);
});
