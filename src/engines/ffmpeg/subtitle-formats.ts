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

/**
 * JACOsub: "#" directives (#TITLE, #TIMERES...) or blank lines, then the first cue's timing,
 * "H:MM:SS.FF H:MM:SS.FF" or "@start @end" in frames, and its text. A playlist's "#EXTM3U" lines
 * fit the first part, never the second.
 */
function isJacosub(head: Buffer, text: string): boolean {
  const first = firstLines(startOf(head, text), 64).find((line) => !line.startsWith('#'));
  return first !== undefined && /^(?:\d+:\d{1,2}:\d{1,2}[.:]\d{1,3}\s+\d+:\d{1,2}:\d{1,2}[.:]\d{1,3}|@\d+\s+@\d+)\s+\S/.test(first);
}

/** Scenarist Closed Captions: the header line "Scenarist_SCC V1.0". */
const isScc = (head: Buffer, text: string) => /^Scenarist_SCC V\d/.test(startOf(head, text));

/**
 * PJS: each line `start,end,"text"` (tenths of a second). The first two lines must both be so, the
 * text quoted to the line's end and the times in order: a headerless CSV of two numbers and a
 * quoted string would be taken as PJS only if it also looked like timing.
 */
function isPjs(head: Buffer, text: string): boolean {
  const lines = firstLines(startOf(head, text), 2);
  const cues = lines.map((line) => /^(\d+)\s*,\s*(\d+)\s*,\s*".*"$/.exec(line));
  return cues.length > 0 && cues.every((cue) => cue !== null && Number(cue[1]) <= Number(cue[2]))
    && (cues.length < 2 || Number(cues[0]![1]) <= Number(cues[1]![1]));
}

/** RealText: a <window> root element (comments may precede it). */
const isRealText = (head: Buffer, text: string) => /^(?:<!--[\s\S]*?-->\s*)*<window[\s>]/i.test(startOf(head, text));

/**
 * VPlayer: each line a start time "H:MM:SS" (with hundredths or not) then ":", " " or "=" and the
 * text. Not when a second time follows (that is JACOsub's timing) nor a comma (SubViewer's).
 */
function isVPlayer(head: Buffer, text: string): boolean {
  const lines = firstLines(startOf(head, text), 2);
  return lines.length > 0 && lines.every((line) => /^\d{1,2}:\d{2}:\d{2}(?:\.\d{1,3})?[:= ](?!\s*@?\d+:\d{1,2}:\d{1,2})/.test(line));
}

/** AQTitle: each cue opens with "-->> frame". */
const isAqTitle = (head: Buffer, text: string) => /^-->> \d+/.test(startOf(head, text));

/**
 * LRC lyrics: ID tags ("[ti:Title]", "[ar:...]", "[offset:+100]") or timed lines ("[01:02.50]text")
 * open the file, and a timed line comes within the head. An INI file's "[section]" holds no colon.
 */
const LRC_TAG = /^\[(?:\d+:\d{1,2}(?:[.:]\d{1,3})?|[a-z#]+:[^\]\n]*)\]/i;
function isLrc(head: Buffer, text: string): boolean {
  const lines = firstLines(startOf(head, text), 64);
  return lines.length > 0 && LRC_TAG.test(lines[0]!) && lines.some((line) => /^(?:\[[^\]\n]*\])*\[\d+:\d{1,2}(?:[.:]\d{1,3})?\]/.test(line));
}

/** The subtitle formats: ffmpeg 5.1 reads all but TTML, and writes srt, vtt, ass and ttml; LRC is written from its SubRip (subtitles.ts). */
export const SUBTITLE_FORMATS: readonly FormatDefinition[] = [
  { id: 'srt', name: 'SubRip subtitles', category: 'subtitle', mediaType: 'application/x-subrip', extensions: ['srt'], detect: 'magic', signature: isSubRip },
  { id: 'vtt', name: 'WebVTT subtitles', category: 'subtitle', mediaType: 'text/vtt; charset=utf-8', extensions: ['vtt', 'webvtt'], detect: 'magic', signature: isWebVtt },
  { id: 'ass', name: 'Advanced SubStation Alpha subtitles', category: 'subtitle', mediaType: 'text/x-ass; charset=utf-8', extensions: ['ass'], detect: 'magic', signature: (head, text) => substationKind(head, text) === 'ass' },
  { id: 'ssa', name: 'SubStation Alpha subtitles', category: 'subtitle', mediaType: 'text/x-ssa', extensions: ['ssa'], detect: 'magic', signature: (head, text) => substationKind(head, text) === 'ssa' },
  { id: 'sub', name: 'MicroDVD subtitles', category: 'subtitle', mediaType: 'text/x-microdvd', extensions: ['sub'], detect: 'magic', signature: isMicroDvd },
  { id: 'mpl2', name: 'MPL2 subtitles', category: 'subtitle', mediaType: 'text/x-mpl2', extensions: ['mpl2'], detect: 'magic', signature: isMpl2 },
  { id: 'smi', name: 'SAMI captions', category: 'subtitle', mediaType: 'application/x-sami', extensions: ['smi', 'sami'], detect: 'magic', signature: isSami },
  { id: 'subviewer', name: 'SubViewer 2 subtitles', category: 'subtitle', mediaType: 'text/x-subviewer', extensions: ['subviewer'], detect: 'magic', signature: isSubViewer },
  // Issue #30, wave 3: read only (ffmpeg 5.1 has their decoders, no encoder), but LRC, which is written too.
  // Spruce STL is left out (README, Known limitations): ffmpeg reads its frame field as hundredths.
  { id: 'jss', name: 'JACOsub subtitles', category: 'subtitle', mediaType: 'text/x-jacosub', extensions: ['jss'], detect: 'magic', signature: isJacosub },
  { id: 'scc', name: 'Scenarist Closed Captions (EIA-608)', category: 'subtitle', mediaType: 'text/x-scc', extensions: ['scc'], detect: 'magic', signature: isScc },
  { id: 'pjs', name: 'Phoenix Japanimation Society subtitles', category: 'subtitle', mediaType: 'text/x-pjs', extensions: ['pjs'], detect: 'magic', signature: isPjs },
  { id: 'rt', name: 'RealText subtitles', category: 'subtitle', mediaType: 'text/vnd.rn-realtext', extensions: ['rt'], detect: 'magic', signature: isRealText },
  { id: 'vplayer', name: 'VPlayer subtitles', category: 'subtitle', mediaType: 'text/x-vplayer', extensions: ['vplayer'], detect: 'magic', signature: isVPlayer },
  { id: 'aqt', name: 'AQTitle subtitles', category: 'subtitle', mediaType: 'text/x-aqtitle', extensions: ['aqt'], detect: 'magic', signature: isAqTitle },
  { id: 'lrc', name: 'LRC lyrics', category: 'subtitle', mediaType: 'application/x-lrc', extensions: ['lrc'], detect: 'magic', signature: isLrc },
  { id: 'ttml', name: 'TTML timed text', category: 'subtitle', mediaType: 'application/ttml+xml', extensions: ['ttml', 'dfxp'], detect: 'magic', signature: isTtml },
];
