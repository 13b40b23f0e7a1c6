// SQLite transactions, group-committed. One process owns the file and better-sqlite3 runs every
// statement synchronously, so transactions run one after another on the single connection anyway.
// Those waiting when the connection frees run back to back inside one BEGIN ... COMMIT, each in
// its own savepoint: a WAL commit (the pages written) is paid once per group, not per request,
// and knex's per-transaction machinery (a new client and knex instance each time, BEGIN and
// COMMIT prepared each time) is not paid at all.
// Each caller still hears of its result only after the COMMIT that makes it durable; a job that
// fails is rolled back to its savepoint alone; if the COMMIT fails, every job of the group fails.
import type Database from 'better-sqlite3';
import knexFactory from 'knex';
import type { Db, Tx } from './knex.ts';
import { statement } from './statements.ts';

/** Jobs per group: the pool's other waiters (autocommit statements) get the connection between groups. */
const MAX_GROUP = 64;

interface Job {
  fn: (tx: Tx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

interface Done {
  job: Job;
  value: unknown;
}

export class SqliteTransactions {
  private queue: Job[] = [];
  private scheduled = false;
  /** The connection of the open group; null between groups. */
  private conn: Database.Database | null = null;
  private depth = 0;
  /** Groups committed so far (tests and diagnostics). */
  commits = 0;
  /** The `tx` every job gets: knex bound to the open group's connection. */
  private readonly tx: Db;

  constructor(private readonly db: Db) {
    // No connection settings: this instance opens nothing; its queries run on the group's.
    const tx = knexFactory({ client: 'better-sqlite3', useNullAsDefault: true });
    const client = tx.client as any;
    client.transacting = true;
    client.acquireConnection = () => {
      if (!this.conn) return Promise.reject(new Error('Transaction query already complete'));
      return Promise.resolve(this.conn);
    };
    client.releaseConnection = () => Promise.resolve();
    // A transaction inside the job's is a savepoint of it.
    (tx as any).context.transaction = (fn: (t: Tx) => Promise<unknown>) => this.savepoint(fn);
    this.tx = tx;
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

  private async group(): Promise<void> {
    const client = this.db.client as any;
    let conn: Database.Database;
    try {
      conn = await client.acquireConnection();
    } catch (err) {
      this.scheduled = false;
      for (const job of this.queue.splice(0)) job.reject(err);
      return;
    }
    try {
      // Waits busy_timeout for another process (the admin CLI) to finish its write.
      statement(conn, 'BEGIN IMMEDIATE').run();
    } catch (err) {
      await client.releaseConnection(conn);
      this.scheduled = false;
      for (const job of this.queue.splice(0)) job.reject(err);
      return;
    }
    const done: Done[] = [];
    let failure: unknown = null;
    try {
      this.conn = conn;
      while (this.queue.length > 0 && done.length < MAX_GROUP) {
        const job = this.queue.shift()!;
        statement(conn, 'SAVEPOINT job').run();
        try {
          const value = await job.fn(this.tx);
          statement(conn, 'RELEASE job').run();
          done.push({ job, value });
        } catch (err) {
          // Some errors (disk full, I/O) make SQLite roll the whole transaction back itself: then
          // the jobs before this one are gone too.
          if (!conn.inTransaction) {
            job.reject(err);
            throw err;
          }
          statement(conn, 'ROLLBACK TO job').run();
          statement(conn, 'RELEASE job').run();
          job.reject(err);
        }
      }
      this.conn = null;
      statement(conn, 'COMMIT').run();
      this.commits++;
    } catch (err) {
      failure = err;
      this.conn = null;
      try {
        if (conn.inTransaction) statement(conn, 'ROLLBACK').run();
      } catch {
        // The connection is rolled back when it closes; the jobs fail either way.
      }
    } finally {
      this.depth = 0;
      await client.releaseConnection(conn);
      this.scheduled = false;
      this.schedule();
    }
    for (const { job, value } of done) {
      if (failure) job.reject(failure);
      else job.resolve(value);
    }
  }

  private async savepoint(fn: (t: Tx) => Promise<unknown>): Promise<unknown> {
    const conn = this.conn;
    if (!conn) throw new Error('Transaction query already complete');
    const name = `nested_${++this.depth}`;
    statement(conn, `SAVEPOINT ${name}`).run();
    try {
      const value = await fn(this.tx);
      statement(conn, `RELEASE ${name}`).run();
      return value;
    } catch (err) {
      if (conn.inTransaction) {
        statement(conn, `ROLLBACK TO ${name}`).run();
        statement(conn, `RELEASE ${name}`).run();
      }
      throw err;
    } finally {
      this.depth--;
    }
  }
}
