// GET /api/progress/{job_id}: the polling endpoint. It is the hot path of the whole service
// (every client polls twice a second), so it is one indexed read and nothing else.
import type { FastifyInstance } from 'fastify';
import type { JobService } from '../../jobs/service.ts';

export function registerProgressRoute(app: FastifyInstance, service: JobService): void {
  app.get<{ Params: { jobId: string } }>('/api/progress/:jobId', async (request) => {
    return service.progress(request.params.jobId);
  });
}
