// The HTTP layer: fastify with the five endpoints of the spec, the contract's error bodies for
// everything else (404 not_found, 405 method_not_allowed with Allow), rate limits, and one log
// line per request. It talks to the jobs layer only (JobService).
import { randomBytes } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import multipart from '@fastify/multipart';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { ConvertdError } from '../errors.ts';
import type { JobService } from '../jobs/service.ts';
import type { Metrics } from '../observability/metrics.ts';
import { sendError } from './errors.ts';
import { clientKey, RateLimits, rateLimitHeaders } from './rate-limits.ts';
import { registerCatalogueRoutes } from './routes/catalogue.ts';
import { registerConvertRoute } from './routes/convert.ts';
import { registerDeleteRoute, registerDownloadRoute } from './routes/download.ts';
import { registerOperationsRoutes } from './routes/operations.ts';
import { registerOpenApi } from './openapi.ts';
import { SHARED_SCHEMAS } from './schemas.ts';
import { registerWebRoutes } from './routes/web.ts';
import { registerProgressRoute } from './routes/progress.ts';
import { requestLoggerFactory } from './request-logger.ts';

export interface AppDeps {
  readonly config: Config;
  readonly service: JobService;
  readonly log: Logger;
  readonly submitLimits?: RateLimits;
  readonly readLimits?: RateLimits;
  readonly metrics?: Metrics;
}

/** Multipart overhead allowed beyond the file itself before a Content-Length is refused unread. */
const MULTIPART_HEADROOM = 64 * 1024;

/** fastify route pattern ("/api/progress/:job_id") to a RegExp for the 405 check. */
function patternOf(url: string): RegExp {
  const body = url.split('/').map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
  return new RegExp(`^${body}/?$`);
}

// Request ids: unique per process and cheap (a random prefix and a counter); a random id per
// request cost the progress endpoint a crypto call each time.
const REQUEST_ID_PREFIX = randomBytes(4).toString('hex');
let nextRequestId = 0;
const requestId = (): string => `${REQUEST_ID_PREFIX}${(nextRequestId++).toString(36)}`;

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, service } = deps;
  const submitLimits = deps.submitLimits ?? new RateLimits(config.submitRateLimits, 'submit');
  const readLimits = deps.readLimits ?? new RateLimits(config.readRateLimits, 'read');

  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    // One line per request, written in onResponse below, instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: requestLoggerFactory as unknown as NonNullable<FastifyServerOptions['childLoggerFactory']>, // fastify types its loggers loosely; ours is pino's
    genReqId: requestId,
    trustProxy: config.trustedProxies.length > 0 ? [...config.trustedProxies] : false,
    // Node checks the header and request timeouts on a timer (30 s by default): check every
    // second, so that a slow client is cut off close to its limit.
    http: { connectionsCheckingInterval: 1000 },
    // Slow clients cannot hold resources for ever: the whole request (a 25 MB upload at a slow
    // but honest 256 kB/s takes under two minutes), and any connection with nothing moving on it
    // (a client that never reads its download), are cut off.
    requestTimeout: config.requestTimeoutSeconds * 1000,
    connectionTimeout: config.idleTimeoutSeconds * 1000,
    keepAliveTimeout: 10_000,
    return503OnClosing: false, // answered below in the contract's shape
    routerOptions: { maxParamLength: 200 },
  });
  app.server.headersTimeout = config.headersTimeoutSeconds * 1000;
  app.server.maxHeadersCount = 100;
  // An idle kept-alive connection is closed 5 s after the 10 s the Keep-Alive header advertises
  // (Node's own margin is 1 s): a client that honours the header (undici closes 1 s early) but
  // whose event loop was busy when its timer was due must not send on a socket being closed, which
  // ends in EPIPE or a reset for a request that never arrived.
  app.server.keepAliveTimeoutBuffer = 5_000;

  // No endpoint takes a JSON or text body: accept any content type unread, so that the convert
  // route answers non-multipart bodies with the contract's invalid_request.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  // Which methods each known path accepts, for 405 answers with an Allow header.
  const known: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const pattern = patternOf(route.url);
    let entry = known.find((k) => k.pattern.source === pattern.source);
    if (!entry) {
      entry = { pattern, methods: new Set() };
      known.push(entry);
    }
    for (const method of methods) entry.methods.add(method);
  });

  let closing = false;
  app.addHook('preClose', async () => { closing = true; });

  // The two hooks below run on every request, so they are written with callbacks: an async hook
  // costs each request a promise and a trip through the microtask queue, a few percent of the
  // progress endpoint's time (BENCHMARKS.md, change 29). Only a request that has limits to count
  // or a submission to check goes through a promise.
  const admit = async (request: FastifyRequest, reply: FastifyReply, isSubmission: boolean): Promise<void> => {
    const decision = await (isSubmission ? submitLimits : readLimits).consume(clientKey(request.ip));
    if (decision && (isSubmission || !decision.allowed)) reply.headers(rateLimitHeaders(decision));
    if (decision && !decision.allowed) {
      deps.metrics?.rateLimited.inc({ kind: isSubmission ? 'submissions' : 'other_requests' });
      const { tightest } = decision;
      throw new ConvertdError('rate_limited',
        `Too many ${isSubmission ? 'submissions' : 'requests'} from this client (${tightest.limit} per ${tightest.windowSeconds} s): wait ${decision.retryAfterSeconds} s, then try again.`,
        { limit: tightest.limit, window_seconds: tightest.windowSeconds, retry_after_seconds: decision.retryAfterSeconds });
    }
    if (isSubmission) {
      // Refuse before reading a byte of the body when the answer is already known.
      await service.checkCapacity();
      await service.checkDiskSpace();
      const length = Number(request.headers['content-length']);
      if (Number.isFinite(length) && length > config.maxFileBytes + MULTIPART_HEADROOM) {
        throw new ConvertdError('file_too_large', undefined, { max_bytes: config.maxFileBytes });
      }
    }
  };
  app.addHook('onRequest', (request, reply, done) => {
    if (closing) {
      if (request.routeOptions.url === '/readyz') {
        // Readiness answers in its own shape, as its schema says (an error body here could not be
        // serialised and became a 500): not ready, because the service is going away.
        reply.code(503).headers({ 'retry-after': '5', 'cache-control': 'no-store' })
          .send({ status: 'not_ready', ready: false, checks: { shutdown: { ok: false, problem: 'the service is shutting down' } }, engines_unavailable: [] });
        return;
      }
      done(new ConvertdError('unavailable', undefined, {}, { 'retry-after': '5' }));
      return;
    }
    const isSubmission = request.method === 'POST' && request.routeOptions.url === '/api/convert';
    if (!isSubmission && !readLimits.enabled) {
      done();
      return;
    }
    admit(request, reply, isSubmission).then(() => done(), done);
  });

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unknown';
    if (deps.metrics) {
      deps.metrics.countRequest(route, request.method, reply.statusCode);
      if (route === '/api/convert' && reply.statusCode === 200) deps.metrics.bytesIn.inc(Number(request.headers['content-length']) || 0);
      if (route.startsWith('/api/download') && request.method === 'GET' && (reply.statusCode === 200 || reply.statusCode === 206)) {
        deps.metrics.bytesOut.inc(Number(reply.getHeader('content-length')) || 0);
      }
    }
    // A polling client answered normally logs at debug: twice a second per job, those lines would
    // drown the rest and cost the hot path a tenth of its time (BENCHMARKS.md). Its errors stay at info.
    const level = route === '/api/progress/:job_id' && reply.statusCode < 400 ? 'debug' : 'info';
    request.log[level]({
      method: request.method,
      // The pattern, not the URL: download tokens are secrets and stay out of the logs.
      route,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    }, 'request');
    done();
  });

  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const entry = known.find((k) => k.pattern.test(path));
    if (entry) {
      const allow = [...entry.methods].sort().join(', ');
      return sendError(request, reply, new ConvertdError('method_not_allowed', `${request.method} is not accepted here: use ${allow}.`, {}, { allow }));
    }
    return sendError(request, reply, new ConvertdError('not_found'));
  });

  await registerOpenApi(app, '0.1.0', service.optionDescriptors());
  // @fastify/multipart adds an async onRequest and an async onResponse hook to every route of the
  // context it is registered in. Only the convert route reads a multipart body, so it has a context
  // of its own, and a progress poll does not pay for two promises and their microtask trips.
  await app.register(async (uploads) => {
    await uploads.register(multipart, {
      // Options are text parts: room for every option a conversion takes, each value short.
      limits: { fileSize: config.maxFileBytes, files: 1, fields: 40, fieldSize: 1024, parts: 42, headerPairs: 100 },
      throwFileSizeLimit: true,
    });
    registerConvertRoute(uploads, service, config.maxFileBytes);
  });
  registerProgressRoute(app, service);
  registerDownloadRoute(app, service);
  registerDeleteRoute(app, service);
  registerCatalogueRoutes(app, service, config, { submit: submitLimits, read: readLimits });
  registerOperationsRoutes(app, service, deps.metrics);
  await registerWebRoutes(app);
  return app;
}

/**
 * A worker's own small HTTP server (`convertd worker` with a port): /healthz, /readyz and
 * /metrics only, so that an orchestrator can check it and Prometheus can scrape its conversion
 * durations and pool figures, which only the worker has.
 */
export async function buildOperationsApp(deps: Pick<AppDeps, 'service' | 'log' | 'metrics'>): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestId,
  });
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) => sendError(request, reply, new ConvertdError('not_found', 'A worker serves only /healthz, /readyz and /metrics.')));
  registerOperationsRoutes(app, deps.service, deps.metrics);
  return app;
}
