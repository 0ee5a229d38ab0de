// Reads documents with test/helpers/read_document.py in one long-lived Python process (its
// --batch mode, through python-server.ts), without blocking the test's event loop: a pair test
// keeps its other jobs moving while an output is read, and pays Python's start once rather than
// once per output.
import assert from 'node:assert/strict';
import path from 'node:path';
import { PythonServer } from './python-server.ts';

const SCRIPT = path.join(import.meta.dirname, 'read_document.py');

export interface Reading {
  readonly text: string;
  readonly pages: number | null;
  readonly slides?: string[];
}

export class DocumentReader {
  private readonly server = new PythonServer<[string, string], Reading & { error?: string }>([SCRIPT, '--batch'], 'read_document.py --batch');

  /** The text (and pages, slides) read_document.py finds in `file` read as `format`; rejects with its reason when the file is not a valid one. */
  async read(file: string, format: string): Promise<Reading> {
    const answer = await this.server.request([file, format]);
    if (answer.error !== undefined) throw new Error(answer.error);
    return answer;
  }

  /** As read(), failing the test with read_document.py's reason when `file` is not a valid `format`. */
  async readValid(file: string, format: string): Promise<Reading> {
    try {
      return await this.read(file, format);
    } catch (error) {
      assert.fail(`${path.basename(file)} is not a valid ${format}: ${(error as Error).message.trim()}`);
    }
  }

  close(): void {
    this.server.close();
  }
}
