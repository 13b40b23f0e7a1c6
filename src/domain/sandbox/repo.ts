// What a sandbox reset deletes: the account's students (their tags, enrollments and memberships go
// with them), tags, Diamond automations, imports (their rows and attempts), exports and operations.
// Credentials, administrators, legacy keys, webhooks, events and the audit trail stay. (Files and
// uploads are ended by the files service: their bytes live outside the database.)
import type { Tx } from '../../db/engine.ts';
import { allRows } from '../../db/statements.ts';

export const sandboxRepo = {
  async empty(
    { tx }: { tx: Tx },
    accountId: number,
    keepOperation: number,
  ): Promise<Record<string, number>> {
    const users = await tx('users').where('account_id', accountId).delete();
    const tags = await tx('tags').where('account_id', accountId).delete();
    const diamonds = await tx('diamonds').where('account_id', accountId).delete();
    const mine = tx('imports').where('account_id', accountId).select('id');
    await tx('import_rows').whereIn('import_id', mine.clone()).delete();
    await tx('import_attempts').whereIn('import_id', mine.clone()).delete();
    const imports = await tx('imports').where('account_id', accountId).delete();
    const exports = await tx('exports').where('account_id', accountId).delete();
    const operations = await tx('operations')
      .where('account_id', accountId)
      .whereNot('id', keepOperation)
      .delete();
    return { users, tags, diamonds, imports, exports, operations };
  },

  /**
   * The ids a scenario's later parts build on: the named tags, every product and delivery. One
   * statement (cached prepared on SQLite): school_1000 reads them once per student, where three
   * knex-built queries took about 0.3 s of SQLite time per load.
   */
  async scenarioCatalog({ tx }: { tx: Tx }, accountId: number, tagNames: string[]) {
    const names = tagNames.map(() => '?').join(', ');
    const rows = await allRows<{ kind: string; id: unknown }>(
      { tx },
      `SELECT 'tag' AS kind, id FROM tags WHERE account_id = ? AND name IN (${names})
       UNION ALL SELECT 'product' AS kind, id FROM products WHERE account_id = ?
       UNION ALL SELECT 'delivery' AS kind, id FROM deliveries WHERE account_id = ?
       ORDER BY kind, id`,
      [accountId, ...tagNames, accountId, accountId],
    );
    const ids = (kind: string) => rows.filter((r) => r.kind === kind).map((r) => Number(r.id));
    return { tags: ids('tag'), products: ids('product'), deliveries: ids('delivery') };
  },
};
