// Reads a 3D model with three.js's loaders (not assimp) in Node and reports its triangles and
// bounding box, for the assimp engine's tests. OFF has no three.js loader: read here from its
// text (a vertex list and polygons, fanned into triangles). DOMParser (COLLADA, 3MF) comes from
// @xmldom/xmldom. 3MF: three's 3MFLoader needs querySelectorAll, which xmldom lacks; its model
// part is read here (fflate unzips, xmldom parses the vertices and triangles).
import { DOMParser } from '@xmldom/xmldom';
import * as THREE from 'three';
import { ColladaLoader } from 'three/examples/jsm/loaders/ColladaLoader.js';
import { FBXLoader } from 'three/examples/jsm/loaders/FBXLoader.js';
import { GLTFLoader } from 'three/examples/jsm/loaders/GLTFLoader.js';
import { OBJLoader } from 'three/examples/jsm/loaders/OBJLoader.js';
import { PLYLoader } from 'three/examples/jsm/loaders/PLYLoader.js';
import { STLLoader } from 'three/examples/jsm/loaders/STLLoader.js';
import { TDSLoader } from 'three/examples/jsm/loaders/TDSLoader.js';
import { unzipSync } from 'fflate';

(globalThis as { DOMParser?: unknown }).DOMParser ??= DOMParser;
// three's FileLoader (a glTF's data: buffers) reports progress with the browser's ProgressEvent.
(globalThis as { ProgressEvent?: unknown }).ProgressEvent ??= class extends Event {
  constructor(type: string, init: Record<string, unknown> = {}) {
    super(type);
    Object.assign(this, init);
  }
};

export interface ModelFacts {
  readonly triangles: number;
  readonly min: [number, number, number];
  readonly max: [number, number, number];
}

function arrayBuffer(bytes: Buffer): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

function factsOf(root: THREE.Object3D): ModelFacts {
  root.updateMatrixWorld(true);
  let triangles = 0;
  const box = new THREE.Box3();
  const point = new THREE.Vector3();
  root.traverse((object) => {
    const mesh = object as THREE.Mesh;
    if (!mesh.isMesh) return;
    const geometry = mesh.geometry as THREE.BufferGeometry;
    const position = geometry.getAttribute('position');
    triangles += (geometry.index ? geometry.index.count : position.count) / 3;
    for (let i = 0; i < position.count; i++) box.expandByPoint(point.fromBufferAttribute(position, i).applyMatrix4(mesh.matrixWorld));
  });
  return { triangles, min: box.min.toArray() as [number, number, number], max: box.max.toArray() as [number, number, number] };
}

function readOff(text: string): ModelFacts {
  // Line by line: a face line may carry a colour after its indices.
  const lines = text.split(/\r?\n/).map((line) => line.replace(/#.*/, '').trim()).filter(Boolean);
  if (!/OFF$/.test(lines[0] ?? '')) throw new Error('not OFF');
  const header = (lines[0] === 'OFF' || /^[A-Z]*OFF$/.test(lines[0]!) ? lines[1] : lines[0]!.replace(/^[A-Z]*OFF\s*/, ''))!.split(/\s+/).map(Number);
  const [vertices, faces] = [header[0]!, header[1]!];
  const first = lines[0]!.length > 0 && /^[A-Z]*OFF$/.test(lines[0]!) ? 2 : 1;
  const min: [number, number, number] = [Infinity, Infinity, Infinity];
  const max: [number, number, number] = [-Infinity, -Infinity, -Infinity];
  for (const line of lines.slice(first, first + vertices)) {
    line.split(/\s+/).slice(0, 3).map(Number).forEach((value, axis) => {
      min[axis] = Math.min(min[axis]!, value);
      max[axis] = Math.max(max[axis]!, value);
    });
  }
  let triangles = 0;
  for (const line of lines.slice(first + vertices, first + vertices + faces)) triangles += Number(line.split(/\s+/)[0]) - 2;
  return { triangles, min, max };
}

function read3mf(bytes: Buffer): ModelFacts {
  const files = unzipSync(new Uint8Array(bytes));
  const part = Object.keys(files).find((name) => /^3D\/[^/]+\.model$/i.test(name));
  if (!part) throw new Error('no 3D/*.model part');
  const document = new DOMParser().parseFromString(Buffer.from(files[part]!).toString('utf8'), 'text/xml');
  const min: [number, number, number] = [Infinity, Infinity, Infinity];
  const max: [number, number, number] = [-Infinity, -Infinity, -Infinity];
  const vertices = document.getElementsByTagName('vertex');
  for (let i = 0; i < vertices.length; i++) {
    ['x', 'y', 'z'].forEach((axis, index) => {
      const value = Number(vertices[i]!.getAttribute(axis));
      min[index] = Math.min(min[index]!, value);
      max[index] = Math.max(max[index]!, value);
    });
  }
  return { triangles: document.getElementsByTagName('triangle').length, min, max };
}

/**
 * A glTF or GLB as glTF JSON with its buffers as data: URIs and without images, textures and
 * materials: only the geometry is compared, and three.js cannot decode pictures in Node (its
 * loader waits for ever on one).
 */
function geometryOnly(format: string, bytes: Buffer): string {
  let document: Record<string, unknown> & { buffers?: Array<{ uri?: string }>; meshes?: Array<{ primitives: Array<{ material?: number }> }> };
  if (format === 'glb') {
    if (bytes.toString('latin1', 0, 4) !== 'glTF') throw new Error('not a GLB');
    const jsonLength = bytes.readUInt32LE(12);
    document = JSON.parse(bytes.toString('utf8', 20, 20 + jsonLength)) as typeof document;
    const binAt = 20 + jsonLength;
    const bin = binAt + 8 <= bytes.length ? bytes.subarray(binAt + 8, binAt + 8 + bytes.readUInt32LE(binAt)) : Buffer.alloc(0);
    const first = document.buffers?.[0];
    if (first && first.uri === undefined) first.uri = `data:application/octet-stream;base64,${bin.toString('base64')}`;
  } else {
    document = JSON.parse(bytes.toString('utf8')) as typeof document;
  }
  delete document.images;
  delete document.textures;
  delete document.samplers;
  delete document.materials;
  for (const mesh of document.meshes ?? []) for (const primitive of mesh.primitives) delete primitive.material;
  return JSON.stringify(document);
}

/** The model's facts as three.js reads it (OFF: as read here). */
export async function readModel(format: string, bytes: Buffer): Promise<ModelFacts> {
  switch (format) {
    case 'obj': return factsOf(new OBJLoader().parse(bytes.toString('utf8')));
    case 'stl': return factsOf(new THREE.Mesh(new STLLoader().parse(arrayBuffer(bytes))));
    case 'ply': return factsOf(new THREE.Mesh(new PLYLoader().parse(arrayBuffer(bytes))));
    case 'off': return readOff(bytes.toString('latin1'));
    case '3ds': return factsOf(new TDSLoader().parse(arrayBuffer(bytes), ''));
    case 'fbx': return factsOf(new FBXLoader().parse(arrayBuffer(bytes), ''));
    // Without its images: three.js cannot decode pictures in Node (only the geometry is compared).
    case 'dae': return factsOf(new ColladaLoader().parse(bytes.toString('utf8').replace(/<library_images>[\s\S]*?<\/library_images>/g, ''), '')!.scene);
    case '3mf': return read3mf(bytes);
    case 'gltf':
    case 'glb': {
      const data = geometryOnly(format, bytes);
      const gltf = await new Promise<{ scene: THREE.Object3D }>((resolve, reject) => new GLTFLoader().parse(data, '', resolve, reject));
      return factsOf(gltf.scene);
    }
    default: throw new Error(`no independent reader for ${format}`);
  }
}
