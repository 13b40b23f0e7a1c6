// tags.assign: puts one tag on one student.
import type { BatchType } from '../domain/operations/batch-types.ts';
import { fromId, toId } from '../domain/shared/ids.ts';
import type { TagsService } from '../domain/tags/service.ts';

export function tagsAssign(tags: TagsService): BatchType {
  return {
    permission: 'users.write',
    maxItems: 1000,
    async apply(tx, accountId, payload) {
      const tag = await tags.assign(accountId, fromId(payload.user_id), fromId(payload.tag_id), {
        tx,
      });
      return { user_id: payload.user_id, tag_id: toId(tag.id) };
    },
  };
}
