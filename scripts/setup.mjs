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
//
// The Debian packages are not named here: scripts/packages.ts prints them from the list of engines
// (each engine module names its own), run with the Node 24 that npm ci has just installed.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const forTests = process.argv.includes('--for-tests');

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

const node24 = path.join(root, 'node_modules', '.bin', 'node');

/** The Debian packages the engines (and with --for-tests, the tests) need, from scripts/packages.ts. */
function debianPackages() {
  const args = [path.join(root, 'scripts', 'packages.ts'), ...(forTests ? ['--for-tests'] : [])];
  return execFileSync(node24, args, { cwd: root, encoding: 'utf8' }).split('\n').map((line) => line.trim()).filter(Boolean);
}

function checkNodeVersion() {
  const node = node24;
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const major = Number(version.replace(/^v/, '').split('.')[0]);
  if (major < 24) throw new Error(`node_modules/.bin/node is ${version}; convertd needs Node 24 (npm ci installs it)`);
  return version;
}

try {
  installNpmPackages();
  const version = checkNodeVersion();
  const ok = installDebianPackages(debianPackages());
  if (!ok && forTests) {
    say('the tests validate outputs with these tools and cannot run without them');
    process.exit(1);
  }
  say(`ready (Node ${version})`);
} catch (error) {
  say(`set-up failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
