// Retention sweeps without an index on created_at: such an index cost a page write on every commit
// that inserted a row (events, idempotency records, audit entries are written on the hot path).
import type { Db } from './engine.ts';
import { transaction } from './tx.ts';

/**
 * Deletes the rows of `table` created before `cutoff`, walking the primary key a chunk at a time
 * (each chunk's delete its own short transaction, so other writes go on in between). Ids follow
 * creation, give or take rows written side by side, so the walk ends at the first chunk without an
 * old row; an old row behind it (a record written late) goes at a later sweep. Returns the number
 * deleted; rows that reference them go by their foreign keys' ON DELETE.
 */
export async function purgeInIdOrder(
  db: Db,
  table: string,
  cutoff: string,
  chunk = 1000,
): Promise<number> {
  let deleted = 0;
  let after = 0;
  for (;;) {
    const rows: { id: number | string; created_at: string }[] = await db(table)
      .where('id', '>', after)
      .orderBy('id')
      .limit(chunk)
      .select('id', 'created_at');
    const old = rows.filter((r) => r.created_at < cutoff).map((r) => Number(r.id));
    if (old.length === 0) return deleted;
    deleted += await transaction(db, (tx) => tx(table).whereIn('id', old).delete());
    if (rows.length < chunk) return deleted;
    after = Number(rows[rows.length - 1]!.id);
  }
}
