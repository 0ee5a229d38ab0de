// GET /api/progress/{job_id}: the polling endpoint. It is the hot path of the whole service
// (every client polls twice a second), so it is one store lookup and nothing else (the embedded
// store answers it from memory).
// GET /api/progress/{job_id}/events: the same records as a Server-Sent Events stream, for clients
// that would rather not poll; it ends after `done` or `error`. The service reads the record again
// whenever the worker says it changed (and at least once a second), and sends it only when it
// really did.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ROUTE_SCHEMAS, type JobParams } from '../schemas.ts';
import type { JobService } from '../../jobs/service.ts';
import type { ProgressRecord } from '../../wire/shapes.ts';

const STREAM_CHECK_MS = 1000;
const JSON_TYPE = 'application/json; charset=utf-8';
const KEEP_ALIVE_MS = 15_000;

export function registerProgressRoute(app: FastifyInstance, service: JobService): void {
  // JobService hands out the same frozen answer for a job until its record changes, so its JSON
  // text is made once (by the route's own serializer, from the response schema) and kept beside
  // it: serialising on every poll was a few percent of the endpoint's time (BENCHMARKS.md,
  // change 29). A string body with a JSON content type is sent by fastify as it is.
  const bodies = new WeakMap<ProgressRecord, string>();
  const send = (reply: FastifyReply, record: ProgressRecord): void => {
    let body = bodies.get(record);
    if (body === undefined) {
      body = reply.serialize(record) as string; // a JSON serializer returns text
      if (Object.isFrozen(record)) bodies.set(record, body);
    }
    reply.header('content-type', JSON_TYPE).send(body);
  };
  // The handler is not async: a polled job's answer is usually ready in memory (a running or
  // finished job polled before), and then it is sent at once. Going through three promises (the
  // handler's, the service's and the store's) for it cost about a fifth of the endpoint's CPU
  // time per request (BENCHMARKS.md, change 35). Everything else (a queued job's place, a first
  // poll, an unknown or expired job, a store that needs I/O) takes the promise.
  app.get<{ Params: JobParams }>('/api/progress/:job_id', { schema: ROUTE_SCHEMAS.progress }, (request, reply) => {
    const { job_id: jobId } = request.params;
    const ready = service.progressNow(jobId);
    if (ready) {
      send(reply, ready);
      return undefined;
    }
    return service.progress(jobId).then((record) => send(reply, record));
  });

  app.get<{ Params: JobParams }>('/api/progress/:job_id/events', { schema: ROUTE_SCHEMAS.progressEvents }, async (request, reply) => {
    const { job_id: jobId } = request.params;
    // Waiting starts before each read, so that a change stored between a read and the wait is
    // not missed. Unknown or expired jobs get the contract's JSON error, before any stream starts.
    let change = service.nextChange(jobId, STREAM_CHECK_MS);
    let record = await service.progress(jobId);
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // Proxies such as nginx buffer responses unless told not to.
      'x-accel-buffering': 'no',
    });
    let open = true;
    response.on('close', () => { open = false; });
    const send = (data: unknown) => response.write(`data: ${JSON.stringify(data)}\n\n`);
    let sent = JSON.stringify(record);
    send(record);
    let quietSince = Date.now();
    while (open && record.status !== 'done' && record.status !== 'error') {
      await change;
      change = service.nextChange(jobId, STREAM_CHECK_MS);
      try {
        record = await service.progress(jobId);
      } catch {
        break; // expired or forgotten meanwhile: the polling endpoint tells why
      }
      const text = JSON.stringify(record);
      if (text !== sent) {
        sent = text;
        send(record);
        quietSince = Date.now();
      } else if (Date.now() - quietSince > KEEP_ALIVE_MS) {
        response.write(': keep-alive\n\n');
        quietSince = Date.now();
      }
    }
    response.end();
    request.log.info({ method: 'GET', route: '/api/progress/:job_id/events', status: 200 }, 'request');
  });
}
