// The web page in a real browser: Debian's chromium driven by playwright-core, against the real
// service. Screenshots of the main states go to test-artifacts/web/ (not committed).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from './helpers/chromium.ts';
import { fetchCatalogue } from './helpers/client.ts';
import { sampleImage } from './helpers/fixtures.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { decodeImage, writeTemp } from './helpers/tools.ts';
import { waitFor } from './helpers/wait.ts';

const ARTIFACTS = path.resolve('test-artifacts', 'web');
let browser: Browser;
let server: RunningServer;

before(async () => {
  await fs.mkdir(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_MAX_FILE_BYTES: '200000', CONVERTD_LIBREOFFICE_POOL: '1' });
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

async function openPage(base: string, colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
  const context = await browser.newContext({ acceptDownloads: true, colorScheme });
  const page = await context.newPage();
  const outside: string[] = [];
  page.on('request', (request) => {
    if (!request.url().startsWith(base)) outside.push(request.url());
  });
  page.on('pageerror', (error) => assert.fail(`script error on the page: ${error.message}`));
  await page.goto(`${base}/`);
  await page.waitForSelector('body[data-ready="true"]');
  assert.deepEqual(outside, [], 'the page loads nothing from elsewhere');
  return page;
}

/** Files as the page's file dialog would give them. */
async function pickFiles(page: Page, files: Array<{ name: string; buffer: Buffer; mimeType?: string }>): Promise<void> {
  await page.setInputFiles('#file-input', files.map((f) => ({ name: f.name, mimeType: f.mimeType ?? 'application/octet-stream', buffer: f.buffer })));
}

/** Polls an expression in the page (waitForFunction would need eval, which the page's CSP forbids). */
async function until(page: Page, expression: string, timeoutMs: number): Promise<void> {
  await waitFor(expression, () => page.evaluate(expression), timeoutMs, 100);
}

const fileRow = (page: Page, name: string) => page.locator('li.file', { has: page.locator('.file-name', { hasText: name }) });

test('the page is served with a strict CSP and no inline script', async () => {
  const response = await fetch(`${server.url}/`);
  assert.equal(response.status, 200);
  const csp = response.headers.get('content-security-policy') ?? '';
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  const html = await response.text();
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  assert.equal((await fetch(`${server.url}/assets/app.js`)).status, 200);
});

test('drop two files, choose targets, watch them convert, download the results', { timeout: 120_000 }, async () => {
  const page = await openPage(server.url);
  await page.screenshot({ path: path.join(ARTIFACTS, '1-empty.png'), fullPage: true });
  // A real drop: a DataTransfer with the files, dispatched on the drop zone.
  const png = await sampleImage('png');
  const jpg = await sampleImage('jpg');
  // (Browser code as a string: it runs in the page, where the DOM's types live.)
  await page.evaluate(`(() => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([new Uint8Array(${JSON.stringify([...png])})], 'first.png', { type: 'image/png' }));
    transfer.items.add(new File([new Uint8Array(${JSON.stringify([...jpg])})], 'second.jpg', { type: 'image/jpeg' }));
    document.querySelector('#drop-zone').dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
  })()`);
  await page.waitForSelector('li.file >> nth=1');
  assert.match(await fileRow(page, 'first.png').locator('.file-meta').innerText(), /png/);
  await fileRow(page, 'first.png').locator('select.target').selectOption('webp');
  await fileRow(page, 'second.jpg').locator('select.target').selectOption('png');
  await page.screenshot({ path: path.join(ARTIFACTS, '2-files-chosen.png'), fullPage: true });
  await page.click('#convert-all');
  for (const name of ['first.png', 'second.jpg']) await fileRow(page, name).locator('a.download:visible').waitFor({ timeout: 60_000 });
  assert.match(await fileRow(page, 'first.png').locator('a.download').textContent() ?? '', /first\.webp \(\d/);
  assert.match(await fileRow(page, 'first.png').locator('.status-text').innerText(), /Done/);
  await page.screenshot({ path: path.join(ARTIFACTS, '3-done.png'), fullPage: true });

  const [download] = await Promise.all([page.waitForEvent('download'), fileRow(page, 'second.jpg').locator('a.download').click()]);
  assert.equal(download.suggestedFilename(), 'second.png');
  const bytes = await fs.readFile((await download.path())!);
  const facts = decodeImage(await writeTemp(bytes, 'second.png'));
  assert.deepEqual([facts.width, facts.height], [96, 64]);
  assert.ok(!(await page.locator('#download-all').isDisabled()));
  await page.context().close();
});

test('errors in words, beside their file: too large, unsupported, failed', { timeout: 120_000 }, async () => {
  const page = await openPage(server.url, 'dark');
  const broken = Buffer.concat([(await sampleImage('png')).subarray(0, 40), Buffer.alloc(300, 9)]);
  await pickFiles(page, [
    { name: 'huge.png', buffer: Buffer.alloc(300_000, 1) },
    { name: 'notes.xyz', buffer: Buffer.from('hello') },
    { name: 'broken.png', buffer: broken },
    { name: 'words.png', buffer: Buffer.from('not really a png at all') },
  ]);
  assert.match(await fileRow(page, 'huge.png').locator('.status-text').innerText(), /Too large: the limit is 195\.3 KB/);
  assert.ok(await fileRow(page, 'huge.png').locator('button.convert').isDisabled(), 'no upload is even tried');
  assert.match(await fileRow(page, 'notes.xyz').locator('.status-text').innerText(), /Unsupported format/);
  await fileRow(page, 'broken.png').locator('select.target').selectOption('jpg');
  await fileRow(page, 'broken.png').locator('button.convert').click();
  await fileRow(page, 'words.png').locator('select.target').selectOption('jpg');
  await fileRow(page, 'words.png').locator('button.convert').click();
  await until(page, 'document.querySelectorAll(".status-text.error").length >= 4', 60_000);
  assert.match(await fileRow(page, 'broken.png').locator('.status-text').innerText(), /could not be read|damaged/i);
  assert.match(await fileRow(page, 'words.png').locator('.status-text').innerText(), /not supported/);
  await page.screenshot({ path: path.join(ARTIFACTS, '4-errors-dark.png'), fullPage: true });
  await page.context().close();
});

test('a rate limit shows a live countdown, then the file converts', { timeout: 120_000 }, async () => {
  const limited = await startServer({ CONVERTD_RATE_LIMITS: '1/4s', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_LIBREOFFICE_START: 'lazy', CONVERTD_LIBREOFFICE_POOL: '1' });
  try {
    const page = await openPage(limited.url);
    const png = await sampleImage('png');
    await pickFiles(page, [{ name: 'a.png', buffer: png }, { name: 'b.png', buffer: png }]);
    await page.selectOption('#target-all', 'gif');
    await page.click('#convert-all');
    await until(page, '/Rate limited: trying again in \\d+ s/.test(document.body.innerText)', 20_000);
    await page.screenshot({ path: path.join(ARTIFACTS, '5-rate-limited.png'), fullPage: true });
    for (const name of ['a.png', 'b.png']) await fileRow(page, name).locator('a.download:visible').waitFor({ timeout: 60_000 });
    await page.context().close();
  } finally {
    await limited.stop();
  }
});

test('keyboard alone: choose a file, a target, convert, and reach the download', { timeout: 120_000 }, async () => {
  const page = await openPage(server.url);
  await pickFiles(page, [{ name: 'keys.png', buffer: await sampleImage('png') }]);
  // From the top of the page, Tab until the target list of the file has the focus.
  await page.locator('body').focus();
  const focused = (className: string) => page.evaluate(`document.activeElement?.classList.contains(${JSON.stringify(className)}) === true`);
  for (let i = 0; i < 20 && !(await focused('target')); i++) await page.keyboard.press('Tab');
  assert.ok(await focused('target'), 'the target list is reachable by Tab');
  await page.keyboard.press('End'); // the last target
  await page.keyboard.press('Tab');
  assert.ok(await focused('convert'), 'Convert follows the target list');
  await page.keyboard.press('Enter');
  await fileRow(page, 'keys.png').locator('a.download:visible').waitFor({ timeout: 60_000 });
  await page.keyboard.press('Tab');
  // The file's options, when its pair has any (a closed disclosure), come between Convert and the result.
  const hasOptions = await fileRow(page, 'keys.png').locator('details.options').count() > 0;
  if (hasOptions) {
    assert.ok(await page.evaluate(`document.activeElement?.tagName === 'SUMMARY' && document.activeElement.closest('li.file') !== null`), 'then the file\'s options');
    await page.keyboard.press('Tab');
  }
  assert.ok(await focused('download'), 'the download link is next in the focus order');
  assert.match(await page.locator('#announcer').innerText(), /keys\.png converted/);
  await page.context().close();
});

test('the catalogue page lists the formats, with a search box', async () => {
  const page = await openPage(server.url);
  await page.click('nav >> text=Supported formats');
  assert.equal(new URL(page.url()).pathname, '/formats');
  const catalogue = await fetchCatalogue(server.url);
  const rows = await page.locator('#formats-table tbody tr:not(.category)').count();
  assert.equal(rows, catalogue.length, 'a row per format');
  // Grouped by category: a heading per category, each format under its own.
  const headings = await page.locator('#formats-table tr.category').allInnerTexts();
  const categories = [...new Set(catalogue.map((f) => f.category))].sort();
  assert.deepEqual(headings.map((h) => h.trim().toLowerCase().replace(/ \(\d+\)$/, '')), categories);
  assert.match(await page.locator('#formats-count').innerText(), new RegExp(`^${catalogue.length} formats in ${categories.length} categories`));
  await page.fill('#format-search', 'heic');
  const filtered = await page.locator('#formats-table tbody tr:not(.category)').allInnerTexts();
  assert.ok(filtered.length >= 1 && filtered.every((row) => /heic/i.test(row)));
  // An alias or an extension typed with its dot finds the format it belongs to.
  for (const [search, id] of [['jpeg', 'jpg'], ['.tif', 'tiff'], ['yml', 'yaml'], ['.htm', 'html']] as const) {
    await page.fill('#format-search', search);
    const found = await page.locator('#formats-table tbody tr:not(.category) th').allInnerTexts();
    assert.ok(found.some((name) => name.startsWith(`${id} (`)), `${search} finds ${id}: ${found.join(' | ')}`);
  }
  await page.fill('#format-search', '');
  // The visible part only: the whole table of some 300 rows took Chromium 6 s to capture here, and
  // more than Playwright's 30 s under a whole run's load (a CI run failed on it).
  await page.screenshot({ path: path.join(ARTIFACTS, '6-formats.png') });
  // The page works at a phone's width without horizontal scrolling.
  await page.setViewportSize({ width: 375, height: 800 });
  await page.click('nav >> text=Convert');
  assert.ok(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1'), 'no horizontal scroll on a phone');
  await page.screenshot({ path: path.join(ARTIFACTS, '7-phone.png') });
  await page.context().close();
});
