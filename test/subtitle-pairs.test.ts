// Every subtitle pair the catalogue advertises (ffmpeg: fifteen formats read, five written, and the
// first subtitle stream of six video containers), from samples this test writes itself: three cues
// in Latin (with Windows-1252's dash and euro sign), Cyrillic and Japanese, one of them on two
// lines. Each output is read by our own parsers (test/helpers/read_subtitles.py: Python, no ffmpeg)
// and its cues compared with the sample's: the same text, and start and end times within the
// coarsest target's precision. Plus: uploads named .txt are told by their content; SubRip in
// Windows-1252 and UTF-16 comes out right; a video without subtitles, a file without cues and a
// million cues are refused with their codes; a source's text never becomes markup in WebVTT or
// TTML; and the corpus's real files (skipped when ../shared/corpus is absent).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { convert, download, expectError, fetchCatalogue, submit, submitOk, waitForJob, type CatalogueEntry } from './helpers/client.ts';
import { startServer, tempDir, type RunningServer } from './helpers/server.ts';
import { writeTemp } from './helpers/tools.ts';

const run = promisify(execFile);
const PYTHON = '/usr/bin/python3';
const READER = path.join(import.meta.dirname, 'helpers', 'read_subtitles.py');
const CORPUS = path.resolve(import.meta.dirname, '..', '..', 'shared', 'corpus');

/** The formats read, the formats written, and the videos whose first subtitle stream is extracted. */
/** The third wave's formats read (issue #30): JACOsub, Scenarist, PJS, RealText, VPlayer, AQTitle, LRC. */
const WAVE3_SOURCES = ['jss', 'scc', 'pjs', 'rt', 'vplayer', 'aqt', 'lrc'];
const SOURCES = ['srt', 'vtt', 'ass', 'ssa', 'sub', 'mpl2', 'smi', 'subviewer', ...WAVE3_SOURCES];
const TARGETS = ['srt', 'vtt', 'ass', 'ttml', 'lrc'];
const VIDEOS = ['mkv', 'webm', 'mp4', 'mov', 'm4v', '3gp'];
/**
 * Times may differ by this much (seconds): ASS keeps hundredths of a second. Every sample time is a
 * multiple of 0.2 s, which every format holds exactly (MicroDVD at 25 frames a second, MPL2 in
 * tenths), so only rounding is allowed for.
 */
const TIME_TOLERANCE = 0.011;
/** SCC's times are frames at 29.97 a second, which ffmpeg reads as 33 ms each: one frame more. */
const SCC_TOLERANCE = TIME_TOLERANCE + 1 / 29.97;

interface Cue { start: number; end: number; lines: string[] }
/** The cues of every sample: Latin with Windows-1252's own characters, Cyrillic on two lines, Japanese. */
const CUES: readonly Cue[] = [
  { start: 1.0, end: 2.4, lines: ['Grüße, déjà vu — ça coûte 5 €'] },
  { start: 3.0, end: 4.2, lines: ['Привет, мир', 'Съешь же ещё этих булок'] },
  { start: 5.0, end: 6.8, lines: ['日本語の字幕です'] },
];
/**
 * SCC carries EIA-608 captions, whose character set is ASCII's but for nine code points and a few
 * accented letters: its sample is plain English, one cue on two rows.
 */
const SCC_CUES: readonly Cue[] = [
  { start: 1.0, end: 2.4, lines: ['Hello, world.'] },
  { start: 3.0, end: 4.2, lines: ['Two rows here', 'and the second one'] },
  { start: 5.0, end: 6.8, lines: ['Third caption!'] },
];
/** The cues a source's sample holds. */
const cuesOf = (source: string) => (source === 'scc' ? SCC_CUES : CUES);
/** LRC holds one line per time: a cue's lines are joined by a space there, on either side. */
const joinerOf = (source: string, target: string) => (source === 'lrc' || target === 'lrc' ? ' ' : '\n');

const pad = (value: number, width = 2) => String(value).padStart(width, '0');
function clock(seconds: number, separator: string, fractionDigits = 3): string {
  const whole = Math.floor(seconds + 1e-9);
  const fraction = Math.round((seconds - whole) * 10 ** fractionDigits);
  return `${pad(Math.floor(whole / 3600))}:${pad(Math.floor(whole / 60) % 60)}:${pad(whole % 60)}${separator}${pad(fraction, fractionDigits)}`;
}
const ASS_STYLES = 'Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding\nStyle: Default,Arial,20,&H00FFFFFF,&H000000FF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,2,0,2,10,10,10,1';
const SSA_STYLES = 'Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, TertiaryColour, BackColour, Bold, Italic, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, AlphaLevel, Encoding\nStyle: Default,Arial,20,16777215,65535,0,0,0,0,1,2,0,2,10,10,10,0,1';

/** A subtitle file of `format` holding `cues`, written by hand the way its specification or its usual tools write it. */
function writeSubtitles(format: string, cues: readonly Cue[] = CUES): string {
  const centi = (seconds: number) => clock(seconds, '.', 2).replace(/^0/, '');
  switch (format) {
    case 'srt': return cues.map((cue, i) => `${i + 1}\n${clock(cue.start, ',')} --> ${clock(cue.end, ',')}\n${cue.lines.join('\n')}\n`).join('\n');
    case 'vtt': return `WEBVTT\n\n${cues.map((cue) => `${clock(cue.start, '.')} --> ${clock(cue.end, '.')}\n${cue.lines.join('\n')}\n`).join('\n')}`;
    case 'ass': return `[Script Info]\nScriptType: v4.00+\nPlayResX: 384\nPlayResY: 288\n\n[V4+ Styles]\n${ASS_STYLES}\n\n[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n${
      cues.map((cue) => `Dialogue: 0,${centi(cue.start)},${centi(cue.end)},Default,,0,0,0,,${cue.lines.join('\\N')}\n`).join('')}`;
    // Version 4, without a script resolution (as the corpus's SSA and most old files).
    case 'ssa': return `[Script Info]\nScriptType: v4.00\n\n[V4 Styles]\n${SSA_STYLES}\n\n[Events]\nFormat: Marked, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n${
      cues.map((cue) => `Dialogue: Marked=0,${centi(cue.start)},${centi(cue.end)},Default,,0000,0000,0000,,${cue.lines.join('\\N')}\n`).join('')}`;
    // Frames at 25 a second, which the first line declares.
    case 'sub': return `{1}{1}25\n${cues.map((cue) => `{${Math.round(cue.start * 25)}}{${Math.round(cue.end * 25)}}${cue.lines.join('|')}\n`).join('')}`;
    case 'mpl2': return cues.map((cue) => `[${Math.round(cue.start * 10)}][${Math.round(cue.end * 10)}]${cue.lines.join('|')}\n`).join('');
    case 'smi': return `<SAMI>\n<HEAD>\n<TITLE>Sample</TITLE>\n<STYLE TYPE="text/css"><!--\nP { font-family: Arial; }\n.ENCC { Name: English; lang: en-US; }\n--></STYLE>\n</HEAD>\n<BODY>\n${
      cues.map((cue) => `<SYNC Start=${Math.round(cue.start * 1000)}><P Class=ENCC>${cue.lines.join('<br>')}\n<SYNC Start=${Math.round(cue.end * 1000)}><P Class=ENCC>&nbsp;\n`).join('')}</BODY>\n</SAMI>\n`;
    // JACOsub at its default 30 frames a second: "H:MM:SS.FF", a line break written \n.
    case 'jss': return `#TITLE Sample\n#TIMERES 30\n\n${cues.map((cue) => `${jacoTime(cue.start)} ${jacoTime(cue.end)} D ${cue.lines.join('\\n')}\n`).join('')}`;
    case 'scc': return sccFile(cues);
    // PJS in tenths of a second, its lines apart by "|".
    case 'pjs': return cues.map((cue) => `${Math.round(cue.start * 10)},${Math.round(cue.end * 10)},"${cue.lines.join('|')}"\n`).join('');
    case 'rt': return `<window duration="00:01:00.00" wordwrap="true" bgcolor="black">\n${
      cues.map((cue) => `<time begin="${centi(cue.start)}" end="${centi(cue.end)}"/><clear/>${cue.lines.join('<br/>')}\n`).join('')}</window>\n`;
    // VPlayer has start times only: an empty line at a cue's end clears it.
    case 'vplayer': return cues.map((cue) => `${clock(cue.start, '.', 2)}:${cue.lines.join('|')}\n${clock(cue.end, '.', 2)}:\n`).join('');
    // AQTitle: frames at 25 a second; an empty cue clears.
    case 'aqt': return cues.map((cue) => `-->> ${Math.round(cue.start * 25)}\n${cue.lines.join('\n')}\n-->> ${Math.round(cue.end * 25)}\n\n`).join('');
    case 'lrc': return `[ti:Sample]\n[ar:convertd]\n[length:00:10]\n${cues.map((cue) => `${lrcTime(cue.start)}${cue.lines.join(' ')}\n${lrcTime(cue.end)}\n`).join('')}`;
    case 'subviewer': return `[INFORMATION]\n[TITLE]Sample\n[AUTHOR]convertd\n[END INFORMATION]\n[SUBTITLE]\n${
      cues.map((cue) => `${centi(cue.start).padStart(11, '0')},${centi(cue.end).padStart(11, '0')}\n${cue.lines.join('[br]')}\n`).join('\n')}`;
    default: throw new Error(`no writer for ${format}`);
  }
}

function jacoTime(seconds: number): string {
  const whole = Math.floor(seconds + 1e-9);
  return `${Math.floor(whole / 3600)}:${pad(Math.floor(whole / 60) % 60)}:${pad(whole % 60)}.${pad(Math.round((seconds - whole) * 30))}`;
}
function lrcTime(seconds: number): string {
  const hundredths = Math.round(seconds * 100);
  return `[${pad(Math.floor(hundredths / 6000))}:${pad(Math.floor(hundredths / 100) % 60)}.${pad(hundredths % 100)}]`;
}

/**
 * Scenarist SCC, as caption tools write pop-on captions: each caption is loaded off screen half a
 * second early (erase non-displayed memory, resume caption loading, a row address and the text as
 * EIA-608 byte pairs, odd parity), shown at its start (end of caption) and erased at its end. Time
 * codes are frames at 30 a second, which the sample's times are whole numbers of.
 */
function sccFile(cues: readonly Cue[]): string {
  const parity = (byte: number) => (byte.toString(2).split('1').length % 2 === 1 ? byte | 0x80 : byte);
  const word = (a: number, b: number) => `${parity(a).toString(16).padStart(2, '0')}${parity(b).toString(16).padStart(2, '0')}`;
  const text = (line: string) => {
    const codes = [...line].map((char) => char.charCodeAt(0));
    const words: string[] = [];
    for (let i = 0; i < codes.length; i += 2) words.push(i + 1 < codes.length ? word(codes[i]!, codes[i + 1]!) : `${parity(codes[i]!).toString(16)}80`);
    return words;
  };
  const timecode = (seconds: number) => {
    const frames = Math.round(seconds * 30);
    return `00:${pad(Math.floor(frames / 1800))}:${pad(Math.floor(frames / 30) % 60)}:${pad(frames % 30)}`;
  };
  // Row addresses (column 0, white) of rows 14 and 15, the bottom two.
  const rows = [[0x14, 0x50], [0x14, 0x70]] as const;
  const lines = ['Scenarist_SCC V1.0', ''];
  for (const cue of cues) {
    const load = ['94ae', '94ae', '9420', '9420'];
    cue.lines.forEach((line, i) => {
      const [a, b] = rows[rows.length - cue.lines.length + i]!;
      load.push(word(a, b), word(a, b), ...text(line));
    });
    lines.push(`${timecode(cue.start - 0.5)}\t${load.join(' ')}`, '', `${timecode(cue.start)}\t942f 942f`, '', `${timecode(cue.end)}\t942c 942c`, '');
  }
  return lines.join('\n');
}

let server: RunningServer;
let catalogue: readonly CatalogueEntry[];
let dir: string;
const videos: Record<string, Promise<Buffer>> = {};

/** A 7-second 160x120 clip at 5 frames a second whose first subtitle stream holds CUES (and a second, other one after it). */
async function makeVideo(format: string): Promise<Buffer> {
  const srt = path.join(dir, `for-${format}.srt`);
  const other = path.join(dir, `other-${format}.srt`);
  await fs.writeFile(srt, writeSubtitles('srt'));
  await fs.writeFile(other, writeSubtitles('srt', [{ start: 0.2, end: 0.8, lines: ['the second stream'] }]));
  const codec = format === 'webm' ? ['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-c:s', 'webvtt']
    : format === 'mkv' ? ['-c:v', 'libx264', '-preset', 'ultrafast', '-c:s', 'srt']
      : ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:s', 'mov_text', ...(format === 'm4v' ? ['-f', 'ipod'] : [])];
  const file = path.join(dir, `sample.${format}`);
  await run('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'color=c=gray:s=160x120:r=5:d=7', '-i', srt, '-i', other,
    '-map', '0:v', '-map', '1:s', '-map', '2:s', ...codec, '-y', file]);
  return fs.readFile(file);
}
function video(format: string): Promise<Buffer> {
  videos[format] ??= makeVideo(format);
  return videos[format];
}

interface Read { cues?: Array<{ start: number; end: number; text: string }>; tags?: string[]; error?: string }
/** Our parsers' reading of each file (one Python process for them all). */
async function readSubtitles(files: string[]): Promise<Record<string, Read>> {
  const { stdout } = await run(PYTHON, [READER, ...files], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as Record<string, Read>;
}
async function readOne(bytes: Buffer, format: string): Promise<Read> {
  const file = await writeTemp(bytes, `out.${format}`);
  const read = (await readSubtitles([file]))[file]!;
  assert.equal(read.error, undefined, `our ${format} parser read the output: ${read.error}\n${bytes.toString('utf8').slice(0, 2000)}`);
  return read;
}

/** The output holds the sample's cues: same text, line for line (or joined by `joiner`), and times within the tolerance. */
function assertCues(read: Read, expected: readonly Cue[], where: string, joiner = '\n', tolerance = TIME_TOLERANCE): void {
  const cues = read.cues!;
  assert.deepEqual(cues.map((cue) => cue.text), expected.map((cue) => cue.lines.join(joiner)), `${where}: the cues' text`);
  for (const [i, cue] of cues.entries()) {
    assert.ok(Math.abs(cue.start - expected[i]!.start) <= tolerance, `${where}: cue ${i + 1} starts at ${cue.start}, not ${expected[i]!.start}`);
    assert.ok(Math.abs(cue.end - expected[i]!.end) <= tolerance, `${where}: cue ${i + 1} ends at ${cue.end}, not ${expected[i]!.end}`);
  }
}

before(async () => {
  dir = await tempDir('convertd-subtitles-');
  server = await startServer({ CONVERTD_RATE_LIMITS: 'off' });
  catalogue = await fetchCatalogue(server.url);
});
after(async () => {
  await server.stop();
});

test('the catalogue lists the subtitle formats, each read to every target ffmpeg writes, and the videos\' subtitles', () => {
  const entry = (id: string) => catalogue.find((format) => format.id === id);
  for (const id of [...SOURCES, 'ttml']) assert.equal(entry(id)?.category, 'subtitle', id);
  for (const source of SOURCES) assert.deepEqual([...entry(source)!.targets].sort(), TARGETS.filter((t) => t !== source).sort(), source);
  // TTML is written only (ffmpeg 5.1 has no TTML demuxer).
  assert.deepEqual(entry('ttml')!.targets, []);
  for (const source of VIDEOS) {
    for (const target of TARGETS) assert.ok(entry(source)!.targets.includes(target), `${source} → ${target}`);
  }
  // A route never continues from a subtitle file, nor goes through one.
  for (const format of catalogue.filter((f) => f.category !== 'subtitle' && !VIDEOS.includes(f.id))) {
    assert.deepEqual(format.targets.filter((t) => TARGETS.includes(t)), [], `${format.id} has no subtitle target`);
  }
});

describe('every subtitle file converts to every target, keeping each cue\'s text and times', { concurrency: 4 }, () => {
  for (const source of SOURCES) {
    for (const target of TARGETS.filter((t) => t !== source)) {
      test(`${source} → ${target}`, async () => {
        // Named .txt: the content tells the format (MicroDVD and SubViewer files share .sub, MPL2's are .txt).
        const { record, bytes } = await convert(server.url, Buffer.from(writeSubtitles(source, cuesOf(source))), 'captions.txt', target);
        assert.equal(record.source, source, 'recognised by its content');
        assertCues(await readOne(bytes, target), cuesOf(source), `${source} → ${target}`, joinerOf(source, target), source === 'scc' ? SCC_TOLERANCE : TIME_TOLERANCE);
      });
    }
  }
});

describe('the first subtitle stream of every video container converts to every target', { concurrency: 4 }, () => {
  for (const source of VIDEOS) {
    for (const target of TARGETS) {
      test(`${source} → ${target}`, async () => {
        const { record, bytes } = await convert(server.url, await video(source), `clip.${source}`, target);
        assert.equal(record.source, source);
        assertCues(await readOne(bytes, target), CUES, `${source} → ${target}`, joinerOf(source, target));
      });
    }
  }
});

test('SubRip in Windows-1252 and in UTF-16 (with its byte-order mark) comes out as the same text', async () => {
  const latin = CUES.slice(0, 1);
  const utf16le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(writeSubtitles('srt'), 'utf16le')]);
  const utf16be = Buffer.from(utf16le.subarray(2)).swap16();
  const uploads: Array<[string, Buffer, readonly Cue[]]> = [
    // "—" is 0x97 and "€" 0x80 in Windows-1252 (Latin-1 has neither): a decoder taking Latin-1 would show control characters.
    ['Windows-1252', Buffer.from(writeSubtitles('srt', latin).replace('—', '\x97').replace('€', '\x80').replaceAll('\n', '\r\n'), 'latin1'), latin],
    ['UTF-16LE', utf16le, CUES],
    ['UTF-16BE', Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be]), CUES],
  ];
  await Promise.all(uploads.map(async ([encoding, data, cues]) => {
    for (const target of ['vtt', 'ass']) {
      const { record, bytes } = await convert(server.url, data, 'film.srt', target);
      assert.equal(record.source, 'srt', encoding);
      assertCues(await readOne(bytes, target), cues, `${encoding} → ${target}`);
    }
  }));
});

test('a video without subtitles, and subtitles without cues, end in conversion_failed, never an empty file', async () => {
  const file = path.join(dir, 'silent.mp4');
  await run('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'color=c=gray:s=160x120:r=5:d=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-y', file]);
  const cases: Array<[Buffer, string, RegExp]> = [
    [await fs.readFile(file), 'clip.mp4', /no subtitle stream/],
    [Buffer.from('WEBVTT\n\nNOTE nothing to show\n'), 'empty.vtt', /no cue/],
  ];
  for (const [data, name, message] of cases) {
    const jobId = await submitOk(server.url, data, name, 'srt');
    const { final } = await waitForJob(server.url, jobId);
    assert.equal(final.status, 'error', name);
    assert.equal(final.error?.code, 'conversion_failed', name);
    assert.match(final.error!.message, message);
  }
});

test('a million cues are refused before ffmpeg holds them all (input_too_complex)', async () => {
  // MicroDVD's shortest cue is a line of a few bytes: a million of them are 12 MB, under the
  // upload limit and the subtitle size cap, so the cue cap is what refuses them.
  const lines: string[] = [];
  for (let i = 0; i < 1_000_000; i++) lines.push(`{${i}}{}x`);
  const jobId = await submitOk(server.url, Buffer.from(`${lines.join('\n')}\n`), 'many.sub', 'srt');
  const { final } = await waitForJob(server.url, jobId);
  assert.equal(final.status, 'error');
  assert.equal(final.error?.code, 'input_too_complex');
  // The service's own count of the cues, made before ffmpeg runs (ffmpeg took 23 s and 520 MB for
  // a million SubRip cues), says so; how fast is for the benchmark, not for a test on a busy machine.
  assert.match(final.error!.message, /more than 100000 cues/);
});

test('markup and script in a subtitle\'s text stay text in WebVTT and TTML, and nothing is read from other files', async () => {
  const hostile = '<script>alert(1)</script> 1 < 2 && 3 > 2 --> <img src=x onerror=alert(2)>';
  const ass = writeSubtitles('ass', [{ start: 1, end: 2, lines: [hostile] }, { start: 3, end: 4, lines: ['plain'] }]);
  // WebVTT's own escapes decode to the same characters (ffmpeg's reader turns them back into text).
  const vtt = `WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n&lt;script&gt;alert(1)&lt;/script&gt; &amp;\n\n00:00:03.000 --> 00:00:04.000\nplain\n`;
  for (const [name, data, text] of [['hostile.ass', ass, hostile], ['hostile.vtt', vtt, '<script>alert(1)</script> &']] as const) {
    for (const target of ['vtt', 'ttml'].filter((t) => !name.endsWith(t))) {
      const { bytes } = await convert(server.url, Buffer.from(data), name, target);
      const read = await readOne(bytes, target);
      assert.equal(read.cues![0]!.text, text, `${name} → ${target}: the text as text`);
      assert.deepEqual(read.tags!.filter((tag) => !['body', 'div', 'p', 'span', 'br'].includes(tag)), [], `${name} → ${target}: no markup but the format's own`);
      assert.doesNotMatch(bytes.toString('utf8'), /<script|<img/i);
    }
  }
  // SAMI is HTML-like: a stylesheet link and an image naming files outside the upload are not followed.
  const sami = '<SAMI><HEAD><LINK rel="stylesheet" href="/etc/passwd"><STYLE>@import url(file:///etc/passwd);</STYLE></HEAD><BODY>\n<SYNC Start=1000><P><img src="file:///etc/passwd">seen\n<SYNC Start=2000><P>&nbsp;\n</BODY></SAMI>\n';
  const { bytes } = await convert(server.url, Buffer.from(sami), 'links.smi', 'srt');
  const read = await readOne(bytes, 'srt');
  assert.deepEqual(read.cues!.map((cue) => cue.text), ['seen']);
  assert.doesNotMatch(bytes.toString('utf8'), /root:/);
  // A playlist dressed as SubRip has no subtitle signature: refused at upload, ffmpeg never opens it.
  const playlist = '#EXTM3U\n#EXTINF:1,\n/etc/passwd\n#EXT-X-ENDLIST\n';
  await expectError(await submit(server.url, Buffer.from(playlist), 'film.srt', 'vtt'), 415, 'unsupported_format');
});

describe('hostile: the third wave\'s subtitle formats', { concurrency: 2 }, () => {
  test('each in Windows-1252 and in UTF-16 (with its byte-order mark) comes out as the same text', async () => {
    const latin = CUES.slice(0, 1);
    await Promise.all(['jss', 'pjs', 'rt', 'vplayer', 'aqt', 'lrc'].map(async (source) => {
      const uploads: Array<[string, Buffer, readonly Cue[]]> = [
        ['Windows-1252', Buffer.from(writeSubtitles(source, latin).replace('—', '\x97').replace('€', '\x80').replaceAll('\n', '\r\n'), 'latin1'), latin],
        ['UTF-16LE', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(writeSubtitles(source), 'utf16le')]), CUES],
      ];
      for (const [encoding, data, cues] of uploads) {
        const { record, bytes } = await convert(server.url, data, `lyrics.${source}`, 'srt');
        assert.equal(record.source, source, `${source} in ${encoding}`);
        assertCues(await readOne(bytes, 'srt'), cues, `${source} in ${encoding} → srt`, joinerOf(source, 'srt'));
      }
    }));
  });

  test('a million cues are refused at once (input_too_complex), a line of LRC time stamps counting one each', async () => {
    const many = 1_000_000;
    const uploads: Array<[string, string]> = [
      // Every time stamp of a line is a cue of its own: one line of a million is a million cues.
      ['chorus.lrc', `[ti:x]\n${'[00:01.00]'.repeat(many)}la\n`],
      ['many.vplayer', Array.from({ length: many }, (_, i) => `0:00:${pad(i % 60)}:x\n`).join('')],
      ['many.pjs', Array.from({ length: many }, () => '1,2,"x"\n').join('')],
    ];
    for (const [name, text] of uploads) {
      const jobId = await submitOk(server.url, Buffer.from(text), name, 'srt');
      const { final } = await waitForJob(server.url, jobId);
      assert.equal(final.error?.code, 'input_too_complex', name);
      assert.match(final.error!.message, /more than 100000 cues/, name);
    }
  });

  test('a playlist or concat script named as one of them is refused at submission', async () => {
    const playlist = '#EXTM3U\n#EXTINF:1,\n/etc/passwd\n#EXT-X-ENDLIST\n';
    const concat = 'ffconcat version 1.0\nfile /etc/passwd\n';
    for (const ext of ['jss', 'scc', 'pjs', 'rt', 'vplayer', 'aqt', 'lrc']) {
      for (const text of [playlist, concat]) await expectError(await submit(server.url, Buffer.from(text), `film.${ext}`, 'srt'), 415, 'unsupported_format');
    }
  });

  test('behind one of their signatures, a playlist or an include is read as text at most, never followed', async () => {
    const playlist = '#EXTM3U\n#EXTINF:1,\nfile:/etc/passwd\n#EXT-X-ENDLIST\nffconcat version 1.0\nfile /etc/passwd\n';
    const uploads: Array<[string, string]> = [
      ['x.scc', `Scenarist_SCC V1.0\n\n${playlist}`],
      ['x.aqt', `-->> 25\n${playlist}-->> 50\n\n`],
      ['x.rt', `<window>\n<time begin="1"/>${playlist}</window>`],
      // JACOsub's #INCLUDE names another file to read: ffmpeg's reader ignores it.
      ['x.jss', '#INCLUDE /etc/passwd\n#INCLUDE ../inputs/other.jss\n0:00:01.00 0:00:02.00 D shown\n'],
      ['x.lrc', `[ti:x]\n[00:01.00]${playlist.split('\n').join('\n[00:01.50]')}\n`],
    ];
    for (const [name, text] of uploads) {
      const jobId = await submitOk(server.url, Buffer.from(text), name, 'vtt');
      const { final } = await waitForJob(server.url, jobId);
      if (final.status === 'error') {
        assert.ok(['corrupt_input', 'conversion_failed'].includes(final.error!.code), `${name}: ${final.error!.code}`);
        continue;
      }
      const out = (await download(server.url, final.download_url!)).bytes.toString('utf8');
      assert.doesNotMatch(out, /root:/, name);
      if (name === 'x.jss') assert.deepEqual((await readOne(Buffer.from(out), 'vtt')).cues!.map((cue) => cue.text), ['shown']);
    }
  });
});

const CORPUS_FAMILIES = ['srt', 'vtt', 'ass', 'sub'];
describe('the corpus\'s subtitle files convert to every target with all their cues', { skip: !existsSync(CORPUS) && 'no ../shared/corpus', concurrency: 4 }, () => {
  const files = existsSync(CORPUS) ? [
    ...CORPUS_FAMILIES.flatMap((family) => (existsSync(path.join(CORPUS, family)) ? readdir(path.join(CORPUS, family)) : []).map((name) => path.join(family, name))),
    'mkv/androidx-sample-with-srt.mkv',
  ] : [];
  for (const file of files) {
    test(file, async () => {
      const data = await fs.readFile(path.join(CORPUS, file));
      const results = await Promise.all(TARGETS.map(async (target) => ({ target, ...await convertAllowingSelf(data, path.basename(file), target) })));
      const outputs = await Promise.all(results.filter((r) => r.bytes).map(async (r) => writeTemp(r.bytes!, `out.${r.target}`)));
      const reads = await readSubtitles(outputs);
      const counts = outputs.map((out) => {
        const read = reads[out]!;
        assert.equal(read.error, undefined, `${file} → ${path.extname(out)}: ${read.error}`);
        assert.ok(read.cues!.length > 0 && read.cues!.every((cue) => cue.end >= cue.start), `${file} → ${path.extname(out)}: cues in order`);
        return read.cues!.length;
      });
      // Every target holds as many cues as the others (srt and vtt are exact; the first is the reference).
      assert.ok(counts.every((count) => count === counts[0]), `${file}: cue counts ${JSON.stringify(counts)}`);
    });
  }
});

/** Synchronous: the describe callback lists the tests before any of them runs. */
function readdir(folder: string): string[] {
  return readdirSync(folder).sort();
}

/** A corpus file to `target`; its own format is not a target (srt → srt), then nothing is converted. */
async function convertAllowingSelf(data: Buffer, name: string, target: string): Promise<{ bytes?: Buffer }> {
  if (path.extname(name).slice(1) === target) return {};
  return { bytes: (await convert(server.url, data, name, target)).bytes };
}
