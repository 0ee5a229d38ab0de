// Operations endpoints, outside the spec's API: /healthz (the process answers), /readyz (it can
// take and convert a job now: 200, or 503 saying which check failed), and /metrics (Prometheus).
import type { FastifyInstance } from 'fastify';
import { ROUTE_SCHEMAS } from '../schemas.ts';
import type { JobService } from '../../jobs/service.ts';
import type { Metrics } from '../../observability/metrics.ts';
import type { Readiness } from '../../wire/shapes.ts';

export function registerOperationsRoutes(app: FastifyInstance, service: JobService, metrics: Metrics | undefined): void {
  app.get('/healthz', { schema: ROUTE_SCHEMAS.healthz }, async () => ({ status: 'ok' }));

  app.get<{ Reply: Readiness }>('/readyz', { schema: ROUTE_SCHEMAS.readyz }, async (_request, reply) => {
    const readiness = await service.readiness();
    reply.code(readiness.ready ? 200 : 503).header('cache-control', 'no-store');
    return { status: readiness.ready ? 'ready' : 'not_ready', ...readiness };
  });

  if (metrics) {
    app.get('/metrics', { schema: ROUTE_SCHEMAS.metrics }, async (_request, reply) => {
      const { contentType, body } = await metrics.render();
      reply.header('content-type', contentType).header('cache-control', 'no-store');
      return body;
    });
  }
}
