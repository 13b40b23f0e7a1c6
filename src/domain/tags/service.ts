// Tags of an account and their assignment to students. Like UsersService it takes an account id,
// so the legacy routes (adicionar_tag, remover_tag, lista_por_tag) can share the use cases.
import { inTransaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { isUniqueViolation } from '../../db/dialect.ts';
import { paginate, type PageResult } from '../../db/paginate.ts';
import { AppError } from '../../errors.ts';
import { detailMessage } from '../../i18n/messages.ts';
import { filtersHash, type CursorCodec } from '../../db/cursor.ts';
import { newRevision } from '../shared/ids.ts';
import { assertRevision } from '../shared/revision.ts';
import { usersRepo } from '../users/repo.ts';
import { tagsRepo as repo, type Tag } from './repo.ts';

export interface TagListQuery {
  sort?: 'name' | '-name';
  name?: string;
  limit?: number;
  cursor?: string;
}

const duplicateName = () =>
  new AppError('already_exists', {
    details: [
      { field: 'name', code: 'already_exists', message: detailMessage('already_exists', 'en-US') },
    ],
  });

/** The stored name is trimmed, so "vip " and "vip" cannot become two tags. */
const clean = (name: string) => name.trim();

export class TagsService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly cursors: CursorCodec,
  ) {}

  async get(accountId: number, id: number | null, tx: Tx = this.db): Promise<Tag> {
    const t = id === null ? null : await repo.get(tx, accountId, id);
    if (!t) throw new AppError('not_found');
    return t;
  }

  async list(accountId: number, q: TagListQuery, tx: Tx = this.db): Promise<PageResult<Tag>> {
    const sortName = q.sort ?? 'name';
    const desc = sortName === '-name';
    const nameLower = q.name === undefined ? undefined : clean(q.name).toLowerCase();
    const page = await paginate<Record<string, unknown>>(
      repo.listQuery(tx, accountId, nameLower),
      this.cursors,
      {
        scope: `tags:${accountId}`,
        sortName,
        // name_lower, not name: the order must agree with the case-insensitive uniqueness.
        sort: [
          { column: 'tags.name_lower', desc },
          { column: 'tags.id', desc },
        ],
        filters: filtersHash({ name: nameLower }),
        limit: q.limit ?? 50,
        cursor: q.cursor,
      },
    );
    return { rows: page.rows.map(repo.map), page: page.page };
  }

  async create(accountId: number, input: { name: string }, opts: { tx?: Tx } = {}): Promise<Tag> {
    const name = clean(input.name);
    const now = this.clock.now().toISOString();
    return inTransaction(this.db, opts.tx, async (tx) => {
      if (await repo.findByName(tx, accountId, name.toLowerCase())) throw duplicateName();
      let id: number;
      try {
        id = await repo.insert(tx, {
          account_id: accountId,
          name,
          name_lower: name.toLowerCase(),
          revision: newRevision(),
          created_at: now,
          updated_at: now,
        });
      } catch (err) {
        // Lost a race with a concurrent create; an aborted PG transaction must not be reused.
        if (isUniqueViolation(err)) throw duplicateName();
        throw err;
      }
      return (await repo.get(tx, accountId, id))!;
    });
  }

  async rename(
    accountId: number,
    id: number | null,
    input: { name: string },
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<Tag> {
    const name = clean(input.name);
    return inTransaction(this.db, opts.tx, async (tx) => {
      const t = await this.get(accountId, id, tx);
      assertRevision(ifMatch, t.revision);
      const other = await repo.findByName(tx, accountId, name.toLowerCase());
      if (other && other.id !== t.id) throw duplicateName();
      let hit: number;
      try {
        hit = await repo.update(
          tx,
          t.id,
          {
            name,
            name_lower: name.toLowerCase(),
            revision: newRevision(),
            updated_at: this.clock.now().toISOString(),
          },
          ifMatch === undefined ? undefined : t.revision,
        );
      } catch (err) {
        if (isUniqueViolation(err)) throw duplicateName();
        throw err;
      }
      if (hit === 0) throw new AppError(ifMatch === undefined ? 'not_found' : 'revision_mismatch');
      return (await repo.get(tx, accountId, t.id))!;
    });
  }

  async remove(
    accountId: number,
    id: number | null,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      const t = await this.get(accountId, id, tx);
      assertRevision(ifMatch, t.revision);
      if (t.usersCount > 0) throw new AppError('tag_in_use');
      const hit = await repo.removeUnused(tx, t.id, ifMatch === undefined ? undefined : t.revision);
      if (hit === 0) {
        // Something changed since the read (a new assignment, a write, a delete), or an access
        // schedule owns the tag (the same revision as read).
        const now = await repo.get(tx, accountId, t.id);
        if (!now) throw new AppError('not_found');
        const inUse = now.usersCount > 0 || now.revision === t.revision;
        throw new AppError(inUse ? 'tag_in_use' : 'revision_mismatch');
      }
    });
  }

  // ---- assignment to students; another account's user or tag is simply not found ----

  private async user(accountId: number, userId: number | null, tx: Tx) {
    const u = userId === null ? null : await usersRepo.get(tx, accountId, userId);
    if (!u) throw new AppError('not_found');
    return u;
  }

  async listForUser(accountId: number, userId: number | null, tx: Tx = this.db): Promise<Tag[]> {
    const u = await this.user(accountId, userId, tx);
    return repo.listForUser(tx, u.id);
  }

  async assign(
    accountId: number,
    userId: number | null,
    tagId: number | null,
    opts: { tx?: Tx } = {},
  ): Promise<Tag> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const u = await this.user(accountId, userId, tx);
      const t = await this.get(accountId, tagId, tx);
      await repo.assign(tx, u.id, t.id, this.clock.now().toISOString());
      return (await repo.get(tx, accountId, t.id))!;
    });
  }

  async unassign(
    accountId: number,
    userId: number | null,
    tagId: number | null,
    opts: { tx?: Tx } = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      const u = await this.user(accountId, userId, tx);
      const t = await this.get(accountId, tagId, tx);
      if ((await repo.unassign(tx, u.id, t.id)) === 0) throw new AppError('not_found');
    });
  }
}
