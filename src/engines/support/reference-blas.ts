// ffmpeg and GDAL link a BLAS without ever using it for a conversion here: ffmpeg through
// pocketsphinx (its speech-recognition filter), GDAL through armadillo. Debian's libblas.so.3 is an
// alternative that points to OpenBLAS wherever OpenBLAS is installed (here SciPy, which
// python3-fonttools brings, brings it), and OpenBLAS makes every start of these programs pay for
// it: some 20,000 symbol relocations resolved at load (ffmpeg's libraries are linked to bind
// every symbol at once) and its thread set-up.
// Measured here: `ffmpeg -version` 146 → 100 ms of CPU, `ogr2ogr --version` 92 → 64 ms with
// Debian's reference BLAS and LAPACK instead (BENCHMARKS.md, change 48); the suite starts ffmpeg
// a couple of thousand times.
//
// Debian keeps the reference libraries (packages libblas3 and liblapack3) in directories of their
// own so that a program can be given them by LD_LIBRARY_PATH without changing the machine's
// alternatives (https://wiki.debian.org/DebianScience/LinearAlgebraLibraries). Only directories
// that hold them are named: elsewhere the programs load what the machine chose, as before.
import { existsSync } from 'node:fs';
import path from 'node:path';

const MULTIARCH: Partial<Record<NodeJS.Architecture, string>> = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

/** The packages that hold the reference libraries, for the modules that ask for them. */
export const REFERENCE_BLAS_PACKAGES = ['libblas3', 'liblapack3'] as const;

/** LD_LIBRARY_PATH naming Debian's reference BLAS and LAPACK, when this machine has both; otherwise nothing. */
export function referenceBlasEnvironment(): Readonly<Record<string, string>> {
  const triplet = MULTIARCH[process.arch];
  if (!triplet) return {};
  const blas = path.join('/usr/lib', triplet, 'blas');
  const lapack = path.join('/usr/lib', triplet, 'lapack');
  if (!existsSync(path.join(blas, 'libblas.so.3')) || !existsSync(path.join(lapack, 'liblapack.so.3'))) return {};
  return { LD_LIBRARY_PATH: `${blas}:${lapack}` };
}
