// One long-lived Python helper process per test file: a JSON line in, a JSON line out, in order.
// The checkers (read_document.py, compare_images.py, read_media.py) import heavy modules (Pillow,
// numpy, PyAV: about half a second of CPU on these machines) and decoders start their own
// processes; a pair suite checks thousands of outputs, so starting Python once per output was a
// large share of `npm test`'s CPU. The process is started at the first request, holds the test
// process open only while a request is pending, and is ended by close() or with the test process.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { toolEnv } from './tools.ts';

/**
 * The checkers' environment: Debian's tools' (tools.ts), with one OpenBLAS thread (numpy's
 * threads otherwise spin at import: about 15 % of a short run's CPU).
 */
const CHECKER_ENV: NodeJS.ProcessEnv = { ...toolEnv, OPENBLAS_NUM_THREADS: '1' };

export class PythonServer<Request, Answer> {
  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly waiting: Array<{ resolve: (answer: Answer) => void; reject: (error: Error) => void }> = [];

  private readonly argv: readonly string[];
  private readonly name: string;

  /** `argv`: the script and the argument that puts it in its line-by-line mode; `name` names it in errors. */
  constructor(argv: readonly string[], name: string) {
    this.argv = argv;
    this.name = name;
  }

  private start(): ChildProcessWithoutNullStreams {
    const child = spawn('/usr/bin/python3', [...this.argv], { stdio: ['pipe', 'pipe', 'pipe'], env: CHECKER_ENV });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-8192); });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const waiter = this.waiting.shift();
      if (this.waiting.length === 0) this.idle(child);
      if (!waiter) return;
      try {
        waiter.resolve(JSON.parse(line) as Answer);
      } catch (error) {
        waiter.reject(new Error(`${this.name}: an answer that is not JSON (${(error as Error).message}): ${line.slice(0, 200)}`));
      }
    });
    child.once('close', (code, signal) => {
      if (this.child === child) this.child = undefined;
      for (const waiter of this.waiting.splice(0)) waiter.reject(new Error(`${this.name} ended (${code ?? signal}): ${stderr.trim()}`));
    });
    // Reported by 'close' to every waiting request: a write to a helper that just ended fails
    // with EPIPE, which must not become an uncaught error of the test file.
    child.on('error', () => undefined);
    child.stdin.on('error', () => undefined);
    this.idle(child);
    return child;
  }

  /** Idle, the helper never holds the test process open by itself. */
  private idle(child: ChildProcessWithoutNullStreams): void {
    child.unref();
    (child.stdout as unknown as { unref(): void }).unref();
    (child.stderr as unknown as { unref(): void }).unref();
    (child.stdin as unknown as { unref(): void }).unref();
  }

  private busy(child: ChildProcessWithoutNullStreams): void {
    child.ref();
    (child.stdout as unknown as { ref(): void }).ref();
  }

  /** The helper's answer to one request, in the order requests were sent. */
  request(payload: Request): Promise<Answer> {
    this.child ??= this.start();
    const child = this.child;
    this.busy(child);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      child.stdin.write(`${JSON.stringify(payload)}\n`);
    });
  }

  close(): void {
    this.child?.stdin.end();
  }
}
