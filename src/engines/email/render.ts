// Writes read messages (messages.ts) as one self-contained HTML page or as plain text. The page
// loads nothing: the body is sanitised (sanitize-html) so that no script, frame, form, style
// block, remote image or URL in a style survives, and a Content-Security-Policy forbids any load
// but `data:` images, for a browser that opens the page later (docs/security.md#e-mail).
import { convert as htmlToText } from 'html-to-text';
import sanitizeHtml from 'sanitize-html';

export interface Attachment {
  readonly name: string;
  readonly type: string;
  readonly content: Buffer;
  /** An attached Outlook item: listed, but without bytes of its own here. */
  readonly embeddedMessage?: boolean;
}

export interface Message {
  readonly subject: string;
  readonly from: string;
  readonly to: string;
  readonly cc: string;
  /** As an RFC 7231 date in UTC, or empty. */
  readonly date: string;
  /** The HTML body, as the message has it (images it names by content id already embedded). */
  readonly html?: string;
  readonly text?: string;
  readonly attachments: readonly Attachment[];
}

const POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'";

/** The raster images a page may embed (not SVG, which may name other resources). */
const DATA_IMAGE = /^data:image\/(?:png|jpe?g|gif|webp|bmp);base64,[a-z0-9+/=\s]*$/i;
/** Style values that could load something or hide code from this check (CSS escapes). */
const UNSAFE_STYLE = /url\s*\(|image-set|image\s*\(|expression\s*\(|@import|\\|behavior|-moz-binding/i;

const ATTRIBUTES_EVERYWHERE = ['style', 'align', 'valign', 'width', 'height', 'bgcolor', 'color', 'dir', 'lang', 'title', 'border', 'cellpadding', 'cellspacing', 'colspan', 'rowspan'];

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [
    ...sanitizeHtml.defaults.allowedTags.filter((tag) => tag !== 'style'),
    'img', 'font', 'center', 'u', 's', 'strike', 'del', 'ins', 'big', 'small', 'col', 'colgroup',
  ],
  allowedAttributes: { '*': ATTRIBUTES_EVERYWHERE, a: ['href', 'name'], img: ['src', 'alt'], font: ['face', 'size', 'color'] },
  // Links stay links (they load nothing until someone follows one); images only as data:.
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['data'] },
  allowProtocolRelative: false,
  transformTags: {
    // A remote (or any non-data:) image becomes its alt text, so the page says something was there.
    img: (tagName, attribs) => {
      const src = attribs.src ?? '';
      if (DATA_IMAGE.test(src)) return { tagName, attribs };
      return { tagName: 'span', attribs: {}, text: attribs.alt ? `[image: ${attribs.alt}]` : '[image not loaded]' };
    },
    // Every element (after its own transform above): a style that could load or hide something
    // is dropped whole (sanitize-html keeps style as text).
    '*': (tagName, attribs) => {
      if (attribs.style === undefined || !UNSAFE_STYLE.test(attribs.style)) return { tagName, attribs };
      const { style: _dropped, ...rest } = attribs;
      return { tagName, attribs: rest };
    },
  },
};

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function sizeOf(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function headerRows(message: Message): Array<[string, string]> {
  const rows: Array<[string, string]> = [['From', message.from], ['To', message.to], ['Cc', message.cc], ['Date', message.date], ['Subject', message.subject]];
  return rows.filter(([, value]) => value !== '');
}

function attachmentLine(attachment: Attachment): string {
  return attachment.embeddedMessage ? `${attachment.name} (attached message)` : `${attachment.name || '(no name)'} (${attachment.type}, ${sizeOf(attachment.content.byteLength)})`;
}

/**
 * The body's HTML made safe: the message's own HTML sanitised, or its text in a block that
 * keeps its lines. The body's own <html>, <head> and <body> are dropped by the sanitiser; what
 * was inside its <body> is kept.
 */
function bodyHtml(message: Message): string {
  if (message.html) return sanitizeHtml(message.html, SANITIZE);
  return `<pre class="text">${escape(message.text ?? '')}</pre>`;
}

const PAGE_STYLE = `
body { font-family: sans-serif; margin: 1.5em; }
article + article { border-top: 2px solid #888; margin-top: 2em; padding-top: 1em; }
table.headers { border-collapse: collapse; margin-bottom: 1em; }
table.headers th { text-align: left; padding: 0.1em 1em 0.1em 0; color: #555; vertical-align: top; }
h1.subject { font-size: 1.3em; }
pre.text { white-space: pre-wrap; font-family: inherit; }
section.attachments { border-top: 1px solid #ccc; margin-top: 1.5em; }
`;

/** One HTML page for all the messages, in order. */
export function renderHtml(messages: readonly Message[]): string {
  const title = messages.length === 1 ? messages[0]!.subject || '(no subject)' : `Mailbox (${messages.length} messages)`;
  const articles = messages.map((message) => {
    // The subject is the article's heading: not a row of the table again.
    const headers = headerRows(message).filter(([name]) => name !== 'Subject').map(([name, value]) => `<tr><th>${name}</th><td>${escape(value)}</td></tr>`).join('\n');
    const attachments = message.attachments.length === 0 ? '' : `
<section class="attachments"><h2>Attachments</h2><ul>
${message.attachments.map((attachment) => `<li>${escape(attachmentLine(attachment))}</li>`).join('\n')}
</ul></section>`;
    return `<article class="message">
<h1 class="subject">${escape(message.subject || '(no subject)')}</h1>
<table class="headers">
${headers}
</table>
<div class="body">
${bodyHtml(message)}
</div>${attachments}
</article>`;
  });
  return `<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${POLICY}">
<title>${escape(title)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
${articles.join('\n')}
</body>
</html>
`;
}

/** The messages as text: the headers, the body (the HTML's text where there is no text part), the attachments. */
export function renderText(messages: readonly Message[]): string {
  return messages.map((message) => {
    const headers = headerRows(message).map(([name, value]) => `${name}: ${value}`).join('\n');
    const body = message.text ?? (message.html ? htmlToText(message.html, { wordwrap: false, selectors: [{ selector: 'img', format: 'skip' }] }) : '');
    const attachments = message.attachments.length === 0 ? '' : `\n\nAttachments:\n${message.attachments.map((attachment) => `- ${attachmentLine(attachment)}`).join('\n')}`;
    return `${headers}\n\n${body.trim()}${attachments}\n`;
  }).join('\n\n');
}
