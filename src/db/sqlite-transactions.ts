// SQLite transactions, group-committed. One process owns the file and better-sqlite3 runs every
// statement synchronously, so transactions run one after another on the single connection anyway.
// Jobs queued when a group starts, and those queued while it runs (up to MAX_GROUP), run one after
// another inside one BEGIN ... COMMIT, each in its own savepoint: a WAL commit (the pages written)
// is paid once per group, not per request, and knex's per-transaction machinery (a new client
// and knex instance each time, BEGIN and COMMIT prepared each time) is not paid at all.
// Every outcome, success or failure, is announced only after the group's COMMIT: a job may have
// seen an earlier job's uncommitted rows (and failed because of them). If the group does not
// commit, every job of it fails with the group's error, so nothing unconfirmed is kept.
import type Database from 'better-sqlite3';
import knexFactory from 'knex';
import { knexLog, type Db, type Tx } from './knex.ts';
import { statement } from './statements.ts';
import { CachingSqliteClient } from './sqlite-statements.ts';

/** Jobs per group: the pool's other waiters (autocommit statements) get the connection between groups. */
const MAX_GROUP = 64;

interface Job {
  fn: (tx: Tx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

interface Outcome {
  job: Job;
  ok: boolean;
  value?: unknown;
  error?: unknown;
}

/** A job's (or a nested transaction's) own handle: it refuses queries once its job has ended. */
interface Handle {
  tx: Db;
  close(): void;
}

const complete = () => new Error('Transaction query already complete');

export class SqliteTransactions {
  private queue: Job[] = [];
  private scheduled = false;
  /** The knex instance handles derive from: no connection settings, it opens nothing. */
  private readonly base: Db;
  /** Groups committed so far (tests and diagnostics). */
  commits = 0;
  /** Called after every COMMIT (the SQLite job runner wakes on it: enqueued jobs are visible). */
  readonly committed = new Set<() => void>();
  /**
   * Called once per group after its outcomes are announced, when what they set off has run up to
   * its first wait on I/O or a timer (process.nextTick: after the microtasks). The audit trail
   * writes its callers' entries there, in the same turn, instead of a turn later behind the
   * next requests' reads (docs/speed.md, "The SQLite POST tail").
   */
  readonly settled = new Set<() => void>();
  private readonly db: Db;
  private readonly jobTimeoutMs: number;

  /**
   * @param jobTimeoutMs how long one job may hold the group. Past it the job fails and the group
   *   goes on: a job that waits on something that needs the connection (a transaction(db) or a
   *   query on `db` inside a job) would otherwise block the database for good. knex gave up
   *   after its 60 s pool timeout.
   */
  constructor(db: Db, jobTimeoutMs = 60_000) {
    this.db = db;
    this.jobTimeoutMs = jobTimeoutMs;
    this.base = knexFactory({
      client: CachingSqliteClient as any,
      useNullAsDefault: true,
      log: knexLog,
    });
    // knex then leaves BEGIN to us (its SQLite ALTER TABLE, for one, opens no transaction of its own).
    (this.base.client as any).transacting = true;
  }

  run<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    // A turn later, so the requests read in this turn join the same group.
    setImmediate(() => void this.group());
  }

  /**
   * A knex handle bound to conn for one job: a function inheriting the base instance's methods
   * with a client of its own (about 1 us; building a knex instance costs 80).
   */
  private handle(conn: Database.Database, depth = 0): Handle {
    let open = true;
    const client = Object.create(this.base.client);
    // Refused once the job ended (a query it left running must not land in the next job), and
    // after SQLite rolled the whole transaction back (it would run in autocommit).
    client.acquireConnection = () =>
      open && conn.inTransaction ? Promise.resolve(conn) : Promise.reject(complete());
    client.releaseConnection = () => Promise.resolve();
    const context = Object.create((this.base as any).context);
    context.client = client;
    // A transaction inside the job's is a savepoint of it; siblings run one after another.
    let chain: Promise<unknown> = Promise.resolve();
    context.transaction = (fn: (t: Tx) => Promise<unknown>) => {
      if (!open) return Promise.reject(complete());
      const result = chain.then(() => this.savepoint(conn, depth + 1, fn));
      chain = result.catch(() => undefined);
      return result;
    };
    const tx = ((table?: string, options?: unknown) => {
      const qb = context.queryBuilder();
      return table ? qb.table(table, options) : qb;
    }) as unknown as Db & { context: unknown };
    tx.context = context;
    Object.setPrototypeOf(tx, this.base);
    return { tx, close: () => (open = false) };
  }

  private async savepoint(
    conn: Database.Database,
    depth: number,
    fn: (t: Tx) => Promise<unknown>,
  ): Promise<unknown> {
    // Named by depth: siblings run one after another, so no two open savepoints share a name,
    // and the prepared statements stay a handful.
    const name = `nested_${depth}`;
    statement(conn, `SAVEPOINT ${name}`).run();
    const inner = this.handle(conn, depth);
    try {
      const value = await fn(inner.tx);
      statement(conn, `RELEASE ${name}`).run();
      return value;
    } catch (err) {
      if (conn.inTransaction) {
        statement(conn, `ROLLBACK TO ${name}`).run();
        statement(conn, `RELEASE ${name}`).run();
      }
      throw err;
    } finally {
      inner.close();
    }
  }

  /** No group could start: nothing ran, and the jobs waiting now fail rather than wait again. */
  private failWaiting(err: unknown): void {
    this.scheduled = false;
    for (const job of this.queue.splice(0)) job.reject(err);
  }

  private async group(): Promise<void> {
    const client = this.db.client as any;
    let conn: Database.Database;
    try {
      conn = await client.acquireConnection();
    } catch (err) {
      this.failWaiting(err);
      return;
    }
    try {
      // Waits busy_timeout for another process (the admin CLI) to finish its write.
      statement(conn, 'BEGIN IMMEDIATE').run();
    } catch (err) {
      await client.releaseConnection(conn);
      this.failWaiting(err);
      return;
    }
    const outcomes: Outcome[] = [];
    let failed = false;
    let failure: unknown;
    try {
      while (this.queue.length > 0 && outcomes.length < MAX_GROUP) {
        const outcome: Outcome = { job: this.queue.shift()!, ok: false };
        // Recorded first: every job taken off the queue is settled below, whatever throws.
        outcomes.push(outcome);
        statement(conn, 'SAVEPOINT job').run();
        const handle = this.handle(conn);
        let timer: NodeJS.Timeout | undefined;
        const stalled = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`transaction still running after ${this.jobTimeoutMs} ms`)),
            this.jobTimeoutMs,
          );
        });
        try {
          outcome.value = await Promise.race([outcome.job.fn(handle.tx), stalled]);
          outcome.ok = true;
        } catch (err) {
          outcome.error = err;
        } finally {
          clearTimeout(timer);
          handle.close();
        }
        // Some errors (disk full, I/O) make SQLite roll the whole transaction back by itself: the
        // jobs before this one are gone too.
        if (!conn.inTransaction) {
          throw outcome.ok ? new Error('the transaction was rolled back') : outcome.error;
        }
        if (!outcome.ok) statement(conn, 'ROLLBACK TO job').run();
        statement(conn, 'RELEASE job').run();
      }
      statement(conn, 'COMMIT').run();
      this.commits++;
      for (const listener of this.committed) listener();
    } catch (err) {
      failed = true;
      failure = err ?? new Error('the transaction failed');
      try {
        if (conn.inTransaction) statement(conn, 'ROLLBACK').run();
      } catch {
        // Checked below.
      }
      // A connection still inside the transaction must not go back to the pool: autocommit
      // writes on it would be acknowledged and never committed. The pool replaces it.
      if (conn.inTransaction) (conn as any).__knex__disposed = 'a transaction could not be ended';
    } finally {
      await client.releaseConnection(conn);
      this.scheduled = false;
      this.schedule();
    }
    for (const { job, ok, value, error } of outcomes) {
      if (failed) job.reject(failure);
      else if (ok) job.resolve(value);
      else job.reject(error);
    }
    if (this.settled.size > 0) process.nextTick(() => this.announceSettled());
  }

  private announceSettled(): void {
    for (const listener of this.settled) listener();
  }
}
