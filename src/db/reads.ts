// Hot-path reads. knex recompiles every statement on every call (about 80-150 us per query on
// SQLite); a read-only better-sqlite3 connection with cached prepared statements answers the same
// SELECT in under 10 us. WAL lets that connection read beside knex's writer, and it sees every
// committed write. Inside a transaction, and on PostgreSQL, the same SQL goes through knex.
import Database from 'better-sqlite3';
import type { Db, Tx } from './knex.ts';
import { isPostgres } from './knex.ts';

interface ReadConnection {
  conn: Database.Database;
  statements: Map<string, Database.Statement>;
}

const readers = new WeakMap<object, ReadConnection>();

/** Gives a file-backed SQLite database its read connection (createDb calls this). */
export function attachReader(db: Db, filename: string): void {
  const conn = new Database(filename, { readonly: true, fileMustExist: false });
  conn.pragma('busy_timeout = 5000');
  readers.set(db, { conn, statements: new Map() });
}

export const hasReader = (db: Db): boolean => readers.has(db);

export function closeReader(db: Db): void {
  readers.get(db)?.conn.close();
  readers.delete(db);
}

/** First row of a portable `?`-parameterized SELECT, or undefined. */
export async function firstRow<T = Record<string, unknown>>(
  tx: Tx,
  sql: string,
  params: readonly unknown[],
): Promise<T | undefined> {
  const reader = readers.get(tx);
  if (reader) {
    let stmt = reader.statements.get(sql);
    if (!stmt) {
      stmt = reader.conn.prepare(sql);
      reader.statements.set(sql, stmt);
    }
    return stmt.get(...(params as unknown[])) as T | undefined;
  }
  const result = await tx.raw(sql, params as any[]);
  return (isPostgres(tx) ? result.rows[0] : result[0]) as T | undefined;
}
