// Tells listeners about events once the transaction that recorded them has committed.
// - SQLite: one process owns the file, and events are numbered in commit order. After a commit
//   that may have recorded events, the events past the last one announced are read and
//   announced; an event whose transaction rolled back was never committed, so it is never read.
// - PostgreSQL: the recording transaction sends NOTIFY (delivered only if it commits, to every
//   instance), and each process keeps one LISTEN connection (`pg` is imported only then).
import type pg from 'pg';
import { isPostgres, type Db } from '../../db/engine.ts';
import { pgConnectionConfig } from '../../db/pg-connection.ts';
import { onSqliteCommit } from '../../db/tx.ts';
import type { Logger } from '../../log.ts';
import { eventsRepo } from './repo.ts';

export type EventListener = (accountId: number, eventId: number) => void;

/** One channel per schema: NOTIFY is database-wide, and schools or test suites share databases. */
export function eventsChannel(db: Db): string {
  const path = (db.client.config as { searchPath?: string[] }).searchPath;
  return path?.length ? `school_events_${path[0]}` : 'school_events';
}

const RECONNECT_MS = 1000;

export class EventNotifier {
  private readonly listeners = new Set<EventListener>();
  readonly channel: string;
  private started: Promise<void> | null = null;
  private closed = false;
  // SQLite
  private dirty = false;
  private lastId = 0;
  private draining: Promise<void> | null = null;
  private again = false;
  private unsubscribeCommit: (() => void) | undefined;
  // PostgreSQL
  private client: pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private readonly db: Db;
  private readonly logger: Logger;

  constructor(db: Db, logger: Logger) {
    this.db = db;
    this.logger = logger;
    this.channel = eventsChannel(db);
  }

  /**
   * SQLite, inside the recording transaction: events were recorded, announce them after the
   * commit. (PostgreSQL's NOTIFY travels in the events' INSERT: eventsRepo.insertNotifying.)
   */
  recorded(): void {
    this.dirty = true;
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    this.started ??= this.start().catch((err) =>
      this.logger.error({ err }, 'event notifier: start failed'),
    );
    return () => this.listeners.delete(listener);
  }

  /** Resolves once listeners hear every event committed from now on (the first subscription). */
  async listening(): Promise<void> {
    await this.started;
  }

  private emit(accountId: number, eventId: number): void {
    for (const listener of this.listeners) {
      try {
        listener(accountId, eventId);
      } catch (err) {
        this.logger.error({ err }, 'event listener failed');
      }
    }
  }

  private async start(): Promise<void> {
    if (isPostgres(this.db)) return this.listen();
    // Events committed before the first subscriber are not news.
    this.lastId = await eventsRepo.maxId({ tx: this.db });
    this.unsubscribeCommit = onSqliteCommit(this.db, () => {
      if (!this.dirty) return;
      this.dirty = false;
      this.drain();
    });
    // Anything committed between the read above and the subscription.
    this.drain();
  }

  /** One reader at a time; a commit during a read asks for another read. */
  private drain(): void {
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = (async () => {
      do {
        this.again = false;
        for (;;) {
          const rows = await eventsRepo.after({ tx: this.db }, this.lastId, 500);
          for (const r of rows) {
            this.lastId = Number(r.id);
            this.emit(Number(r.account_id), Number(r.id));
          }
          if (rows.length < 500) break;
        }
      } while (this.again && !this.closed);
    })()
      .catch((err) => {
        if (!this.closed) this.logger.error({ err }, 'event notifier: read failed');
      })
      .finally(() => {
        this.draining = null;
      });
  }

  private async listen(): Promise<void> {
    if (this.closed) return;
    const { default: driver } = await import('pg');
    if (this.closed) return;
    const client = new driver.Client(pgConnectionConfig(this.db));
    const reconnect = (err?: unknown) => {
      if (this.closed || this.client !== client) return;
      if (err) this.logger.warn({ err }, 'event notifier: connection lost; reconnecting');
      this.client = undefined;
      client.end().catch(() => undefined);
      this.retry = setTimeout(() => {
        this.listen().catch((e) => this.logger.warn({ err: e }, 'event notifier: LISTEN failed'));
      }, RECONNECT_MS);
    };
    this.client = client;
    client.on('error', reconnect);
    client.on('end', () => reconnect());
    client.on('notification', (msg) => {
      if (msg.channel !== this.channel || !msg.payload) return;
      const [account, event] = msg.payload.split(':').map(Number);
      if (Number.isInteger(account) && Number.isInteger(event)) this.emit(account!, event!);
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel.replace(/"/g, '""')}"`);
    } catch (err) {
      reconnect(err); // tries again in a second
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    clearTimeout(this.retry);
    this.unsubscribeCommit?.();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
    await this.draining;
  }
}
