// Per-minute counters shared by PostgreSQL instances without a statement per request: each
// instance counts in memory and adds its counts to the `rate_limits` table in one statement for
// every key at once (INSERT ... ON CONFLICT over unnest, keys in order so two instances never
// deadlock), every FLUSH_MS and whenever a key's unsynced points reach its slack. The statement
// returns each key's shared total and window end, which is what the instance decides with next.
//
// Bound (spec/DECISIONS.md): an instance admits a point only while (shared total at its last
// sync + its own points not yet synced) stays within the limit, and never holds more than
// `slack = floor(limit / 50)` unsynced points per key: past that, the request waits for a sync
// that carries its own point. So across N instances a window admits at most
// limit + (N - 1) * slack points (2% of the limit per extra instance); one instance alone is
// exact, and so are limits under 50 (slack 0: every request syncs, as before).
// Fails closed: while the table cannot be written, a request that needs a sync is refused (503).
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/knex.ts';
import { coalesce } from './shared/coalesce.ts';

const FLUSH_MS = 250;
/** Expired rows are deleted this often (rows of keys nobody uses any more). */
const PURGE_MS = 5 * 60_000;

interface Entry {
  /** Window end, ms since the epoch: the table's `expire` once synced, else our own guess. */
  windowEnd: number;
  /** The key's total in the table at our last sync (our synced points included). */
  shared: number;
  /** Points admitted here and not yet sent. */
  unsynced: number;
  /** Points sent in the flush under way. */
  inflight: number;
}

/** Shared-slack sizing: the points one instance may admit per key between two syncs. */
export const slackOf = (limit: number) => Math.floor(limit / 50);

export class SharedCounters {
  private readonly entries = new Map<string, Entry>();
  private failing = false;
  private lastPurge = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly durationMs: number;

  constructor(db: Db, clock: Clock, durationMs = 60_000) {
    this.db = db;
    this.clock = clock;
    this.durationMs = durationMs;
    this.timer = setInterval(() => void this.flush().catch(() => undefined), FLUSH_MS);
    this.timer.unref();
  }

  /** A limiter over these counters, shaped like rate-limiter-flexible's (RateLimits uses it). */
  limiter(prefix: string, points: number): SharedLimiter {
    return new SharedLimiter(this, prefix, points);
  }

  private entry(key: string, now: number): Entry {
    let e = this.entries.get(key);
    // A window that ended here has ended in the table too: start the next one (the table's
    // window end replaces our guess at the next sync).
    if (!e || (now >= e.windowEnd && e.inflight === 0)) {
      e = { windowEnd: now + this.durationMs, shared: 0, unsynced: 0, inflight: 0 };
      this.entries.set(key, e);
    }
    return e;
  }

  async consume(key: string, limit: number, points: number): Promise<RateLimiterRes> {
    if (this.failing) await this.flush();
    const now = this.clock.now().getTime();
    const e = this.entry(key, now);
    const used = e.shared + e.unsynced + e.inflight;
    if (used + points > limit) return this.reject(e, points, used + points, now);
    if (e.unsynced + e.inflight + points <= slackOf(limit)) {
      e.unsynced += points;
      const left = limit - used - points;
      return new RateLimiterRes(left, Math.max(0, e.windowEnd - now), used + points, used === 0);
    }
    // Past the slack, the others must hear of our points, this one included, and we of theirs.
    e.unsynced += points;
    try {
      await this.flush();
    } catch (err) {
      e.unsynced -= points;
      throw err;
    }
    const at = this.clock.now().getTime();
    const total = e.shared + e.unsynced + e.inflight;
    // Already counted: RateLimits gives a rejected point back.
    if (total > limit) throw new RateLimiterRes(0, Math.max(0, e.windowEnd - at), total, false);
    return new RateLimiterRes(limit - total, Math.max(0, e.windowEnd - at), total, false);
  }

  /** Counted like rate-limiter-flexible does (RateLimits gives a rejected point back). */
  private reject(e: Entry, points: number, consumed: number, now: number): never {
    e.unsynced += points;
    throw new RateLimiterRes(0, Math.max(0, e.windowEnd - now), consumed, false);
  }

  reward(key: string, points: number): void {
    const e = this.entries.get(key);
    if (e) e.unsynced -= points;
  }

  /** One statement for every key with news; coalesced: callers during a flush share the next. */
  readonly flush: () => Promise<void> = coalesce(() => this.write());

  private async write(): Promise<void> {
    const now = this.clock.now().getTime();
    const batch: [string, Entry, number][] = [];
    for (const [key, e] of this.entries) {
      if (e.unsynced !== 0) batch.push([key, e, e.unsynced]);
      else if (now >= e.windowEnd) this.entries.delete(key);
    }
    if (!batch.length && !this.failing) return this.purge(now);
    batch.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (const [, e, delta] of batch) {
      e.unsynced -= delta;
      e.inflight += delta;
    }
    try {
      // excluded.points is this instance's delta (negative after refunds); expire our guess.
      const { rows } = await this.db.raw(
        `INSERT INTO rate_limits AS r (key, points, expire)
         SELECT k, p, x FROM unnest(?::text[], ?::int[], ?::bigint[]) AS t(k, p, x) ORDER BY k
         ON CONFLICT (key) DO UPDATE SET
           points = GREATEST(CASE WHEN r.expire <= ? THEN excluded.points
                                  ELSE r.points + excluded.points END, 0),
           expire = CASE WHEN r.expire <= ? THEN excluded.expire ELSE r.expire END
         RETURNING key, points, expire`,
        [
          batch.map(([k]) => k),
          batch.map(([, , d]) => d),
          batch.map(([, e]) => e.windowEnd),
          now,
          now,
        ],
      );
      const synced = new Map<string, { points: number; expire: number }>();
      for (const r of rows)
        synced.set(r.key, { points: Number(r.points), expire: Number(r.expire) });
      for (const [key, e, delta] of batch) {
        e.inflight -= delta;
        const s = synced.get(key);
        if (s) {
          e.shared = Math.max(0, s.points);
          e.windowEnd = s.expire;
        }
      }
      this.failing = false;
    } catch (err) {
      this.failing = true;
      for (const [, e, delta] of batch) {
        e.inflight -= delta;
        e.unsynced += delta;
      }
      throw err;
    }
  }

  private async purge(now: number): Promise<void> {
    if (now - this.lastPurge < PURGE_MS) return;
    this.lastPurge = now;
    await this.db.raw('DELETE FROM rate_limits WHERE expire < ?', [now - this.durationMs]);
  }

  /** Stops the timer and hands this instance's last counts to the others. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch(() => undefined);
  }
}

/** The part of rate-limiter-flexible's limiter that RateLimits uses. */
export class SharedLimiter {
  private readonly counters: SharedCounters;
  private readonly prefix: string;
  readonly points: number;
  constructor(counters: SharedCounters, prefix: string, points: number) {
    this.counters = counters;
    this.prefix = prefix;
    this.points = points;
  }

  consume(key: string, points = 1): Promise<RateLimiterRes> {
    return this.counters.consume(`${this.prefix}:${key}`, this.points, points);
  }

  async reward(key: string, points = 1): Promise<void> {
    this.counters.reward(`${this.prefix}:${key}`, points);
  }
}
