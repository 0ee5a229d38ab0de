// Prints the Debian packages to install, one per line: the process layer's (sandbox and limits),
// then every engine's from the list (src/engines/index.ts), and with --for-tests the independent
// tools the tests check outputs with. scripts/setup.mjs and the Dockerfile both install what this
// prints, so a package is named in exactly one place: its engine module, or the lists below.
//
//   node scripts/packages.ts              what the service needs
//   node scripts/packages.ts --for-tests  plus what the tests and the benchmark need
import { debianPackagesOf } from '../src/engines/assembly.ts';
import { ENGINE_MODULES } from '../src/engines/index.ts';
import { PROCESS_PACKAGES } from '../src/process/packages.ts';

/** The tests' own tools: each checks outputs independently of the engine that made them. */
export const TEST_PACKAGES: readonly string[] = [
  'file', // independent check of every output's type
  'qpdf', // checks PDF outputs' structure independently of poppler
  'python3-pil', // Pillow: an image decoder independent of the engines
  'python3-numpy', // SSIM of image outputs against their sources (test/helpers/compare_images.py)
  'python3-av', // PyAV: describes audio and video outputs and decodes their sound (test/helpers/read_media.py)
  'p7zip-full', // 7z: lists archive outputs independently of libarchive
  'python3-yaml', // reads YAML outputs independently of the npm library
  'python3-msgpack', 'python3-cbor2', // read MessagePack and CBOR outputs independently of the npm libraries
  'groff', // typesets man and ms outputs (groff-base alone lacks the ms macros), independently of pandoc
  'texinfo', // makeinfo: formats Texinfo outputs to text, independently of pandoc
  'python3-markdown', // Python-Markdown: renders the Markdown dialect outputs (strict, PHP Markdown Extra) independently of pandoc
  // test/rendered-scripts.test.ts reads rendered text back from pictures of pages (were the glyphs
  // of every script drawn, or boxes?) with Tesseract and its language packs: the OCR engine's own
  // packages (src/engines/tesseract/index.ts), so they are not named again here.
  'opentype-sanitizer', // ots-sanitize: the font validator browsers use, on every font output
  'chromium', // the web page's end-to-end tests (driven by playwright-core)
  'wrk', // npm run bench: loads /api/progress from a process of its own
  'redis-server', // the scale-out tests' job store, queue and rate-limit counters
  // A real S3-compatible object store for the scale-out tests: OpenStack Swift with its s3api
  // middleware (MinIO is not packaged in Debian), which needs memcached.
  'swift', 'swift-proxy', 'swift-account', 'swift-container', 'swift-object', 'memcached',
  // Archive formats beyond 7-Zip's and Python's reach (test/archive-formats.test.ts): The
  // Unarchiver reads RAR and cabinets independently of libarchive, gcab writes cabinets, lzip and
  // zstd undo those compressions, binutils' ar reads and writes ar archives.
  'unar', 'gcab', 'lzip', 'zstd', 'binutils',
  // lz4 undoes tar.lz4; squashfs-tools, wimtools and arj write the samples of the formats the
  // engine reads with 7-Zip, and unpack them independently of it.
  'lz4', 'squashfs-tools', 'wimtools', 'arj',
];

/** The service's packages, and with `forTests` the tests' tools too; each once. */
export function packagesToInstall(forTests: boolean): string[] {
  return [...new Set([...PROCESS_PACKAGES, ...debianPackagesOf(ENGINE_MODULES), ...(forTests ? TEST_PACKAGES : [])])];
}

if (import.meta.main) process.stdout.write(`${packagesToInstall(process.argv.includes('--for-tests')).join('\n')}\n`);
