// Small helpers that hide the differences between SQLite and PostgreSQL.
import type { Tx } from './knex.ts';
import { isPostgres } from './knex.ts';
import { insertRowSqlite } from './statements.ts';

/** Inserts one row and returns its integer id (RETURNING on PostgreSQL, lastInsertRowid on SQLite). */
export async function insertId(
  { tx }: { tx: Tx },
  table: string,
  row: Record<string, unknown>,
): Promise<number> {
  if (isPostgres(tx)) {
    const [r] = await tx(table).insert(row).returning('id');
    return Number(r.id);
  }
  return insertRowSqlite({ tx }, table, row);
}

/** SQLite stores booleans as 0/1. */
export const bool = (v: unknown): boolean => v === true || v === 1 || v === '1';

export const json = <T>(v: unknown, fallback: T): T => {
  if (v === null || v === undefined || v === '') return fallback;
  if (typeof v === 'string') return JSON.parse(v) as T;
  return v as T;
};

/** Unique-constraint violation on either engine. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return (
    e?.code === '23505' ||
    e?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}
