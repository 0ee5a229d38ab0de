// The audio and video containers added for issue #30: formats ffmpeg 5.1 reads (and most of them
// writes) beyond the common ones of formats.ts. Each is recognised by its content: file-type knows
// ADTS AAC, WavPack, Monkey's Audio, CAF, Creative Voice, MPEG audio layer II, Ogg Speex, MPEG-TS,
// MXF, RealMedia and SWF; the signatures below are for those it does not know. Formats that share a
// container's signature (Matroska audio, WebM audio, F4V, VOB, raw MJPEG) are told by the upload's name.
import { isUtf8 } from 'node:buffer';
import type { FormatDefinition } from '../../formats/catalogue.ts';

const startsWith = (head: Buffer, bytes: readonly number[]) => bytes.every((byte, index) => head[index] === byte);

/** Sony Wave64: the "riff" GUID, a 64-bit size, then the "wave" GUID. */
const W64_RIFF = [0x72, 0x69, 0x66, 0x66, 0x2e, 0x91, 0xcf, 0x11, 0xa5, 0xd6, 0x28, 0xdb, 0x04, 0xc1, 0x00, 0x00];
const W64_WAVE = [0x77, 0x61, 0x76, 0x65, 0xf3, 0xac, 0xd3, 0x11, 0x8c, 0xd1, 0x00, 0xc0, 0x4f, 0x8e, 0xdb, 0x8a];

/** DTS's core sync word, in the four byte orders and word sizes raw .dts files use (16- and 14-bit, big- and little-endian). */
const DTS_SYNC = [[0x7f, 0xfe, 0x80, 0x01], [0xfe, 0x7f, 0x01, 0x80], [0x1f, 0xff, 0xe8, 0x00], [0xff, 0x1f, 0x00, 0xe8]];

/** A raw GSM 06.10 file is 33-byte frames, each starting with the nibble 0xD; no header at all. */
const GSM_FRAME = 33;
/** Frames that must all start so before a file is taken as GSM (a chance of 16^-12 for random bytes). */
const GSM_MIN_FRAMES = 12;

/**
 * Raw GSM: every whole frame in the head starts with 0xD_, and the bytes are not UTF-8 text (a
 * Cyrillic text's lead bytes are 0xD0-0xD1, and could fall on every 33rd byte of a short file).
 * The last three bytes are left out of the text test: the head may cut a character in two.
 */
function isGsm(head: Buffer): boolean {
  const frames = Math.floor(head.length / GSM_FRAME);
  if (frames < GSM_MIN_FRAMES) return false;
  for (let frame = 0; frame < frames; frame++) {
    if ((head[frame * GSM_FRAME]! & 0xf0) !== 0xd0) return false;
  }
  return !isUtf8(head.subarray(0, head.length - 3));
}

/**
 * A DV DIF stream starts with a header block: section type 0x1F, 0x07, 0x00, then 0x3F for the
 * 525-line (NTSC) system or 0xBF for 625 lines (PAL), as ffmpeg's own probe checks.
 */
const isDv = (head: Buffer) => head.length >= 4 && head[0] === 0x1f && head[1] === 0x07 && head[2] === 0x00 && (head[3]! & 0x7f) === 0x3f;

/**
 * CRI ADX: 0x80 0x00, the offset of the sound data (big-endian), and the copyright mark "(c)CRI"
 * in the six bytes before that offset, as ffmpeg's probe checks.
 */
function isAdx(head: Buffer): boolean {
  if (head.length < 4 || head[0] !== 0x80 || head[1] !== 0x00) return false;
  const offset = head.readUInt16BE(2);
  return offset >= 4 && head.toString('latin1', offset - 2, offset + 4) === '(c)CRI';
}

/** Berkeley/IRCAM/CARL: the magic 64 A3 0n 00 (n = 1-4, the machine it was written on), in either byte order. */
function isIrcam(head: Buffer): boolean {
  const [a, b, c, d] = [head[0], head[1], head[2], head[3]];
  const machine = (n: number | undefined) => n !== undefined && n >= 1 && n <= 4;
  return (a === 0x64 && b === 0xa3 && machine(c) && d === 0x00) || (a === 0x00 && machine(b) && c === 0xa3 && d === 0x64);
}

/**
 * Raw H.264 and HEVC (Annex B byte streams) start with a start code, 00 00 00 01 (or 00 00 01),
 * and the first NAL unit's header: an H.264 stream opens with an access unit delimiter (09), a
 * parameter set (67, 27 or 47: SPS at each reference level) or an SEI (06); an HEVC one with a
 * VPS (40 01), an SPS (42 01), a delimiter (46 01) or an SEI (4E 01). The two sets share no first
 * byte, and neither is an MPEG stream's start code (00 00 01 B3 / BA).
 */
function nalAfterStartCode(head: Buffer): Buffer | undefined {
  if (startsWith(head, [0x00, 0x00, 0x00, 0x01])) return head.subarray(4);
  if (startsWith(head, [0x00, 0x00, 0x01])) return head.subarray(3);
  return undefined;
}
const H264_FIRST_NAL = new Set([0x09, 0x67, 0x27, 0x47, 0x06]);
const HEVC_FIRST_NAL = new Set([0x40, 0x42, 0x46, 0x4e]);
const isH264 = (head: Buffer) => {
  const nal = nalAfterStartCode(head);
  return nal !== undefined && nal.length > 1 && H264_FIRST_NAL.has(nal[0]!);
};
const isHevc = (head: Buffer) => {
  const nal = nalAfterStartCode(head);
  return nal !== undefined && nal.length > 1 && HEVC_FIRST_NAL.has(nal[0]!) && nal[1] === 0x01;
};

/** GXF: a MAP packet first, its header's leader 00 00 00 00 01 BC and trailer E1 E2 at bytes 14-15, as ffmpeg's probe checks. */
const isGxf = (head: Buffer) => startsWith(head, [0, 0, 0, 0, 1, 0xbc]) && startsWith(head.subarray(10), [0, 0, 0, 0, 0xe1, 0xe2]);

/** Windows Television: the file starts with WTV's header GUID. */
const WTV_GUID = [0xb7, 0xd8, 0x00, 0x20, 0x37, 0x49, 0xda, 0x11, 0xa6, 0x4e, 0x00, 0x07, 0xe9, 0x5e, 0xad, 0x8d];

/**
 * Westwood Studios AUD (Command & Conquer and kin): a 12-byte header (rate 8-48 kHz, sizes, flags,
 * codec 1 or 99), then the first chunk's marker 0x0000DEAF at byte 16, as ffmpeg's probe checks.
 */
function isWestwoodAud(head: Buffer): boolean {
  if (head.length < 20) return false;
  const rate = head.readUInt16LE(0);
  return rate >= 8000 && rate <= 48_000 && (head[10]! & ~3) === 0 && (head[11] === 1 || head[11] === 99) && head.readUInt32LE(16) === 0x0000deaf;
}

/**
 * Lego Mindstorms RSO: an 8-byte header, big-endian: the codec (0x0100 8-bit PCM, 0x0101 IMA
 * ADPCM), the data's size, the sample rate, and two zero bytes; ffmpeg has no probe for it. Weak on
 * its own, so the rate must be a real one (2-48 kHz) and, for a file that fits in the head, the
 * size must be the bytes after the header.
 */
function isRso(head: Buffer): boolean {
  if (head.length < 9 || head[0] !== 0x01 || (head[1] !== 0x00 && head[1] !== 0x01) || head[6] !== 0 || head[7] !== 0) return false;
  const size = head.readUInt16BE(2);
  const rate = head.readUInt16BE(4);
  const whole = head.length < 8192;
  return size > 0 && rate >= 2000 && rate <= 48_000 && (whole ? size === head.length - 8 : true);
}

export const MEDIA_CONTAINERS: readonly FormatDefinition[] = [
  // Audio.
  { id: 'aac', name: 'AAC audio (ADTS stream)', category: 'audio', mediaType: 'audio/aac', extensions: ['aac', 'adts'], detect: 'magic' },
  { id: 'wv', name: 'WavPack audio', category: 'audio', mediaType: 'audio/x-wavpack', extensions: ['wv'], detect: 'magic' },
  { id: 'ape', name: "Monkey's Audio", category: 'audio', mediaType: 'audio/x-ape', extensions: ['ape'], detect: 'magic' },
  { id: 'tta', name: 'True Audio (TTA)', category: 'audio', mediaType: 'audio/x-tta', extensions: ['tta'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === 'TTA1' },
  // A Matroska file is Matroska whatever it holds: the name tells sound-only files apart.
  { id: 'mka', name: 'Matroska audio', category: 'audio', mediaType: 'audio/x-matroska', extensions: ['mka'], detect: 'magic', signatureOf: 'mkv', nameDecides: true },
  { id: 'caf', name: 'Apple Core Audio Format', category: 'audio', mediaType: 'audio/x-caf', extensions: ['caf'], detect: 'magic' },
  { id: 'au', name: 'Sun/NeXT audio (AU)', category: 'audio', mediaType: 'audio/basic', extensions: ['au', 'snd'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === '.snd' },
  { id: 'voc', name: 'Creative Voice audio', category: 'audio', mediaType: 'audio/x-voc', extensions: ['voc'], detect: 'magic' },
  { id: 'mp2', name: 'MPEG audio layer II', category: 'audio', mediaType: 'audio/mpeg', extensions: ['mp2', 'mpa'], detect: 'magic' },
  { id: 'dts', name: 'DTS audio', category: 'audio', mediaType: 'audio/vnd.dts', extensions: ['dts'], detect: 'magic', signature: (head) => DTS_SYNC.some((sync) => startsWith(head, sync)) },
  { id: 'spx', name: 'Ogg Speex audio', category: 'audio', mediaType: 'audio/ogg', extensions: ['spx'], detect: 'magic' },
  { id: 'gsm', name: 'GSM 06.10 audio (raw)', category: 'audio', mediaType: 'audio/x-gsm', extensions: ['gsm'], detect: 'magic', signature: isGsm },
  { id: 'w64', name: 'Sony Wave64 audio', category: 'audio', mediaType: 'audio/x-w64', extensions: ['w64'], detect: 'magic', signature: (head) => startsWith(head, W64_RIFF) && startsWith(head.subarray(24), W64_WAVE) },
  { id: 'weba', name: 'WebM audio (Opus)', category: 'audio', mediaType: 'audio/webm', extensions: ['weba'], detect: 'magic', signatureOf: 'webm', nameDecides: true },
  // Wave 2, read only (engine.ts says why). E-AC-3 shares AC-3's sync word: file-type calls both ac3, the name tells.
  { id: 'eac3', name: 'Dolby Digital Plus (E-AC-3) audio', category: 'audio', mediaType: 'audio/eac3', extensions: ['eac3', 'ec3'], detect: 'magic', signatureOf: 'ac3', nameDecides: true },
  { id: 'adx', name: 'CRI ADX audio', category: 'audio', mediaType: 'audio/x-adx', extensions: ['adx'], detect: 'magic', signature: isAdx },
  // SoX's own format: ".SoX" written little-endian, "XoS." big-endian.
  { id: 'sox', name: 'SoX native audio', category: 'audio', mediaType: 'audio/x-sox', extensions: ['sox'], detect: 'magic', signature: (head) => ['.SoX', 'XoS.'].includes(head.toString('latin1', 0, 4)) },
  { id: 'ircam', name: 'Berkeley/IRCAM/CARL sound', category: 'audio', mediaType: 'audio/x-ircam', extensions: ['sf', 'ircam'], detect: 'magic', signature: isIrcam },
  // NIST SPHERE: a text header of 1024 bytes (usually) that starts with its name, then the samples.
  { id: 'nist', name: 'NIST SPHERE audio', category: 'audio', mediaType: 'audio/x-nist', extensions: ['nist', 'sph'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 8) === 'NIST_1A\n' },
  { id: 'mmf', name: 'Yamaha SMAF audio (MMF)', category: 'audio', mediaType: 'application/vnd.smaf', extensions: ['mmf'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === 'MMMD' },
  // Wave 3, read only (engine.ts says why): a GameCube/Wii stream, a Lego Mindstorms sound, a Westwood game's.
  { id: 'ast', name: 'AST audio (Nintendo)', category: 'audio', mediaType: 'audio/x-ast', extensions: ['ast'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === 'STRM' },
  { id: 'rso', name: 'Lego Mindstorms RSO audio', category: 'audio', mediaType: 'audio/x-rso', extensions: ['rso'], detect: 'magic', signature: isRso },
  { id: 'aud', name: 'Westwood Studios audio (AUD)', category: 'audio', mediaType: 'audio/x-westwood-aud', extensions: ['aud'], detect: 'magic', signature: isWestwoodAud },
  // Video. An M2TS (Blu-ray, AVCHD .mts) is a transport stream with 4-byte time codes before each
  // packet: read as one; written, the result is a plain TS.
  { id: 'ts', name: 'MPEG transport stream (TS, M2TS/MTS)', category: 'video', mediaType: 'video/mp2t', extensions: ['ts', 'm2ts', 'mts', 'm2t'], detect: 'magic' },
  { id: 'mxf', name: 'Material Exchange Format (MXF)', category: 'video', mediaType: 'application/mxf', extensions: ['mxf'], detect: 'magic' },
  // Not `.dif`, DV's other extension: it names the spreadsheet Data Interchange Format (LibreOffice's `dif`). A DV file is told by its content whatever its name.
  { id: 'dv', name: 'DV video', category: 'video', mediaType: 'video/x-dv', extensions: ['dv'], detect: 'magic', signature: isDv },
  { id: 'vob', name: 'DVD video object (VOB)', category: 'video', mediaType: 'video/x-ms-vob', extensions: ['vob'], detect: 'magic', signatureOf: 'mpeg', nameDecides: true },
  { id: 'nut', name: 'NUT video', category: 'video', mediaType: 'video/x-nut', extensions: ['nut'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 25) === 'nut/multimedia container\0' },
  // ffmpeg writes F4V with an MP4 brand; Adobe's own files say "F4V ", which file-type names f4v.
  { id: 'f4v', name: 'Flash MP4 video (F4V)', category: 'video', mediaType: 'video/x-f4v', extensions: ['f4v'], detect: 'magic', signatureOf: 'mp4', nameDecides: true },
  { id: 'rm', name: 'RealMedia video', category: 'video', mediaType: 'application/vnd.rn-realmedia', extensions: ['rm', 'rmvb'], detect: 'magic' },
  { id: 'y4m', name: 'YUV4MPEG2 raw video', category: 'video', mediaType: 'video/x-yuv4mpeg', extensions: ['y4m'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 10) === 'YUV4MPEG2 ' },
  // Wave 2, read only: elementary video streams, pictures without sound. An MPEG-1/2 elementary
  // stream starts as a program stream's video does (00 00 01 B3): file-type calls it mpg, the name tells.
  { id: 'h264', name: 'H.264 video (raw stream)', category: 'video', mediaType: 'video/h264', extensions: ['h264', '264', 'avc'], detect: 'magic', signature: isH264 },
  { id: 'hevc', name: 'HEVC/H.265 video (raw stream)', category: 'video', mediaType: 'video/h265', extensions: ['hevc', 'h265', '265'], detect: 'magic', signature: isHevc },
  // IVF: "DKIF", then the codec's FourCC (VP80, VP90, AV01).
  { id: 'ivf', name: 'IVF video (VP8/VP9/AV1)', category: 'video', mediaType: 'video/x-ivf', extensions: ['ivf'], detect: 'magic', signature: (head) => head.toString('latin1', 0, 4) === 'DKIF' },
  // Wave 3, read only. Raw MJPEG is JPEG pictures one after the other: file-type calls it jpg, the name tells.
  { id: 'gxf', name: 'General eXchange Format (GXF)', category: 'video', mediaType: 'application/x-gxf', extensions: ['gxf'], detect: 'magic', signature: isGxf },
  { id: 'wtv', name: 'Windows Television (WTV)', category: 'video', mediaType: 'video/x-wtv', extensions: ['wtv'], detect: 'magic', signature: (head) => startsWith(head, WTV_GUID) },
  { id: 'swf', name: 'Shockwave Flash video (SWF)', category: 'video', mediaType: 'application/x-shockwave-flash', extensions: ['swf'], detect: 'magic' },
  { id: 'mjpeg', name: 'Motion JPEG video (raw stream)', category: 'video', mediaType: 'video/x-motion-jpeg', extensions: ['mjpeg', 'mjpg'], detect: 'magic', signatureOf: 'jpg', nameDecides: true },
  { id: 'm2v', name: 'MPEG-1/2 video (elementary stream)', category: 'video', mediaType: 'video/mpv', extensions: ['m2v', 'm1v'], detect: 'magic', signatureOf: 'mpeg', nameDecides: true },
];
