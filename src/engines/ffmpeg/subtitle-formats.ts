// The subtitle formats the ffmpeg engine reads and writes (subtitles.ts), and how the sniffer knows
// them. Every one is plain text, but each has a shape of its own at its start, so each is told by
// its content (detect 'magic'), never by its name alone: MicroDVD and SubViewer files both end in
// .sub, and an MPL2 file is usually a .txt.
import type { FormatDefinition } from '../../formats/catalogue.ts';

/**
 * The text at a subtitle file's start, whatever its encoding: the sniffer's `text` is the head
 * decoded as UTF-8, which a UTF-16 file (with its byte-order mark, as Windows Notepad saves it)
 * is not. Windows-1252 and Latin-1 files read well enough as UTF-8 for the ASCII that the
 * signatures below look at.
 */
function startOf(head: Buffer, text: string): string {
  let decoded = text;
  if (head[0] === 0xff && head[1] === 0xfe) decoded = new TextDecoder('utf-16le').decode(head.subarray(2));
  else if (head[0] === 0xfe && head[1] === 0xff) decoded = new TextDecoder('utf-16be').decode(head.subarray(2));
  return decoded.replace(/^\uFEFF/, '').trimStart();
}

/** The first line that holds something, and the one after it. */
function firstLines(text: string, count: number): string[] {
  return text.split(/\r?\n|\r/).map((line) => line.trim()).filter(Boolean).slice(0, count);
}

/** SubRip: a cue number alone on its line, then its timing ("00:00:01,000 --> 00:00:02,500"). */
const SRT_TIMING = /^\d{1,3}:\d{1,2}:\d{1,2}[,.]\d{1,3}\s*-->\s*\d{1,3}:\d{1,2}:\d{1,2}[,.]\d{1,3}/;
function isSubRip(head: Buffer, text: string): boolean {
  const [number, timing] = firstLines(startOf(head, text), 2);
  return number !== undefined && timing !== undefined && /^\d+$/.test(number) && SRT_TIMING.test(timing);
}

/** WebVTT: the word WEBVTT opens the file, alone or followed by a space, tab or line break. */
function isWebVtt(head: Buffer, text: string): boolean {
  return /^WEBVTT(?:[ \t\r\n]|$)/.test(startOf(head, text));
}

/**
 * (Advanced) SubStation Alpha: "[Script Info]" first (comments may precede it). Version 4.00+ (ASS)
 * names its styles section "[V4+ Styles]" and says "ScriptType: v4.00+"; version 4 (SSA) says
 * "[V4 Styles]" or "ScriptType: v4.00". A file that says neither within the head is taken as ASS,
 * which ffmpeg reads the same way.
 */
function substationKind(head: Buffer, text: string): 'ass' | 'ssa' | undefined {
  const start = startOf(head, text);
  if (!/^(?:;[^\n]*\n\s*)*\[Script Info\]/i.test(start)) return undefined;
  if (/^\[V4\+ Styles\]/im.test(start) || /^ScriptType:\s*v4\.00\+/im.test(start)) return 'ass';
  if (/^\[V4 Styles\]/im.test(start) || /^ScriptType:\s*v4\.00\s*$/im.test(start)) return 'ssa';
  return 'ass';
}

/** MicroDVD: each line "{start frame}{end frame}text" (the end may be empty). */
function isMicroDvd(head: Buffer, text: string): boolean {
  const lines = firstLines(startOf(head, text), 2);
  return lines.length > 0 && lines.every((line) => /^\{\d+\}\{\d*\}/.test(line));
}

/** MPL2: each line "[start][end]text", in tenths of a second. */
function isMpl2(head: Buffer, text: string): boolean {
  const lines = firstLines(startOf(head, text), 2);
  return lines.length > 0 && lines.every((line) => /^\[\d+\]\[\d*\]/.test(line));
}

/** SAMI: a <SAMI> root element, in any case (comments may precede it). */
function isSami(head: Buffer, text: string): boolean {
  return /^(?:<!--[\s\S]*?-->\s*)*<sami[\s>]/i.test(startOf(head, text));
}

/**
 * SubViewer 2: an "[INFORMATION]" header, or straight away a timing line
 * "00:00:01.00,00:00:02.50" (what ffmpeg's own probe looks for).
 */
function isSubViewer(head: Buffer, text: string): boolean {
  const [first] = firstLines(startOf(head, text), 1);
  return first !== undefined && (/^\[INFORMATION\]$/i.test(first) || /^\d{1,2}:\d{2}:\d{2}\.\d{1,3},\d{1,2}:\d{2}:\d{2}\.\d{1,3}/.test(first));
}

/** TTML: a <tt> root element in the TTML namespace, after an optional XML declaration and comments. */
function isTtml(head: Buffer, text: string): boolean {
  const start = startOf(head, text);
  return /^(?:<\?xml[^>]*\?>\s*)?(?:<!--[\s\S]*?-->\s*)*<(?:\w+:)?tt[\s>]/.test(start) && start.includes('http://www.w3.org/ns/ttml');
}

/** The subtitle formats: ffmpeg 5.1 reads all but TTML, and writes srt, vtt, ass and ttml (subtitles.ts). */
export const SUBTITLE_FORMATS: readonly FormatDefinition[] = [
  { id: 'srt', name: 'SubRip subtitles', category: 'subtitle', mediaType: 'application/x-subrip', extensions: ['srt'], detect: 'magic', signature: isSubRip },
  { id: 'vtt', name: 'WebVTT subtitles', category: 'subtitle', mediaType: 'text/vtt; charset=utf-8', extensions: ['vtt', 'webvtt'], detect: 'magic', signature: isWebVtt },
  { id: 'ass', name: 'Advanced SubStation Alpha subtitles', category: 'subtitle', mediaType: 'text/x-ass; charset=utf-8', extensions: ['ass'], detect: 'magic', signature: (head, text) => substationKind(head, text) === 'ass' },
  { id: 'ssa', name: 'SubStation Alpha subtitles', category: 'subtitle', mediaType: 'text/x-ssa', extensions: ['ssa'], detect: 'magic', signature: (head, text) => substationKind(head, text) === 'ssa' },
  { id: 'sub', name: 'MicroDVD subtitles', category: 'subtitle', mediaType: 'text/x-microdvd', extensions: ['sub'], detect: 'magic', signature: isMicroDvd },
  { id: 'mpl2', name: 'MPL2 subtitles', category: 'subtitle', mediaType: 'text/x-mpl2', extensions: ['mpl2'], detect: 'magic', signature: isMpl2 },
  { id: 'smi', name: 'SAMI captions', category: 'subtitle', mediaType: 'application/x-sami', extensions: ['smi', 'sami'], detect: 'magic', signature: isSami },
  { id: 'subviewer', name: 'SubViewer 2 subtitles', category: 'subtitle', mediaType: 'text/x-subviewer', extensions: ['subviewer'], detect: 'magic', signature: isSubViewer },
  { id: 'ttml', name: 'TTML timed text', category: 'subtitle', mediaType: 'application/ttml+xml', extensions: ['ttml', 'dfxp'], detect: 'magic', signature: isTtml },
];
