// Reads e-mail inside a pooled, sandboxed Node process (engine.ts starts the pool;
// src/process/pool/node-host.ts loads this module and calls its handlers): an EML message and each
// message of an mbox through mailparser, an Outlook MSG through msgreader, into one shape
// (Message), which render.ts writes as HTML or text and which becomes a ZIP of attachments here.
//
// What a hostile message can and cannot do (docs/security.md#e-mail):
// - Its HTML body is sanitised (render.ts): no script, no event handler, no form, no frame, no
//   <style> block, no style that names a URL, no image but a `data:` one. A remote image (the
//   tracking pixel of a newsletter) is replaced by its alt text: whoever opens the converted page
//   tells the sender nothing. `cid:` images are the message's own parts, embedded as `data:`.
// - Its size is bounded by the upload cap; the parts and the messages of a mailbox are capped
//   here (MAX_PARTS, MAX_MESSAGES), the heap by the pool, a ZIP by the output cap (writeZip).
// - Attachment names never become paths on disk: they are ZIP member names, cleaned (safeName).
import fs from 'node:fs/promises';
import path from 'node:path';
import msgreader from '@kenjiuno/msgreader';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import { ConvertdError } from '../../errors.ts';
import type { Handlers } from '../../process/pool/node-host.ts';
import { pageName, writeZip, type ZipMember } from '../support/zip-writer.ts';
import { renderHtml, renderText, type Message } from './render.ts';

// A CommonJS module whose class is its `default` export: Node hands ESM the whole exports object.
const MsgReader = msgreader.default;
type Reader = InstanceType<typeof MsgReader>;

/** Attachments (and inline parts) one message may carry. */
const MAX_PARTS = 1_000;
/** Messages one mailbox may hold. */
const MAX_MESSAGES = 10_000;
/** mailparser's cap on an HTML body it turns into text (the rest is dropped, not parsed). */
const MAX_HTML_TO_TEXT = 5 * 1024 * 1024;

interface EmailRequest {
  readonly input: string;
  readonly output: string;
  readonly from: string;
  readonly to: string;
  readonly maxOutputBytes: number;
}

/** Header lines look like "Name: value" (RFC 5322 field names: printable ASCII but the colon). */
const HEADER_LINE = /^[\x21-\x39\x3b-\x7e]+:/;

/** Whether `text` begins as a message does: a header line first (a mailbox's messages are split before). */
function looksLikeMessage(text: string): boolean {
  const first = text.replace(/^\s+/, '').split(/\r?\n/, 1)[0] ?? '';
  return HEADER_LINE.test(first);
}

function addresses(value: AddressObject | AddressObject[] | undefined): string {
  if (!value) return '';
  return (Array.isArray(value) ? value : [value]).map((entry) => entry.text).join(', ');
}

async function fromMime(source: Buffer): Promise<Message> {
  let parsed: ParsedMail;
  try {
    parsed = await simpleParser(source, { maxHtmlLengthToParse: MAX_HTML_TO_TEXT, skipTextToHtml: true });
  } catch (error) {
    const reason = (error as Error).message;
    // mailparser's own caps on a message's tree ("Max allowed child nodes exceeded").
    if (/max allowed/i.test(reason)) throw new ConvertdError('input_too_complex', `The message has more parts than this service reads (${reason}).`);
    throw new ConvertdError('corrupt_input', `The message could not be read (${reason}): it may be damaged.`);
  }
  if (parsed.attachments.length > MAX_PARTS) {
    throw new ConvertdError('input_too_complex', `The message has ${parsed.attachments.length} parts, more than the ${MAX_PARTS} this service reads.`);
  }
  return {
    subject: parsed.subject ?? '',
    from: addresses(parsed.from),
    to: addresses(parsed.to),
    cc: addresses(parsed.cc),
    date: parsed.date && !Number.isNaN(parsed.date.getTime()) ? parsed.date.toUTCString() : '',
    // mailparser has put every `cid:` image of the HTML in as a data: URI (keepCidLinks false).
    html: parsed.html === false ? undefined : parsed.html,
    text: parsed.text,
    attachments: parsed.attachments
      // Parts the HTML shows (its cid: images) are in the page already: not listed again.
      .filter((attachment) => !(attachment.related && attachment.contentId))
      .map((attachment) => ({ name: attachment.filename ?? '', type: attachment.contentType, content: attachment.content })),
  };
}

/** The character set an HTML body declares in a meta element, if any (MSG keeps HTML as bytes). */
function declaredCharset(bytes: Uint8Array): string | undefined {
  const head = Buffer.from(bytes.subarray(0, 4096)).toString('latin1');
  return /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(head)?.[1];
}

function decodeHtml(bytes: Uint8Array): string {
  const charset = declaredCharset(bytes) ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

/** iconv-lite's name for a Windows code page number (Latin-1, which msgreader assumes, needs none). */
function ansiEncoding(codepage: number | undefined): string | undefined {
  if (codepage === undefined || codepage === 28591 || codepage === 1252) return undefined;
  if (codepage === 65001) return 'utf8';
  if (codepage === 20127) return 'ascii';
  return `cp${codepage}`;
}

function fromOutlook(source: Buffer): Message {
  let reader: Reader;
  let data: ReturnType<Reader['getFileData']>;
  try {
    reader = new MsgReader(new DataView(source.buffer, source.byteOffset, source.byteLength));
    data = reader.getFileData();
  } catch (error) {
    throw new ConvertdError('corrupt_input', `The Outlook message could not be read (${(error as Error).message}): it may be damaged.`);
  }
  if (data.error) throw new ConvertdError('corrupt_input', `The Outlook message could not be read (${data.error}): it may be damaged.`);
  // Text that is not Unicode (PT_STRING8) is in the message's code page (Big5 for a Taiwanese
  // Outlook: cp950), which msgreader reads as Latin-1 unless told: read again, told.
  const encoding = ansiEncoding(data.messageCodepage ?? data.internetCodepage);
  if (encoding) {
    try {
      const again = new MsgReader(new DataView(source.buffer, source.byteOffset, source.byteLength));
      again.parserConfig = { ansiEncoding: encoding };
      const decoded = again.getFileData();
      if (!decoded.error) [reader, data] = [again, decoded];
    } catch {
      // an encoding iconv-lite does not know: the first reading stands
    }
  }
  const recipients = data.recipients ?? [];
  const named = (kind: 'to' | 'cc') => recipients
    .filter((recipient) => (recipient.recipType ?? 'to') === kind)
    .map((recipient) => {
      const address = recipient.smtpAddress ?? recipient.email ?? '';
      return recipient.name && address && recipient.name !== address ? `${recipient.name} <${address}>` : recipient.name ?? address;
    }).join(', ');
  const list = data.attachments ?? [];
  if (list.length > MAX_PARTS) throw new ConvertdError('input_too_complex', `The message has ${list.length} attachments, more than the ${MAX_PARTS} this service reads.`);
  const attachments: Array<Message['attachments'][number] & { contentId?: string }> = [];
  for (const entry of list) {
    // An attached Outlook item (innerMsgContent) has no bytes of its own to hand over here.
    if (entry.innerMsgContent) {
      attachments.push({ name: `${entry.name ?? entry.subject ?? 'message'}.msg`, type: 'application/vnd.ms-outlook', content: Buffer.alloc(0), embeddedMessage: true });
      continue;
    }
    const { fileName, content } = reader.getAttachment(entry);
    attachments.push({ name: fileName || entry.fileName || entry.fileNameShort || '', type: entry.attachMimeTag ?? 'application/octet-stream', content: Buffer.from(content), contentId: entry.pidContentId });
  }
  let html: string | undefined = data.bodyHtml ?? (data.html ? decodeHtml(data.html) : undefined);
  // The message's own images, which its HTML names by content id, embedded as data: URIs.
  const embedded = new Set<string>();
  for (const attachment of attachments) {
    if (html === undefined || !attachment.contentId || !attachment.type.startsWith('image/')) continue;
    const reference = new RegExp(`cid:${attachment.contentId.replace(/^<|>$/g, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'gi');
    const replaced: string = html.replace(reference, `data:${attachment.type};base64,${attachment.content.toString('base64')}`);
    if (replaced === html) continue;
    html = replaced;
    embedded.add(attachment.contentId);
  }
  const date = data.messageDeliveryTime ?? data.clientSubmitTime ?? data.creationTime;
  const when = date ? new Date(date) : undefined;
  return {
    subject: data.subject ?? '',
    from: data.senderName && (data.senderSmtpAddress ?? data.senderEmail) ? `${data.senderName} <${data.senderSmtpAddress ?? data.senderEmail}>` : data.senderName ?? data.senderEmail ?? '',
    to: named('to'),
    cc: named('cc'),
    date: when && !Number.isNaN(when.getTime()) ? when.toUTCString() : '',
    html,
    text: data.body,
    attachments: attachments.filter((attachment) => !attachment.contentId || !embedded.has(attachment.contentId)).map(({ contentId: _id, ...rest }) => rest),
  };
}

/**
 * The messages of an mbox: each starts at a line "From " after the start or an empty line, and a
 * line of the body that began with "From " was written as ">From " (mboxrd quotes any number of
 * ">" before it; one is taken away).
 */
export function splitMailbox(text: string): string[] {
  if (!/^From /.test(text)) throw new ConvertdError('corrupt_input', 'This is not an mbox mailbox: it does not begin with a "From " line.');
  const messages: string[] = [];
  const lines = text.split(/\r?\n/);
  let current: string[] | undefined;
  let previousEmpty = true;
  for (const line of lines) {
    if (line.startsWith('From ') && previousEmpty) {
      if (current) messages.push(current.join('\n'));
      if (messages.length >= MAX_MESSAGES) throw new ConvertdError('input_too_complex', `The mailbox holds more than the ${MAX_MESSAGES} messages this service reads.`);
      current = [];
    } else {
      current!.push(/^>+From /.test(line) ? line.slice(1) : line);
    }
    previousEmpty = line === '';
  }
  if (current) messages.push(current.join('\n'));
  // A mailbox's messages end with the empty line that separates them from the next one.
  return messages.map((message) => message.replace(/\n+$/, '\n'));
}

/** A ZIP member name from an attachment's own: no folders, no control characters, not hidden, not empty. */
export function safeName(name: string, fallback: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex -- control characters are what is removed
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').replace(/^[.\s]+/, '').trim().slice(0, 200);
  return clean || fallback;
}

/** Names made unique, as a file manager would: "a.txt", "a (2).txt". */
function uniqueNames(names: readonly string[]): string[] {
  const seen = new Set<string>();
  return names.map((name) => {
    let candidate = name;
    for (let n = 2; seen.has(candidate.toLowerCase()); n++) {
      const dot = name.lastIndexOf('.');
      candidate = dot > 0 ? `${name.slice(0, dot)} (${n})${name.slice(dot)}` : `${name} (${n})`;
    }
    seen.add(candidate.toLowerCase());
    return candidate;
  });
}

/** An mbox's messages as they are written in it (latin1 keeps every byte as one character). */
async function mailboxMessages(input: string): Promise<string[]> {
  return splitMailbox((await fs.readFile(input)).toString('latin1'));
}

async function readMessages(input: string, from: string): Promise<Message[]> {
  if (from === 'mbox') {
    const messages: Message[] = [];
    for (const message of await mailboxMessages(input)) {
      if (!looksLikeMessage(message)) throw new ConvertdError('corrupt_input', `Message ${messages.length + 1} of the mailbox has no header: the file may be damaged.`);
      messages.push(await fromMime(Buffer.from(message, 'latin1')));
    }
    return messages;
  }
  const source = await fs.readFile(input);
  if (from === 'msg') return [fromOutlook(source)];
  if (!looksLikeMessage(source.toString('latin1'))) throw new ConvertdError('corrupt_input', 'This is not an e-mail message: it does not begin with a header line such as "From: ...".');
  return [await fromMime(source)];
}

/**
 * The ZIP's members, written as files beside the output (the pool's job directory): an mbox's
 * messages as they are, one .eml each (not parsed: nothing of them is read), or a message's
 * attachments under cleaned, unique names.
 */
async function zipMembers(input: string, from: string, dir: string): Promise<ZipMember[]> {
  let contents: Array<{ name: string; bytes: Uint8Array }>;
  if (from === 'mbox') {
    const raw = await mailboxMessages(input);
    contents = raw.map((message, index) => ({ name: pageName('message', index + 1, raw.length, 'eml'), bytes: Buffer.from(message, 'latin1') }));
  } else {
    const attachments = (await readMessages(input, from))[0]!.attachments.filter((attachment) => !attachment.embeddedMessage);
    if (attachments.length === 0) {
      throw new ConvertdError('conversion_failed', 'The message has no attachments to put in a ZIP: convert it to html, txt or pdf instead.');
    }
    const names = uniqueNames(attachments.map((attachment, index) => safeName(attachment.name, `attachment-${index + 1}`)));
    contents = attachments.map((attachment, index) => ({ name: names[index]!, bytes: attachment.content }));
  }
  const members: ZipMember[] = [];
  for (const [index, { name, bytes }] of contents.entries()) {
    const file = path.join(dir, `member-${index + 1}`);
    await fs.writeFile(file, bytes);
    members.push({ name, file });
  }
  return members;
}

async function convertEmail(request: EmailRequest): Promise<void> {
  const { input, output, from, to } = request;
  if (to === 'html') {
    await fs.writeFile(output, renderHtml(await readMessages(input, from)));
    return;
  }
  if (to === 'txt') {
    await fs.writeFile(output, renderText(await readMessages(input, from)));
    return;
  }
  if (to !== 'zip') throw new ConvertdError('conversion_failed', `The e-mail reader does not write ${to}.`);
  const members = await zipMembers(input, from, path.dirname(output));
  try {
    await writeZip(output, members, request.maxOutputBytes);
  } finally {
    await Promise.all(members.map((member) => fs.rm(member.file, { force: true })));
  }
}

export const handlers: Handlers = {
  convert: (request) => convertEmail(request as unknown as EmailRequest),
};
