// users.upsert: creates or updates one student by email; on PostgreSQL a chunk goes set-based.
import type { BatchType } from '../domain/operations/batch-types.ts';
import { toId } from '../domain/shared/ids.ts';
import type { UsersService } from '../domain/users/service.ts';

export function usersUpsert(users: UsersService): BatchType {
  return {
    permission: 'users.write',
    maxItems: 1000,
    async apply(tx, accountId, payload) {
      const { user, created } = await users.upsertByEmail(accountId, payload, { tx });
      return { user_id: toId(user.id), created };
    },
    async applyMany(tx, accountId, payloads) {
      const out = await users.upsertManyByEmail(accountId, payloads, { tx });
      return out && out.map(({ user, created }) => ({ user_id: toId(user.id), created }));
    },
  };
}
