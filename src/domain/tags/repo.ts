// Tags (table `tags`) and their assignment to students (table `user_tags`). Every function takes
// the caller's `tx`: inside an idempotent write that is the request's transaction.
import type { Tx } from '../../db/knex.ts';
import { insertId } from '../../db/dialect.ts';
import { firstRow } from '../../db/statements.ts';
import { keyset, pages } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { newRevision } from '../shared/ids.ts';

export interface Tag {
  id: number;
  accountId: number;
  name: string;
  usersCount: number;
  revision: string;
  createdAt: string;
  updatedAt: string;
}

const map = (r: any): Tag => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  name: r.name,
  // PostgreSQL returns count(*) as a bigint string.
  usersCount: Number(r.users_count ?? 0),
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

// name_lower, not name: the order must agree with the case-insensitive uniqueness.
const byName = keyset('tags.name_lower', 'tags.id');
const tagPages = pages({ list: 'tags', sorts: { name: byName.asc, '-name': byName.desc }, map });

/** A new tag's row: the stored name is the trimmed one, its lower case keeps names unique. */
const newRow = (accountId: number, name: string, now: string) => ({
  account_id: accountId,
  name,
  name_lower: name.toLowerCase(),
  revision: newRevision(),
  created_at: now,
  updated_at: now,
});

/** users_count is derived, never stored, so it cannot drift from user_tags. */
const withCount = ({ tx }: { tx: Tx }) =>
  tx.raw('(select count(*) from user_tags where user_tags.tag_id = tags.id) as users_count');

export const tagsRepo = {
  map,

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Tag | null> {
    const r = await tx('tags')
      .where({ account_id: accountId, id })
      .first('tags.*', withCount({ tx }));
    return r ? map(r) : null;
  },

  /** The tag's id and name, without counting its students (assignment needs no more). */
  async getName(
    { tx }: { tx: Tx },
    accountId: number,
    id: number,
  ): Promise<{ id: number; name: string } | null> {
    const r = await tx('tags').where({ account_id: accountId, id }).first('id', 'name');
    return r ? { id: Number(r.id), name: r.name } : null;
  },

  async findByName({ tx }: { tx: Tx }, accountId: number, nameLower: string): Promise<Tag | null> {
    const r = await tx('tags')
      .where({ account_id: accountId, name_lower: nameLower })
      .first('tags.*', withCount({ tx }));
    return r ? map(r) : null;
  },

  /** One page of the account's tags, by name, optionally only the one of this (lower-case) name. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    q: { sort?: string; nameLower?: string; limit?: number; cursor?: string },
  ) {
    const query = tx('tags').where('tags.account_id', accountId);
    if (q.nameLower !== undefined) query.where('tags.name_lower', q.nameLower);
    return tagPages(query.select('tags.*', withCount({ tx })), cursors, {
      of: [accountId],
      sort: q.sort,
      filters: { name: q.nameLower },
      limit: q.limit,
      cursor: q.cursor,
    });
  },

  /** Every tag of one student, by name (the list is small: no pagination). */
  async listForUser({ tx }: { tx: Tx }, userId: number): Promise<Tag[]> {
    const rows = await tx('tags')
      .join('user_tags as ut', 'ut.tag_id', 'tags.id')
      .where('ut.user_id', userId)
      .orderBy([
        { column: 'tags.name_lower', order: 'asc' },
        { column: 'tags.id', order: 'asc' },
      ])
      .select('tags.*', withCount({ tx }));
    return rows.map(map);
  },

  async insert(
    { tx }: { tx: Tx },
    t: { accountId: number; name: string; now: string },
  ): Promise<number> {
    return insertId({ tx }, 'tags', newRow(t.accountId, t.name, t.now));
  },

  /** Creates the tag unless one of that name exists: a concurrent create is not an error. */
  async insertIfMissing({ tx }: { tx: Tx }, t: { accountId: number; name: string; now: string }) {
    await tx('tags')
      .insert(newRow(t.accountId, t.name, t.now))
      .onConflict(['account_id', 'name_lower'])
      .ignore();
  },

  /** Renames the tag (a new revision), only while it still has `guard` as revision when given. */
  async rename({ tx }: { tx: Tx }, id: number, c: { name: string; now: string }, guard?: string) {
    const q = tx('tags').where('id', id);
    if (guard !== undefined) q.where('revision', guard);
    return q.update({
      name: c.name,
      name_lower: c.name.toLowerCase(),
      revision: newRevision(),
      updated_at: c.now,
    });
  },

  /**
   * Deletes only an unused tag (no student has it, no access schedule owns it), in one statement,
   * so a concurrent assignment cannot slip in.
   */
  async removeUnused({ tx }: { tx: Tx }, id: number, revision?: string): Promise<number> {
    const q = tx('tags')
      .where('id', id)
      .whereNotExists(tx('user_tags').select(tx.raw('1')).where('user_tags.tag_id', id))
      .whereNotExists(
        tx('access_schedules').select(tx.raw('1')).where('access_schedules.tag_id', id),
      );
    if (revision !== undefined) q.where('revision', revision);
    return q.delete();
  },

  async isAssigned({ tx }: { tx: Tx }, userId: number, tagId: number): Promise<boolean> {
    const r = await firstRow(
      { tx },
      'SELECT 1 AS x FROM user_tags WHERE user_id = ? AND tag_id = ?',
      [userId, tagId],
    );
    return r !== undefined;
  },

  /** Adding a tag the student has is a no-op (the pair is the primary key). */
  async assign({ tx }: { tx: Tx }, userId: number, tagId: number, now: string): Promise<void> {
    await tx('user_tags')
      .insert({ user_id: userId, tag_id: tagId, created_at: now })
      .onConflict(['user_id', 'tag_id'])
      .ignore();
  },

  /** Which of the pairs are assigned already, as `user:tag` keys. */
  async assignedPairs(
    { tx }: { tx: Tx },
    pairs: readonly { userId: number; tagId: number }[],
  ): Promise<Set<string>> {
    const users = [...new Set(pairs.map((p) => p.userId))];
    const tags = [...new Set(pairs.map((p) => p.tagId))];
    const rows = await tx('user_tags')
      .whereIn('user_id', users)
      .whereIn('tag_id', tags)
      .select('user_id', 'tag_id');
    return new Set(rows.map((r: any) => `${Number(r.user_id)}:${Number(r.tag_id)}`));
  },

  /** `assign` for many pairs in one statement; pairs assigned already stay as they are. */
  async assignMany(
    { tx }: { tx: Tx },
    pairs: readonly { userId: number; tagId: number }[],
    now: string,
  ): Promise<void> {
    if (pairs.length === 0) return;
    await tx('user_tags')
      .insert(pairs.map((p) => ({ user_id: p.userId, tag_id: p.tagId, created_at: now })))
      .onConflict(['user_id', 'tag_id'])
      .ignore();
  },

  async unassign({ tx }: { tx: Tx }, userId: number, tagId: number): Promise<number> {
    return tx('user_tags').where({ user_id: userId, tag_id: tagId }).delete();
  },
};
