// Per-account limits ("at most N of these") count and then insert: two concurrent creations
// could both pass the count. On PostgreSQL a transaction-scoped advisory lock per account and
// limit serializes them until commit; SQLite runs writes one at a time already.
import { isPostgres, type Tx } from './knex.ts';

export async function lockAccountScope(
  { tx }: { tx: Tx },
  scope: string,
  accountId: number,
): Promise<void> {
  if (isPostgres(tx))
    await tx.raw("SELECT pg_advisory_xact_lock(hashtext(? || ':' || current_schema()), ?)", [
      `school:${scope}`,
      accountId,
    ]);
}
