// The fonts the engines that draw text rely on, named once: the Debian packages that install them and
// the fontconfig file that decides substitutes (substitutes.conf). docs/fidelity.md#fonts explains
// the choice; README "Fonts" gives what they cost.
import path from 'node:path';

/**
 * Debian's font packages, chosen for coverage against size (installed sizes, Debian 12): every common
 * script renders and the Office fonts have metric-compatible stand-ins. `fonts-noto-extra` (334 MB,
 * extra weights and rarer scripts) is left out: the core set already covers the scripts users write.
 */
export const FONT_PACKAGES: readonly string[] = [
  'fonts-dejavu-core', // 3 MB: the default sans, serif and mono faces; Latin, Greek, Cyrillic
  'fonts-liberation2', // 4 MB: the metrics of Arial, Times New Roman and Courier New
  'fonts-crosextra-carlito', // 2.7 MB: Calibri's metrics
  'fonts-crosextra-caladea', // 0.3 MB: Cambria's metrics
  'fonts-noto-core', // 42 MB: Arabic, Hebrew, Devanagari and the other Indic scripts, Thai, Khmer, Ethiopic, ...
  'fonts-noto-cjk', // 89 MB: Chinese, Japanese, Korean
  // 3 MB: emoji as outlines. Not fonts-noto-color-emoji: its glyphs are colour bitmaps (CBDT) that
  // LibreOffice prefers for emoji and embeds in PDFs where no reader draws them, so every emoji of a
  // PDF came out invisible (docs/fidelity.md#fonts).
  'fonts-symbola',
];

const CONFIG_DIR = import.meta.dirname;

/** The fontconfig file every engine process reads: the system's configuration plus our substitutes. */
export const FONTCONFIG_FILE = path.join(CONFIG_DIR, 'substitutes.conf');

/**
 * What every sandboxed engine process needs to find the fonts: the configuration above and the
 * system's font cache. Without the cache each process scans the 150 MB of fonts anew, about a second
 * per process here; with it, fontconfig starts in milliseconds.
 */
export const FONT_ENVIRONMENT: { readonly env: Readonly<Record<string, string>>; readonly readOnly: readonly string[] } = {
  env: { FONTCONFIG_FILE },
  readOnly: [CONFIG_DIR, '/var/cache/fontconfig'],
};
