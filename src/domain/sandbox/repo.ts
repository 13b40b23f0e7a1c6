// What a sandbox reset deletes: the account's students (their tags, enrollments and memberships go
// with them), tags, Diamond automations, imports (their rows and attempts), exports and operations.
// Credentials, administrators, legacy keys, webhooks, events and the audit trail stay. (Files and
// uploads are ended by the files service: their bytes live outside the database.)
import type { Tx } from '../../db/engine.ts';

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

  /** The ids a scenario's later parts build on: the named tags, every product and delivery. */
  async scenarioCatalog({ tx }: { tx: Tx }, accountId: number, tagNames: string[]) {
    const ids = (rows: { id: unknown }[]) => rows.map((r) => Number(r.id));
    return {
      tags: ids(
        await tx('tags')
          .where('account_id', accountId)
          .whereIn('name', tagNames)
          .orderBy('id')
          .select('id'),
      ),
      products: ids(await tx('products').where('account_id', accountId).orderBy('id').select('id')),
      deliveries: ids(
        await tx('deliveries').where('account_id', accountId).orderBy('id').select('id'),
      ),
    };
  },
};
