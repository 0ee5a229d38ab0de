// 3D models through assimp (Open Asset Import Library): OBJ, STL, PLY, glTF, GLB, OFF, 3DS,
// COLLADA, FBX, X3D and 3MF to OBJ, STL, PLY, glTF, GLB, COLLADA and 3MF.
import { defineEngine } from '../module.ts';
import { AssimpEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'assimp',
  summary: '`assimp export` (assimp 5.2) on a copy of the upload whose references to other files were rewritten or refused, alone in its job directory; faces triangulated, the scene validated',
  packages: { debian: ['assimp-utils'] },
  formats: FORMATS,
  create: (context) => new AssimpEngine(context),
});
