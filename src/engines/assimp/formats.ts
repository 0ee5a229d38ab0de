// The 3D model formats the assimp engine adds to the catalogue, and how the sniffer knows them.
// file-type knows glb ("glTF" then version 2), binary FBX ("Kaydara FBX Binary"), an ASCII STL
// ("solid "; one with a tab or a line end after "solid" is told here) and a 3MF whose [Content_Types].xml file-type can read (assimp's own, with spaces
// around "=", it cannot: formats/ooxml-shortcut.ts threeMfKind finds it by its 3D/*.model part).
// The others are told here by their content: PLY by its "ply" line and a format line, 3DS by its
// main chunk and the chunk after it, an ASCII FBX by its "; FBX" comment, COLLADA and X3D by their
// XML root element (never any XML: a plain .xml stays the data engine's), a binary STL (which has
// no magic) by the layout of its first triangles. OBJ, OFF and glTF (JSON) are plain text without
// a signature of their own: recognised by their name, and checked by the engine before assimp
// reads them (engine.ts, contentMatches), so a .obj that holds something else never reaches it.
import type { FormatDefinition } from '../../formats/catalogue.ts';

/** An XML document whose root element is `root` (after a prolog, comments and a DOCTYPE). */
function xmlRoot(root: string): (head: Buffer, text: string) => boolean {
  const pattern = new RegExp(`^(?:<\\?xml[^>]*\\?>\\s*)?(?:<!--[\\s\\S]*?-->\\s*)*(?:<!DOCTYPE\\s+${root}\\b[^[>]*(?:\\[[\\s\\S]*?\\])?\\s*>\\s*)?(?:<!--[\\s\\S]*?-->\\s*)*<${root}[\\s>]`);
  return (_head, text) => pattern.test(text);
}

/** PLY: "ply", then "format ascii|binary_little_endian|binary_big_endian 1.0" (comments may come first in some writers; not here). */
export function isPly(head: Buffer): boolean {
  return /^ply\r?\n(?:(?:comment|obj_info)[^\n]*\n)*format (?:ascii|binary_little_endian|binary_big_endian) /.test(head.toString('latin1', 0, 512));
}

/**
 * 3DS: the main chunk 0x4D4D whose length is at least its header, then the version chunk (0x0002)
 * or the editor chunk (0x3D3D) or the keyframer chunk (0xB000) as its first sub-chunk.
 */
export function is3ds(head: Buffer): boolean {
  return head.length >= 16 && head.readUInt16LE(0) === 0x4d4d && head.readUInt32LE(2) >= 12 && [0x0002, 0x3d3d, 0xb000].includes(head.readUInt16LE(6)) && head.readUInt32LE(8) >= 6;
}

/**
 * A binary STL: an 80-byte header (free text; one that starts with "solid " is file-type's ASCII
 * STL, and taken as stl all the same), a triangle count, then 50 bytes a triangle: a normal and
 * three vertices as 32-bit floats, and a 16-bit attribute. No magic, so the first triangles the
 * head holds must look like triangles: finite coordinates of sane size, normals of length 1 or 0,
 * and not all zero. Random binary data (or another format) fails this within its first triangle.
 */
export function isBinaryStl(head: Buffer): boolean {
  if (head.length < 84 + 50) return false;
  const count = head.readUInt32LE(80);
  if (count === 0 || count > 50_000_000) return false;
  const checked = Math.min(count, Math.floor((head.length - 84) / 50), 40);
  let nonZero = false;
  for (let index = 0; index < checked; index++) {
    const at = 84 + index * 50;
    const values = Array.from({ length: 12 }, (_, i) => head.readFloatLE(at + i * 4));
    if (values.some((value) => !Number.isFinite(value) || Math.abs(value) > 1e9)) return false;
    const [nx, ny, nz] = values as [number, number, number];
    const length = Math.hypot(nx, ny, nz);
    if (length !== 0 && Math.abs(length - 1) > 0.01) return false;
    if (values.slice(3).some((value) => value !== 0)) nonZero = true;
  }
  return nonZero;
}

/**
 * An ASCII STL that file-type misses ("solid" then a tab or a line end, not a space): "solid",
 * then a facet or the end of the solid on the following lines.
 */
export function isAsciiStl(text: string): boolean {
  return /^solid(?:[ \t][^\n]*)?\r?\n\s*(?:facet\s+normal\b|endsolid\b)/.test(text);
}

/** The formats this engine adds to the catalogue. */
export const FORMATS: readonly FormatDefinition[] = [
  { id: 'obj', name: 'Wavefront OBJ', category: '3d-model', mediaType: 'model/obj', extensions: ['obj'], detect: 'extension' },
  { id: 'stl', name: 'STL (stereolithography)', category: '3d-model', mediaType: 'model/stl', extensions: ['stl'], detect: 'magic', signature: (head, text) => isAsciiStl(text) || isBinaryStl(head) },
  { id: 'ply', name: 'Stanford PLY', category: '3d-model', mediaType: 'application/x-ply', extensions: ['ply'], detect: 'magic', signature: isPly },
  { id: 'gltf', name: 'glTF 2.0 (JSON, buffers embedded)', category: '3d-model', mediaType: 'model/gltf+json', extensions: ['gltf'], detect: 'extension' },
  { id: 'glb', name: 'glTF 2.0 binary (GLB)', category: '3d-model', mediaType: 'model/gltf-binary', extensions: ['glb'], detect: 'magic' },
  { id: 'off', name: 'Object File Format (OFF)', category: '3d-model', mediaType: 'application/x-off', extensions: ['off'], detect: 'extension' },
  { id: '3ds', name: 'Autodesk 3DS', category: '3d-model', mediaType: 'application/x-3ds', extensions: ['3ds'], detect: 'magic', signature: is3ds },
  { id: 'dae', name: 'COLLADA', category: '3d-model', mediaType: 'model/vnd.collada+xml', extensions: ['dae'], detect: 'magic', signature: xmlRoot('COLLADA') },
  { id: 'fbx', name: 'Autodesk FBX', category: '3d-model', mediaType: 'application/x-fbx', extensions: ['fbx'], detect: 'magic', signature: (_head, text) => /^; FBX \d+\.\d+\.\d+ project file/.test(text) },
  { id: 'x3d', name: 'X3D (XML encoding)', category: '3d-model', mediaType: 'model/x3d+xml', extensions: ['x3d'], detect: 'magic', signature: xmlRoot('X3D') },
  { id: '3mf', name: '3D Manufacturing Format (3MF)', category: '3d-model', mediaType: 'model/3mf', extensions: ['3mf'], detect: 'magic' },
];
