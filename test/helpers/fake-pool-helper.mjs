// A fake pooled helper for test/process-pool.test.ts: it speaks the pool's JSON-lines protocol
// (src/process/pool/messaging.ts) with no tool behind it, and misbehaves when asked to, so that
// the supervisor can be tested in seconds, without LibreOffice.
//
// Arguments, for the whole process: --start-delay=MS prints {"ready": true} that late;
// --fail-start exits 1 before it; --die-after-start exits 3 right after it.
// Requests: {"op": "ping"}; {"op": "pid"} answers its pid as `result`; {"op": "mute"} makes it
// leave every later ping unanswered; {"op": "convert", "input", "output", ...} copies the input to
// the output, or, as the message says:
//   stamp: true      writes its pid instead (which process served the job);
//   progress: [F...] sends each fraction as a progress line first, then one for another request id;
//   gate: PATH       waits until PATH exists first (the test holds the job for as long as it needs);
//   behave: "die"    exits 3 mid-job, saying why on stderr; "oom" exits as V8 does when its heap is
//                    exhausted; "hang" never answers; "refuse" answers {"ok": false, "code",
//                    "message"}; "no-output" answers ok and writes nothing; "die-once" with
//                    marker: PATH dies unless PATH exists, and creates it (dies on the first
//                    process only).
// With FAKE_JOURNAL set, it appends {"event": "ready", "pid"} to that file as it becomes ready.
// It exits when its stdin closes, as the pool's helpers do.
import { appendFileSync, copyFileSync, existsSync, writeFileSync } from 'node:fs';
import readline from 'node:readline';

const flags = new Map(process.argv.slice(2).map((arg) => {
  const [name, value = ''] = arg.replace(/^--/, '').split('=');
  return [name, value];
}));
let muted = false;

function answer(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function die(code, why) {
  process.stderr.write(`${why}\n`);
  process.exit(code);
}

function whenExists(file, then) {
  if (existsSync(file)) then();
  else setTimeout(() => whenExists(file, then), 10);
}

function convert(request) {
  switch (request.behave) {
    case 'die': return die(3, 'fake helper: dying mid-job on purpose');
    case 'oom': return die(134, 'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory');
    case 'hang': return undefined;
    case 'refuse': return answer({ id: request.id, ok: false, code: 'corrupt_input', message: 'fake helper: refused' });
    case 'no-output': return answer({ id: request.id, ok: true });
    case 'die-once':
      if (!existsSync(request.marker)) {
        writeFileSync(request.marker, '');
        return die(3, 'fake helper: dying on the first try');
      }
  }
  for (const fraction of request.progress ?? []) answer({ id: request.id, progress: fraction });
  if (request.progress) answer({ id: request.id + 1000, progress: 0.5 });
  if (request.stamp) writeFileSync(request.output, String(process.pid));
  else copyFileSync(request.input, request.output);
  return answer({ id: request.id, ok: true });
}

function serve(request) {
  switch (request.op) {
    case 'ping': return muted ? undefined : answer({ id: request.id, ok: true });
    case 'pid': return answer({ id: request.id, ok: true, result: process.pid });
    case 'mute':
      muted = true;
      return answer({ id: request.id, ok: true });
    case 'convert':
      if (request.gate) return whenExists(request.gate, () => convert(request));
      return convert(request);
    default: return answer({ id: request.id, ok: false, code: 'conversion_failed', message: `no op "${request.op}"` });
  }
}

function start() {
  if (flags.has('fail-start')) die(1, 'fake helper: cannot start');
  // In the journal first: once the pool hears it is ready, the test can find it there.
  if (process.env.FAKE_JOURNAL) appendFileSync(process.env.FAKE_JOURNAL, `${JSON.stringify({ event: 'ready', pid: process.pid })}\n`);
  answer({ ready: true });
  if (flags.has('die-after-start')) die(3, 'fake helper: dying right after the start');
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (line.trim()) serve(JSON.parse(line));
});
lines.on('close', () => process.exit(0));
const delay = Number(flags.get('start-delay') ?? 0);
if (delay > 0) setTimeout(start, delay);
else start();
