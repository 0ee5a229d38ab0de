// What the chromium engine decides before a page is rendered, as plain functions shared by the
// service side (engine.ts builds the request) and the sandboxed helper (render.ts applies it), and
// tested without a browser (test/chromium-formats.test.ts): which requests a page may make, the
// message a job sends, the pages printed, the size of a screenshot, and how the upload's bytes
// become the page's text.

/**
 * Whether the browser lets a page's request through: only `data:` URLs, which carry their content
 * in themselves (an allow-list: every other scheme, host and spelling is refused, so no variant of
 * `file:`, `\\localhost`, `http://[::ffff:127.0.0.1]` or a redirect can slip past a pattern).
 * Chromium never hands a data: URL to the interception at all; this is what it sees otherwise.
 */
export function isAllowedRequest(url: string): boolean {
  try {
    return new URL(url).protocol === 'data:';
  } catch {
    return false;
  }
}

/** The paper sizes `page_size` offers, by their playwright names (ISO A sizes, US sizes). */
export const PAPER: Readonly<Record<string, string>> = {
  a3: 'A3',
  a4: 'A4',
  a5: 'A5',
  letter: 'Letter',
  legal: 'Legal',
  tabloid: 'Tabloid',
};

/** What the service asks the helper for one job (render.ts's `convert` request, beside input and output). */
export interface RenderRequest {
  readonly to: 'pdf' | 'png' | 'jpg' | 'webp';
  readonly javascript: boolean;
  /** How long the page may take to load and render, in ms; past it the job ends as `timeout`. */
  readonly pageTimeoutMs: number;
  readonly pdf?: {
    /** A playwright paper name (PAPER), or undefined: the page's own CSS @page size, else A4. */
    readonly paper: string | undefined;
    readonly landscape: boolean;
    readonly marginMm: number;
    readonly printBackground: boolean;
    /** Chromium's pageRanges ("1-3,5"), built from parsed numbers. */
    readonly pageRanges: string;
  };
  readonly image?: {
    readonly width: number;
    readonly height: number;
    readonly fullPage: boolean;
    readonly quality: number | undefined;
    /** Pixels an image may hold (CONVERTD_MAX_IMAGE_PIXELS): a taller page is cut there. */
    readonly maxPixels: number;
  };
}

/**
 * The pages printed: the client's spans (1-based, `to` undefined: to the end), each cut at
 * `limit`, so that a 10,000-page print stops at the page after the cap and the engine can refuse
 * it, or all pages up to `limit` without a page_range. Empty when every span starts past the limit.
 */
export function printRanges(spans: ReadonlyArray<{ readonly from: number; readonly to: number | undefined }> | undefined, limit: number): string {
  if (!spans) return `1-${limit}`;
  return spans
    .filter((span) => span.from <= limit)
    .map((span) => {
      const to = Math.min(span.to ?? limit, limit);
      return to === span.from ? `${span.from}` : `${span.from}-${to}`;
    })
    .join(',');
}

/** The tallest image a browser draws in one capture (Chromium's own texture limit). */
export const MAX_CAPTURE_SIDE = 16_384;

/**
 * The screenshot's size: the viewport's width, and its height, or with `fullPage` the page's whole
 * height (at least the viewport's), cut where width × height would pass the pixel cap or the
 * capture limit. `cut` says whether the page went on below.
 */
export function captureSize(viewport: { width: number; height: number }, contentHeight: number, fullPage: boolean, maxPixels: number): { width: number; height: number; cut: boolean } {
  const wanted = fullPage ? Math.max(viewport.height, Math.ceil(contentHeight)) : viewport.height;
  const tallest = Math.max(1, Math.min(MAX_CAPTURE_SIDE, Math.floor(maxPixels / viewport.width)));
  return { width: viewport.width, height: Math.min(wanted, tallest), cut: wanted > tallest };
}

/**
 * The page's text from the upload's bytes, as a browser would decode it: a byte order mark first,
 * then a charset a <meta> of the first 1024 bytes declares (shift_jis, gb18030, windows-1252,
 * ...), else UTF-8 (not a locale's legacy default: the pages people convert today are UTF-8).
 */
export function decodeHtml(bytes: Uint8Array): string {
  const bom = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 'utf-8'
    : bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le'
      : bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : undefined;
  const head = Buffer.from(bytes.subarray(0, 1024)).toString('latin1');
  const declared = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)?.[1];
  for (const label of [bom, declared, 'utf-8']) {
    if (!label) continue;
    try {
      return new TextDecoder(label).decode(bytes);
    } catch {
      // a label TextDecoder does not know: the next candidate
    }
  }
  return new TextDecoder('utf-8').decode(bytes);
}
