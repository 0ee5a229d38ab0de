// Renders HTML in Chromium inside a pooled, sandboxed Node process (engine.ts starts the pool;
// src/process/pool/node-host.ts loads this module and calls its handlers). The process launches
// one headless Chromium, driven by playwright-core over a pipe (no debugging port), when it loads,
// and says it is ready once the browser is up; each job gets a fresh browser context (its own
// cookies, storage and cache, closed afterwards), so nothing of one page reaches the next. The
// pool replaces the process, browser and all, after CONVERTD_CHROMIUM_MAX_JOBS pages, after a
// failed health check (`ping` asks the browser for its version), and when it exits: this module
// exits when the browser disconnects (a crash) and after a page that ran out of time.
//
// What a hostile page can and cannot do (docs/security.md#chromium):
// - It is never loaded from a file: its text is set into a blank page (about:blank, whose origin
//   may load no file:// URL), so `<iframe src=file:///etc/passwd>`, object, embed, a meta refresh
//   or `location = 'file://…'` find nothing; and the sandbox holds no /etc/passwd besides.
// - Every request it makes is intercepted in the browser and aborted unless it is a data: URL
//   (page-setup.ts, isAllowedRequest): images, style sheets, fonts, frames, fetch and XHR,
//   navigations, redirects by each context's routing, what the browser fetches for no page
//   (prefetches) by the browser's own Fetch domain; WebSockets are answered by nobody; no host
//   name resolves (--host-resolver-rules). The sandbox has no network either.
// - JavaScript is off unless the job asks for it (`javascript`): a page renders the same every
//   time, and a script can neither loop, nor probe, nor rewrite the page. With it on, the page's
//   time limit ends a script that never stops, and the process (with its browser) is replaced.
// - Memory: the process's memory cgroup holds the browser too (an OOM kill: input_too_complex);
//   pages: the PDF is printed up to one page past the cap, which engine.ts refuses.
import { mkdtempSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import { chromium, type Browser, type BrowserContext, type CDPSession } from 'playwright-core';
import { ConvertdError } from '../../errors.ts';
import type { Handlers } from '../../process/pool/node-host.ts';
import { captureSize, decodeHtml, isAllowedRequest, type RenderRequest } from './page-setup.ts';

/** Debian's Chromium itself: /usr/bin/chromium is a shell script that reads /etc/chromium.d first. */
const CHROMIUM = '/usr/lib/chromium/chromium';

/**
 * Flags besides playwright's own: no Chromium sandbox (the process already runs in bubblewrap with
 * every namespace unshared, where Chromium's own cannot set itself up), no GPU, shared memory in
 * the private /tmp rather than /dev/shm, nothing that calls out (background networking, updates,
 * sync, QUIC, WebRTC's UDP), no first-run work.
 */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--disable-extensions',
  '--disable-default-apps',
  '--no-first-run',
  '--no-default-browser-check',
  '--no-pings',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  // The last line: no name (an IP address included) resolves, should a request get past both
  // interceptions below; outside the sandbox (CONVERTD_SANDBOX=off) too, nothing reaches a server.
  '--host-resolver-rules=MAP * ~NOTFOUND',
  '--disable-features=DnsOverHttps,Translate,MediaRouter,OptimizationHints,InterestFeedContentSuggestions',
];

/** The viewport of a PDF's page before it is laid out for print (a desktop's width). */
const PRINT_VIEWPORT = { width: 1280, height: 800 };

// Chromium's profile (made by playwright) and its singleton socket (made by Chromium) go in the
// temporary directory, which the runner makes the process's own directory under the data
// directory. A Unix socket's path holds at most 107 bytes: under a data directory of more than
// some 25 characters (/tmp/convertd-bench-XXXXXX/data) Chromium could not make its socket and
// exited at start, so the engine was never offered. Both go in a directory of the short /tmp
// instead: the sandbox's private one (a tmpfs), or, with the sandbox off, one of our own there,
// removed when the process exits.
process.env.TMPDIR = mkdtempSync('/tmp/convertd-chromium-');
process.on('exit', () => rmSync(process.env.TMPDIR!, { recursive: true, force: true }));

const browser: Browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ARGS,
  headless: true,
  chromiumSandbox: false,
  handleSIGINT: false,
  handleSIGTERM: false,
  handleSIGHUP: false,
  timeout: 60_000,
});
// The browser's own interception, beside each context's: a request no page owns (a
// <link rel=prefetch> is fetched by the browser itself, past playwright's routing: the test outside
// the sandbox caught one) is paused here, and failed unless it is a data: URL.
const browserSession = await browser.newBrowserCDPSession();
/** Requests the browser's own interception failed since the process started (each reply says). */
let blockedByBrowser = 0;
browserSession.on('Fetch.requestPaused', (event) => {
  const { requestId } = event;
  const allowed = isAllowedRequest(event.request.url);
  if (!allowed) blockedByBrowser++;
  const sent = allowed
    ? browserSession.send('Fetch.continueRequest', { requestId })
    : browserSession.send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' });
  void sent.catch(() => undefined);
});
await browserSession.send('Fetch.enable', { patterns: [{ urlPattern: '*' }] });
browser.on('disconnected', () => {
  process.stderr.write('chromium: the browser disconnected (it crashed or was killed)\n');
  process.exit(70);
});

/** A node of DevTools' DOM tree, as far as hideBlockedImages reads it. */
interface DomNode {
  readonly nodeId: number;
  readonly nodeName: string;
  readonly attributes?: string[];
  readonly children?: DomNode[];
  readonly contentDocument?: DomNode;
  readonly shadowRoots?: DomNode[];
}

/**
 * Hides every <img> whose picture could not load, that is every one whose `src` is not a data:
 * URL (nothing else is allowed to load), so that it is left out, as nothing, rather than drawn as
 * the browser's broken-image icon (a picture the document does not carry); and every frame,
 * object and embed whose source was refused. Through DevTools' DOM domain, which works whether or
 * not the page's scripts may run; frames' documents and shadow trees included.
 */
async function hideBlockedImages(cdp: CDPSession): Promise<void> {
  const { root } = await cdp.send('DOM.getDocument', { depth: -1, pierce: true }) as { root: DomNode };
  const blocked: DomNode[] = [];
  // DevTools lists attributes as [name, value, name, value, ...].
  const attribute = (node: DomNode, name: string) => {
    const attributes = node.attributes ?? [];
    for (let at = 0; at + 1 < attributes.length; at += 2) if (attributes[at]!.toLowerCase() === name) return attributes[at + 1];
    return undefined;
  };
  const loads = (url: string | undefined) => url === undefined || /^\s*(data:|about:blank\s*$)/i.test(url);
  const walk = (node: DomNode) => {
    const src = attribute(node, 'src');
    // A picture with no data: source; a frame, object or embed whose document was refused (with
    // scripts on, Chromium fills a refused frame with its error page and its icon).
    if (node.nodeName === 'IMG' ? src === undefined || !loads(src) || attribute(node, 'srcset') !== undefined
      : ['IFRAME', 'FRAME', 'EMBED'].includes(node.nodeName) ? !loads(src)
        : node.nodeName === 'OBJECT' && !loads(attribute(node, 'data'))) blocked.push(node);
    for (const child of [...(node.children ?? []), ...(node.contentDocument ? [node.contentDocument] : []), ...(node.shadowRoots ?? [])]) walk(child);
  };
  walk(root);
  for (const node of blocked) {
    const style = attribute(node, 'style') ?? '';
    await cdp.send('DOM.setAttributeValue', { nodeId: node.nodeId, name: 'style', value: `${style};visibility:hidden !important` }).catch(() => undefined);
  }
}

/**
 * Set when a page ran out of time: its renderer may be stuck in a loop, so this process is not
 * trusted again. From then on the health check fails (the pool sends it no further job), and the
 * process exits once the job's answer is written; the pool starts a fresh one.
 */
let retiring: string | undefined;

interface ConvertMessage extends RenderRequest {
  readonly input: string;
  readonly output: string;
}

function pageTimeout(ms: number): ConvertdError {
  retiring = `a page ran past its ${ms} ms`;
  return new ConvertdError('timeout', `The page did not finish rendering within ${Math.round(ms / 1000)} s (a script that never ends, or a page too large to lay out): send a simpler page.`);
}

/** Rejects with `timeout` after `ms`, and marks the process for retirement. */
function withinTime<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(pageTimeout(ms)), ms);
  });
  return Promise.race([work, limit]).finally(() => clearTimeout(timer));
}

/** What a job's reply says: requests its context blocked, those the browser blocked so far, whether a picture was cut. */
interface Rendered {
  readonly blocked: number;
  readonly blockedByBrowser: number;
  readonly cut?: boolean;
}

async function render(request: ConvertMessage, context: BrowserContext): Promise<Rendered> {
  let blocked = 0;
  // Every request the page makes passes here (and its redirects, each a request of its own).
  await context.route(() => true, async (route) => {
    if (isAllowedRequest(route.request().url())) return route.continue();
    blocked++;
    return route.abort('blockedbyclient');
  });
  // A WebSocket is answered by this handler, which never connects it to a server.
  await context.routeWebSocket(() => true, (socket) => {
    blocked++;
    void socket.close({ code: 1008, reason: 'blocked' }).catch(() => undefined);
  });
  const page = await context.newPage();
  const html = decodeHtml(await fs.readFile(request.input));
  try {
    await page.setContent(html, { waitUntil: 'load', timeout: request.pageTimeoutMs });
  } catch (error) {
    // A page that navigated away (a refresh, location = ...) while it loaded: what it shows is rendered.
    if (error instanceof Error && error.name === 'TimeoutError') throw pageTimeout(request.pageTimeoutMs);
  }
  const cdp = await context.newCDPSession(page);
  await hideBlockedImages(cdp);
  if (request.to === 'pdf') {
    const pdf = request.pdf!;
    const margin = `${pdf.marginMm}mm`;
    try {
      await page.pdf({
        path: request.output,
        ...(pdf.paper ? { format: pdf.paper } : { format: 'A4', preferCSSPageSize: true }),
        landscape: pdf.landscape,
        printBackground: pdf.printBackground,
        margin: { top: margin, right: margin, bottom: margin, left: margin },
        pageRanges: pdf.pageRanges,
      });
    } catch (error) {
      // Chromium: "Page range exceeds page count" / "Page range is invalid" when a range selects no page.
      if (error instanceof Error && /page range/i.test(error.message)) {
        throw new ConvertdError('invalid_option', 'Option "page_range": the range selects no page of the document.');
      }
      throw error;
    }
    return { blocked, blockedByBrowser };
  }
  const image = request.image!;
  const metrics = await cdp.send('Page.getLayoutMetrics');
  const size = captureSize({ width: image.width, height: image.height }, metrics.cssContentSize.height, image.fullPage, image.maxPixels);
  const format = request.to === 'jpg' ? 'jpeg' : request.to;
  const shot = await cdp.send('Page.captureScreenshot', {
    format,
    ...(format === 'png' || image.quality === undefined ? {} : { quality: image.quality }),
    clip: { x: 0, y: 0, width: size.width, height: size.height, scale: 1 },
    captureBeyondViewport: size.height > image.height,
    fromSurface: true,
  });
  await fs.writeFile(request.output, Buffer.from(shot.data, 'base64'));
  return { blocked, blockedByBrowser, cut: size.cut };
}

export const handlers: Handlers = {
  /** The health check: the browser answers over its pipe. */
  async ping() {
    if (retiring) throw new Error(`this process is retiring: ${retiring}`);
    if (!browser.isConnected()) throw new Error('the browser is not connected');
    return { version: browser.version() };
  },

  async convert(message) {
    const request = message as unknown as ConvertMessage;
    const viewport = request.image ? { width: request.image.width, height: request.image.height } : PRINT_VIEWPORT;
    const context = await browser.newContext({
      javaScriptEnabled: request.javascript,
      viewport,
      deviceScaleFactor: 1,
      serviceWorkers: 'block',
      acceptDownloads: false,
      locale: 'en-US',
      timezoneId: 'UTC',
      reducedMotion: 'reduce',
    });
    try {
      return await withinTime(request.pageTimeoutMs, render(request, context));
    } finally {
      // Not awaited past a second: a context whose renderer spins in a script may not close (the process is retired then).
      await Promise.race([context.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1000))]);
      if (retiring) {
        process.stderr.write(`chromium: ${retiring}; this process ends and the pool replaces it\n`);
        // After node-host has written this job's answer (in the microtasks that follow).
        setTimeout(() => process.exit(75), 50);
      }
    }
  },
};
