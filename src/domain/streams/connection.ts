// One open connection of an event stream: the messages it sends, in order, on an object-mode
// Readable (the HTTP layer writes them as Server-Sent Events: src/http/v3/sse.ts). It holds the
// stream's lease (one connection per stream, across instances). Its events come from the
// account's shared reader (./reader.ts) while it keeps up; behind it (an older cursor, a client
// that stopped reading), it reads its own backlog up to the reader's tail, then follows again. It
// re-checks its credential on every tick and closes, after a comment saying why, when the
// credential stops being active or the stream is deleted.
import { Readable } from 'node:stream';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/knex.ts';
import { leaseWrite } from '../../db/lease.ts';
import { inTransaction } from '../../db/tx.ts';
import type { Logger } from '../../log.ts';
import type { Event } from '../events/types.ts';
import { BATCH, type AccountReader, type Follower } from './reader.ts';
import { streamsRepo as repo } from './repo.ts';

/** The lease outlives a few missed ticks; a dead instance's stream is free again after it. */
export const LEASE_MS = 30_000;
/** How long a release is retried while the database is away. */
const RELEASE_RETRY_MS = 5_000;
/** Ticks (credential check, lease renewal, polling) at least this often. */
const MAX_TICK_MS = 5_000;

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

export class StreamConnection implements Follower {
  readonly readable: Readable;
  readonly accountId: number;
  /** The last event sent: saved as the stream's position. */
  private position: number;
  /** Every event of the account up to here was sent or is not of this stream's types. */
  seen: number;
  /** The shared reader pushes events to it (see ./reader.ts). */
  following = false;
  private readonly tickMs: number;
  private timer: NodeJS.Timeout | undefined;
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
  private readonly reader: AccountReader;
  private readonly onClosed: (c: StreamConnection) => void;

  constructor(
    deps: ConnectionDeps,
    o: ConnectionOptions,
    reader: AccountReader,
    onClosed: (c: StreamConnection) => void,
  ) {
    this.deps = deps;
    this.o = o;
    this.reader = reader;
    this.onClosed = onClosed;
    this.accountId = o.accountId;
    this.position = o.position;
    this.seen = o.position;
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

  /** New events may be there: the shared reader reads them, or this connection its backlog. */
  wake(): void {
    if (this.closed) return;
    if (this.following) return this.reader.wake();
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

  /** Follower: one event of the account past `seen`, from the shared reader. */
  receive(e: Event): boolean {
    if (this.closed || this.paused) return (this.following = false);
    this.seen = e.id;
    if (this.o.types && !this.o.types.includes(e.type)) return true;
    this.position = e.id;
    this.write({ kind: 'event', event: e });
    // The client is not keeping up: this connection reads its own backlog once it reads again.
    if (this.paused) this.following = false;
    return this.following;
  }

  caughtUp(tail: number): void {
    if (this.following && tail > this.seen) this.seen = tail;
  }

  fail(): void {
    this.close('internal_error');
  }

  /** Reads this stream's backlog up to the shared reader's tail, then follows the reader. */
  private async pump(): Promise<void> {
    do {
      this.again = false;
      while (!this.closed && !this.paused && !this.following) {
        const tail = this.reader.tail;
        if (this.seen >= tail) {
          // Synchronous with the check above: the reader hands over everything past `tail`.
          this.following = true;
          this.reader.follow(this);
          return;
        }
        const events = await repo.eventsAfter(
          { tx: this.deps.db },
          this.accountId,
          this.seen,
          tail,
          this.o.types,
          this.deps.retainedSince(),
          BATCH,
        );
        for (const e of events) {
          if (this.closed) return;
          this.seen = this.position = e.id;
          this.write({ kind: 'event', event: e });
        }
        // A short read has seen everything of this stream's types up to the tail.
        if (events.length < BATCH && tail > this.seen) this.seen = tail;
      }
    } while (this.again && !this.closed && !this.paused && !this.following);
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
        repo.renew({ tx }, streamId, connectionId, until, this.position),
      );
      if (!kept)
        return this.close(
          (await repo.exists({ tx: db }, streamId)) ? 'replaced' : 'stream_deleted',
        );
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
      this.following = false;
      this.reader.unfollow(this);
      this.onClosed(this);
      const { streamId, connectionId } = this.o;
      // The next connection waits for this release (or the lease's end): should the database be
      // away, it is retried for a few seconds (a shutdown waits for it).
      await leaseWrite(
        this.deps.db,
        (tx) => repo.release({ tx }, streamId, connectionId, this.position),
        {
          maxMs: RELEASE_RETRY_MS,
        },
      ).catch((err) =>
        this.deps.logger.warn({ err, stream_id: streamId }, 'event stream: release failed'),
      );
      this.resolveDone();
    })();
    return this.released;
  }
}
