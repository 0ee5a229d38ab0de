// 3D models through assimp's command line (Debian's assimp-utils 5.2.5, issue #31): OBJ, STL, PLY,
// glTF, GLB, OFF, 3DS, COLLADA, FBX, X3D and 3MF read, and OBJ, STL, PLY, glTF, GLB, COLLADA and
// 3MF written, each to every other (`assimp export <in> <out> -f<exporter> -tri -vds`: every face
// triangulated, which STL and 3MF require, and the scene validated, so a broken one is refused
// rather than written).
//
// What assimp writes badly, and what is done about it (each measured here):
// - FBX is read only: assimp's FBX writer wrote files its own reader refuses ("block offset is out
//   of range"). X3D and 3DS likewise: not targets.
// - Its 3MF writer writes only the meshes of child nodes: a scene whose meshes hang on the root
//   (PLY, OFF, X3D and 3DS as assimp imports them) became a 3MF of no object. Those four have no
//   3MF edge; the planner routes them through OBJ (two assimp runs), whose importer makes nodes.
// - glTF: its writer puts the buffers in a .bin beside the .gltf. One result is one file, so the
//   .bin is embedded here as a data: URI and the .gltf returned alone.
// - OBJ: written without its .mtl (assimp's objnomtl exporter); materials travel in the other
//   targets. A multi-file result (OBJ + MTL + textures) would need a ZIP: not offered.
//
// Safety (docs/security.md#3d-models-assimp): assimp follows a model's references to other files
// (a glTF's buffer and image uri, an OBJ's mtllib, a COLLADA image's init_from, an X3D url) to any
// path it can open, ../ and absolute ones included. Two locks:
// - the job's directory holds the upload alone (the sandbox's only writable place, and assimp's
//   working directory), and every reference is checked before assimp reads the file
//   (references.ts): one that leaves the directory (absolute, with "..", a drive letter, a scheme
//   such as file: or http:) makes a glTF buffer refused (its geometry would come from outside),
//   and any other is rewritten to a name that is not there, so the model converts with what it
//   carries; the file assimp reads is that rewritten copy;
// - no network in the sandbox.
// A crash (assimp segfaults or aborts on some recursive or damaged scenes) is a refusal
// (corrupt_input), a kill for memory or time input_too_complex or timeout: never a 500.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';
import { contentMatches, neutraliseReferences } from './references.ts';

const ASSIMP = '/usr/bin/assimp';

/** The formats assimp reads here, and their names in messages. */
export const MODEL_SOURCES = ['obj', 'stl', 'ply', 'gltf', 'glb', 'off', '3ds', 'dae', 'fbx', 'x3d', '3mf'] as const;
/** The targets, each with assimp's exporter id. */
export const EXPORTERS: Readonly<Record<string, string>> = {
  obj: 'objnomtl', stl: 'stlb', ply: 'plyb', gltf: 'gltf2', glb: 'glb2', dae: 'collada', '3mf': '3mf',
};
export const NAMES: Readonly<Record<string, string>> = {
  obj: 'OBJ', stl: 'STL', ply: 'PLY', gltf: 'glTF', glb: 'GLB', off: 'OFF', '3ds': '3DS', dae: 'COLLADA', fbx: 'FBX', x3d: 'X3D', '3mf': '3MF',
};
/** Sources whose meshes assimp hangs on the scene's root, which its 3MF writer leaves out. */
const ROOT_MESHES = new Set(['ply', 'off', 'x3d', '3ds']);

const EDGES: ConversionEdge[] = MODEL_SOURCES.flatMap((from) => Object.keys(EXPORTERS)
  .filter((to) => to !== from && !(to === '3mf' && ROOT_MESHES.has(from)))
  .map((to): ConversionEdge => ({ from, to, cost: 2 })));

/** The start-up sample: a box, one of its faces a quad (triangulated by -tri). */
const PROBE_OBJ = 'v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\nf 1 4 3 2\nf 5 6 7 8\nf 1 2 6 5\nf 2 3 7 6\nf 3 4 8 7\nf 4 1 5 8\n';

export class AssimpEngine implements Engine {
  readonly id = 'assimp';
  readonly probeMemory = 'edges' as const;
  readonly timeoutSeconds = 120;
  readonly edges = EDGES;
  readonly reportsProgress = false;
  private readonly context: EngineContext<unknown>;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 0.3 + inputBytes / 5_000_000;
  }

  /** Exports the sample box with every exporter; the targets it writes (a non-empty file) pass. */
  async probe(): Promise<readonly ConversionEdge[]> {
    return this.context.withScratchDir(async (dir) => {
      await fs.writeFile(path.join(dir, 'probe.obj'), PROBE_OBJ);
      const works = new Set<string>();
      for (const [to, exporter] of Object.entries(EXPORTERS)) {
        const out = `probe-out.${to}`;
        const result = await this.context.run(ASSIMP, ['export', 'probe.obj', out, `-f${exporter}`, '-tri', '-vds'], { cwd: dir, timeoutMs: 20_000 });
        const size = (await fs.stat(path.join(dir, out)).catch(() => undefined))?.size ?? 0;
        if (result.exitCode === 0 && size > 0) works.add(to);
        else this.context.log.warn({ format: to, stderr: result.stderr.slice(-500) }, 'assimp probe: target left out');
      }
      if (works.size === 0) throw new Error('assimp exported nothing');
      return EDGES.filter((edge) => works.has(edge.to));
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, from, to, workDir, limits, signal } = request;
    const exporter = EXPORTERS[to];
    if (!exporter) throw new ConvertdError('conversion_failed', `assimp does not write ${to} here.`);
    const content = await fs.readFile(input);
    if (!contentMatches(from, content)) {
      throw new ConvertdError('corrupt_input', `The file is not ${NAMES[from]}: its content is something else (another format named .${from}?). Send a real ${NAMES[from]} file.`);
    }
    // The copy assimp reads, its references checked and rewritten (references.ts); named by us.
    const source = path.join(workDir, `assimp-source.${from}`);
    const result = path.join(workDir, `assimp-result.${to}`);
    const sidecar = path.join(workDir, 'assimp-result.bin');
    try {
      await fs.writeFile(source, neutraliseReferences(from, content));
      const run = await this.context.run(ASSIMP, ['export', `./${path.basename(source)}`, `./${path.basename(result)}`, `-f${exporter}`, '-tri', '-vds'], {
        // assimp prints its "ERROR: Failed to load file: ..." on standard output.
        cwd: workDir, timeoutMs: limits.timeoutMs, signal, captureStdout: true,
        limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      });
      if (run.signal !== null || run.exitCode !== 0) throw failure(from, to, run.exitCode, run.signal, `${run.stdout}\n${run.stderr}`);
      if (to === 'gltf') await embedBuffers(result, workDir, limits.maxOutputBytes);
      await fs.rename(result, output);
    } finally {
      await Promise.all([source, result, sidecar].map((file) => fs.rm(file, { force: true })));
    }
  }
}

/** assimp's failure as a ConvertdError: a crash or a refusal to read is the input's; a kill for memory, its size. */
function failure(from: string, to: string, exitCode: number | null, signal: NodeJS.Signals | null, stderr: string): ConvertdError {
  const said = assimpError(stderr) || (signal ? `stopped by ${signal}` : `exit ${exitCode}`);
  if (signal === 'SIGKILL' || /bad_alloc|out of memory/i.test(stderr)) {
    return new ConvertdError('input_too_complex', `assimp ran out of memory on the ${NAMES[from]} model (${said}): send a smaller or simpler one.`);
  }
  if (signal !== null || /Failed to load file|Unable to load input|Validation failed/i.test(stderr)) {
    // A segfault or abort (recursive node graphs, damaged chunks) is taken as a refusal to read.
    return new ConvertdError('corrupt_input', `assimp could not read the ${NAMES[from]} model (${said}): check that it is a valid ${NAMES[from]} file, or export it again from the program that made it.`);
  }
  return new ConvertdError('conversion_failed', `assimp could not write ${NAMES[to]} (${said}).`);
}

/** assimp's own error line ("ERROR: Failed to load file: ..."), without the path of our copy. */
function assimpError(stderr: string): string {
  const line = /ERROR:\s*(.*)$/m.exec(stderr)?.[1] ?? lastErrorLine(stderr);
  return line.replace(/\.\/assimp-(?:source|result)\.\w+/g, 'the model').slice(0, 200);
}

/**
 * Puts the .bin assimp's glTF writer wrote beside the .gltf into the .gltf, as a base64 data: URI
 * (glTF 2.0 allows it for buffers): one file out. Only a buffer naming a plain file in the job's
 * directory is read; any other uri is left as it is (assimp writes none).
 */
async function embedBuffers(gltfFile: string, workDir: string, maxBytes: number): Promise<void> {
  const document = JSON.parse(await fs.readFile(gltfFile, 'utf8')) as { buffers?: Array<{ uri?: string; byteLength?: number }> };
  for (const buffer of document.buffers ?? []) {
    const uri = buffer.uri;
    if (uri === undefined || uri.startsWith('data:') || !/^\w[\w.-]*$/.test(uri)) continue;
    const bytes = await fs.readFile(path.join(workDir, uri));
    // Base64 grows a third: held to the output cap before the text is made.
    if (bytes.length * 4 / 3 > maxBytes) throw new ConvertdError('output_too_large');
    buffer.uri = `data:application/octet-stream;base64,${bytes.toString('base64')}`;
    await fs.rm(path.join(workDir, uri), { force: true });
  }
  await fs.writeFile(gltfFile, JSON.stringify(document));
}
