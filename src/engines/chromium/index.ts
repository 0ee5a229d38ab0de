// HTML to PDF and to images through headless Chromium, one warm browser per slot of a supervised
// pool of sandboxed Node helpers (render.ts) that drive it with playwright-core.
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { ChromiumEngine } from './engine.ts';
import { SETTINGS } from './settings.ts';

export default defineEngine({
  id: 'chromium',
  summary: 'headless Chromium driven by playwright-core in pooled, sandboxed Node processes (`render.ts`: one browser per slot, a fresh context per page, every request but `data:` aborted, JavaScript off unless asked, a page time limit); PDFs checked by pdfinfo (page cap)',
  packages: { debian: ['chromium', 'poppler-utils', ...FONT_PACKAGES], npm: ['playwright-core'] },
  formats: [],
  settings: SETTINGS,
  create: (context) => new ChromiumEngine(context),
});
