// One open connection of an event stream: the messages it sends, in order, on an object-mode
// Readable (the HTTP layer writes them as Server-Sent Events: src/http/v3/sse.ts). It holds the stream's lease (one connection per stream, across instances), reads the
// account's events after its position when told of new ones (and on every tick, in case a
// notification was missed), re-checks its credential on every tick and closes, after a comment
// saying why, when the credential stops being active or the stream is deleted.
import { Readable } from 'node:stream';
import type { Clock } from '../../clock.ts';
import { isPostgres, type Db } from '../../db/knex.ts';
import { inTransaction } from '../../db/tx.ts';
import type { Logger } from '../../log.ts';
import type { Event } from '../events/types.ts';
import { streamsRepo as repo } from './repo.ts';

/** Events read per query; the next batch is read once the client has taken this one. */
const BATCH = 100;
/** The lease outlives a few missed ticks; a dead instance's stream is free again after it. */
export const LEASE_MS = 30_000;
/** Ticks (credential check, lease renewal, polling) at least this often. */
const MAX_TICK_MS = 5_000;
/**
 * PostgreSQL numbers events when they are recorded, not when they commit: an event may become
 * visible after a higher-numbered one. A missing id is waited for this long before it is taken
 * for a rolled-back transaction's, so a stream does not skip an event whose transaction commits
 * a moment late (Marten's "stale sequence threshold" is the same idea, 3 s by default).
 */
const GAP_MS = 3_000;
/** Ids checked for gaps per query (PostgreSQL). */
const SCAN = 1000;

export interface ConnectionDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** The credential's status now; anything but `active` closes the connection. */
  credentialStatus: () => Promise<string | null>;
  /** The oldest instant still retained: older events are not sent, even before the sweep. */
  retainedSince: () => string;
}

export interface ConnectionOptions {
  streamId: number;
  accountId: number;
  connectionId: string;
  types: string[] | null;
  /** The last event id already delivered: the stream goes on after it. */
  position: number;
  heartbeatMs: number;
}

/** What a connection sends; how it looks on the wire is the HTTP layer's business. */
export type StreamMessage =
  | { kind: 'open'; streamId: number; retryMs: number }
  | { kind: 'event'; event: Event }
  | { kind: 'heartbeat' }
  /** The last message: why the connection ends. */
  | { kind: 'closed'; reason: string };

/** How long a client waits before reconnecting (sent when the connection opens). */
const RETRY_MS = 3_000;

export class StreamConnection {
  readonly readable: Readable;
  readonly accountId: number;
  private position: number;
  /** PostgreSQL: every id up to here is settled (committed, or known never to commit). */
  private settled: number;
  private readonly gapsSeen = new Map<number, number>();
  private readonly tickMs: number;
  private timer: NodeJS.Timeout | undefined;
  private gapTimer: NodeJS.Timeout | undefined;
  private lastWrite = performance.now();
  private closed = false;
  private paused = false;
  private pumping = false;
  private again = false;
  private ticking = false;
  private released: Promise<void> | undefined;
  /** Resolves once the connection is closed and its lease released. */
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private readonly deps: ConnectionDeps;
  private readonly o: ConnectionOptions;
  private readonly onClosed: (c: StreamConnection) => void;

  constructor(deps: ConnectionDeps, o: ConnectionOptions, onClosed: (c: StreamConnection) => void) {
    this.deps = deps;
    this.o = o;
    this.onClosed = onClosed;
    this.accountId = o.accountId;
    this.position = o.position;
    this.settled = o.position;
    this.tickMs = Math.min(o.heartbeatMs, MAX_TICK_MS);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.readable = new Readable({
      objectMode: true,
      read: () => {
        if (!this.paused) return;
        this.paused = false;
        this.wake();
      },
      destroy: (err, callback) => {
        void this.release().then(() => callback(err));
      },
    });
  }

  start(): void {
    this.write({ kind: 'open', streamId: this.o.streamId, retryMs: RETRY_MS });
    this.timer = setInterval(() => void this.tick(), this.tickMs);
    this.wake();
  }

  /** New events may be there: read them (one reader at a time). */
  wake(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump()
      .catch((err) => {
        this.deps.logger.error({ err, stream_id: this.o.streamId }, 'event stream: read failed');
        this.close('internal_error');
      })
      .finally(() => {
        this.pumping = false;
        // Asked for while this read was finishing: read again.
        if (this.again) this.wake();
      });
  }

  /** Ends the connection after a last message saying why. */
  close(reason: string): void {
    if (this.closed) return;
    this.write({ kind: 'closed', reason });
    this.closed = true;
    this.readable.push(null);
    void this.release();
  }

  /** Server shutdown: end gracefully, and give up on a client that does not read the end. */
  async shutdown(graceMs: number): Promise<void> {
    this.close('server_shutdown');
    let late: NodeJS.Timeout | undefined;
    const sent = new Promise<void>((resolve) => {
      if (this.readable.closed) return resolve();
      this.readable.once('close', resolve);
      late = setTimeout(() => {
        this.readable.destroy();
        resolve();
      }, graceMs);
    });
    await sent;
    clearTimeout(late);
    await this.done;
  }

  private write(message: StreamMessage): void {
    this.lastWrite = performance.now();
    if (!this.readable.push(message)) this.paused = true;
  }

  private async pump(): Promise<void> {
    do {
      this.again = false;
      while (!this.closed && !this.paused) {
        const { upTo, more } = await this.horizon();
        const events = await repo.eventsAfter(
          this.deps.db,
          this.accountId,
          this.position,
          upTo,
          this.o.types,
          this.deps.retainedSince(),
          BATCH,
        );
        for (const e of events) {
          if (this.closed) return;
          this.position = e.id;
          this.write({ kind: 'event', event: e });
        }
        if (events.length < BATCH && !more) break;
      }
    } while (this.again && !this.closed && !this.paused);
  }

  /**
   * The highest id that may be read (every id below it has committed or never will), and whether
   * ids past it were left unchecked for now.
   */
  private async horizon(): Promise<{ upTo: number; more: boolean }> {
    if (!isPostgres(this.deps.db)) return { upTo: Number.MAX_SAFE_INTEGER, more: false };
    if (this.settled < this.position) this.settled = this.position;
    const rows = await repo.idsAfter(this.deps.db, this.settled, SCAN);
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
          return { upTo: this.settled, more: false };
        }
        this.gapsSeen.delete(missing);
      }
      this.settled = r.id;
    }
    return { upTo: this.settled, more: rows.length === SCAN };
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.closed) return;
    this.ticking = true;
    try {
      const status = await this.deps.credentialStatus();
      if (status !== 'active') return this.close(`credential_${status ?? 'removed'}`);
      const until = new Date(this.deps.clock.now().getTime() + LEASE_MS).toISOString();
      const { db } = this.deps;
      const { streamId, connectionId } = this.o;
      const kept = await inTransaction(db, undefined, (tx) =>
        repo.renew(tx, streamId, connectionId, until, this.position),
      );
      if (!kept)
        return this.close((await repo.exists(db, streamId)) ? 'replaced' : 'stream_deleted');
      if (performance.now() - this.lastWrite >= this.o.heartbeatMs - this.tickMs / 2)
        this.write({ kind: 'heartbeat' });
      this.wake();
    } catch (err) {
      this.deps.logger.warn({ err, stream_id: this.o.streamId }, 'event stream: tick failed');
    } finally {
      this.ticking = false;
    }
  }

  /** Stops the timers and frees the lease, saving the position (once). */
  private release(): Promise<void> {
    this.closed = true;
    this.released ??= (async () => {
      clearInterval(this.timer);
      clearTimeout(this.gapTimer);
      this.onClosed(this);
      const { streamId, connectionId } = this.o;
      await inTransaction(this.deps.db, undefined, (tx) =>
        repo.release(tx, streamId, connectionId, this.position),
      ).catch((err) =>
        this.deps.logger.warn({ err, stream_id: streamId }, 'event stream: release failed'),
      );
      this.resolveDone();
    })();
    return this.released;
  }
}
