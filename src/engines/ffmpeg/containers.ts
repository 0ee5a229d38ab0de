// The audio and video containers added for issue #30: formats ffmpeg 5.1 reads (and most of them
// writes) beyond the common ones of formats.ts. Each is recognised by its content: file-type knows
// ADTS AAC, WavPack, Monkey's Audio, CAF, Creative Voice, MPEG audio layer II, Ogg Speex, MPEG-TS,
// MXF and RealMedia; the signatures below are for those it does not know. Formats that share a
// container's signature (Matroska audio, WebM audio, F4V, VOB) are told by the upload's name.
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
];
