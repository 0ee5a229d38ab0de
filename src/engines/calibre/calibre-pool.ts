// calibre in the warm process pool (src/process/pool/). Each pooled process is a long-lived
// Python helper (helper/calibre.py, run by Debian's /usr/bin/python3, calibre's own interpreter)
// that has imported calibre's conversion code and converted a sample of its own; every job runs
// in a child forked from it, which exits after the job. Starting ebook-convert cost about 0.7 s
// of CPU per job, most of it importing calibre; a warm child costs about 0.15 s for a small book
// (BENCHMARKS.md). The helper's header says why each of its steps is safe (docs/security.md#calibre).
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { ConvertdError } from '../../errors.ts';
import { PYTHON_PROTOCOL, type PooledProgram, type Reply } from '../../process/pool/index.ts';
import { lastErrorLine } from '../../process/runner.ts';

const PYTHON = '/usr/bin/python3';
const HELPERS = fileURLToPath(new URL('./helper/', import.meta.url));
const SCRIPT = path.join(HELPERS, 'calibre.py');

/**
 * calibre's environment: PDF output renders with Qt WebEngine (Chromium), whose own sandbox
 * cannot start inside ours, so it is switched off there, the bubblewrap sandbox standing in for it.
 */
const CALIBRE_ENV: Readonly<Record<string, string>> = {
  QT_QPA_PLATFORM: 'offscreen',
  QTWEBENGINE_CHROMIUM_FLAGS: '--no-sandbox --disable-gpu',
  CALIBRE_NO_NATIVE_FILEDIALOGS: '1',
};

/** The helper's convert message: ebook-convert's arguments after the input and output, and the job's CPU time. */
export function calibreMessage(args: readonly string[], timeoutMs: number): Record<string, unknown> {
  // As the process runner gives every program: the time limit, and a little more.
  return { args, cpu_seconds: Math.ceil(timeoutMs / 1000) + 5 };
}

/** What the pool runs: the helper. No address-space cap: it breaks Chromium, which PDF output runs (docs/security.md#resource-limits). */
export function calibreProgram(maxOutputBytes: number): PooledProgram {
  return {
    label: 'calibre',
    logName: 'calibre',
    // A child dies alone; its helper dies only with a verdict to read (a memory kill), and that
    // file would meet the same limit again.
    retryAfterCrash: false,
    command: () => ({
      program: PYTHON,
      args: [SCRIPT],
      readOnly: [HELPERS, PYTHON_PROTOCOL],
      env: { ...CALIBRE_ENV, PYTHONDONTWRITEBYTECODE: '1', PYTHONPATH: PYTHON_PROTOCOL },
      limits: { fileSizeBytes: maxOutputBytes },
      // calibre needs none: its sandbox stays as it was before it was pooled (docs/security.md#calibre).
      procfs: false,
    }),
    failure: calibreFailure,
  };
}

/** The job error for a conversion the helper reports failed: what calibre said, read as ebook-convert's exit was. */
export function calibreFailure(reply: Reply): ConvertdError {
  if (reply.code === 'output_too_large') return new ConvertdError('output_too_large');
  if (reply.code === 'timeout') return new ConvertdError('timeout');
  const stderr = reply.message ?? '';
  if (/DRM|encrypted/i.test(stderr)) {
    return new ConvertdError('encrypted_input', 'The ebook is protected by DRM: this service converts DRM-free books only.');
  }
  // py7zr, which unpacks a cb7 for calibre, refuses a symbolic link that points out of the comic.
  if (/Symlink point out of target directory/.test(stderr)) {
    return new ConvertdError('unsafe_input', 'The comic archive holds a link to a file outside it: this service does not follow such links.');
  }
  if (/DJVU file contains no text/.test(stderr)) {
    return new ConvertdError('conversion_failed', 'The DjVu file has no text layer (it is scanned pages only): calibre converts the text of a DjVu, not its pictures.');
  }
  if (/Could not find any (valid )?pages in (the )?comic|No comic pages found|has no comics/i.test(stderr)) {
    return new ConvertdError('corrupt_input', 'The comic archive holds no picture calibre can read as a page.');
  }
  if (/not a valid|Invalid|BadZipFile|unpack/i.test(stderr)) {
    return new ConvertdError('corrupt_input', `calibre could not read the ebook (${lastErrorLine(stderr)}).`);
  }
  const result = (reply.result ?? {}) as { exit_code?: unknown; signal?: unknown };
  const how = typeof result.signal === 'string' ? `was killed by ${result.signal}` : `exited with code ${typeof result.exit_code === 'number' ? result.exit_code : 'unknown'}`;
  const detail = lastErrorLine(stderr);
  return new ConvertdError('conversion_failed', `ebook-convert ${how}${detail ? `: ${detail}` : ''}.`);
}
