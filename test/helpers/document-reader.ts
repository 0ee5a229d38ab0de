// Reads documents with test/helpers/read_document.py in one long-lived Python process (its
// --batch mode: a JSON line in, a JSON line out, in order), without blocking the test's event
// loop: a pair test keeps its other jobs moving while an output is read, and pays Python's start
// once rather than once per output.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

const SCRIPT = path.join(import.meta.dirname, 'read_document.py');

export interface Reading {
  readonly text: string;
  readonly pages: number | null;
  readonly slides?: string[];
}

export class DocumentReader {
  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly waiting: Array<{ resolve: (answer: Reading) => void; reject: (error: Error) => void }> = [];

  private start(): ChildProcessWithoutNullStreams {
    const child = spawn('/usr/bin/python3', [SCRIPT, '--batch'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const answer = JSON.parse(line) as Reading & { error?: string };
      const waiter = this.waiting.shift();
      if (!waiter) return;
      if (answer.error !== undefined) waiter.reject(new Error(answer.error));
      else waiter.resolve(answer);
    });
    child.once('close', (code) => {
      this.child = undefined;
      for (const waiter of this.waiting.splice(0)) waiter.reject(new Error(`read_document.py --batch ended (${code}): ${stderr.trim()}`));
    });
    // Never holds the test process open by itself.
    child.unref();
    return child;
  }

  /** The text (and pages, slides) read_document.py finds in `file` read as `format`; rejects with its reason when the file is not a valid one. */
  read(file: string, format: string): Promise<Reading> {
    this.child ??= this.start();
    const child = this.child;
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      child.stdin.write(`${JSON.stringify([file, format])}\n`);
    });
  }

  close(): void {
    this.child?.stdin.end();
  }
}
