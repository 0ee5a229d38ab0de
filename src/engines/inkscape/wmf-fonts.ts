// A WMF's fonts, checked before Inkscape 1.2 reads the file (issue #31). Two faults of its WMF
// import, found on the shared corpus's poi-60677.wmf (a Japanese table) and on LibreOffice's WMF
// of Cyrillic and Chinese text:
//  - a font whose face name is not ASCII (there "ＭＳ Ｐゴシック" in Shift-JIS bytes) makes it loop
//    until the job's time limit; such a name is replaced by "sans-serif" in the copy it reads
//    (fontconfig's alias: the text is set in a font that has its letters);
//  - text is decoded as Latin-1 whatever the font's character set, so the text of a font in
//    another code page (Cyrillic, Greek, Japanese, Chinese, ...) comes out as other letters
//    ("Ñúåøü" for "Съешь"). Such a file is refused with conversion_failed, saying so, where its
//    text has a byte past ASCII; its pdf, png and svg (LibreOffice's) keep the text.
// An EMF names its fonts and writes its text in UTF-16: Inkscape reads those right.
import { ConvertdError } from '../../errors.ts';

/** The Aldus placeable header some WMFs start with. */
const PLACEABLE_KEY = 0x9ac6cdd7;
const PLACEABLE_BYTES = 22;
const META_CREATEFONTINDIRECT = 0x02fb;
const META_TEXTOUT = 0x0521;
const META_EXTTEXTOUT = 0x0a32;
const META_EOF = 0x0000;
/** In a CREATEFONTINDIRECT's parameters: the character set byte, then the face name (at most 32 bytes). */
const CHARSET_AT = 13;
const FACE_AT = 18;
const FACE_BYTES = 32;
/** ANSI, DEFAULT and SYMBOL: the character sets whose text Latin-1 decoding gets right (or that draw symbols). */
const LATIN_CHARSETS = new Set([0, 1, 2]);
const CHARSET_NAMES: Readonly<Record<number, string>> = {
  77: 'Macintosh', 128: 'Japanese', 129: 'Korean', 130: 'Korean (Johab)', 134: 'Simplified Chinese', 136: 'Traditional Chinese',
  161: 'Greek', 162: 'Turkish', 163: 'Vietnamese', 177: 'Hebrew', 178: 'Arabic', 186: 'Baltic', 204: 'Cyrillic', 222: 'Thai',
  238: 'Central European', 255: 'OEM',
};
const FALLBACK_FACE = Buffer.from('sans-serif', 'latin1');

/**
 * A copy of `wmf` for Inkscape: non-ASCII face names replaced by "sans-serif". Throws
 * conversion_failed when a font has a non-Latin character set and some text has a byte past
 * ASCII (text Inkscape would decode wrong). A file whose records cannot be walked is returned as
 * it is: Inkscape's own reading decides (corrupt_input).
 */
export function wmfForInkscape(wmf: Buffer): Buffer {
  const copy = Buffer.from(wmf);
  let at = copy.length >= PLACEABLE_BYTES && copy.readUInt32LE(0) === PLACEABLE_KEY ? PLACEABLE_BYTES : 0;
  if (at + 18 > copy.length) return copy;
  at += copy.readUInt16LE(at + 2) * 2;
  const otherCharsets = new Set<number>();
  let textPastAscii = false;
  while (at + 6 <= copy.length) {
    const words = copy.readUInt32LE(at);
    const fn = copy.readUInt16LE(at + 4);
    if (fn === META_EOF || words < 3) break;
    const end = Math.min(copy.length, at + words * 2);
    const params = at + 6;
    if (fn === META_CREATEFONTINDIRECT && params + FACE_AT <= end) {
      const charset = copy[params + CHARSET_AT]!;
      if (!LATIN_CHARSETS.has(charset)) otherCharsets.add(charset);
      const faceEnd = Math.min(end, params + FACE_AT + FACE_BYTES);
      const face = copy.subarray(params + FACE_AT, faceEnd);
      const length = face.indexOf(0) === -1 ? face.length : face.indexOf(0);
      if (face.subarray(0, length).some((byte) => byte < 0x20 || byte > 0x7e)) {
        face.fill(0);
        FALLBACK_FACE.copy(face, 0, 0, Math.min(FALLBACK_FACE.length, face.length - 1));
      }
    } else if ((fn === META_EXTTEXTOUT && params + 8 <= end) || (fn === META_TEXTOUT && params + 2 <= end)) {
      // EXTTEXTOUT: y, x, count, options (and a clip rectangle when options has 0x0004), then the
      // string; TEXTOUT: count, then the string.
      const count = fn === META_EXTTEXTOUT ? copy.readInt16LE(params + 4) : copy.readInt16LE(params);
      const options = fn === META_EXTTEXTOUT ? copy.readUInt16LE(params + 6) : 0;
      const start = fn === META_EXTTEXTOUT ? params + 8 + (options & 0x0004 ? 8 : 0) : params + 2;
      if (count > 0 && copy.subarray(start, Math.min(end, start + count)).some((byte) => byte > 0x7f)) textPastAscii = true;
    }
    at += words * 2;
  }
  if (textPastAscii && otherCharsets.size > 0) {
    const names = [...otherCharsets].map((charset) => CHARSET_NAMES[charset] ?? `character set ${charset}`).join(', ');
    throw new ConvertdError('conversion_failed', `This WMF's text is in a ${names} code page, which Inkscape's WMF reader would turn into other letters: convert it to pdf, png or svg instead (LibreOffice keeps its text), and that PDF to eps or ps.`);
  }
  return copy;
}
