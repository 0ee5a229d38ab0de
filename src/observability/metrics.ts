// Prometheus metrics (prom-client) for /metrics. One instance per service, handed to the layers
// that count: HTTP (requests, rate-limit refusals, bytes in and out) and jobs (outcomes, durations,
// queue wait). Gauges that mirror a state (queue depth, LibreOffice pool, disk) are read when
// Prometheus scrapes, from the sources the wiring in main.ts registers.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface PoolStatsSource {
  readonly name: string;
  stats(): { size: number; busy: number; waiting: number; started: number; restarts: number };
}

export interface MetricSources {
  readonly queueWaiting: () => Promise<number>;
  readonly jobsRunning: () => Promise<number>;
  readonly disk: () => Promise<{ freeBytes: number; totalBytes: number }>;
  readonly pools: readonly PoolStatsSource[];
}

const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900];

export class Metrics {
  readonly registry = new Registry();
  /**
   * Requests answered since the last scrape, by route, method and status. prom-client's labelled
   * `inc` builds and hashes a label string on every call, a few percent of the progress endpoint's
   * time (BENCHMARKS.md, change 29): the hot path adds one to a number here, and the counter takes
   * the sums when Prometheus scrapes.
   */
  private readonly pendingRequests = new Map<string, Map<string, Map<number, { labels: { route: string; method: string; status: number }; count: number }>>>();
  readonly httpRequests = new Counter({
    name: 'convertd_http_requests_total', help: 'HTTP requests by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const, registers: [this.registry],
    collect: () => {
      for (const byMethod of this.pendingRequests.values()) {
        for (const byStatus of byMethod.values()) {
          for (const entry of byStatus.values()) {
            if (entry.count === 0) continue;
            this.httpRequests.inc(entry.labels, entry.count);
            entry.count = 0;
          }
        }
      }
    },
  });

  /** Counts one answered request (see pendingRequests). */
  countRequest(route: string, method: string, status: number): void {
    let byMethod = this.pendingRequests.get(route);
    if (!byMethod) this.pendingRequests.set(route, byMethod = new Map());
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, byStatus = new Map());
    const entry = byStatus.get(status);
    if (entry) entry.count++;
    else byStatus.set(status, { labels: { route, method, status }, count: 1 });
  }
  readonly rateLimited = new Counter({
    name: 'convertd_rate_limited_total', help: 'Requests refused by a rate limit, by kind (submissions or other requests)',
    labelNames: ['kind'] as const, registers: [this.registry],
  });
  readonly bytesIn = new Counter({ name: 'convertd_upload_bytes_total', help: 'Bytes of accepted upload requests (the multipart bodies, as their Content-Length says)', registers: [this.registry] });
  readonly bytesOut = new Counter({ name: 'convertd_download_bytes_total', help: 'Bytes of results sent', registers: [this.registry] });
  readonly jobs = new Counter({
    name: 'convertd_jobs_total', help: 'Finished jobs by status (done or error), error code and engines used',
    labelNames: ['status', 'code', 'engines'] as const, registers: [this.registry],
  });
  readonly options = new Counter({
    name: 'convertd_options_total', help: 'Conversion options applied to accepted jobs, by option name',
    labelNames: ['name'] as const, registers: [this.registry],
  });
  readonly conversionSeconds = new Histogram({
    name: 'convertd_conversion_seconds', help: 'Duration of a conversion (all its steps) by engines and pair family (source category > target category)',
    labelNames: ['engines', 'family'] as const, buckets: DURATION_BUCKETS, registers: [this.registry],
  });
  readonly queueWaitSeconds = new Histogram({
    name: 'convertd_queue_wait_seconds', help: 'Time from submission to the start of the first attempt',
    buckets: DURATION_BUCKETS, registers: [this.registry],
  });

  constructor(sources: MetricSources) {
    collectDefaultMetrics({ register: this.registry, prefix: 'convertd_' });
    new Gauge({ name: 'convertd_queue_depth', help: 'Jobs waiting for a worker slot', registers: [this.registry], async collect() { this.set(await sources.queueWaiting()); } });
    new Gauge({ name: 'convertd_jobs_running', help: 'Jobs being converted now', registers: [this.registry], async collect() { this.set(await sources.jobsRunning()); } });
    const poolGauge = (name: string, help: string, pick: (s: ReturnType<PoolStatsSource['stats']>) => number) => new Gauge({
      name, help, labelNames: ['pool'] as const, registers: [this.registry],
      collect() {
        for (const pool of sources.pools) this.set({ pool: pool.name }, pick(pool.stats()));
      },
    });
    poolGauge('convertd_pool_size', 'Processes a pool keeps', (s) => s.size);
    poolGauge('convertd_pool_busy', 'Pool processes converting now', (s) => s.busy);
    poolGauge('convertd_pool_waiting', 'Jobs waiting for a pool process', (s) => s.waiting);
    poolGauge('convertd_pool_started_total', 'Pool processes started since the service started', (s) => s.started);
    poolGauge('convertd_pool_restarts_total', 'Pool processes replaced after a crash, hang or failed health check', (s) => s.restarts);
    const disk = sources.disk;
    new Gauge({
      name: 'convertd_data_disk_bytes', help: 'Size and free space of the data directory\'s file system',
      labelNames: ['kind'] as const, registers: [this.registry],
      async collect() {
        const { freeBytes, totalBytes } = await disk();
        this.set({ kind: 'free' }, freeBytes);
        this.set({ kind: 'total' }, totalBytes);
      },
    });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
