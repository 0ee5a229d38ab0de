// What assimp would read besides the upload, taken away before it reads it (engine.ts says why):
// assimp 5.2 opens a model's references (a glTF buffer or image uri, an OBJ mtllib, a COLLADA
// init_from or url, an X3D url) at any path, ../ and absolute ones included. The job's directory
// holds the upload alone, so no reference can name anything the client sent besides the model:
// every one is rewritten to a name that is not there (an image becomes a missing texture, an OBJ
// loses its materials), except a glTF buffer, which holds the geometry itself: one that is not a
// data: URI refuses the job (send a GLB, or a glTF with its buffers embedded). References inside
// the file (COLLADA's "#id", glTF's data: URIs, a GLB's own binary chunk) are kept. An XML model
// declaring entities is refused: no entity expansion.
//
// The binary formats (STL, PLY, 3DS, FBX, 3MF) carry texture paths only as names, which assimp
// records and its writers copy as names; it reads no file for them (the hostile tests check a
// PLY's TextureFile naming a secret).
import { ConvertdError } from '../../errors.ts';

/** The name every outside reference is rewritten to: no such file exists in the job's directory. */
export const MISSING = 'convertd-missing-reference';
/** A 1 × 1 transparent PNG: what a glTF image named outside the upload becomes (its index kept). */
const EMPTY_PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const GLB_MAGIC = 0x46546c67; // "glTF"
const JSON_CHUNK = 0x4e4f534a; // "JSON"

/** Whether the content is the text format it is named as (OBJ, OFF and glTF have no signature; the others were sniffed by content). */
export function contentMatches(format: string, content: Buffer): boolean {
  const head = content.subarray(0, 64 * 1024);
  if (format === 'obj') return !head.includes(0) && /^[ \t]*v[ \t]+[-+.\d]/m.test(head.toString('latin1'));
  if (format === 'off') return !head.includes(0) && /^(?:[ \t]*(?:#[^\n]*)?\r?\n)*[ \t]*(?:ST)?C?N?4?n?OFF\b/.test(head.toString('latin1'));
  if (format === 'gltf') {
    try {
      return typeof (JSON.parse(content.toString('utf8')) as { asset?: { version?: unknown } }).asset?.version === 'string';
    } catch {
      return false;
    }
  }
  return true;
}

/** The content assimp reads: the upload with every reference outside it rewritten (or the job refused). */
export function neutraliseReferences(format: string, content: Buffer): Buffer {
  switch (format) {
    case 'obj':
      // An mtllib can only name a file that is not there: dropped, so nothing outside is opened.
      return Buffer.from(content.toString('latin1').replace(/^[ \t]*mtllib\b.*$/gm, '# mtllib removed by convertd'), 'latin1');
    case 'gltf':
      return Buffer.from(JSON.stringify(checkedGltf(parseJson(content.toString('utf8')))), 'utf8');
    case 'glb':
      return checkedGlb(content);
    case 'dae':
    case 'x3d':
      return Buffer.from(checkedXml(format, content.toString('utf8')), 'utf8');
    default:
      return content;
  }
}

interface GltfDocument {
  buffers?: Array<{ uri?: unknown }>;
  images?: Array<{ uri?: unknown; bufferView?: unknown }>;
}

function parseJson(text: string): GltfDocument {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as GltfDocument;
  } catch {
    // below
  }
  throw new ConvertdError('corrupt_input', 'The glTF file is not valid JSON: check that it is a valid glTF 2.0 file.');
}

/** A glTF's buffers must be embedded; its images named outside become an empty picture. */
function checkedGltf(document: GltfDocument): GltfDocument {
  for (const buffer of Array.isArray(document.buffers) ? document.buffers : []) {
    if (buffer && buffer.uri !== undefined && !(typeof buffer.uri === 'string' && buffer.uri.startsWith('data:'))) {
      throw new ConvertdError('unsafe_input', 'The glTF names a buffer in another file: this service reads only what the upload carries. Send a GLB, or a glTF with its buffers embedded (data: URIs).');
    }
  }
  for (const image of Array.isArray(document.images) ? document.images : []) {
    if (image && image.uri !== undefined && !(typeof image.uri === 'string' && image.uri.startsWith('data:'))) image.uri = EMPTY_PNG;
  }
  return document;
}

/** A GLB with its JSON chunk checked as a glTF's; its binary chunk (the buffer without uri) is its own. */
function checkedGlb(content: Buffer): Buffer {
  const damaged = () => new ConvertdError('corrupt_input', 'The GLB file is damaged (its header or JSON chunk is not as glTF 2.0 says): export it again from the program that made it.');
  if (content.length < 20 || content.readUInt32LE(0) !== GLB_MAGIC || content.readUInt32LE(4) !== 2) throw damaged();
  const jsonLength = content.readUInt32LE(12);
  if (content.readUInt32LE(16) !== JSON_CHUNK || 20 + jsonLength > content.length) throw damaged();
  const document = checkedGltf(parseJson(content.toString('utf8', 20, 20 + jsonLength)));
  let json = Buffer.from(JSON.stringify(document), 'utf8');
  // Chunks are 4-byte aligned; the JSON chunk is padded with spaces.
  if (json.length % 4 !== 0) json = Buffer.concat([json, Buffer.alloc(4 - (json.length % 4), 0x20)]);
  const rest = content.subarray(20 + jsonLength);
  const header = Buffer.alloc(20);
  header.writeUInt32LE(GLB_MAGIC, 0);
  header.writeUInt32LE(2, 4);
  header.writeUInt32LE(20 + json.length + rest.length, 8);
  header.writeUInt32LE(json.length, 12);
  header.writeUInt32LE(JSON_CHUNK, 16);
  return Buffer.concat([header, json, rest]);
}

/**
 * COLLADA and X3D: entities refused; X3D Inline elements dropped; every url, href or source attribute that does not point
 * inside the document ("#id") and every init_from or ref text (COLLADA's image paths) rewritten
 * to a name that is not there.
 */
function checkedXml(format: string, text: string): string {
  if (/<!ENTITY/i.test(text)) {
    throw new ConvertdError('unsafe_input', `The ${format === 'dae' ? 'COLLADA' : 'X3D'} file declares XML entities: this service does not expand them. Remove them and send it again.`);
  }
  return text
    // An X3D Inline is another scene, by url: dropped whole (assimp 5.2 fails on any Inline anyway,
    // "failed to convert attribute value url ... to array of integers").
    .replace(/<Inline\b[^>]*?(?:\/>|>[\s\S]*?<\/Inline\s*>)/g, '')
    .replace(/(\s(?:url|href|source)\s*=\s*)(?:"([^"]*)"|'([^']*)')/gi, (whole, prefix: string, double: string | undefined, single: string | undefined) => {
      const value = (double ?? single ?? '').trim();
      if (value.startsWith('#') || value.startsWith('data:')) return whole;
      return `${prefix}${double !== undefined ? `"${MISSING}"` : `'"${MISSING}"'`}`;
    })
    .replace(/(<(init_from|ref)\b[^>]*>)([^<]*)(<\/\2\s*>)/gi, (whole, open: string, _name: string, value: string, close: string) => (value.trim() === '' || value.trim().startsWith('#') ? whole : `${open}${MISSING}${close}`));
}
