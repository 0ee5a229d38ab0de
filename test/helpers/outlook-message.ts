// Writes a small Outlook message (.msg) for the email tests, as MS-OXMSG lays one out: an OLE
// compound file (written by the cfb library) whose root holds the message's property stream and
// one __substg1.0_ stream per variable-length property, a storage per recipient and per
// attachment, and the named-property storage Outlook always writes. Made here, so that no test
// depends on a file someone else made.
import CFB from 'cfb';

const UNICODE = 0x001f;
const STRING8 = 0x001e;
const BINARY = 0x0102;
const LONG = 0x0003;
const TIME = 0x0040;

type Value = { type: typeof UNICODE; text: string } | { type: typeof STRING8; bytes: Uint8Array } | { type: typeof BINARY; bytes: Uint8Array } | { type: typeof LONG; number: number } | { type: typeof TIME; date: Date };

const text = (value: string): Value => ({ type: UNICODE, text: value });
const long = (value: number): Value => ({ type: LONG, number: value });

/** A property stream (header, then 16 bytes per property) and the streams of the variable-length ones. */
function properties(storage: string, header: Buffer, props: ReadonlyArray<readonly [number, Value]>, cfb: CFB.CFB$Container): void {
  const entries: Buffer[] = [header];
  for (const [id, value] of props) {
    const tag = ((id << 16) | value.type) >>> 0;
    const entry = Buffer.alloc(16);
    entry.writeUInt32LE(tag, 0);
    entry.writeUInt32LE(0x6, 4); // readable and writable
    if (value.type === UNICODE || value.type === BINARY || value.type === STRING8) {
      const bytes = value.type === UNICODE ? Buffer.from(`${value.text}\0`, 'utf16le') : value.type === STRING8 ? Buffer.concat([value.bytes, Buffer.from([0])]) : Buffer.from(value.bytes);
      entry.writeUInt32LE(bytes.length, 8);
      CFB.utils.cfb_add(cfb, `${storage}/__substg1.0_${tag.toString(16).toUpperCase().padStart(8, '0')}`, bytes);
    } else if (value.type === LONG) {
      entry.writeUInt32LE(value.number, 8);
    } else {
      // FILETIME: 100-nanosecond intervals since 1601.
      entry.writeBigUInt64LE((BigInt(value.date.getTime()) + 11_644_473_600_000n) * 10_000n, 8);
    }
    entries.push(entry);
  }
  CFB.utils.cfb_add(cfb, `${storage}/__properties_version1.0`, Buffer.concat(entries));
}

export interface OutlookAttachment {
  readonly name: string;
  readonly type: string;
  readonly bytes: Uint8Array;
  /** Set for an image the HTML body shows as cid:<contentId>. */
  readonly contentId?: string;
}

export interface OutlookMessage {
  readonly subject: string;
  /**
   * Set to write the subject as an 8-bit string (PT_STRING8) in this Windows code page, as Outlook
   * does when not saving Unicode: `bytes` are the subject already in it.
   */
  readonly ansiSubject?: { readonly codepage: number; readonly bytes: Uint8Array };
  readonly senderName: string;
  readonly senderAddress: string;
  readonly to: ReadonlyArray<{ name: string; address: string }>;
  readonly date: Date;
  readonly body: string;
  readonly html?: string;
  readonly attachments?: readonly OutlookAttachment[];
}

export function outlookMessage(message: OutlookMessage): Buffer {
  const cfb = CFB.utils.cfb_new();
  const attachments = message.attachments ?? [];
  // The top-level header: 8 reserved bytes, the next recipient and attachment ids, their counts, 8 reserved.
  const top = Buffer.alloc(32);
  top.writeUInt32LE(message.to.length, 8);
  top.writeUInt32LE(attachments.length, 12);
  top.writeUInt32LE(message.to.length, 16);
  top.writeUInt32LE(attachments.length, 20);
  properties('', top, [
    [0x001a, text('IPM.Note')],
    ...(message.ansiSubject
      ? [[0x0037, { type: STRING8, bytes: message.ansiSubject.bytes }] as const, [0x3ffd, long(message.ansiSubject.codepage)] as const]
      : [[0x0037, text(message.subject)] as const]),
    [0x0c1a, text(message.senderName)],
    [0x0c1f, text(message.senderAddress)],
    [0x5d01, text(message.senderAddress)],
    [0x0e06, { type: TIME, date: message.date }],
    [0x1000, text(message.body)],
    ...(message.html ? [[0x1013, { type: BINARY, bytes: Buffer.from(message.html, 'utf8') }] as const] : []),
  ], cfb);
  message.to.forEach((recipient, index) => {
    properties(`/__recip_version1.0_#${index.toString(16).toUpperCase().padStart(8, '0')}`, Buffer.alloc(8), [
      [0x0c15, long(1)], // MAPI_TO
      [0x3001, text(recipient.name)],
      [0x3003, text(recipient.address)],
      [0x39fe, text(recipient.address)],
    ], cfb);
  });
  attachments.forEach((attachment, index) => {
    properties(`/__attach_version1.0_#${index.toString(16).toUpperCase().padStart(8, '0')}`, Buffer.alloc(8), [
      [0x3705, long(1)], // by value
      [0x3707, text(attachment.name)],
      [0x3704, text(attachment.name.slice(0, 12))],
      [0x370e, text(attachment.type)],
      [0x3701, { type: BINARY, bytes: attachment.bytes }],
      ...(attachment.contentId ? [[0x3712, text(attachment.contentId)] as const] : []),
    ], cfb);
  });
  for (const stream of ['00020102', '00030102', '00040102']) CFB.utils.cfb_add(cfb, `/__nameid_version1.0/__substg1.0_${stream}`, Buffer.alloc(0));
  // cfb_new leaves a placeholder stream at the root; Outlook writes none.
  CFB.utils.cfb_del(cfb, '/\u0001Sh33tJ5');
  return Buffer.from(CFB.write(cfb, { type: 'buffer' }) as Uint8Array);
}
