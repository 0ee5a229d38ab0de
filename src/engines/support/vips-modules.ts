// Which of libvips' loadable modules the vips and vipsheader commands load: HEIF and JPEG XL only.
//
// libvips loads every module of its modules directory when it starts. Debian's 8.14 ships five:
// HEIF, JPEG XL, ImageMagick, PDF (poppler) and OpenSlide. This engine reads and writes through the
// first two only (the others' formats are other engines', each with its own limits), yet every
// start of vips or vipsheader loaded all five and the libraries they link: 70 ms of CPU a start
// here, 40 ms with none and 50 ms with the two (perf stat, vipsheader of a small PNG), and a
// conversion starts two or more (BENCHMARKS.md, change 49). Loaded or not, a loader is also a way
// in: vipsheader picks its loader by the file's content, and ImageMagick's or poppler's would take
// files this engine never means to open (docs/security.md#vips-and-sharp).
//
// libvips looks for its modules under VIPSHOME when that is set (in <VIPSHOME>/<the last part of
// its library directory>/vips-modules-<version>, read from its VIPS_INFO messages here), so the
// engine points VIPSHOME at a directory of its own whose modules directory links to the two
// modules alone. Where the machine has no modules directory, nothing is set and libvips loads
// what it finds, as before.
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** The modules this engine's loaders and savers live in (heifload/heifsave, jxlload/jxlsave). */
export const WANTED_MODULES = ['vips-heif.so', 'vips-jxl.so'] as const;

/** libvips' modules directory on this machine (/usr/lib/<multiarch>/vips-modules-<version>), if it has one. */
export function systemModulesDirectory(libRoot = '/usr/lib'): string | undefined {
  let entries: string[];
  try {
    entries = readdirSync(libRoot);
  } catch {
    return undefined;
  }
  for (const arch of entries.filter((name) => /-linux-/.test(name)).sort()) {
    const dir = path.join(libRoot, arch);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    const modules = names.filter((name) => /^vips-modules-\d+\.\d+$/.test(name)).sort().pop();
    if (modules) return path.join(dir, modules);
  }
  return undefined;
}

/**
 * Makes a directory for VIPSHOME whose modules directory links to the wanted modules of
 * `systemModules`; resolves with it, or with undefined when the machine has no modules directory.
 * Readable by everyone (the engine user reads it through the sandbox's read-only binding).
 */
export async function makeModulesHome(systemModules = systemModulesDirectory()): Promise<string | undefined> {
  if (!systemModules) return undefined;
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'convertd-vips-'));
  // <home>/<multiarch>/vips-modules-<version>: libvips' library directory's last part under VIPSHOME.
  const modules = path.join(home, path.basename(path.dirname(systemModules)), path.basename(systemModules));
  await fs.mkdir(modules, { recursive: true });
  for (const name of WANTED_MODULES) {
    const target = path.join(systemModules, name);
    if (existsSync(target)) await fs.symlink(target, path.join(modules, name));
  }
  for (let dir = modules; dir.startsWith(home); dir = path.dirname(dir)) await fs.chmod(dir, 0o755);
  return home;
}
