// Archives: zip, tar, tar.gz, tar.bz2, tar.xz and 7z, each to each, without ever unpacking to
// disk. A sandboxed bsdtar reads the upload and writes its entries as one tar stream
// (`bsdtar -cf - @input`); this module walks that stream entry by entry and passes on only
// regular files and directories whose names stay inside the archive, counting the bytes that
// really flow (lying size headers, zip bombs and entry floods stop at the caps while streaming);
// a second sandboxed bsdtar writes what passed in the target format (`bsdtar -cf output @-`).
// Nested archives are just files: never opened. Links, devices and fifos are refused, since a
// later unpacking by the user would follow them (docs/security.md#archives). Nothing ever waits for a
// password: stdin is our own stream, and an encrypted archive fails at once.
import path from 'node:path';
import { PassThrough, Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import { ConvertdError } from '../../errors.ts';
import { lastErrorLine, NATIVE_ADDRESS_SPACE, type RunResult } from '../../process/runner.ts';
import type { EngineContext } from '../module.ts';
import type { ConversionEdge, ConvertRequest, Engine } from '../types.ts';

const BSDTAR = '/usr/bin/bsdtar';
const FORMATS = ['zip', '7z', 'tar', 'tar.gz', 'tar.bz2', 'tar.xz'];
/** bsdtar's options to write each format. */
const WRITE_OPTIONS: Record<string, string[]> = {
  zip: ['--format', 'zip'],
  '7z': ['--format', '7zip'],
  tar: ['--format', 'pax'],
  'tar.gz': ['--format', 'pax', '--gzip'],
  'tar.bz2': ['--format', 'pax', '--bzip2'],
  'tar.xz': ['--format', 'pax', '--xz'],
};

/** Caps checked while the entries stream. */
const ARCHIVE_LIMITS = {
  entries: 10_000,
  expandedBytes: 1024 ** 3,
  /** Expanded size over upload size, above which a big archive counts as a bomb. */
  ratio: 200,
  /** Below this expanded size the ratio is not held against an archive (small files compress well). */
  ratioFloorBytes: 16 * 1024 ** 2,
};

const EDGES: ConversionEdge[] = FORMATS.flatMap((from) => FORMATS.filter((to) => to !== from).map((to) => ({ from, to, cost: 2 })));

/** A member name made safe, or the reason it is refused. */
function memberName(raw: string): string | { refused: string } {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(raw)) return { refused: 'a member name holds control characters' };
  const name = raw.replace(/\\/g, '/').replace(/^(\.\/)+/, '');
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return { refused: `the member "${raw}" has an absolute path` };
  if (name.split('/').some((part) => part === '..')) return { refused: `the member "${raw}" points outside the archive` };
  return name;
}

/** Counts the bytes that really pass, and stops the stream past a cap. */
class ByteCounter extends Transform {
  private readonly onBytes: (n: number) => void;

  constructor(onBytes: (n: number) => void) {
    super();
    this.onBytes = onBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      this.onBytes(chunk.length);
      done(null, chunk);
    } catch (error) {
      done(error as Error);
    }
  }
}

function readFailure(result: RunResult): ConvertdError {
  const detail = lastErrorLine(result.stderr);
  if (/encrypt|passphrase|password/i.test(result.stderr)) return new ConvertdError('encrypted_input', 'The archive is encrypted: remove the password and upload it again.');
  return new ConvertdError('corrupt_input', `The archive could not be read${detail ? ` (${detail})` : ''}: it may be damaged or truncated.`);
}

export class ArchiveEngine implements Engine {
  readonly id = 'archives';
  readonly timeoutSeconds = 300;
  readonly edges = EDGES;
  readonly reportsProgress = true;
  private readonly context: EngineContext<unknown>;

  constructor(context: EngineContext<unknown>) {
    this.context = context;
  }

  estimateSeconds(inputBytes: number): number {
    return 0.5 + inputBytes / 5_000_000;
  }

  async probe(): Promise<readonly ConversionEdge[]> {
    const { run, withScratchDir } = this.context;
    return withScratchDir(async (dir) => {
      const working = new Set<string>();
      const { writeFile } = await import('node:fs/promises');
      await writeFile(path.join(dir, 'sample.txt'), 'convertd');
      for (const format of FORMATS) {
        const result = await run(BSDTAR, ['-c', '-f', `probe.${format}`, ...WRITE_OPTIONS[format]!, 'sample.txt'], { cwd: dir, timeoutMs: 20_000 });
        const back = result.exitCode === 0
          ? await run(BSDTAR, ['-t', '-f', `probe.${format}`], { cwd: dir, timeoutMs: 20_000, captureStdout: true })
          : undefined;
        if (back?.exitCode === 0 && back.stdout.trim() === 'sample.txt') working.add(format);
      }
      if (working.size < 2) throw new Error('bsdtar reads and writes none of the archive formats here');
      return EDGES.filter((e) => working.has(e.from) && working.has(e.to));
    });
  }

  async convert(request: ConvertRequest): Promise<void> {
    const { input, output, to, workDir, limits, signal } = request;
    const { size: inputBytes } = await (await import('node:fs/promises')).stat(input);
    const abort = new AbortController();
    const stop = (error: ConvertdError) => {
      if (!abort.signal.aborted) abort.abort(error);
    };
    const both = AbortSignal.any([signal, abort.signal]);

    const fromReader = new PassThrough();
    const extract = tar.extract();
    const pack = tar.pack();
    let entries = 0;
    let expanded = 0;
    // A cap records its reason the moment it trips: tearing the streams down afterwards makes
    // the tar parser fail too, and the first reason is the one the user gets.
    const refuse = (error: ConvertdError): never => {
      stop(error);
      throw error;
    };
    const count = (bytes: number) => {
      expanded += bytes;
      if (expanded > ARCHIVE_LIMITS.expandedBytes) refuse(new ConvertdError('input_too_complex', `The archive expands to more than ${ARCHIVE_LIMITS.expandedBytes / 1024 ** 3} GiB.`));
      if (expanded > ARCHIVE_LIMITS.ratioFloorBytes && expanded > inputBytes * ARCHIVE_LIMITS.ratio) {
        refuse(new ConvertdError('input_too_complex', `The archive expands more than ${ARCHIVE_LIMITS.ratio} times its size: it looks like a decompression bomb.`));
      }
      request.onProgress(Math.min(0.95, expanded / Math.max(1, inputBytes * 3)));
    };

    extract.on('entry', (header, stream, next) => {
      void (async () => {
        entries += 1;
        if (entries > ARCHIVE_LIMITS.entries) throw new ConvertdError('input_too_complex', `The archive has more than ${ARCHIVE_LIMITS.entries} members.`);
        const name = memberName(header.name);
        if (typeof name !== 'string') throw new ConvertdError('unsafe_input', `The archive is refused: ${name.refused}.`);
        if (header.type === 'directory') {
          stream.resume();
          if (name) pack.entry({ name, type: 'directory', mode: 0o755, mtime: header.mtime });
          return;
        }
        if (header.type !== 'file' && header.type !== 'contiguous-file') {
          throw new ConvertdError('unsafe_input', `The archive is refused: the member "${header.name}" is a ${header.type}, not a regular file.`);
        }
        const entry = pack.entry({ name, size: header.size, mode: 0o644, mtime: header.mtime });
        await pipeline(stream, new ByteCounter(count), entry);
      })().then(() => next(), (error: unknown) => {
        stop(error instanceof ConvertdError ? error : new ConvertdError('corrupt_input', `The archive could not be read: ${String(error)}`));
        stream.resume();
      });
    });
    extract.on('finish', () => pack.finalize());
    extract.on('error', (error) => stop(new ConvertdError('corrupt_input', `The archive could not be read: ${error.message}`)));
    fromReader.pipe(extract);

    const options = { cwd: workDir, timeoutMs: limits.timeoutMs, signal: both, limits: { addressSpaceBytes: NATIVE_ADDRESS_SPACE } };
    const [read, write] = await Promise.allSettled([
      this.context.run(BSDTAR, ['-c', '-f', '-', '--format', 'pax', `@${path.basename(input)}`], { ...options, stdout: fromReader }),
      this.context.run(BSDTAR, ['-c', '-f', path.basename(output), ...WRITE_OPTIONS[to]!, '@-'], {
        // tar-stream's pack is a streamx Readable, which pipes like a Node one.
        ...options, stdin: pack as unknown as Readable, limits: { fileSizeBytes: limits.maxOutputBytes, addressSpaceBytes: NATIVE_ADDRESS_SPACE },
      }),
    ]);
    if (abort.signal.aborted) throw abort.signal.reason;
    signal.throwIfAborted();
    if (read.status === 'rejected') throw read.reason;
    if (read.value.exitCode !== 0) throw readFailure(read.value);
    if (write.status === 'rejected') throw write.reason;
    if (write.value.exitCode !== 0) {
      throw new ConvertdError('conversion_failed', `The ${to} archive could not be written: ${lastErrorLine(write.value.stderr)}.`);
    }
  }
}
