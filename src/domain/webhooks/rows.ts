// Every row of a portable `?`-parameterized SELECT, on the hot path of deliveries: a cached
// prepared statement on SQLite (knex compiles and prepares each query anew, about 100 us), the
// same SQL through knex.raw on PostgreSQL. src/db/statements.ts has firstRow and execute; this is
// their many-rows sibling, on the caller's connection (the transaction's inside one).
import type Database from 'better-sqlite3';
import { isPostgres, type Tx } from '../../db/engine.ts';
import { statement } from '../../db/statements.ts';

export async function allRows<T = Record<string, unknown>>(
  tx: Tx,
  sql: string,
  params: readonly unknown[],
): Promise<T[]> {
  if (isPostgres(tx)) return (await tx.raw(sql, params as any[])).rows as T[];
  const client = tx.client as any;
  const conn = (await client.acquireConnection()) as Database.Database;
  try {
    const values = params.map((p) => (p === true ? 1 : p === false ? 0 : p));
    return statement(conn, sql).all(...values) as T[];
  } finally {
    await client.releaseConnection(conn);
  }
}

/** `UPDATE table SET a = ?, b = ? WHERE id = ?`: the SQL depends only on the columns named. */
export function updateSql(table: string, columns: string[], where = 'id = ?'): string {
  return `UPDATE ${table} SET ${columns.map((c) => `${c} = ?`).join(', ')} WHERE ${where}`;
}
