// Per-minute limits per source IP, account and credential. SQLite is one process, so its counters
// live in memory (rate-limiter-flexible); PostgreSQL instances share a table, written in one
// statement per interval rather than per request (./ratelimit-shared.ts says how exact that is).
// A rejected request gives its point back: a 429 does not count against the window.
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/knex.ts';
import { isPostgres } from '../db/knex.ts';
import { AppError } from '../errors.ts';
import { SharedCounters } from './ratelimit-shared.ts';

/** What RateLimits needs of a limiter (rate-limiter-flexible's, or the shared counters'). */
interface Limiter {
  readonly points: number;
  consume(key: string, points: number): Promise<RateLimiterRes>;
  reward(key: string, points: number): Promise<unknown>;
}

export type LimitKind = 'source' | 'account' | 'credential';

export interface LimitState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

export class RateLimits {
  private readonly limiters: Record<LimitKind, Limiter>;
  /** PostgreSQL: the counters shared with the other instances; null on SQLite. */
  readonly shared: SharedCounters | null;
  private readonly onReject: (kind: LimitKind) => void;

  constructor(
    db: Db,
    clock: Clock,
    points: Record<LimitKind, number>,
    /** Told of every rejection (the metrics count them by kind). */
    onReject: (kind: LimitKind) => void = () => undefined,
  ) {
    this.onReject = onReject;
    const shared = isPostgres(db) ? new SharedCounters(db, clock) : null;
    this.shared = shared;
    const make = (kind: LimitKind): Limiter =>
      shared
        ? shared.limiter(kind, points[kind])
        : new RateLimiterMemory({ keyPrefix: kind, points: points[kind], duration: 60 });
    this.limiters = {
      source: make('source'),
      account: make('account'),
      credential: make('credential'),
    };
  }

  /** Consumes one point; 429 rate_limit_exceeded when over, 503 rate_limiter_unavailable on failure. */
  async consume(kind: LimitKind, key: string): Promise<LimitState> {
    const limiter = this.limiters[kind];
    try {
      const res = await limiter.consume(key, 1);
      return this.state(limiter, res);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw new AppError('rate_limiter_unavailable');
      await limiter.reward(key, 1).catch(() => undefined);
      this.onReject(kind);
      const seconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new AppError('rate_limit_exceeded', {
        extra: { retry_after_seconds: seconds },
        headers: {
          'Retry-After': String(seconds),
          'RateLimit-Limit': String(limiter.points),
          'RateLimit-Remaining': '0',
          'RateLimit-Reset': String(seconds),
        },
      });
    }
  }

  /** Gives back a point taken earlier in a request that another limit then rejected. */
  async refund(kind: LimitKind, key: string): Promise<void> {
    await this.limiters[kind].reward(key, 1).catch(() => undefined);
  }

  /** Stops the shared counters' timer after handing over this instance's last counts. */
  async close(): Promise<void> {
    await this.shared?.close();
  }

  private state(limiter: Limiter, res: RateLimiterRes): LimitState {
    return {
      limit: limiter.points,
      remaining: res.remainingPoints,
      resetSeconds: Math.ceil(res.msBeforeNext / 1000),
    };
  }
}
