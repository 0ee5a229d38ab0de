// The web page's share of issue #29 in a real browser (Debian's chromium through playwright-core)
// against the real service: the options form built from a pair's descriptors, "Convert all" with one
// set of options, "Delete now", keyboard and screen-reader access to the options, a phone's width,
// and each file's default target. Results are checked outside the page: their pixels by Pillow
// (decodeImage), their presence on the service by HTTP. Screenshots go to test-artifacts/web/.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './helpers/chromium.ts';
import type { ConversionOptions, ErrorBody } from '../src/wire/shapes.ts';
import { noisePng, sampleImage } from './helpers/fixtures.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { decodeImage, writeTemp } from './helpers/tools.ts';
import { waitFor } from './helpers/wait.ts';

const ARTIFACTS = path.resolve('test-artifacts', 'web');
/** A JPEG at quality 20 must be well under the default quality's of the same noisy picture: at most this share of its size. */
const LOW_QUALITY_MAX_SHARE = 0.7;
/** The noisy test picture: big enough for the quality to show in the size, small enough to convert fast. */
const NOISE = { width: 200, height: 150 };

let browser: Browser;
let server: RunningServer;

before(async () => {
  await fs.mkdir(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_LIBREOFFICE_START: 'lazy', CONVERTD_LIBREOFFICE_POOL: '1' });
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

async function openPage(options: { context?: BrowserContext; width?: number } = {}): Promise<Page> {
  const context = options.context ?? await browser.newContext({ viewport: { width: options.width ?? 1000, height: 900 } });
  const page = await context.newPage();
  page.on('pageerror', (error) => assert.fail(`script error on the page: ${error.message}`));
  await page.goto(`${server.url}/`);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

async function pickFiles(page: Page, files: Array<{ name: string; buffer: Buffer }>): Promise<void> {
  await page.setInputFiles('#file-input', files.map((f) => ({ name: f.name, mimeType: 'application/octet-stream', buffer: f.buffer })));
}

/** Polls an expression in the page (waitForFunction would need eval, which the page's CSP forbids). */
async function until(page: Page, expression: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(expression, () => page.evaluate(expression), timeoutMs, 50);
}

const fileRow = (page: Page, name: string) => page.locator('li.file', { has: page.locator('.file-name', { hasText: name }) });

/** Waits until a file's options form is there (its descriptors come from the service). */
async function optionsOf(page: Page, name: string) {
  const details = fileRow(page, name).locator('details.options');
  await details.waitFor({ state: 'attached', timeout: 20_000 });
  return details;
}

/** The converted file of a row, fetched from the service by its link. */
async function resultOf(page: Page, name: string): Promise<{ href: string; bytes: Buffer }> {
  const link = fileRow(page, name).locator('a.download');
  await link.waitFor({ state: 'visible', timeout: 60_000 });
  const href = (await link.getAttribute('href'))!;
  const response = await fetch(`${server.url}${href}`);
  assert.equal(response.status, 200, `${name}: ${href}`);
  return { href, bytes: Buffer.from(await response.arrayBuffer()) };
}

async function pixelSize(bytes: Buffer, name: string): Promise<[number, number]> {
  const facts = decodeImage(await writeTemp(bytes, name));
  return [facts.width, facts.height];
}

const noHorizontalScroll = (page: Page) => page.evaluate('document.documentElement.scrollWidth <= window.innerWidth') as Promise<boolean>;

test('a PNG defaults to JPEG with its options beside it; quality and width change the result, and only what was changed is sent', { timeout: 120_000 }, async () => {
  const page = await openPage();
  const noise = await noisePng(NOISE.width, NOISE.height);
  await pickFiles(page, [{ name: 'q20.png', buffer: noise }, { name: 'w100.png', buffer: noise }, { name: 'plain.png', buffer: noise }]);
  for (const name of ['q20.png', 'w100.png', 'plain.png']) assert.equal(await fileRow(page, name).locator('select.target').inputValue(), 'jpg');

  const descriptors = await (await fetch(`${server.url}/api/formats/png/jpg`)).json() as ConversionOptions;
  const form = await optionsOf(page, 'q20.png');
  assert.match(await form.locator('summary').innerText(), new RegExp(`^Options \\(${descriptors.options.length}\\)$`));
  await form.locator('summary').click();
  // One field per descriptor, labelled with its name, its default as the placeholder.
  assert.equal(await form.locator('.option').count(), descriptors.options.length);
  const quality = descriptors.options.find((o) => o.name === 'quality')!;
  const qualityField = fileRow(page, 'q20.png').getByLabel('Quality', { exact: true });
  assert.equal(await qualityField.getAttribute('placeholder'), String(quality.default));
  assert.deepEqual([await qualityField.getAttribute('min'), await qualityField.getAttribute('max')], [String(quality.minimum), String(quality.maximum)]);
  assert.equal(await fileRow(page, 'q20.png').getByLabel('Fit', { exact: true }).evaluate((element: { tagName: string }) => element.tagName), 'SELECT', 'an enum is a select');
  assert.equal(await fileRow(page, 'q20.png').getByLabel('Strip', { exact: true }).getAttribute('type'), 'checkbox', 'a boolean is a checkbox');
  await qualityField.fill('20');
  assert.equal(await form.locator('summary').innerText(), 'Options: quality 20', 'the summary says what is set');
  await (await optionsOf(page, 'w100.png')).locator('summary').click();
  await fileRow(page, 'w100.png').getByLabel('Width', { exact: true }).fill('100');
  await page.screenshot({ path: path.join(ARTIFACTS, 'options-1-form.png'), fullPage: true });

  await page.click('#convert-all');
  const [q20, w100, plain] = await Promise.all([resultOf(page, 'q20.png'), resultOf(page, 'w100.png'), resultOf(page, 'plain.png')]);
  // The note is the progress record's echo: every option sent that applies is in it, and every other
  // would be named as not used. So the defaults left alone (strip on, fit max, ...) were not sent.
  assert.equal(await fileRow(page, 'q20.png').locator('.file-note').innerText(), 'Converted with quality 20.');
  assert.equal(await fileRow(page, 'w100.png').locator('.file-note').innerText(), 'Converted with width 100.');
  assert.equal(await fileRow(page, 'plain.png').locator('.file-note').innerText(), '', 'nothing changed, nothing sent');

  assert.deepEqual(await pixelSize(plain.bytes, 'plain.jpg'), [NOISE.width, NOISE.height]);
  assert.deepEqual(await pixelSize(q20.bytes, 'q20.jpg'), [NOISE.width, NOISE.height]);
  assert.deepEqual(await pixelSize(w100.bytes, 'w100.jpg'), [100, 75], 'width alone keeps the aspect ratio');
  assert.ok(q20.bytes.length < plain.bytes.length * LOW_QUALITY_MAX_SHARE, `quality 20: ${q20.bytes.length} B; default: ${plain.bytes.length} B`);
  await page.context().close();
});

test('Convert all applies one set of options where each applies; Delete now removes a result from the server', { timeout: 120_000 }, async () => {
  const page = await openPage();
  const png = await sampleImage('png');
  await pickFiles(page, [{ name: 'to-jpg.png', buffer: png }, { name: 'to-png.png', buffer: png }]);
  await fileRow(page, 'to-png.png').locator('select.target').selectOption('png');
  await optionsOf(page, 'to-jpg.png');
  await until(page, `document.querySelector('li.file:nth-child(2) details.options [data-option="width"]') !== null && !document.querySelector('li.file:nth-child(2) [data-option="quality"]')`);

  const batch = page.locator('#batch-options details.options');
  await batch.locator('summary').click();
  await batch.getByLabel('Quality', { exact: true }).fill('30');
  await batch.getByLabel('Width', { exact: true }).fill('40');
  // Each file's own form shows what it will be converted with; png → png takes no quality.
  assert.equal(await fileRow(page, 'to-jpg.png').getByLabel('Quality', { exact: true }).inputValue(), '30');
  assert.equal(await fileRow(page, 'to-jpg.png').getByLabel('Width', { exact: true }).inputValue(), '40');
  assert.equal(await fileRow(page, 'to-png.png').getByLabel('Width', { exact: true }).inputValue(), '40');
  assert.equal(await fileRow(page, 'to-png.png').locator('[data-option="quality"]').count(), 0);
  await page.screenshot({ path: path.join(ARTIFACTS, 'options-2-convert-all.png'), fullPage: true });

  await page.click('#convert-all');
  const [jpg, pngResult] = await Promise.all([resultOf(page, 'to-jpg.png'), resultOf(page, 'to-png.png')]);
  assert.equal(await fileRow(page, 'to-jpg.png').locator('.file-note').innerText(), 'Converted with quality 30, width 40.');
  // Not sent where it does not apply: the service would have listed it as ignored ("Not used for ...").
  assert.equal(await fileRow(page, 'to-png.png').locator('.file-note').innerText(), 'Converted with width 40.');
  assert.deepEqual(await pixelSize(jpg.bytes, 'to-jpg.jpg'), [40, 27]);
  assert.deepEqual(await pixelSize(pngResult.bytes, 'to-png.png'), [40, 27]);

  // Delete now: the result goes from the server, and the row says so.
  const row = fileRow(page, 'to-jpg.png');
  const deleteButton = row.getByRole('button', { name: 'Delete the result of to-jpg.png from the server now' });
  assert.equal(await deleteButton.innerText(), 'Delete now');
  await deleteButton.click();
  await until(page, `/Deleted from the server/.test(document.querySelector('li.file .status-text').textContent)`);
  assert.ok(await row.locator('a.download').isHidden(), 'no link to a deleted file');
  assert.ok(await row.locator('.delete-result').isHidden());
  assert.ok(await page.evaluate(`document.activeElement === document.querySelector('li.file button.convert')`), 'the focus moves on to Convert');
  assert.match(await page.locator('#announcer').innerText(), /to-jpg\.png: Deleted from the server/);
  const gone = await fetch(`${server.url}${jpg.href}`);
  assert.equal(gone.status, 410);
  assert.equal((await gone.json() as ErrorBody).error.code, 'expired');
  assert.equal((await fetch(`${server.url}${pngResult.href}`)).status, 200, 'the other result stays');
  await page.screenshot({ path: path.join(ARTIFACTS, 'options-3-deleted.png'), fullPage: true });
  // The file can be converted again.
  await row.locator('button.convert').click();
  await resultOf(page, 'to-jpg.png');
  await page.context().close();
});

test('keyboard and screen reader: Tab reaches the options, each has a label and a description; a wrong value is caught before sending', { timeout: 120_000 }, async () => {
  const page = await openPage();
  await pickFiles(page, [{ name: 'keys.png', buffer: await sampleImage('png') }]);
  await optionsOf(page, 'keys.png');
  const active = (expression: string) => page.evaluate(`(() => { const e = document.activeElement; return ${expression}; })()`);
  await page.locator('body').focus();
  for (let i = 0; i < 25 && !(await active(`e?.tagName === 'SUMMARY' && e.closest('li.file') !== null`)); i++) await page.keyboard.press('Tab');
  assert.ok(await active(`e?.tagName === 'SUMMARY'`), 'the file\'s options are reachable by Tab');
  await page.keyboard.press('Enter');
  assert.ok(await page.evaluate(`document.querySelector('li.file details.options').open`), 'Enter opens them');
  await page.keyboard.press('Tab');
  assert.equal(await active('e.labels?.[0]?.textContent'), 'Quality', 'the first field, quality, has the focus and a label');
  await page.keyboard.type('500');
  // Every field: exactly one label, and a description it points to (read out with it).
  const fields = await page.evaluate(`[...document.querySelectorAll('li.file .option input, li.file .option select')].map((e) => ({
    label: e.labels.length === 1 ? e.labels[0].textContent : null,
    description: document.getElementById(e.getAttribute('aria-describedby'))?.textContent ?? null,
  }))`) as Array<{ label: string | null; description: string | null }>;
  assert.ok(fields.length >= 4);
  for (const field of fields) {
    assert.ok(field.label, 'a label');
    assert.ok(field.description && field.description.length > 10, `${field.label}: a description`);
  }
  assert.ok(await page.getByRole('group', { name: 'Options for keys.png → jpg' }).isVisible(), 'the fields are a named group (fieldset and legend)');
  assert.ok(await page.getByRole('spinbutton', { name: 'Quality' }).isVisible());

  // 500 is past the maximum: the page says so beside the file and sends nothing.
  let posts = 0;
  page.on('request', (request) => {
    if (request.method() === 'POST') posts++;
  });
  await fileRow(page, 'keys.png').locator('button.convert').click();
  assert.match(await fileRow(page, 'keys.png').locator('.status-text').innerText(), /^Quality: .+Correct it, then convert\.$/);
  assert.ok(await active(`e.labels?.[0]?.textContent === 'Quality'`), 'the focus goes to the wrong field');
  assert.equal(await page.getByRole('spinbutton', { name: 'Quality' }).getAttribute('aria-invalid'), 'true');
  assert.equal(posts, 0);
  await page.keyboard.press('Control+A');
  await page.keyboard.type('60');
  assert.equal(await page.getByRole('spinbutton', { name: 'Quality' }).getAttribute('aria-invalid'), null);
  // A string option is checked against its syntax (the descriptor's pattern) too.
  const background = fileRow(page, 'keys.png').getByLabel('Background', { exact: true });
  await background.fill('blue');
  await fileRow(page, 'keys.png').locator('button.convert').click();
  assert.match(await fileRow(page, 'keys.png').locator('.status-text').innerText(), /^Background: .+Correct it, then convert\.$/);
  assert.equal(await background.getAttribute('aria-invalid'), 'true');
  assert.equal(posts, 0, 'nothing sent while a field is wrong');
  await background.fill('#336699');
  // A refusal only the service can make (the two together past its pixel limit): its words, beside the file.
  const row = fileRow(page, 'keys.png');
  await row.getByLabel('Width', { exact: true }).fill('16384');
  await row.getByLabel('Height', { exact: true }).fill('16384');
  await row.locator('button.convert').click();
  await until(page, `document.querySelector('li.file .status-text').classList.contains('error') && /limit/.test(document.querySelector('li.file .status-text').textContent)`);
  assert.match(await row.locator('.status-text').innerText(), /"width" and "height".*limit/);
  await row.getByLabel('Width', { exact: true }).fill('');
  await row.getByLabel('Height', { exact: true }).fill('');
  await fileRow(page, 'keys.png').locator('button.convert').focus();
  await page.keyboard.press('Enter');
  await resultOf(page, 'keys.png');
  assert.equal(await fileRow(page, 'keys.png').locator('.file-note').innerText(), 'Converted with quality 60, background #336699.');
  // After the download link, Delete now is next by Tab.
  await fileRow(page, 'keys.png').locator('a.download').focus();
  await page.keyboard.press('Tab');
  assert.ok(await active(`e?.classList.contains('delete-result')`), 'Delete now follows the download');
  await page.keyboard.press('Enter');
  await until(page, `/Deleted from the server/.test(document.body.innerText)`);
  await page.context().close();
});

test('a phone: no sideways scrolling at 320 and 390 px, with files, their options open, a result, and the formats page', { timeout: 120_000 }, async () => {
  for (const width of [320, 390]) {
    const page = await openPage({ width });
    assert.ok(await noHorizontalScroll(page), `${width} px: the empty page`);
    await pickFiles(page, [
      { name: 'a-photo-with-a-rather-long-name-that-has-no-spaces-to-break-at-all.png', buffer: await sampleImage('png') },
      { name: 'report.pdf', buffer: Buffer.from('%PDF-1.4\n') },
      { name: 'letter.docx', buffer: Buffer.from('x') },
      { name: 'clip.webm', buffer: Buffer.from('x') },
    ]);
    await optionsOf(page, 'a-photo-with');
    for (const summary of await page.locator('details.options summary').all()) await summary.click();
    assert.ok(await noHorizontalScroll(page), `${width} px: files with their options open`);
    await fileRow(page, 'a-photo-with').locator('button.convert').click();
    await resultOf(page, 'a-photo-with');
    assert.ok(await noHorizontalScroll(page), `${width} px: a result with its links`);
    await page.screenshot({ path: path.join(ARTIFACTS, `options-4-phone-${width}.png`), fullPage: true });
    await page.click('nav >> text=Supported formats');
    assert.ok(await noHorizontalScroll(page), `${width} px: the formats page`);
    await page.context().close();
  }
});

test('each file starts with the target most wanted from its format, and the last choice per format is remembered', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const page = await openPage({ context });
  // The page guesses the format from the name; the content does not matter until a conversion.
  const expected: Record<string, string | readonly string[]> = {
    'report.pdf': ['docx', 'jpg'], 'letter.docx': 'pdf', 'old.doc': 'pdf', 'sheet.xlsx': 'pdf', 'slides.pptx': 'pdf',
    'photo.png': 'jpg', 'snap.jpg': 'png', 'phone.heic': 'jpg', 'anim.gif': 'png', 'drawing.svg': 'png',
    'song.wav': 'mp3', 'tune.mp3': 'wav', 'clip.webm': 'mp4', 'movie.mp4': 'mp3', 'novel.mobi': 'epub', 'book.epub': 'pdf',
  };
  await pickFiles(page, Object.keys(expected).map((name) => ({ name, buffer: Buffer.from('x') })));
  for (const [name, wanted] of Object.entries(expected)) {
    const chosen = await fileRow(page, name).locator('select.target').inputValue();
    if (typeof wanted === 'string') assert.equal(chosen, wanted, name);
    else assert.ok(wanted.includes(chosen), `${name}: ${chosen}, one of ${wanted.join(', ')} expected`);
  }
  assert.notEqual(await fileRow(page, 'report.pdf').locator('select.target').inputValue(), 'pdfa');

  // The user's choice for PNG is kept in this browser: after a reload a PNG starts with it; other formats do not change.
  await fileRow(page, 'photo.png').locator('select.target').selectOption('webp');
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await pickFiles(page, [{ name: 'another.png', buffer: Buffer.from('x') }, { name: 'another.docx', buffer: Buffer.from('x') }]);
  assert.equal(await fileRow(page, 'another.png').locator('select.target').inputValue(), 'webp');
  assert.equal(await fileRow(page, 'another.docx').locator('select.target').inputValue(), 'pdf');
  // The form follows the target: png → webp's own options.
  const webp = await (await fetch(`${server.url}/api/formats/png/webp`)).json() as ConversionOptions;
  const webpQuality = String(webp.options.find((o) => o.name === 'quality')!.default);
  await until(page, `document.querySelector('li.file [data-option="quality"] input')?.placeholder === ${JSON.stringify(webpQuality)}`);
  // A fresh browser has no memory: the table's default again.
  const fresh = await openPage();
  await pickFiles(fresh, [{ name: 'third.png', buffer: Buffer.from('x') }]);
  assert.equal(await fileRow(fresh, 'third.png').locator('select.target').inputValue(), 'jpg');
  await fresh.context().close();
  await context.close();
});
