// Reads that all see the database as of one instant, however long they take and whatever commits
// meanwhile (an export of 100,000 users read page by page):
// - PostgreSQL: a REPEATABLE READ, read-only transaction on a pooled connection.
// - SQLite: a read transaction on a connection of its own (WAL keeps its snapshot while the
//   writer commits). An in-memory database has no second connection, so it is refused.
import Database from 'better-sqlite3';
import type { Knex } from 'knex';
import { isPostgres, type Db } from './engine.ts';

/** The snapshot connection's page cache: 2,000 KiB (a negative cache_size counts KiB). */
const SNAPSHOT_CACHE_KIB = -2000;

export interface Snapshot {
  /** Runs a query built on the snapshot's handle; rows as the driver returns them. */
  all(build: (k: Knex) => Knex.QueryBuilder): Promise<any[]>;
}

export async function withSnapshot<T>(db: Db, fn: (s: Snapshot) => Promise<T>): Promise<T> {
  if (isPostgres(db)) {
    return db.transaction(async (trx) => {
      await trx.raw('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      // The snapshot is taken by the first query, so it is taken now, not at the first page.
      await trx.raw('SELECT 1');
      return fn({ all: async (build) => build(trx) });
    });
  }
  const filename = (db.client.config.connection as { filename: string }).filename;
  if (!filename || filename === ':memory:') throw new Error('snapshot reads need a database file');
  const conn = new Database(filename, { readonly: true, fileMustExist: true });
  try {
    conn.pragma('busy_timeout = 5000');
    // Its reads go through each page once (an export reads the table in id order), so a page
    // cache keeps what is never read again: better-sqlite3's 16 MiB filled in an export of
    // 100,000 users, +16-18 MiB of the process's peak RSS. 2 MiB (SQLite's own default) holds
    // the b-trees' upper levels, the pages that are read again (docs/speed.md, "Flat memory for
    // the SQLite import").
    conn.pragma(`cache_size = ${SNAPSHOT_CACHE_KIB}`);
    conn.exec('BEGIN');
    // A deferred transaction takes its snapshot at its first read.
    conn.prepare('SELECT count(*) FROM sqlite_master').get();
    const result = await fn({
      all: async (build) => {
        const { sql, bindings } = build(db).toSQL().toNative();
        const values = bindings.map((v) => (typeof v === 'boolean' ? Number(v) : v));
        return conn.prepare(sql).all(...(values as unknown[]));
      },
    });
    conn.exec('COMMIT');
    return result;
  } finally {
    conn.close();
  }
}
