// E-mail (EML, mbox, Outlook MSG) to a self-contained HTML page, plain text, and a ZIP of the
// attachments (of an mbox: of its messages), parsed in pooled, sandboxed Node processes; the PDF
// and the other document formats come from the HTML through the document engines.
import { defineEngine } from '../module.ts';
import { EmailEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'email',
  summary: 'mailparser and msgreader in pooled, sandboxed Node processes (`messages.ts`); the HTML body sanitised (sanitize-html: no script, no remote image or style, `cid:` images embedded)',
  packages: { debian: [], npm: ['mailparser', '@kenjiuno/msgreader', 'sanitize-html', 'html-to-text'] },
  formats: FORMATS,
  create: (context) => new EmailEngine(context),
});
