// What a sandbox reset deletes: the account's students (their tags go with them), tags and
// operations. Credentials, administrators, legacy keys and the audit trail stay.
import type { Tx } from '../../db/engine.ts';

export const sandboxRepo = {
  async empty(tx: Tx, accountId: number, keepOperation: number): Promise<Record<string, number>> {
    const users = await tx('users').where('account_id', accountId).delete();
    const tags = await tx('tags').where('account_id', accountId).delete();
    const operations = await tx('operations')
      .where('account_id', accountId)
      .whereNot('id', keepOperation)
      .delete();
    return { users, tags, operations };
  },
};
