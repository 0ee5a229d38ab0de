// Per-client rate limits over several windows at once (20/minute, 200/hour, 1000/day), with
// rate-limiter-flexible, whose memory store counts synchronously inside the event loop, so
// concurrent requests are counted exactly. (@fastify/rate-limit checks only the first of several
// stacked windows.) With several API nodes the counters live in Redis, where
// each count is one atomic script, so a client gets exactly its limit whichever nodes it hits.
import net from 'node:net';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateWindow } from '../config.ts';
import { ConvertdError } from '../errors.ts';

export interface WindowState {
  readonly limit: number;
  readonly windowSeconds: number;
  readonly remaining: number;
  /** Seconds until this window's count starts again. */
  readonly resetSeconds: number;
}

export interface RateDecision {
  readonly allowed: boolean;
  /** The window that decides: the refusing one with the longest wait, or the one with the fewest requests left. */
  readonly tightest: WindowState;
  /** Seconds to wait before a retry can succeed (when refused). */
  readonly retryAfterSeconds: number;
}

export type LimiterFactory = (window: RateWindow, name: string) => RateLimiterAbstract;

export const memoryLimiter: LimiterFactory = (window, name) =>
  new RateLimiterMemory({ points: window.limit, duration: window.windowSeconds, keyPrefix: name });

/** Counters shared by every API node through Redis. */
export function redisLimiter(redis: Redis): LimiterFactory {
  return (window, name) => new RateLimiterRedis({
    storeClient: redis, points: window.limit, duration: window.windowSeconds, keyPrefix: `convertd:rate:${name}`,
  });
}

/** The counters cannot be reached (Redis down): refuse for now rather than count wrongly. */
function countersUnavailable(cause: unknown): ConvertdError {
  const error = new ConvertdError('unavailable', 'The service cannot check its rate limits right now: try again after the time in Retry-After.',
    {}, { 'retry-after': '5' });
  error.cause = cause;
  return error;
}

function stateOf(window: RateWindow, res: RateLimiterRes | null): WindowState {
  const consumed = res?.consumedPoints ?? 0;
  return {
    limit: window.limit,
    windowSeconds: window.windowSeconds,
    remaining: Math.max(0, window.limit - consumed),
    resetSeconds: res ? Math.max(1, Math.ceil(res.msBeforeNext / 1000)) : window.windowSeconds,
  };
}

function tightestOf(states: readonly WindowState[]): WindowState {
  return states.reduce((a, b) => (b.remaining < a.remaining || (b.remaining === a.remaining && b.resetSeconds > a.resetSeconds) ? b : a));
}

export class RateLimits {
  private readonly limiters: ReadonlyArray<{ window: RateWindow; limiter: RateLimiterAbstract }>;

  readonly windows: readonly RateWindow[];

  constructor(windows: readonly RateWindow[], name: string, factory: LimiterFactory = memoryLimiter) {
    this.windows = windows;
    this.limiters = windows.map((window) => ({ window, limiter: factory(window, `${name}:${window.windowSeconds}`) }));
  }

  get enabled(): boolean {
    return this.limiters.length > 0;
  }

  /** Counts one request for the client in every window. */
  async consume(key: string): Promise<RateDecision | undefined> {
    if (!this.enabled) return undefined;
    const outcomes = await Promise.all(this.limiters.map(async ({ window, limiter }) => {
      try {
        return { allowed: true, state: stateOf(window, await limiter.consume(key)) };
      } catch (refusal) {
        if (refusal instanceof RateLimiterRes) return { allowed: false, state: stateOf(window, refusal) };
        throw countersUnavailable(refusal);
      }
    }));
    const refused = outcomes.filter((o) => !o.allowed).map((o) => o.state);
    if (refused.length > 0) {
      const longest = refused.reduce((a, b) => (b.resetSeconds > a.resetSeconds ? b : a));
      return { allowed: false, tightest: longest, retryAfterSeconds: longest.resetSeconds };
    }
    return { allowed: true, tightest: tightestOf(outcomes.map((o) => o.state)), retryAfterSeconds: 0 };
  }

  /** What the client has left in each window, without counting a request. */
  async peek(key: string): Promise<WindowState[]> {
    try {
      return await Promise.all(this.limiters.map(async ({ window, limiter }) => stateOf(window, await limiter.get(key))));
    } catch (error) {
      throw countersUnavailable(error);
    }
  }
}

/** The standard RateLimit-* headers of a decision. */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'ratelimit-limit': String(decision.tightest.limit),
    'ratelimit-remaining': String(decision.tightest.remaining),
    'ratelimit-reset': String(decision.tightest.resetSeconds),
  };
  if (!decision.allowed) headers['retry-after'] = String(decision.retryAfterSeconds);
  return headers;
}

/** Expands an IPv6 address to its eight 16-bit groups. */
function ipv6Groups(address: string): number[] {
  // Drop a zone id, and write an embedded IPv4 tail (64:ff9b::1.2.3.4) as two hex groups.
  const text = address.split('%')[0]!.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, a, b, c, d) =>
    `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`);
  const parse = (part: string) => part.split(':').filter(Boolean).map((group) => parseInt(group, 16));
  const [head, rest] = text.includes('::') ? text.split('::') as [string, string] : [text, ''];
  const headGroups = parse(head);
  const restGroups = parse(rest);
  const missing = Math.max(0, 8 - headGroups.length - restGroups.length);
  return [...headGroups, ...Array<number>(missing).fill(0), ...restGroups];
}

/**
 * The key a client is counted under: its IPv4 address, or the /64 network of its IPv6 address
 * (one customer line usually holds a whole /64). IPv4-mapped IPv6 addresses count as IPv4.
 */
export function clientKey(ip: string | undefined): string {
  // fastify's request.ip is undefined once the client has gone (its socket closed): such
  // requests share one key, and their answer goes nowhere anyway.
  if (ip === undefined) return '';
  // Every request asks: an IPv4 address (no colon) needs no pattern at all.
  if (!ip.includes(':')) return ip;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (net.isIPv6(ip)) return `${ipv6Groups(ip).slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
  return ip;
}
