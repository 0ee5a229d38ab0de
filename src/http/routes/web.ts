// The web page (src/web/page): its HTML, CSS and script, made ready once at start
// (src/web/bundle.ts). Everything comes from this service: a strict CSP allows scripts, styles
// and connections to this origin only, and no inline script at all. Results are downloaded from
// /api/download, whose own CSP (sandbox) and attachment headers keep them from ever running on
// this origin.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { buildWebPage } from '../../web/bundle.ts';

const PAGE_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

export async function registerWebRoutes(app: FastifyInstance): Promise<void> {
  const { html, css, script } = await buildWebPage();
  const send = (reply: FastifyReply, type: string, body: string) => reply
    .header('content-type', type)
    .header('content-security-policy', PAGE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache')
    .send(body);
  const page = (_request: unknown, reply: FastifyReply) => send(reply, 'text/html; charset=utf-8', html);
  app.get('/', { schema: { hide: true } }, page);
  app.get('/formats', { schema: { hide: true } }, page);
  app.get('/assets/app.js', { schema: { hide: true } }, (_request, reply) => send(reply, 'text/javascript; charset=utf-8', script));
  app.get('/assets/app.css', { schema: { hide: true } }, (_request, reply) => send(reply, 'text/css; charset=utf-8', css));
}
