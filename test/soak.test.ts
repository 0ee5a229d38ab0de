// A short soak (scripts/soak.ts runs the full minute of 200 pollers and 50 submitters): only
// success and the documented 429/503, every accepted job ends, no result has the wrong size,
// memory bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { soak, summary } from '../scripts/soak.ts';
import { startServer } from './helpers/server.ts';

test('a short soak: 60 pollers and 12 submitters for 8 seconds', async () => {
  // The pools warm before the soak, as a service started with the default settings has them: the
  // soak measures a running service, not the first job's wait for a pool (lazy in test services).
  const server = await startServer({ CONVERTD_RATE_LIMITS: 'off', CONVERTD_READ_RATE_LIMITS: 'off', CONVERTD_POOL_START: 'eager' });
  try {
    const report = await soak(server.url, server.child.pid!, { seconds: 8, pollers: 60, submitters: 12 });
    const line = summary(report);
    assert.deepEqual(Object.keys(report.byStatus).filter((k) => k.startsWith('other')), [], line);
    assert.ok(report.accepted > 20, line);
    assert.equal(report.done + report.failed, report.accepted, line);
    assert.equal(report.failed, 0, line);
    assert.equal(report.lost, 0, line);
    assert.equal(report.wrongSize, 0, line);
    assert.ok(report.peakRssMiB < 600, line);
  } finally {
    await server.stop();
  }
});
