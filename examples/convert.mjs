#!/usr/bin/env node
// The spec's client flow in a few lines, with nothing but Node's own fetch (Node 18 or later):
//   node examples/convert.mjs photo.png webp [http://127.0.0.1:8080]
// Writes photo.webp next to the input and prints where.
import fs from 'node:fs/promises';
import path from 'node:path';

const [input, target, base = 'http://127.0.0.1:8080'] = process.argv.slice(2);
if (!input || !target) {
  console.error('usage: node examples/convert.mjs <file> <target format> [server url]');
  process.exit(2);
}

// 1. Submit the file and the target.
const form = new FormData();
form.append('file', new Blob([await fs.readFile(input)]), path.basename(input));
form.append('target', target);
const submitted = await (await fetch(`${base}/api/convert`, { method: 'POST', body: form })).json();
if (!submitted.ok) throw new Error(`${submitted.error.code}: ${submitted.error.message}`);

// 2. Poll about every half second until done or error.
let record;
do {
  await new Promise((resolve) => setTimeout(resolve, 500));
  record = await (await fetch(`${base}/api/progress/${submitted.job_id}`)).json();
  process.stderr.write(`\r${record.status} ${record.progress ?? 0}%   `);
} while (record.status === 'queued' || record.status === 'running');
process.stderr.write('\n');
if (record.status !== 'done') throw new Error(`${record.error?.code}: ${record.error?.message}`);

// 3. Download the result.
const output = path.join(path.dirname(input), `${path.parse(input).name}.${target.replace(/^\./, '').toLowerCase()}`);
await fs.writeFile(output, Buffer.from(await (await fetch(`${base}${record.download_url}`)).arrayBuffer()));
console.log(output);
