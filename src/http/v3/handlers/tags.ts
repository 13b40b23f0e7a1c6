// Tag handlers and the tag presenter (also used by the user-tag routes in users.ts).
import type { components } from '../../../../generated/types.ts';
import type { Tag } from '../../../domain/tags/repo.ts';
import type { TagsService } from '../../../domain/tags/service.ts';
import { fromId } from '../../../domain/shared/ids.ts';
import { etag } from '../../../domain/shared/revision.ts';
import type { Handlers } from './types.ts';

type TagOut = components['schemas']['Tag'];

export function presentTag(t: Tag): TagOut {
  return {
    object: 'tag',
    id: String(t.id),
    name: t.name,
    users_count: t.usersCount,
    revision: t.revision,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
  };
}

export type TagOps = 'listTags' | 'createTag' | 'getTag' | 'updateTag' | 'deleteTag';

export function tagHandlers(s: TagsService): Pick<Handlers, TagOps> {
  return {
    async listTags({ auth, query }) {
      const { rows, page } = await s.list(auth.account.id, query);
      return { status: 200, body: { data: rows.map(presentTag), page } };
    },
    async createTag({ auth, body, tx }) {
      const t = await s.create(auth.account.id, body, { tx });
      return { status: 201, body: { data: presentTag(t) }, headers: { ETag: etag(t.revision) } };
    },
    async getTag({ auth, params }) {
      const t = await s.get(auth.account.id, fromId(params.tag_id));
      return { status: 200, body: { data: presentTag(t) }, headers: { ETag: etag(t.revision) } };
    },
    async updateTag({ auth, params, body, ifMatch, tx }) {
      const t = await s.rename(auth.account.id, fromId(params.tag_id), body, ifMatch, { tx });
      return { status: 200, body: { data: presentTag(t) }, headers: { ETag: etag(t.revision) } };
    },
    async deleteTag({ auth, params, ifMatch, tx }) {
      await s.remove(auth.account.id, fromId(params.tag_id), ifMatch, { tx });
      return { status: 204 };
    },
  };
}
