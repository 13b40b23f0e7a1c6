import type { Db, Tx } from './knex.ts';

/**
 * Runs a write in the caller's transaction (an idempotent request records its result in it) or in
 * one of its own. Every query inside must use the given `tx`: SQLite has one connection.
 */
export function inTransaction<T>(
  db: Db,
  tx: Tx | undefined,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  return tx ? fn(tx) : db.transaction(fn);
}
