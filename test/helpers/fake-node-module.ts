// A module for a pooled Node process (src/process/pool/node-host.ts loads it), for the tests of the
// node pools' own options (test/chromium-formats.test.ts): `convert` writes the process's pid into
// the output, `sicken` makes the module's own health check (`ping`) fail from then on, as the
// chromium engine's helper fails it when its browser no longer answers.
import fs from 'node:fs/promises';
import type { Handlers } from '../../src/process/pool/node-host.ts';

let sick = false;

export const handlers: Handlers = {
  async ping() {
    if (sick) throw new Error('sick on purpose');
    return null;
  },
  async sicken() {
    sick = true;
    return null;
  },
  async convert(request) {
    await fs.writeFile(String(request.output), String(process.pid));
    return null;
  },
};
