#!/usr/bin/env node
// Set-up that runs before `npm start`, `npm test` and `npm run bench` (prestart, pretest,
// prebench). Plain JavaScript, so it runs on whatever Node the machine has: it installs the npm
// packages (which bring Node 24 itself as the `node` package into node_modules/.bin, where npm
// scripts look first), then the Debian packages of the engines: with apt-get when root, with
// `sudo -n` when allowed, otherwise it prints the exact command and carries on with what is there
// (the engines whose probe fails are simply not advertised).
//
//   node scripts/setup.mjs              what the service needs
//   node scripts/setup.mjs --for-tests  plus the independent tools the tests validate outputs with
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const forTests = process.argv.includes('--for-tests');

/** Debian packages per purpose. Engines of later families add theirs here. */
const SERVICE_PACKAGES = [
  'util-linux', // prlimit: resource limits for every engine process
  'bubblewrap', // the sandbox every engine process runs in
  'cgroup-tools', // cgexec: starts each engine process inside its memory cgroup
  'ffmpeg', // audio and video (ffmpeg, ffprobe)
  'libvips-tools', // HEIC/HEIF, JPEG XL, JPEG 2000 (the vips command; sharp's own libvips lacks them)
  'imagemagick', // rare raster formats only, under config/imagemagick/policy.xml
  'librsvg2-bin', // SVG (rsvg-convert)
  'python3-fonttools', // fonts (ttf, otf, woff), run by /usr/bin/python3
  'python3-brotli', // WOFF2 compression for fontTools
  'libarchive-tools', // archives (bsdtar reads and writes zip, 7z, tar and its compressions)
  'libreoffice-nogui', // office documents, spreadsheets, presentations (a warm pool driven over UNO)
  'python3-uno', // the UNO bridge the pool's helper speaks to LibreOffice with
  'fonts-dejavu-core', // a font family for documents that name fonts the machine lacks
  'pandoc', // markup and document formats
  'poppler-utils', // PDF: pdfinfo, pdftoppm, pdftotext, pdftohtml
  'ghostscript', // PDF/A (PDF input only, never PostScript uploads)
  'img2pdf', // images to PDF, losslessly
  'calibre', // ebooks (ebook-convert)
];
const TEST_PACKAGES = [
  'file', // independent check of every output's type
  'qpdf', // checks PDF outputs' structure independently of poppler
  'python3-pil', // Pillow: an image decoder independent of the engines
  'p7zip-full', // 7z: lists archive outputs independently of libarchive
  'python3-yaml', // reads YAML outputs independently of the npm library
  'chromium', // the web page's end-to-end tests (driven by playwright-core)
  'wrk', // npm run bench: loads /api/progress from a process of its own
  'redis-server', // the scale-out tests' job store, queue and rate-limit counters
  // A real S3-compatible object store for the scale-out tests: OpenStack Swift with its s3api
  // middleware (MinIO is not packaged in Debian), which needs memcached.
  'swift', 'swift-proxy', 'swift-account', 'swift-container', 'swift-object', 'memcached',
];

function say(message) {
  process.stdout.write(`[setup] ${message}\n`);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', cwd: root, ...options });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed with exit code ${result.status}`);
  }
}

function npmPackagesUpToDate() {
  const installed = path.join(root, 'node_modules', '.package-lock.json');
  const lock = path.join(root, 'package-lock.json');
  if (!existsSync(installed) || !existsSync(path.join(root, 'node_modules', '.bin', 'node'))) return false;
  return statSync(installed).mtimeMs >= statSync(lock).mtimeMs;
}

function installNpmPackages() {
  if (npmPackagesUpToDate()) return;
  say('installing npm packages (npm ci)');
  run('npm', ['ci', '--no-audit', '--no-fund']);
}

function missingDebianPackages(packages) {
  return packages.filter((name) => {
    const result = spawnSync('dpkg-query', ['-W', '-f=${Status}', name], { encoding: 'utf8' });
    return result.status !== 0 || !result.stdout.includes('install ok installed');
  });
}

function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

function canSudo() {
  return spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
}

function aptListsAreFresh() {
  try {
    const lists = '/var/lib/apt/lists';
    const entries = readdirSync(lists).filter((name) => /Packages(\.lz4)?$/.test(name));
    return entries.length > 0 && Date.now() - statSync(lists).mtimeMs < 24 * 3600 * 1000;
  } catch {
    return false;
  }
}

function installDebianPackages(packages) {
  const missing = missingDebianPackages(packages);
  if (missing.length === 0) return true;
  const command = ['apt-get', 'install', '-y', '--no-install-recommends', ...missing];
  if (!existsSync('/usr/bin/apt-get')) {
    say(`missing system packages: ${missing.join(' ')} (this is not a Debian/Ubuntu machine: install them with its package manager)`);
    return false;
  }
  const prefix = isRoot() ? [] : canSudo() ? ['sudo', '-n'] : undefined;
  if (!prefix) {
    say(`missing system packages: ${missing.join(' ')}`);
    say(`run this once as root, then start again:\n    sudo apt-get update && sudo ${command.join(' ')}`);
    return false;
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const exec = (args) => (prefix.length ? run(prefix[0], [...prefix.slice(1), ...args], { env }) : run(args[0], args.slice(1), { env }));
  say(`installing system packages: ${missing.join(' ')}`);
  if (!aptListsAreFresh()) exec(['apt-get', 'update']);
  exec(command);
  return true;
}

function checkNodeVersion() {
  const node = path.join(root, 'node_modules', '.bin', 'node');
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const major = Number(version.replace(/^v/, '').split('.')[0]);
  if (major < 24) throw new Error(`node_modules/.bin/node is ${version}; convertd needs Node 24 (npm ci installs it)`);
  return version;
}

try {
  installNpmPackages();
  const version = checkNodeVersion();
  const ok = installDebianPackages(forTests ? [...SERVICE_PACKAGES, ...TEST_PACKAGES] : SERVICE_PACKAGES);
  if (!ok && forTests) {
    say('the tests validate outputs with these tools and cannot run without them');
    process.exit(1);
  }
  say(`ready (Node ${version})`);
} catch (error) {
  say(`set-up failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
