// Which pairs /api/formats lists (on a machine where every engine passed its probe, as
// scripts/formats-table.ts computes them) no test converted: `npm test` (scripts/test.mjs) gives the
// test files a ledger where the test client (test/helpers/client.ts) notes each finished job's
// source and target, then runs this on it. Every advertised pair must be proven by a test.
//
//   node scripts/pair-coverage.ts <ledger>   prints the pairs no test converted; exits 1 if any
import { readFileSync } from 'node:fs';
import { formatRows } from './formats-table.ts';

const ledger = process.argv[2];
if (!ledger) throw new Error('usage: node scripts/pair-coverage.ts <ledger>');
const converted = new Set(readFileSync(ledger, 'utf8').split('\n').filter(Boolean));
const advertised = formatRows().flatMap((row) => row.targets.map((target) => `${row.format.id} ${target}`));
const missing = advertised.filter((pair) => !converted.has(pair));
process.stdout.write(`pairs: ${advertised.length} advertised, ${advertised.length - missing.length} converted by a test, ${missing.length} not\n`);
if (missing.length > 0) {
  // Grouped by source, so a gap reads as "this format's targets" rather than a long list.
  const bySource = new Map<string, string[]>();
  for (const pair of missing) {
    const [source, target] = pair.split(' ');
    bySource.set(source!, [...(bySource.get(source!) ?? []), target!]);
  }
  for (const [source, targets] of bySource) process.stdout.write(`  ${source} → ${targets.join(' ')}\n`);
  process.exitCode = 1;
}
