import type { Db, Tx } from './knex.ts';
import { isPostgres } from './knex.ts';
import { SqliteTransactions } from './sqlite-transactions.ts';

/**
 * The one way a service method takes the caller's transaction: its last argument, `{ tx }`.
 * Absent, a write opens a transaction of its own (inTransaction) and a read uses the database.
 * Repositories take it as a required first argument instead, `{ tx }: { tx: Tx }`: they never
 * open one.
 */
export interface InTx {
  tx?: Tx;
}

const groups = new WeakMap<Db, SqliteTransactions>();

/**
 * Runs fn in a transaction of its own: knex's on PostgreSQL, a group-committed one on SQLite
 * (src/db/sqlite-transactions.ts). Resolves once the result is committed.
 */
export function transaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (isPostgres(db)) return db.transaction(fn);
  return sqliteGroup(db).run(fn);
}

function sqliteGroup(db: Db): SqliteTransactions {
  let group = groups.get(db);
  if (!group) groups.set(db, (group = new SqliteTransactions(db)));
  return group;
}

/** SQLite: calls fn after every committed transaction(); returns the unsubscribe function. */
export function onSqliteCommit(db: Db, fn: () => void): () => void {
  const { committed } = sqliteGroup(db);
  committed.add(fn);
  return () => committed.delete(fn);
}

/**
 * Runs a write in the caller's transaction (an idempotent request records its result in it) or in
 * one of its own. Every query inside must use the given `tx`: SQLite has one connection.
 */
export function inTransaction<T>(
  db: Db,
  tx: Tx | undefined,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  return tx ? fn(tx) : transaction(db, fn);
}

/**
 * PostgreSQL: resolves once the outermost transaction of `tx` has ended, true when it committed,
 * false when it rolled back (a savepoint's end is not its commit). Null on SQLite, whose
 * transactions are group-committed (onSqliteCommit), and outside a transaction.
 */
export function afterCommit(tx: Tx): Promise<boolean> | null {
  if (!isPostgres(tx) || !tx.isTransaction) return null;
  let top = tx as Tx & { parentTransaction?: Tx; executionPromise?: Promise<unknown> };
  while (top.parentTransaction) top = top.parentTransaction as typeof top;
  return (
    top.executionPromise?.then(
      () => true,
      () => false,
    ) ?? null
  );
}

/**
 * SQLite: calls fn once per group of transaction()s, after their callers were told and ran on up
 * to their next wait (SqliteTransactions.settled); returns the unsubscribe function.
 */
export function onSqliteSettled(db: Db, fn: () => void): () => void {
  const { settled } = sqliteGroup(db);
  settled.add(fn);
  return () => settled.delete(fn);
}
