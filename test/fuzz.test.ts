// A short, seeded fuzz run of the HTTP layer and the sniffer (scripts/fuzz-http.ts does long
// ones): hundreds of malformed requests, never a 500, and the service still answers afterwards.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fuzzHttp } from '../scripts/fuzz-http.ts';
import { convert } from './helpers/client.ts';
import { sampleImage } from './helpers/fixtures.ts';
import { startServer } from './helpers/server.ts';

test('400 malformed requests and hostile options: only documented statuses, and the service stays up', async () => {
  const server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_REQUEST_TIMEOUT_SECONDS: '2' });
  try {
    const report = await fuzzHttp(server.port, { seed: 20261122, iterations: 400 });
    assert.deepEqual(report.unacceptable, [], `statuses: ${JSON.stringify(report.byStatus)}`);
    assert.ok(Object.keys(report.byStatus).length >= 4, `the fuzzer reached several outcomes: ${JSON.stringify(report.byStatus)}`);
    assert.ok(!server.logs.some((line) => /"level":50/.test(line) && /unhandled error while serving/.test(line)), 'no unhandled error was logged');
    await convert(server.url, await sampleImage('png'), 'after.png', 'webp');
    // The submissions with hostile options that were accepted ran (the queue is first in, first
    // out): none of them met an error the service did not expect.
    assert.ok(!server.logs.some((line) => /unexpected error in a conversion/.test(line)), server.logs.filter((line) => /unexpected error/.test(line)).join('\n'));
  } finally {
    await server.stop();
  }
});
