// One reader of an account's events per process, shared by the account's open stream connections
// (issue #20): a notification costs one read (two on PostgreSQL, with the gap check) however many
// streams are open, instead of one (two) per stream. Connections that have seen everything the
// reader has ("followers") get its events pushed to them; one that is behind (it resumed from an
// older cursor, or its client stopped reading for a while) reads its own backlog up to the
// reader's tail and then follows again. The reader reads every type; each connection keeps its own.
import type { Clock } from '../../clock.ts';
import { isPostgres, type Db } from '../../db/knex.ts';
import type { Logger } from '../../log.ts';
import type { Event } from '../events/types.ts';
import { streamsRepo as repo } from './repo.ts';

/** Events read per query. */
export const BATCH = 100;
/**
 * PostgreSQL numbers events when they are recorded, not when they commit: an event may become
 * visible after a higher-numbered one. A missing id is waited for this long before it is taken
 * for a rolled-back transaction's, so a stream does not skip an event whose transaction commits
 * a moment late (Marten's "stale sequence threshold" is the same idea, 3 s by default).
 */
const GAP_MS = 3_000;
/** Ids checked for gaps per query (PostgreSQL). */
const SCAN = 1000;

/** What the reader needs of a connection. */
export interface Follower {
  /** Every event of the account with an id up to here has been considered for this connection. */
  readonly seen: number;
  /** Takes one event past `seen`; false when the connection stops following (paused, closed). */
  receive(e: Event): boolean;
  /** Everything up to `tail` has been considered (the reader's read ended there). */
  caughtUp(tail: number): void;
  /** The reader failed: the connection ends. */
  fail(err: unknown): void;
}

export interface ReaderDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  retainedSince: () => string;
}

export class AccountReader {
  /** Every event of the account with an id up to here has been handed to the followers. */
  tail: number;
  /** PostgreSQL: every id (of any account) up to here is settled (committed, or never will be). */
  private settled: number;
  private readonly gapsSeen = new Map<number, number>();
  private gapTimer: NodeJS.Timeout | undefined;
  private readonly followers = new Set<Follower>();
  private pumping = false;
  private again = false;
  private readonly deps: ReaderDeps;
  readonly accountId: number;

  constructor(deps: ReaderDeps, accountId: number, start: number) {
    this.deps = deps;
    this.accountId = accountId;
    this.tail = start;
    this.settled = start;
  }

  get size(): number {
    return this.followers.size;
  }

  follow(f: Follower): void {
    this.followers.add(f);
    this.wake();
  }

  unfollow(f: Follower): void {
    this.followers.delete(f);
    if (this.followers.size === 0) clearTimeout(this.gapTimer);
  }

  /** New events may be there: read them once for every follower (one read at a time). */
  wake(): void {
    if (this.followers.size === 0) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump()
      .catch((err) => {
        this.deps.logger.error({ err, account_id: this.accountId }, 'event stream: read failed');
        for (const f of [...this.followers]) f.fail(err);
      })
      .finally(() => {
        this.pumping = false;
        if (this.again) this.wake();
      });
  }

  private async pump(): Promise<void> {
    do {
      this.again = false;
      while (this.followers.size > 0) {
        const { upTo, more, bounded } = await this.horizon();
        const events = await repo.eventsAfter(
          { tx: this.deps.db },
          this.accountId,
          this.tail,
          upTo,
          null,
          this.deps.retainedSince(),
          BATCH,
        );
        // Synchronous from here to the end of the batch: a connection joining or leaving sees
        // either all of it or none of it.
        for (const e of events)
          for (const f of [...this.followers]) if (e.id > f.seen && !f.receive(e)) this.unfollow(f);
        const full = events.length === BATCH;
        // A short read has seen everything up to the horizon (SQLite: up to its last event).
        const reached = full || !bounded ? (events.at(-1)?.id ?? this.tail) : upTo;
        if (reached > this.tail) this.tail = reached;
        for (const f of this.followers) f.caughtUp(this.tail);
        if (!full && !more) break;
      }
    } while (this.again && this.followers.size > 0);
  }

  /**
   * The highest id that may be read (every id below it has committed or never will), and whether
   * ids past it were left unchecked for now. SQLite commits in id order: no bound.
   */
  private async horizon(): Promise<{ upTo: number; more: boolean; bounded: boolean }> {
    if (!isPostgres(this.deps.db))
      return { upTo: Number.MAX_SAFE_INTEGER, more: false, bounded: false };
    if (this.settled < this.tail) this.settled = this.tail;
    const rows = await repo.idsAfter({ tx: this.deps.db }, this.settled, SCAN);
    const cutoff = this.deps.clock.now().getTime() - GAP_MS;
    for (const r of rows) {
      if (r.id !== this.settled + 1) {
        const missing = this.settled + 1;
        const seen = this.gapsSeen.get(missing) ?? performance.now();
        this.gapsSeen.set(missing, seen);
        const waited = performance.now() - seen >= GAP_MS;
        if (!waited && Date.parse(r.createdAt) > cutoff) {
          // Look again once the wait is over, even if nothing else happens meanwhile.
          this.gapTimer ??= setTimeout(() => {
            this.gapTimer = undefined;
            this.wake();
          }, GAP_MS);
          return { upTo: this.settled, more: false, bounded: true };
        }
        this.gapsSeen.delete(missing);
      }
      this.settled = r.id;
    }
    return { upTo: this.settled, more: rows.length === SCAN, bounded: true };
  }
}
