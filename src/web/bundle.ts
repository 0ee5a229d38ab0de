// The web page's files (src/web/page), made ready once at start: its HTML and CSS as they are, its
// script bundled by esbuild (from TypeScript, with the API client inlined). They are read here,
// beside the page, so that the HTTP layer that serves them (http/routes/web.ts) touches no disk.
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const PAGE_DIR = fileURLToPath(new URL('page/', import.meta.url));

export interface WebPage {
  readonly html: string;
  readonly css: string;
  readonly script: string;
}

export async function buildWebPage(): Promise<WebPage> {
  const [html, css, bundle] = await Promise.all([
    fs.readFile(`${PAGE_DIR}index.html`, 'utf8'),
    fs.readFile(`${PAGE_DIR}app.css`, 'utf8'),
    build({ entryPoints: [`${PAGE_DIR}app.ts`], bundle: true, format: 'esm', target: 'es2022', minify: true, write: false, legalComments: 'none' }),
  ]);
  return { html, css, script: bundle.outputFiles[0]!.text };
}
