// Tags (table `tags`) and their assignment to students (table `user_tags`). Every function takes
// the caller's `tx`: inside an idempotent write that is the request's transaction.
import type { Tx } from '../../db/knex.ts';
import { insertId } from '../../db/dialect.ts';
import { firstRow } from '../../db/statements.ts';

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

/** users_count is derived, never stored, so it cannot drift from user_tags. */
const withCount = (tx: Tx) =>
  tx.raw('(select count(*) from user_tags where user_tags.tag_id = tags.id) as users_count');

export const tagsRepo = {
  map,

  async get(tx: Tx, accountId: number, id: number): Promise<Tag | null> {
    const r = await tx('tags').where({ account_id: accountId, id }).first('tags.*', withCount(tx));
    return r ? map(r) : null;
  },

  async findByName(tx: Tx, accountId: number, nameLower: string): Promise<Tag | null> {
    const r = await tx('tags')
      .where({ account_id: accountId, name_lower: nameLower })
      .first('tags.*', withCount(tx));
    return r ? map(r) : null;
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY (name_lower, id). */
  listQuery(tx: Tx, accountId: number, nameLower: string | undefined) {
    const q = tx('tags').where('tags.account_id', accountId);
    if (nameLower !== undefined) q.where('tags.name_lower', nameLower);
    return q.select('tags.*', withCount(tx));
  },

  /** Every tag of one student, by name (the list is small: no pagination). */
  async listForUser(tx: Tx, userId: number): Promise<Tag[]> {
    const rows = await tx('tags')
      .join('user_tags as ut', 'ut.tag_id', 'tags.id')
      .where('ut.user_id', userId)
      .orderBy([
        { column: 'tags.name_lower', order: 'asc' },
        { column: 'tags.id', order: 'asc' },
      ])
      .select('tags.*', withCount(tx));
    return rows.map(map);
  },

  async insert(tx: Tx, row: Record<string, unknown>): Promise<number> {
    return insertId(tx, 'tags', row);
  },

  /** Creates the tag unless one of that name exists: a concurrent create is not an error. */
  async insertIfMissing(tx: Tx, row: Record<string, unknown>): Promise<void> {
    await tx('tags').insert(row).onConflict(['account_id', 'name_lower']).ignore();
  },

  async update(tx: Tx, id: number, changes: Record<string, unknown>, revision?: string) {
    const q = tx('tags').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changes);
  },

  /**
   * Deletes only an unused tag (no student has it, no access schedule owns it), in one statement,
   * so a concurrent assignment cannot slip in.
   */
  async removeUnused(tx: Tx, id: number, revision?: string): Promise<number> {
    const q = tx('tags')
      .where('id', id)
      .whereNotExists(tx('user_tags').select(tx.raw('1')).where('user_tags.tag_id', id))
      .whereNotExists(
        tx('access_schedules').select(tx.raw('1')).where('access_schedules.tag_id', id),
      );
    if (revision !== undefined) q.where('revision', revision);
    return q.delete();
  },

  async isAssigned(tx: Tx, userId: number, tagId: number): Promise<boolean> {
    const r = await firstRow(tx, 'SELECT 1 AS x FROM user_tags WHERE user_id = ? AND tag_id = ?', [
      userId,
      tagId,
    ]);
    return r !== undefined;
  },

  /** Adding a tag the student has is a no-op (the pair is the primary key). */
  async assign(tx: Tx, userId: number, tagId: number, now: string): Promise<void> {
    await tx('user_tags')
      .insert({ user_id: userId, tag_id: tagId, created_at: now })
      .onConflict(['user_id', 'tag_id'])
      .ignore();
  },

  async unassign(tx: Tx, userId: number, tagId: number): Promise<number> {
    return tx('user_tags').where({ user_id: userId, tag_id: tagId }).delete();
  },
};
