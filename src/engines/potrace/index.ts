// Raster → vector tracing through potrace: svg, eps, dxf and geojson outlines, in one colour.
import { defineEngine } from '../module.ts';
import { PotraceEngine } from './engine.ts';
import { FORMATS } from './formats.ts';

export default defineEngine({
  id: 'potrace',
  summary: "potrace on a greymap sharp's sandboxed processes make of the image ('raster-images'); one colour, specks dropped (turdsize), output cap",
  packages: { debian: ['potrace'] },
  formats: FORMATS,
  // The bitmap potrace reads: the image's luminance as a PGM, decoded by sharp in its sandbox.
  needs: ['raster-images'],
  create: (context) => new PotraceEngine(context),
});
