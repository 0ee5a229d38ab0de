// GET /api/formats and GET /api/limits: what the service converts and the limits in force.
import type { FastifyInstance } from 'fastify';
import { ROUTE_SCHEMAS } from '../schemas.ts';
import type { Config } from '../../config.ts';
import { asNotFound } from '../../errors.ts';
import type { JobService } from '../../jobs/service.ts';
import { clientKey, type RateLimits } from '../rate-limits.ts';
import type { ConversionOptions, FormatList, Limits } from '../../wire/shapes.ts';

export function registerCatalogueRoutes(app: FastifyInstance, service: JobService, config: Config, limits: { submit: RateLimits; read: RateLimits }): void {
  // Computed once: the catalogue changes only when the engines do, at start.
  const formats: FormatList = { formats: service.catalogue };
  app.get<{ Reply: FormatList }>('/api/formats', { schema: ROUTE_SCHEMAS.formats }, async () => formats);

  // The options of one pair, computed from the engines' declarations (cached by the planner).
  app.get<{ Params: { source: string; target: string }; Reply: ConversionOptions }>('/api/formats/:source/:target', { schema: ROUTE_SCHEMAS.conversionOptions },
    async (request) => {
      try {
        return service.conversionOptions(request.params.source, request.params.target);
      } catch (error) {
        throw asNotFound(error); // the contract: an unknown pair is not found here, not a refused upload
      }
    });

  app.get<{ Reply: Limits }>('/api/limits', { schema: ROUTE_SCHEMAS.limits }, async (request) => {
    const key = clientKey(request.ip);
    const [submitStates, readStates] = await Promise.all([limits.submit.peek(key), limits.read.peek(key)]);
    const describe = (appliesTo: Limits['rate_limits'][number]['applies_to']) => (state: { limit: number; windowSeconds: number; remaining: number; resetSeconds: number }) => ({
      limit: state.limit,
      window_seconds: state.windowSeconds,
      applies_to: appliesTo,
      remaining: state.remaining,
      reset_seconds: state.resetSeconds,
    });
    return {
      max_file_size_bytes: config.maxFileBytes,
      file_lifetime_seconds: config.fileLifetimeSeconds,
      rate_limits: [...submitStates.map(describe('submissions')), ...readStates.map(describe('other_requests'))],
    };
  });
}
