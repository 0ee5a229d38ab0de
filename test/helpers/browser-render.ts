// A second, independent SVG renderer for comparisons: Debian's Chromium (Skia, its own SVG code),
// driven by playwright-core. The engines draw SVG with librsvg, and ImageMagick's SVG coder is
// librsvg too, so neither could serve as the reference. Chromium takes a few seconds to start:
// start it once per test file.
import path from 'node:path';
import { chromium } from 'playwright-core';
import { tempDir } from './server.ts';

export interface SvgToRender {
  /** The SVG file, opened by Chromium as a file:// page (no network: --disable-background-networking). */
  readonly file: string;
  /** The viewport: the size the engine's rendering came out at. */
  readonly width: number;
  readonly height: number;
}

export interface SvgRenderer {
  /** Renders the SVG at the top left of a white page of its size; returns the PNG screenshot's path. */
  render(drawing: SvgToRender): Promise<string>;
  close(): Promise<void>;
}

/** Starts Chromium, to render many drawings and then close it. */
export async function startSvgRenderer(): Promise<SvgRenderer> {
  const dir = await tempDir('convertd-chromium-');
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  let count = 0;
  return {
    async render(drawing) {
      const page = await browser.newPage({ viewport: { width: drawing.width, height: drawing.height } });
      try {
        await page.goto(`file://${drawing.file}`);
        const shot = path.join(dir, `${count++}.png`);
        await page.screenshot({ path: shot });
        return shot;
      } finally {
        await page.close();
      }
    },
    close: () => browser.close(),
  };
}

/** Renders each SVG in one Chromium run; returns the PNG screenshots' paths. */
export async function renderInChromium(drawings: readonly SvgToRender[]): Promise<string[]> {
  const renderer = await startSvgRenderer();
  try {
    const shots: string[] = [];
    for (const drawing of drawings) shots.push(await renderer.render(drawing));
    return shots;
  } finally {
    await renderer.close();
  }
}
