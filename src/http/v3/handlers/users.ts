// User handlers (students and their tags), tag handlers included. The services come from the
// composition root so the legacy v1/v2 routes share the same use cases.
import type { components } from '../../../../generated/types.ts';
import type { User } from '../../../domain/users/repo.ts';
import type { UsersService } from '../../../domain/users/service.ts';
import type { TagsService } from '../../../domain/tags/service.ts';
import { fromId } from '../../../domain/shared/ids.ts';
import { etag } from '../../../domain/shared/revision.ts';
import type { Handlers } from './types.ts';
import { presentTag, tagHandlers, type TagOps } from './tags.ts';

type UserOut = components['schemas']['User'];

type UserOps =
  | 'listUsers'
  | 'createUser'
  | 'getUser'
  | 'updateUser'
  | 'deleteUser'
  | 'listUserTags'
  | 'addUserTag'
  | 'removeUserTag';

/** The auto-login URL is derived, not stored, so it follows PUBLIC_BASE_URL if that changes. */
export function presentUser(u: User, publicBaseUrl: string): UserOut {
  return {
    object: 'user',
    id: String(u.id),
    name: u.name,
    email: u.email,
    phone: u.phone,
    document: u.document,
    job_title: u.jobTitle,
    company_name: u.companyName,
    company_size: u.companySize,
    free: u.free,
    points: u.points,
    auto_login_url: `${publicBaseUrl}/login/auto?token=${encodeURIComponent(u.autoLoginToken)}`,
    auto_login_token: u.autoLoginToken,
    utm: u.utm,
    started_at: u.startedAt,
    last_access_at: u.lastAccessAt,
    revision: u.revision,
    created_at: u.createdAt,
    updated_at: u.updatedAt,
  };
}

export function userHandlers(
  publicBaseUrl: string,
  users: UsersService,
  tags: TagsService,
): Pick<Handlers, UserOps | TagOps> {
  const show = (u: User) => presentUser(u, publicBaseUrl);
  const one = (u: User) => ({ body: { data: show(u) }, headers: { ETag: etag(u.revision) } });
  return {
    async listUsers({ auth, query }) {
      const { rows, page } = await users.list(auth.account.id, {
        ...query,
        // Not parseable as an id -> a filter that matches nothing (null), not an error.
        tag_id: query.tag_id === undefined ? undefined : fromId(query.tag_id),
      });
      return { status: 200, body: { data: rows.map(show), page } };
    },
    async createUser({ auth, body, tx }) {
      return { status: 201, ...one(await users.create(auth.account.id, body, { tx })) };
    },
    async getUser({ auth, params }) {
      return { status: 200, ...one(await users.get(auth.account.id, fromId(params.user_id))) };
    },
    async updateUser({ auth, params, body, ifMatch, tx }) {
      const u = await users.update(auth.account.id, fromId(params.user_id), body, ifMatch, { tx });
      return { status: 200, ...one(u) };
    },
    async deleteUser({ auth, params, ifMatch, tx }) {
      await users.remove(auth.account.id, fromId(params.user_id), ifMatch, { tx });
      return { status: 204 };
    },
    async listUserTags({ auth, params }) {
      const list = await tags.listForUser(auth.account.id, fromId(params.user_id));
      return { status: 200, body: { data: list.map(presentTag) } };
    },
    async addUserTag({ auth, params, tx }) {
      const t = await tags.assign(auth.account.id, fromId(params.user_id), fromId(params.tag_id), {
        tx,
      });
      return { status: 200, body: { data: presentTag(t) } };
    },
    async removeUserTag({ auth, params, tx }) {
      await tags.unassign(auth.account.id, fromId(params.user_id), fromId(params.tag_id), { tx });
      return { status: 204 };
    },
    ...tagHandlers(tags),
  };
}
