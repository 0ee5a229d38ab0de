// The sandbox of every engine process, tried from inside with real programs: no network, none of
// the host's files beyond /usr and a few config paths, the work dir as the only writable place,
// an unprivileged user when the service is root, and the whole tree killed on timeout.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ConvertdError } from '../src/errors.ts';
import { runProcess } from '../src/process/runner.ts';
import { configureSandbox, giveToEngineUser, unenterableDirectory } from '../src/process/sandbox.ts';
import { SERVICE_NODE_FLAGS } from '../src/node-flags.ts';
import { tempDir } from './helpers/server.ts';

let listener: http.Server;
let port: number;
let workDir: string;
const asRoot = process.getuid?.() === 0;

before(async () => {
  const { problem } = configureSandbox('auto');
  assert.equal(problem, undefined, `bubblewrap must work for these tests: ${problem}`);
  listener = http.createServer((_req, res) => res.end('reached')).listen(0, '127.0.0.1');
  await new Promise((resolve) => listener.once('listening', resolve));
  port = (listener.address() as AddressInfo).port;
  workDir = await tempDir('convertd-sandbox-');
  await fs.chmod(workDir, 0o711);
  await giveToEngineUser(workDir);
});
after(() => {
  listener.close();
  configureSandbox('off');
});

const bash = (script: string) => runProcess('/usr/bin/bash', ['-c', script], { cwd: workDir, timeoutMs: 10_000, captureStdout: true });

test('no network: a connection to a server on this machine fails from inside', async () => {
  const inside = await bash(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`);
  assert.notEqual(inside.exitCode, 0);
  assert.doesNotMatch(inside.stdout, /connected/);
  // Control: the same server is reachable from outside the sandbox.
  assert.equal(await (await fetch(`http://127.0.0.1:${port}/`)).text(), 'reached');
});

test('the host\'s files are out of sight: /etc/passwd, /root, the service\'s own tree', async () => {
  const result = await bash(`cat /etc/passwd; ls /root; ls ${path.resolve('.')}; ls /work; echo done`);
  assert.doesNotMatch(result.stdout, /root:x:0:0/);
  assert.doesNotMatch(result.stdout, /package\.json/);
  assert.match(result.stdout, /done/);
});

test('only the work dir is writable, and the program runs unprivileged when the service is root', async () => {
  const result = await bash('touch /usr/evil 2>/dev/null || echo usr-read-only; echo hello > inside.txt && echo wrote; id -u; echo "$HOME $TMPDIR"');
  assert.match(result.stdout, /usr-read-only/);
  assert.match(result.stdout, /wrote/);
  assert.equal(await fs.readFile(path.join(workDir, 'inside.txt'), 'utf8'), 'hello\n');
  if (asRoot) assert.match(result.stdout, /^65534$/m);
  assert.match(result.stdout, new RegExp(`${workDir} ${workDir}`));
});

test('a timeout kills everything the sandboxed program started', async () => {
  await assert.rejects(
    runProcess('/usr/bin/bash', ['-c', 'sleep 300 & sleep 300 & wait'], { cwd: workDir, timeoutMs: 500 }),
    (error: unknown) => error instanceof ConvertdError && error.code === 'timeout',
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  const survivors: string[] = [];
  for (const pid of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    // Only this program's children (they work in its directory): other processes on the machine
    // may well be sleeping too.
    const cwd = await fs.readlink(`/proc/${pid}/cwd`).catch(() => '');
    if (cmdline.startsWith('sleep\u0000300') && cwd === workDir && !/ Z /.test(stat)) survivors.push(pid);
  }
  assert.deepEqual(survivors, [], 'sleep processes survived the timeout');
});

test('a data directory inside a directory the engines\' user cannot enter stops the service at start, saying which and what to do', async (t) => {
  if (!asRoot) return t.skip('engines run as another user only when the service is root');
  const closed = await tempDir('convertd-closed-'); // mkdtemp: 0700, root's own
  const dataDir = path.join(closed, 'data');
  assert.equal(unenterableDirectory(dataDir, { mode: 'bwrap', uid: 65534, gid: 65534 }), closed);
  assert.equal(unenterableDirectory(dataDir, { mode: 'off' }), undefined);
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, path.join(import.meta.dirname, '..', 'src', 'main.ts')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', CONVERTD_DATA_DIR: dataDir, CONVERTD_LIBREOFFICE_START: 'lazy', CONVERTD_POOL_START: 'lazy' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 1, output);
  assert.match(output, /"event":"data_dir_unreachable"/);
  assert.ok(output.includes(`cannot enter ${closed}`) && output.includes(`chmod o+x ${closed}`), output);
  assert.doesNotMatch(output, /"event":"listening"/);
  await fs.chmod(closed, 0o711);
  assert.equal(unenterableDirectory(dataDir, { mode: 'bwrap', uid: 65534, gid: 65534 }), undefined, 'a traversable parent is fine (the data directory itself is made by the service)');
});
