// Where the service's JSON log lines go: standard output, written asynchronously. A synchronous
// write per line cost the progress endpoint a syscall per request (a tenth of its time,
// BENCHMARKS.md); lines that pile up while one write is in flight leave together, and every exit
// flushes what is left first.
//
// Built on sonic-boom 5 directly rather than pino.destination(), which brings sonic-boom 4: its
// flushSync() retries a failed write forever when the error is not EAGAIN. A service whose log
// reader went away (a pipe to a log shipper or a prettifier that exited first, as Ctrl-C does to a
// whole pipeline) with a line still queued then never finished exiting: it slept 100 ms and
// retried EPIPE in a loop, past its own hard-stop timer. sonic-boom 5 throws instead.
import sonicBoom from 'sonic-boom';

// A CommonJS package: its class is a property of the default export.
const { SonicBoom } = sonicBoom;

/** Queued log text above this is dropped rather than held while the reader does not keep up. */
const MAX_QUEUED_BYTES = 16 * 1024 * 1024;

export interface LogDestination {
  /** The stream to give pino. */
  readonly stream: InstanceType<typeof SonicBoom>;
  /** Writes out what is queued, unless nobody reads the log any more. Never throws, never hangs on a closed reader. */
  flushBeforeExit(): void;
}

export function openLogDestination(fd = 1): LogDestination {
  const stream = new SonicBoom({ fd, sync: false, maxLength: MAX_QUEUED_BYTES });
  let readerGone = false;
  // A write that fails for good (EPIPE: the reader closed; EIO, EBADF) cannot be reported
  // anywhere; the service keeps serving, it just stops writing lines that nobody can read.
  stream.on('error', () => {
    readerGone = true;
  });
  const write = stream.write.bind(stream);
  stream.write = (line: string) => (readerGone ? true : write(line));
  return {
    stream,
    flushBeforeExit() {
      if (readerGone) return;
      try {
        stream.flushSync();
      } catch {
        // The reader went away while lines were queued: nothing more can be said.
      }
    },
  };
}
