// Office documents, spreadsheets, presentations and drawings through LibreOffice, kept warm in a supervised pool and driven over UNO.
import { defineEngine } from '../module.ts';
import { FONT_PACKAGES } from '../support/fonts/index.ts';
import { LibreOfficeEngine } from './engine.ts';
import { FORMATS } from './formats.ts';
import { SETTINGS } from './settings.ts';

export default defineEngine({
  id: 'libreoffice',
  summary: 'LibreOffice 7.4 over UNO in a warm pool (`office-pool.ts`, `helper/libreoffice.py`); a file it cannot open is checked for a password (`office-encryption.ts`)',
  packages: { debian: ['libreoffice-nogui', 'python3-uno', ...FONT_PACKAGES] },
  formats: FORMATS,
  settings: SETTINGS,
  create: (context) => new LibreOfficeEngine(context),
});
