// The tree formats added after the first nine (README "Data formats"): Apple property lists (XML
// read and written, binary `bplist00` read), JSON5, INI, Java .properties, MessagePack and CBOR.
// Each becomes the same JSON-shaped tree the other data formats use, so it converts to and from
// every one of them. What each cannot carry:
// - plist has no null (such keys are left out, as in TOML); its dates become ISO text and its
//   data blobs base64 text on the way to formats without them.
// - INI and .properties hold text only (INI's true and false excepted) and no arrays: a tree is
//   written with arrays as numbered keys (sections [0], [1] for records; dotted keys 0.name in
//   .properties), and read back the other way: a table whose keys are exactly 0, 1, 2... is a list.
// - MessagePack and CBOR: binary strings become base64 text, maps with non-text keys take the keys
//   as text, integers past 2^53 become text (JSON numbers would round them).
// Hostile input: nesting deeper than MAX_NESTING ends in input_too_complex before any writer
// recurses into it; a plist that declares entities is refused (none is ever expanded or fetched);
// a binary plist whose references share or loop is read within a budget of MAX_BPLIST_OBJECTS.
import { decode as decodeMsgpack, encode as encodeMsgpack } from '@msgpack/msgpack';
import { decode as decodeCbor, encode as encodeCbor, Tag } from 'cbor2';
import * as properties from 'dot-properties';
import ini from 'ini';
import JSON5 from 'json5';
import * as plist from 'plist';
import { ConvertdError } from '../../errors.ts';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The formats this module reads and writes. */
export const MORE_TREES = new Set(['plist', 'json5', 'ini', 'properties', 'msgpack', 'cbor']);

/**
 * Deepest nesting read: far past any real configuration or message (Apple's own plists nest a
 * dozen levels), well short of what the writers' recursion (JSON, YAML, XML, flattening) survives.
 */
export const MAX_NESTING = 1000;

/** Values one binary plist may expand to: its objects may be shared, so a 1 KB file could name 2^100. */
const MAX_BPLIST_OBJECTS = 2_000_000;

const tooDeep = () => new ConvertdError('input_too_complex', `The data is nested more than ${MAX_NESTING} levels deep.`);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Throws input_too_complex when `tree` nests deeper than MAX_NESTING; iterative, so a deep tree cannot overflow it. */
export function checkNesting(tree: unknown): void {
  const stack: Array<[unknown, number]> = [[tree, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth >= MAX_NESTING) throw tooDeep();
    for (const inner of Array.isArray(node) ? node : node instanceof Map ? node.values() : Object.values(node)) stack.push([inner, depth + 1]);
  }
}

/** A binary format's value as JSON: byte strings as base64, dates as ISO text, maps with any keys, big integers. */
function toJson(value: unknown): Json {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') return value;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (value instanceof Tag) return toJson(value.contents);
  if (Array.isArray(value)) return value.map(toJson);
  if (value instanceof Map) return Object.fromEntries([...value].map(([key, inner]) => [typeof key === 'string' ? key : JSON.stringify(toJson(key)), toJson(inner)]));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, toJson(inner)]));
  return String(value);
}

/** A table whose keys are exactly 0, 1, 2... (how INI and .properties write a list) as that list. */
function listsFromIndexes(tree: Json): Json {
  if (Array.isArray(tree)) return tree.map(listsFromIndexes);
  if (!isObject(tree)) return tree;
  const entries = Object.entries(tree).map(([key, inner]): [string, Json] => [key, listsFromIndexes(inner)]);
  if (entries.length > 0 && entries.every(([key], index) => key === String(index))) return entries.map(([, inner]) => inner);
  return Object.fromEntries(entries);
}

/** Lists as tables keyed 0, 1, 2... (INI has no lists of tables). */
function indexed(tree: Json): Json {
  if (Array.isArray(tree)) return Object.fromEntries(tree.map((inner, index) => [String(index), indexed(inner)]));
  if (isObject(tree)) return Object.fromEntries(Object.entries(tree).map(([key, inner]) => [key, indexed(inner as Json)]));
  return tree;
}

/** Leaves as dotted keys with text values (.properties is flat). */
function dotted(tree: Json, prefix: string, out: Record<string, string>): void {
  if (Array.isArray(tree) || isObject(tree)) {
    const entries = Object.entries(tree);
    if (entries.length === 0 && prefix) out[prefix] = '';
    for (const [key, inner] of entries) dotted(inner as Json, prefix ? `${prefix}.${key}` : key, out);
  } else {
    out[prefix || 'value'] = tree === null ? '' : String(tree);
  }
}

/** plist has no null: such keys are left out, such list items become empty text. */
function withoutNulls(tree: Json): Json | undefined {
  if (tree === null) return undefined;
  if (Array.isArray(tree)) return tree.map((item) => withoutNulls(item) ?? '');
  if (isObject(tree)) return Object.fromEntries(Object.entries(tree).flatMap(([key, inner]) => { const kept = withoutNulls(inner); return kept === undefined ? [] : [[key, kept]]; }));
  return tree;
}

/** Reads a tree; throws Error for input that is not FORMAT (the caller makes it corrupt_input). */
export function readMoreTree(bytes: Buffer, text: () => string, format: string): Json {
  let tree: Json;
  try {
    switch (format) {
      case 'plist': tree = readPlist(bytes, text); break;
      case 'json5': tree = JSON5.parse<Json>(text()); break;
      case 'ini': tree = listsFromIndexes(ini.parse(text()) as Json); break;
      case 'properties': tree = listsFromIndexes(properties.parse(text(), true) as Json); break;
      // Lengths are checked against the bytes there are: a 4 GB string header in a small file is an error, not an allocation.
      case 'msgpack': tree = toJson(decodeMsgpack(bytes)); break;
      case 'cbor': tree = toJson(decodeCbor(bytes)); break;
      default: throw new Error(`cannot read ${format}`);
    }
  } catch (error) {
    if (error instanceof ConvertdError) throw error;
    // A decoder's own depth limit (cbor2 stops at 1,024) or the stack running out in a recursive one.
    if (error instanceof RangeError && /call stack/i.test(error.message) || /maximum depth/i.test((error as Error).message)) throw tooDeep();
    throw error;
  }
  checkNesting(tree);
  return tree;
}

function readPlist(bytes: Buffer, text: () => string): Json {
  if (bytes.subarray(0, 6).toString('latin1') === 'bplist') return readBinaryPlist(bytes);
  const xml = text();
  // Property lists never declare entities; one that does is an attack (billion laughs, external files).
  if (/<!ENTITY/i.test(xml)) throw new Error('the property list declares entities');
  // Measured on the text first: xmldom builds a 100,000-deep DOM slowly (seconds) before plist's
  // recursive reader would stop on it.
  let depth = 0;
  for (const [, close, , selfClosing] of xml.matchAll(/<(\/?)(array|dict)\b[^>]*?(\/?)>/g)) {
    if (selfClosing) continue;
    depth += close ? -1 : 1;
    if (depth > MAX_NESTING) throw tooDeep();
  }
  return toJson(plist.parse(xml));
}

/**
 * A binary property list (bplist00), read here rather than by the plist package: its reader follows
 * object references without bound, so shared references expand exponentially and a reference
 * loop recurses until the stack runs out. Every read is checked against the file's length.
 */
function readBinaryPlist(bytes: Buffer): Json {
  if (bytes.length < 40 || bytes.toString('latin1', 0, 8) !== 'bplist00') throw new Error('not a bplist00 property list');
  const trailer = bytes.length - 32;
  const offsetSize = bytes[trailer + 6]!;
  const refSize = bytes[trailer + 7]!;
  const count = Number(bytes.readBigUInt64BE(trailer + 8));
  const top = Number(bytes.readBigUInt64BE(trailer + 16));
  const table = Number(bytes.readBigUInt64BE(trailer + 24));
  const uint = (at: number, size: number): number => {
    if (size < 1 || size > 8 || at < 0 || at + size > trailer) throw new Error('a reference points outside the file');
    return size <= 6 ? bytes.readUIntBE(at, size) : Number(bytes.readBigUInt64BE(at + size - 8) & ((1n << BigInt(size * 8)) - 1n));
  };
  if (count < 1 || top >= count || table + count * offsetSize > trailer) throw new Error('the object table is outside the file');
  let budget = MAX_BPLIST_OBJECTS;
  const read = (index: number, depth: number): Json => {
    if (index >= count) throw new Error('a reference to a missing object');
    if (depth > MAX_NESTING) throw tooDeep();
    if (--budget < 0) throw new ConvertdError('input_too_complex', `The property list expands to more than ${MAX_BPLIST_OBJECTS} values.`);
    let at = uint(table + index * offsetSize, offsetSize);
    const marker = uint(at, 1);
    const type = marker >> 4;
    let length = marker & 0x0f;
    at += 1;
    if (length === 0x0f && [0x4, 0x5, 0x6, 0xa, 0xd].includes(type)) {
      const sizeMarker = uint(at, 1);
      length = uint(at + 1, 1 << (sizeMarker & 0x0f));
      at += 1 + (1 << (sizeMarker & 0x0f));
    }
    switch (type) {
      case 0x0: if (marker === 0x08) return false; if (marker === 0x09) return true; return null;
      case 0x1: {
        const size = 1 << length;
        if (size === 8) { uint(at, 8); return toJson(bytes.readBigInt64BE(at)); }
        if (size === 16) { uint(at, 16); return toJson(bytes.readBigInt64BE(at + 8)); }
        return uint(at, size);
      }
      case 0x2: return length === 2 ? (uint(at, 4), bytes.readFloatBE(at)) : (uint(at, 8), bytes.readDoubleBE(at));
      case 0x3: uint(at, 8); return toJson(new Date(Date.UTC(2001, 0, 1) + bytes.readDoubleBE(at) * 1000));
      case 0x4: if (length > 0) uint(at, length); return bytes.subarray(at, at + length).toString('base64');
      case 0x5: if (length > 0) uint(at + length - 1, 1); return bytes.toString('latin1', at, at + length);
      case 0x6: if (length > 0) uint(at + length * 2 - 2, 2); return Buffer.from(bytes.subarray(at, at + length * 2)).swap16().toString('utf16le');
      case 0x8: return { UID: uint(at, length + 1) };
      case 0xa: {
        if (length > 0) uint(at + (length - 1) * refSize, refSize);
        return Array.from({ length }, (_, i) => read(uint(at + i * refSize, refSize), depth + 1));
      }
      case 0xd: {
        if (length > 0) uint(at + (2 * length - 1) * refSize, refSize);
        const out: Record<string, Json> = {};
        for (let i = 0; i < length; i++) out[String(read(uint(at + i * refSize, refSize), depth + 1))] = read(uint(at + (length + i) * refSize, refSize), depth + 1);
        return out;
      }
      default: throw new Error(`unknown object type 0x${type.toString(16)}`);
    }
  };
  return read(top, 0);
}

/** Writes a tree as FORMAT. */
export function writeMoreTree(format: string, tree: Json): Buffer {
  switch (format) {
    case 'plist': return Buffer.from(plist.build((withoutNulls(tree) ?? '') as plist.PlistValue));
    case 'json5': return Buffer.from(`${JSON5.stringify(tree, null, 2)}\n`);
    case 'ini': {
      // INI's keys live at the top or in [sections]: records become sections [0], [1]...; a bare value a key.
      const table = indexed(tree);
      return Buffer.from(ini.stringify(isObject(table) ? table : { value: table }));
    }
    case 'properties': {
      const flat: Record<string, string> = {};
      dotted(tree, '', flat);
      return Buffer.from(`${properties.stringify(flat, { lineWidth: null })}\n`);
    }
    case 'msgpack': return Buffer.from(encodeMsgpack(tree));
    case 'cbor': return Buffer.from(encodeCbor(tree));
  }
  throw new Error(`cannot write ${format}`);
}
