// fastify gives every request a child logger bound to its request id, made when the request
// arrives. A pino child serialises its bindings when it is made, and a polled progress request
// usually writes nothing (its line is at debug level): that child cost the endpoint about 3% of
// its time (BENCHMARKS.md, change 28). This one is made on the first line actually written.
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

export class LazyRequestLogger {
  private made: Logger | undefined;
  private readonly parent: Logger;
  private readonly bindings: Bindings;

  constructor(parent: Logger, bindings: Bindings) {
    this.parent = parent;
    this.bindings = bindings;
  }

  private get logger(): Logger {
    this.made ??= this.parent.child(this.bindings);
    return this.made;
  }

  private write(level: Level, args: unknown[]): void {
    if (!this.parent.isLevelEnabled(level)) return;
    (this.logger[level] as (...values: unknown[]) => void)(...args);
  }

  get level(): string {
    return this.parent.level;
  }

  isLevelEnabled(level: string): boolean {
    return this.parent.isLevelEnabled(level);
  }

  trace(...args: unknown[]): void { this.write('trace', args); }
  debug(...args: unknown[]): void { this.write('debug', args); }
  info(...args: unknown[]): void { this.write('info', args); }
  warn(...args: unknown[]): void { this.write('warn', args); }
  error(...args: unknown[]): void { this.write('error', args); }
  fatal(...args: unknown[]): void { this.write('fatal', args); }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.logger.child(bindings, options);
  }
}

/** fastify's childLoggerFactory: a route with a log level of its own gets a real child at once. */
export function requestLoggerFactory(logger: Logger, bindings: Bindings, options: ChildLoggerOptions): Logger {
  if (options.level !== undefined) return logger.child(bindings, options);
  return new LazyRequestLogger(logger, bindings) as unknown as Logger;
}
