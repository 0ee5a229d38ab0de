// Every way the repository starts the service gives node the same flags (src/node-flags.ts): the
// bench and the tests start it with them, so what they measure and check is what a user runs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { SERVICE_NODE_FLAGS } from '../src/node-flags.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const FLAGS = SERVICE_NODE_FLAGS.join(' ');

test('npm start, npm run convertd, the Dockerfile, compose.yaml and the convertd command pass the service flags to node', async () => {
  const { scripts } = JSON.parse(await fs.readFile(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.equal(scripts.start, `node ${FLAGS} src/main.ts`);
  assert.equal(scripts.convertd, `node ${FLAGS} src/cli/main.ts`);

  const dockerfile = await fs.readFile(path.join(ROOT, 'Dockerfile'), 'utf8');
  const cmd = /^CMD (.+)$/m.exec(dockerfile)?.[1] ?? 'null';
  assert.deepEqual(JSON.parse(cmd), ['node', ...SERVICE_NODE_FLAGS, 'src/cli/main.ts', 'serve']);

  const compose = parse(await fs.readFile(path.join(ROOT, 'compose.yaml'), 'utf8')) as { services: Record<string, { command?: string[] }> };
  const nodeCommands = Object.values(compose.services).map((service) => service.command).filter((command) => command?.[0] === 'node');
  assert.ok(nodeCommands.length >= 2, 'compose.yaml runs convertd');
  for (const command of nodeCommands) assert.deepEqual(command!.slice(0, SERVICE_NODE_FLAGS.length + 2), ['node', ...SERVICE_NODE_FLAGS, 'src/cli/main.ts']);

  const cli = path.join(ROOT, 'src', 'cli', 'main.ts');
  const firstLine = (await fs.readFile(cli, 'utf8')).split('\n', 1)[0];
  assert.equal(firstLine, `#!/usr/bin/env -S node ${FLAGS}`);
  // The first line works as written: the command runs when executed directly (as npx and an
  // installed bin do), and node accepted the flags.
  const help = execFileSync(cli, ['--help'], { encoding: 'utf8' });
  assert.match(help, /usage:\n\s+convertd serve/);
});
