// Subtitles through ffmpeg: a subtitle file to another subtitle format, and the first subtitle
// stream of a video to a subtitle file. ffmpeg 5.1 reads SubRip, WebVTT, ASS/SSA, MicroDVD, MPL2,
// SAMI, SubViewer, JACOsub, Scenarist (SCC), PJS, RealText, VPlayer, AQTitle and LRC, and writes
// SubRip, WebVTT, ASS and TTML (its ssa encoder writes ASS headers; the others have no encoder and
// are read only). LRC is written here from ffmpeg's SubRip (its own lrc muxer drops every end time).
//
// Safety (docs/security.md#subtitles): the demuxer is forced from the sniffed format and is the
// only one on ffmpeg's format allow-list, with the file protocol only, in the same sandbox as every
// ffmpeg run. ffmpeg's text demuxers hold a whole file's cues in memory (a million SubRip cues took
// 520 MB and 23 s here), so a subtitle file is read here first, within a size cap, and refused
// past a number of cues. WebVTT's cue text is markup: what ffmpeg writes there is escaped again
// here, so that no text of the source becomes a tag (TTML's encoder escapes its own).
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { ensureSuccess, lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest } from '../types.ts';

/** The subtitle formats ffmpeg reads, and the demuxer each is read with. */
const SUBTITLE_DEMUXERS: Readonly<Record<string, string>> = {
  srt: 'srt', vtt: 'webvtt', ass: 'ass', ssa: 'ass', sub: 'microdvd', mpl2: 'mpl2', smi: 'sami', subviewer: 'subviewer',
  jss: 'jacosub', scc: 'scc', pjs: 'pjs', rt: 'realtext', vplayer: 'vplayer', aqt: 'aqtitle', lrc: 'lrc',
};
/** Video containers that carry text subtitles (Matroska: SubRip, ASS, WebVTT; MPEG-4: 3GPP timed text), and their demuxer. */
const VIDEO_DEMUXERS: Readonly<Record<string, string>> = {
  mkv: 'matroska', webm: 'matroska', mp4: 'mov', mov: 'mov', m4v: 'mov', '3gp': 'mov',
};
/** What ffmpeg writes: encoder and muxer of each subtitle target. */
const WRITERS: Readonly<Record<string, { encoder: string; muxer: string }>> = {
  srt: { encoder: 'srt', muxer: 'srt' },
  vtt: { encoder: 'webvtt', muxer: 'webvtt' },
  ass: { encoder: 'ass', muxer: 'ass' },
  ttml: { encoder: 'ttml', muxer: 'ttml' },
};
/**
 * LRC is written here from ffmpeg's SubRip (subripToLrc): ffmpeg's lrc muxer keeps no cue's end,
 * so every line would stay on screen until the next one.
 */
export const SUBTITLE_TARGETS = [...Object.keys(WRITERS), 'lrc'];

/**
 * The largest subtitle file read: 16 MiB. A feature film's SubRip file is about 100 KB; the largest
 * real files (karaoke ASS with an effect on every syllable) stay within a few megabytes.
 */
export const MAX_SUBTITLE_BYTES = 16 * 1024 * 1024;
/**
 * The most cues converted: a feature film has one to two thousand, a whole series' season in one
 * file some tens of thousands. 100,000 SubRip cues took ffmpeg 2.3 s and 55 MB here.
 */
export const MAX_CUES = 100_000;

/** How each readable format's cues are counted: one match per cue. */
const CUE_MARK: Readonly<Record<string, RegExp>> = {
  srt: /-->/g, vtt: /-->/g,
  ass: /^Dialogue:/gim, ssa: /^Dialogue:/gim,
  sub: /^\{\d+\}/gm, mpl2: /^\[\d+\]/gm,
  smi: /<sync[\s>]/gi,
  subviewer: /^\d+:\d+:\d+\.\d+,\d+:\d+:\d+\.\d+/gm,
  jss: /^[ \t]*(?:\d+:\d+:\d+[.:]\d+|@\d+)[ \t]/gm,
  // A caption line of SCC is its time code; each may load, show or clear one caption.
  scc: /^\d+:\d+:\d+[:;.]\d+\s/gm,
  pjs: /^[ \t]*\d+[ \t]*,/gm, rt: /<time[\s>/]/gi,
  vplayer: /^\d+:\d+:\d+/gm, aqt: /^-->>/gm,
  // One cue per time stamp: a line may hold several ("[00:12.00][01:30.00]the chorus").
  lrc: /\[\d+:\d+(?:[.:]\d+)?\]/g,
};

/** ffmpeg's words for the cases that have an answer of their own. */
const NO_STREAM = /Stream map '0:s:0' matches no streams/;
const PICTURE_SUBTITLES = /Subtitle encoding currently only possible from text to text or bitmap to bitmap/;
const NOTHING_ENCODED = /Output file is empty, nothing was encoded/;
/** TTML's encoder needs the ASS header's PlayResX/PlayResY, which an ASS track may lack. */
const NO_PLAY_RES = /Invalid subtitle reference resolution/;

/** Every subtitle conversion: each ends its route (ffmpeg converts every pair in one run). */
export function subtitleEdges(targets: readonly string[] = SUBTITLE_TARGETS): ConversionEdge[] {
  const list: ConversionEdge[] = [];
  for (const from of Object.keys(SUBTITLE_DEMUXERS)) {
    for (const to of targets) if (to !== from) list.push({ from, to, cost: 1, endsRoute: true });
  }
  // A video's subtitles: only for an uploaded video, never after a step that made one (which
  // would have none).
  for (const from of Object.keys(VIDEO_DEMUXERS)) {
    for (const to of targets) list.push({ from, to, cost: 2, chainable: false, endsRoute: true });
  }
  return list;
}

/** True for a conversion this file does (the rest of the ffmpeg engine's are sound and pictures). */
export function isSubtitleConversion({ from, to }: { from: string; to: string }): boolean {
  return SUBTITLE_TARGETS.includes(to) && (from in SUBTITLE_DEMUXERS || from in VIDEO_DEMUXERS);
}

const PROBE_SRT = '1\n00:00:01,000 --> 00:00:02,500\nprobe <i>text</i>\n';

/** The start-up probe: one SubRip cue written as every target; the targets whose file holds it are offered. */
export async function probeSubtitles(context: EngineContext<unknown>, dir: string): Promise<string[]> {
  await fs.writeFile(path.join(dir, 'probe.srt'), PROBE_SRT);
  const written = Object.keys(WRITERS);
  const outputs = written.flatMap((to) => ['-map', '0:s:0', '-c:s', WRITERS[to]!.encoder, '-f', WRITERS[to]!.muxer, '-y', `file:probe-out.${to}`]);
  const result = await context.run('/usr/bin/ffmpeg', [
    '-nostdin', '-hide_banner', '-loglevel', 'error', '-protocol_whitelist', 'file', '-format_whitelist', 'srt', '-f', 'srt', '-i', 'file:probe.srt', ...outputs,
  ], { cwd: dir, timeoutMs: 20_000 });
  ensureSuccess(result, 'ffmpeg');
  const working: string[] = [];
  for (const to of written) {
    const text = await fs.readFile(path.join(dir, `probe-out.${to}`), 'utf8').catch(() => '');
    if (text.includes('probe') && text.includes('text')) working.push(to);
  }
  // LRC is made from ffmpeg's SubRip.
  return working.includes('srt') ? [...working, 'lrc'] : working;
}

/** A subtitle file's text, decoded: UTF-8, or UTF-16 with its byte-order mark, or else Windows-1252. */
function decode(bytes: Buffer): { text: string; utf8: boolean } {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { text: new TextDecoder('utf-16le').decode(bytes), utf8: false };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { text: new TextDecoder('utf-16be').decode(bytes), utf8: false };
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), utf8: true };
  } catch {
    // Not UTF-8: the encoding Western subtitle files were saved in for decades (Latin-1's printable
    // characters are the same, and 0x80-0x9F hold its curly quotes, dashes and the euro sign).
    return { text: new TextDecoder('windows-1252').decode(bytes), utf8: false };
  }
}

function countUpTo(text: string, mark: RegExp, limit: number): number {
  let count = 0;
  for (const pattern = new RegExp(mark.source, mark.flags); pattern.exec(text) && count <= limit;) count++;
  return count;
}

/**
 * ASS with the script resolution ffmpeg's TTML encoder needs: a missing PlayResX or PlayResY is
 * added as renderers assume it (384x288, or the other side at 4:3).
 */
export function withPlayRes(text: string): string {
  const header = /^\[Script Info\][^\n]*\n/im.exec(text);
  if (!header) return text;
  const start = header.index + header[0].length;
  const next = text.slice(start).search(/^\[/m);
  const section = text.slice(start, next < 0 ? text.length : start + next);
  const x = Number(/^PlayResX:\s*(\d+)/im.exec(section)?.[1] ?? 0);
  const y = Number(/^PlayResY:\s*(\d+)/im.exec(section)?.[1] ?? 0);
  if (x > 0 && y > 0) return text;
  const added = `${x > 0 ? '' : `PlayResX: ${y > 0 ? Math.round((y * 4) / 3) : 384}\n`}${y > 0 ? '' : `PlayResY: ${x > 0 ? Math.round((x * 3) / 4) : 288}\n`}`;
  return text.slice(0, start) + added + text.slice(start);
}

/** The fields of an ASS event, in the order ffmpeg 5.1's demuxer assumes whatever the file's Format line says (SSA's first is Marked). */
const EVENT_FIELDS = ['layer', 'start', 'end', 'style', 'name', 'marginl', 'marginr', 'marginv', 'effect', 'text'];

/**
 * ASS or SSA whose events follow the standard Format: ffmpeg's demuxer ignores the [Events] Format
 * line and takes every Dialogue line's fields in the standard order, so a file that names fewer
 * (the corpus's "Layer, Start, End, Style, Name, Text") lost its text. Such events are rewritten
 * in the standard order, the missing fields empty (margins 0: the style's).
 */
export function withStandardEvents(text: string): string {
  let events = false;
  let format: string[] | undefined;
  let changed = false;
  const lines = text.split('\n').map((line) => {
    if (/^\s*\[/.test(line)) {
      events = /^\s*\[Events\]/i.test(line);
      format = undefined;
      return line;
    }
    if (!events) return line;
    const declared = /^Format:\s*(.*?)\r?$/i.exec(line);
    if (declared) {
      const names = declared[1]!.split(',').map((name) => name.trim().toLowerCase());
      const standard = names.length === EVENT_FIELDS.length && names.every((name, i) => name === EVENT_FIELDS[i] || (i === 0 && name === 'marked'));
      format = standard ? undefined : names;
      changed ||= !standard;
      return standard ? line : 'Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text';
    }
    const event = format && /^(Dialogue|Comment):\s*(.*?)\r?$/i.exec(line);
    if (!event || !format) return line;
    const values = event[2]!.split(',');
    const fields = new Map(format.map((name, i) => [name, i === format!.length - 1 ? values.slice(i).join(',') : (values[i] ?? '').trim()]));
    const layer = fields.get('layer') ?? fields.get('marked')?.replace(/^marked=/i, '') ?? '0';
    return `${event[1]}: ${EVENT_FIELDS.map((name) => (name === 'layer' ? layer : fields.get(name) ?? (name.startsWith('margin') ? '0' : ''))).join(',')}`;
  });
  return changed ? lines.join('\n') : text;
}

/** SSA's style fields become ASS's: the alignment (SSA: 1-3 bottom, 5-7 top, 9-11 middle) and colours (decimal BGR) change form. */
const SSA_ALIGNMENT: Readonly<Record<string, string>> = { 1: '1', 2: '2', 3: '3', 5: '7', 6: '8', 7: '9', 9: '4', 10: '5', 11: '6' };
const ASS_STYLE_FIELDS = ['Name', 'Fontname', 'Fontsize', 'PrimaryColour', 'SecondaryColour', 'OutlineColour', 'BackColour', 'Bold', 'Italic',
  'Underline', 'StrikeOut', 'ScaleX', 'ScaleY', 'Spacing', 'Angle', 'BorderStyle', 'Outline', 'Shadow', 'Alignment', 'MarginL', 'MarginR', 'MarginV', 'Encoding'];
const ASS_STYLE_DEFAULTS: Readonly<Record<string, string>> = { Underline: '0', StrikeOut: '0', ScaleX: '100', ScaleY: '100', Spacing: '0', Angle: '0' };

function assColour(value: string): string {
  if (!/^-?\d+$/.test(value.trim())) return value;
  return `&H${(Number(value) >>> 0).toString(16).toUpperCase().padStart(8, '0')}`;
}

/**
 * ffmpeg's ASS of an SSA source is that SSA file again (its encoder copies the source's header):
 * rewritten here as ASS (v4.00+): script type, the styles' fields and the events' Layer.
 */
export function ssaAsAss(text: string): string {
  if (!/^\[V4 Styles\]/im.test(text)) return text;
  let section = '';
  let styleFormat: string[] = [];
  return text.split('\n').map((line) => {
    const bare = line.replace(/\r$/, '');
    if (/^\s*\[/.test(bare)) {
      section = bare.trim().toLowerCase();
      return section === '[v4 styles]' ? '[V4+ Styles]' : line;
    }
    if (section === '[script info]' && /^ScriptType:/i.test(bare)) return 'ScriptType: v4.00+';
    if (section === '[v4 styles]' && /^Format:/i.test(bare)) {
      styleFormat = bare.slice('Format:'.length).split(',').map((name) => name.trim().toLowerCase());
      return `Format: ${ASS_STYLE_FIELDS.join(', ')}`;
    }
    if (section === '[v4 styles]' && /^Style:/i.test(bare)) {
      const values = bare.slice('Style:'.length).split(',').map((value) => value.trim());
      const of = (name: string) => values[styleFormat.indexOf(name)];
      return `Style: ${ASS_STYLE_FIELDS.map((field) => {
        const key = field.toLowerCase();
        if (field === 'OutlineColour') return assColour(of('tertiarycolour') ?? of('outlinecolour') ?? '0');
        if (key.endsWith('colour')) return assColour(of(key) ?? '0');
        if (field === 'Alignment') return SSA_ALIGNMENT[of('alignment') ?? '2'] ?? '2';
        return of(key) ?? ASS_STYLE_DEFAULTS[field] ?? '0';
      }).join(',')}`;
    }
    if (section === '[events]' && /^Format:/i.test(bare)) return bare.replace(/^Format:\s*Marked\b/i, 'Format: Layer');
    if (section === '[events]') return bare.replace(/^(Dialogue|Comment):\s*Marked=\d*/i, '$1: 0');
    return line;
  }).join('\n');
}

/**
 * RealText with the white space between its tags removed where ffmpeg would keep it as text: after
 * <window> (ffmpeg's reader made it a cue of its own, at 0 s), before each <time> and around
 * </window> (a space at the end of a cue's text).
 */
export function withoutRealTextGaps(text: string): string {
  return text.replace(/(<window\b[^>]*>)\s+/i, '$1').replace(/\s+(?=<time\b|<\/window\s*>)/gi, '').trimEnd();
}

/**
 * How long the last cue of a format that gives only start times shows, when nothing clears it:
 * ffmpeg leaves it open (VPlayer, AQTitle: an end 1,193 hours on) or ends it where it starts (LRC).
 */
export const LAST_CUE_SECONDS = 5;

/** Start times of the formats that have no end times (a cue lasts until the next one, or a blank one), and how to write a blank cue. */
const START_ONLY: Readonly<Record<string, { start: RegExp; seconds: (match: RegExpExecArray) => number; clear: (seconds: number) => string }>> = {
  vplayer: {
    start: /^(\d+):(\d+):(\d+)(?:\.(\d+))?[:= ]/gm,
    seconds: (m) => Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) + Number(`0.${m[4] ?? 0}`),
    clear: (t) => `${Math.floor(t / 3600)}:${pad2(Math.floor(t / 60) % 60)}:${pad2(Math.floor(t % 60))}.${pad2(Math.round((t % 1) * 100))}:\n`,
  },
  // AQTitle counts frames at 25 a second (ffmpeg's reading); a cue without text clears.
  aqt: { start: /^-->> (\d+)/gm, seconds: (m) => Number(m[1]) / 25, clear: (t) => `-->> ${Math.round(t * 25)}\n\n` },
  lrc: { start: /\[(\d+):(\d+(?:\.\d+)?)\]/g, seconds: (m) => Number(m[1]) * 60 + Number(m[2]), clear: (t) => `${lrcTime(t)}\n` },
};
const pad2 = (value: number) => String(value).padStart(2, '0');
/** An LRC time stamp, [minutes:seconds.hundredths] (minutes past 59 as they are). */
function lrcTime(seconds: number): string {
  const hundredths = Math.round(seconds * 100);
  return `[${pad2(Math.floor(hundredths / 6000))}:${pad2(Math.floor(hundredths / 100) % 60)}.${pad2(hundredths % 100)}]`;
}

/** A start-only format's file with a blank cue LAST_CUE_SECONDS after its latest start, so that its last cue ends. */
export function withLastCueEnd(from: string, text: string): string {
  const format = START_ONLY[from];
  if (!format) return text;
  let latest = -1;
  for (const match of text.matchAll(format.start)) latest = Math.max(latest, format.seconds(match));
  if (latest < 0) return text;
  return `${text}${text.endsWith('\n') ? '' : '\n'}${format.clear(latest + LAST_CUE_SECONDS)}`;
}

interface SubRipCue { start: string; end: string; lines: string[] }
/** The cues of ffmpeg's SubRip: a number, the timing, the text lines; blocks apart by blank lines. */
function readSubRip(text: string): SubRipCue[] {
  return text.replace(/\r\n/g, '\n').split(/\n\n+(?=\d+\n\d+:\d{2}:\d{2},\d{3} --> )/).flatMap((block) => {
    const [, timing, ...lines] = block.replace(/^\n+/, '').split('\n');
    const times = /^(\S+) --> (\S+)/.exec(timing ?? '');
    return times ? [{ start: times[1]!, end: times[2]!, lines: lines.join('\n').replace(/\n+$/, '').split('\n') }] : [];
  });
}
const seconds = (stamp: string) => {
  const [h, m, s] = stamp.replace(',', '.').split(':').map(Number);
  return h! * 3600 + m! * 60 + s!;
};

/** SubRip without its blank cues (LRC's blank lines clear the lyric: ffmpeg makes each a cue with no text), numbered again. */
export function withoutBlankCues(srt: string): string {
  const cues = readSubRip(srt).filter((cue) => cue.lines.some((line) => line.trim() !== ''));
  return cues.map((cue, i) => `${i + 1}\n${cue.start} --> ${cue.end}\n${cue.lines.join('\n')}\n`).join('\n');
}

/**
 * LRC from ffmpeg's SubRip: a line per cue, its lines joined by a space (LRC holds one line per
 * time), its styling removed (LRC is plain text), and a blank line at its end unless the next
 * cue starts by then. A cue still showing when the next one starts ends there.
 */
export function subripToLrc(srt: string): string {
  const cues = readSubRip(srt);
  return cues.map((cue, i) => {
    const text = cue.lines.join(' ').replace(/<\/?(?:b|i|u|s|font)\b[^>]*>/gi, '').replace(/\{\\[^}]*\}/g, '').trim();
    const next = cues[i + 1];
    const end = seconds(cue.end);
    return `${lrcTime(seconds(cue.start))}${text}\n${next && seconds(next.start) <= end ? '' : `${lrcTime(end)}\n`}`;
  }).join('');
}

/**
 * The subtitle file ffmpeg reads: the upload itself when it is UTF-8 and needs nothing, else a
 * UTF-8 copy in the job's directory. Refused past the size and cue caps.
 */
async function prepareInput({ input, from, to, workDir }: ConvertRequest): Promise<string> {
  const { size } = await fs.stat(input);
  if (size > MAX_SUBTITLE_BYTES) {
    throw new ConvertdError('input_too_complex', `The subtitle file is ${Math.ceil(size / 1024 / 1024)} MB; this service reads subtitle files of at most ${MAX_SUBTITLE_BYTES / 1024 / 1024} MB.`);
  }
  const { text, utf8 } = decode(await fs.readFile(input));
  if (countUpTo(text, CUE_MARK[from]!, MAX_CUES) > MAX_CUES) {
    throw new ConvertdError('input_too_complex', `The subtitle file holds more than ${MAX_CUES} cues, the most this service converts.`);
  }
  const substation = from === 'ass' || from === 'ssa';
  const standard = substation ? withStandardEvents(text) : from === 'rt' ? withoutRealTextGaps(text) : withLastCueEnd(from, text);
  const patched = substation && to === 'ttml' ? withPlayRes(standard) : standard;
  if (utf8 && patched === text) return input;
  const copy = path.join(workDir, `subtitles-utf8.${from}`);
  await fs.writeFile(copy, patched.replace(/^\uFEFF/, ''));
  return copy;
}

/** One of ffmpeg's own tags in WebVTT cue text (its encoder writes no others). */
const VTT_OWN_TAGS = /(<\/?[biu]>)/;
/** A WebVTT timing line, as ffmpeg writes it. */
const VTT_TIMING = /^(?:\d+:)?\d{2}:\d{2}\.\d{3} --> (?:\d+:)?\d{2}:\d{2}\.\d{3}(?: |$)/;

function escapeCueText(line: string): string {
  return line.split(VTT_OWN_TAGS).map((part, index) => (index % 2 === 1 ? part
    : part.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;'))).join('');
}

/**
 * ffmpeg's WebVTT with its cue text escaped: its encoder copies the text as it is, so a source's
 * "<script>" (ASS text, or WebVTT's own "&lt;script&gt;" once decoded) would be a tag in the
 * output, and a bare "&" or "-->" breaks the cue. Only <b>, <i> and <u>, which ffmpeg makes from
 * the source's styling, stay tags.
 */
export function escapeWebVtt(vtt: string): string {
  const blocks = vtt.split(/\n\n/);
  return blocks.map((block, index) => {
    if (index === 0) return block;
    const lines = block.split('\n');
    const timing = lines.findIndex((line) => VTT_TIMING.test(line));
    return lines.map((line, at) => (at > timing ? escapeCueText(line) : line)).join('\n');
  }).join('\n\n');
}

/** Seconds of a "Duration: 00:01:02.50" line of ffmpeg's description of its input. */
function durationOf(line: string): number | undefined {
  const time = /^\s+Duration: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)/.exec(line);
  return time ? Number(time[1]) * 3600 + Number(time[2]) * 60 + Number(time[3]) : undefined;
}

/** Converts a subtitle file, or a video's first subtitle stream, to a subtitle target. */
export async function convertSubtitles(context: EngineContext<unknown>, request: ConvertRequest): Promise<void> {
  return request.from === 'lrc' || request.to === 'lrc' ? convertThroughSubRip(context, request) : convertWithFfmpeg(context, request);
}

/**
 * LRC, either side: ffmpeg makes SubRip, which is cleaned here (LRC's blank lines, which ffmpeg
 * makes cues with no text, removed) and is the result, or becomes the LRC result here, or goes
 * through ffmpeg again to the target.
 */
async function convertThroughSubRip(context: EngineContext<unknown>, request: ConvertRequest): Promise<void> {
  const { from, to, output, workDir, onProgress } = request;
  const via = path.join(workDir, 'through.srt');
  const cleaned = path.join(workDir, 'cleaned.srt');
  const last = to === 'srt' || to === 'lrc';
  try {
    await convertWithFfmpeg(context, { ...request, to: 'srt', output: via, onProgress: (fraction) => onProgress(last ? fraction : fraction / 2) });
    const srt = await fs.readFile(via, 'utf8');
    const cues = from === 'lrc' ? withoutBlankCues(srt) : srt;
    if (cues.trim() === '') throw new ConvertdError('conversion_failed', 'The subtitles hold no cue to convert.');
    if (to === 'lrc') return await fs.writeFile(output, subripToLrc(cues));
    if (to === 'srt') return await fs.writeFile(output, cues);
    await fs.writeFile(cleaned, cues);
    await convertWithFfmpeg(context, { ...request, input: cleaned, from: 'srt', onProgress: (fraction) => onProgress(0.5 + fraction / 2) });
  } finally {
    await Promise.all([via, cleaned].map((file) => fs.rm(file, { force: true })));
  }
}

/** One ffmpeg run: the subtitle file, or a video's first subtitle stream, to a target ffmpeg writes. */
async function convertWithFfmpeg(context: EngineContext<unknown>, request: ConvertRequest): Promise<void> {
  const { from, to, output, workDir, limits, signal, onProgress } = request;
  const fromVideo = from in VIDEO_DEMUXERS;
  const demuxer = fromVideo ? VIDEO_DEMUXERS[from]! : SUBTITLE_DEMUXERS[from]!;
  const writer = WRITERS[to]!;
  const input = fromVideo ? request.input : await prepareInput(request);
  let duration = 0;
  const said = { noStream: false, pictures: false, nothing: false, noPlayRes: false };
  const result = await context.run('/usr/bin/ffmpeg', [
    // "info" is the level at which ffmpeg prints the input's duration, which progress is measured against.
    '-nostdin', '-hide_banner', '-loglevel', 'info', '-nostats', '-progress', 'pipe:1',
    '-protocol_whitelist', 'file', '-format_whitelist', demuxer, '-f', demuxer,
    '-i', `file:${path.basename(input)}`,
    '-map', '0:s:0', '-c:s', writer.encoder, '-fs', String(limits.maxOutputBytes),
    '-f', writer.muxer, '-y', `file:${path.basename(output)}`,
  ], {
    cwd: workDir,
    timeoutMs: limits.timeoutMs,
    signal,
    limits: { fileSizeBytes: limits.maxOutputBytes + 1024 * 1024, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
    onStdoutLine: (line) => {
      const done = /^out_time_us=(\d+)$/.exec(line);
      if (done && duration > 0) onProgress(Number(done[1]) / 1e6 / duration);
    },
    onStderrLine: (line) => {
      duration ||= durationOf(line) ?? 0;
      if (NO_STREAM.test(line)) said.noStream = true;
      if (PICTURE_SUBTITLES.test(line)) said.pictures = true;
      if (NOTHING_ENCODED.test(line)) said.nothing = true;
      if (NO_PLAY_RES.test(line)) said.noPlayRes = true;
    },
  });
  signal.throwIfAborted();
  if (said.noStream) {
    throw new ConvertdError('conversion_failed', fromVideo ? 'The video holds no subtitle stream to extract.' : 'ffmpeg found no subtitles in the file.');
  }
  if (said.pictures) {
    throw new ConvertdError('conversion_failed', 'The video\'s first subtitle stream is made of pictures (DVD, Blu-ray or DVB subtitles), not text: it cannot become a text subtitle file.');
  }
  if (said.noPlayRes && fromVideo) return convertAssTrack(context, request);
  if (result.exitCode === null) ensureSuccess(result, 'ffmpeg');
  if (result.exitCode !== 0) {
    const detail = lastErrorLine(result.stderr);
    throw new ConvertdError('corrupt_input', `The subtitles could not be read${detail ? ` (${detail})` : ''}: the file may be damaged or not really ${from}.`);
  }
  if (said.nothing) throw new ConvertdError('conversion_failed', 'The subtitles hold no cue to convert.');
  if (to === 'vtt') await fs.writeFile(output, escapeWebVtt(await fs.readFile(output, 'utf8')));
  if (to === 'ass') {
    const written = await fs.readFile(output, 'utf8');
    const upgraded = ssaAsAss(written);
    if (upgraded !== written) await fs.writeFile(output, upgraded);
  }
}

/**
 * A video's ASS track without a script resolution, to TTML: the track is extracted as ASS first
 * (its times are in hundredths of a second, as ASS's are: nothing is lost), then converted as an
 * ASS file is, with the resolution added.
 */
async function convertAssTrack(context: EngineContext<unknown>, request: ConvertRequest): Promise<void> {
  const track = path.join(request.workDir, 'track.ass');
  try {
    await convertSubtitles(context, { ...request, to: 'ass', output: track, onProgress: (fraction) => request.onProgress(fraction / 2) });
    await convertSubtitles(context, { ...request, input: track, from: 'ass', onProgress: (fraction) => request.onProgress(0.5 + fraction / 2) });
  } finally {
    await fs.rm(track, { force: true });
  }
}
