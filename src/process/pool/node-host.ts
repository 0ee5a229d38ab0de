// The helper a pooled Node process runs (node-program.ts, on the pool of supervisor.ts):
// `node node-host.ts MODULE` imports MODULE, whose `handlers` answer the pool's requests, and
// speaks the pool's JSON-lines protocol (messaging.ts) over stdin/stdout: {"ready": true} once
// loaded, then one reply per request, in order. A handler throws ConvertdError for a failure the
// user should read; anything else is conversion_failed. It runs inside the engine sandbox: it sees
// node_modules, src and its own directory only.
import readline from 'node:readline';
import { ConvertdError } from '../../errors.ts';

export type Handlers = Readonly<Record<string, (request: Readonly<Record<string, unknown>>) => Promise<unknown>>>;

const modulePath = process.argv[2];
if (!modulePath) {
  process.stderr.write('usage: node node-host.ts MODULE\n');
  process.exit(2);
}
const { handlers } = await import(modulePath) as { handlers: Handlers };

function answer(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

answer({ ready: true });
for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const request = JSON.parse(line) as Record<string, unknown>;
  try {
    const op = String(request.op);
    // The health check: answered here, unless the module checks something of its own (the
    // chromium engine's helper, that its browser still answers).
    if (op === 'ping' && !handlers.ping) {
      answer({ id: request.id, ok: true });
      continue;
    }
    const handler = handlers[op];
    if (!handler) throw new Error(`no handler for "${op}"`);
    answer({ id: request.id, ok: true, result: await handler(request) ?? null });
  } catch (error) {
    answer({
      id: request.id,
      ok: false,
      code: error instanceof ConvertdError ? error.code : 'conversion_failed',
      message: error instanceof Error ? error.message : String(error),
    });
  }
}
