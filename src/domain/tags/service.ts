// Tags of an account and their assignment to students. Like UsersService it takes an account id,
// so the legacy routes (adicionar_tag, remover_tag, lista_por_tag) can share the use cases.
import { inTransaction, transaction, type InTx } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { isUniqueViolation } from '../../db/dialect.ts';
import { AppError } from '../../errors.ts';
import { detailMessage } from '../../i18n/messages.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { guardedWrite } from '../shared/revision.ts';
import { usersRepo } from '../users/repo.ts';
import { tagsRepo as repo, type Tag } from './repo.ts';
import { noEvents, type EventRecorder, type NewEvent } from '../events/types.ts';

export interface TagListQuery {
  sort?: 'name' | '-name';
  name?: string;
  limit?: number;
  cursor?: string;
}

export type TagSetOutcome = 'updated' | 'unchanged' | 'not_found';

const duplicateName = () =>
  new AppError('already_exists', {
    details: [
      { field: 'name', code: 'already_exists', message: detailMessage('already_exists', 'en-US') },
    ],
  });

/** tag.assigned / tag.removed: the student and the tag. */
const tagEventOf = (
  type: string,
  accountId: number,
  userId: number,
  tag: Pick<Tag, 'id' | 'name'>,
): NewEvent => ({
  accountId,
  type,
  data: { user_id: String(userId), tag: { id: String(tag.id), name: tag.name } },
});

/** The stored name is trimmed, so "vip " and "vip" cannot become two tags. */
const clean = (name: string) => name.trim();

export class TagsService {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly cursors: CursorCodec;
  private readonly events: EventRecorder;
  constructor(db: Db, clock: Clock, cursors: CursorCodec, events: EventRecorder = noEvents) {
    this.db = db;
    this.clock = clock;
    this.cursors = cursors;
    this.events = events;
  }

  /** tag.assigned / tag.removed, in the transaction of the change. */
  private tagEvent(
    { tx }: { tx: Tx },
    type: string,
    accountId: number,
    userId: number,
    tag: Pick<Tag, 'id' | 'name'>,
  ) {
    return this.events.record({ tx }, tagEventOf(type, accountId, userId, tag));
  }

  /**
   * `add` for many pairs at once (set-based import chunks): the students must be the account's.
   * Returns, pair by pair, the tag.assigned event to record (null for a pair assigned already),
   * for the caller to record in its own order; null, with nothing written, when a tag is not the
   * account's (the caller goes pair by pair then, where that pair fails alone).
   */
  async addMany(
    { tx }: { tx: Tx },
    accountId: number,
    pairs: readonly { userId: number; tagId: number }[],
  ): Promise<(NewEvent | null)[] | null> {
    const tags = new Map<number, { id: number; name: string }>();
    for (const tagId of new Set(pairs.map((p) => p.tagId))) {
      const t = await repo.getName({ tx }, accountId, tagId);
      if (!t) return null;
      tags.set(tagId, t);
    }
    const had = await repo.assignedPairs({ tx }, pairs);
    const seen = new Set<string>();
    const fresh = pairs.filter((p) => {
      const key = `${p.userId}:${p.tagId}`;
      if (had.has(key) || seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    await repo.assignMany({ tx }, fresh, this.clock.now().toISOString());
    const news = new Set(fresh);
    return pairs.map((p) =>
      news.has(p) ? tagEventOf('tag.assigned', accountId, p.userId, tags.get(p.tagId)!) : null,
    );
  }

  async get(accountId: number, id: number | null, { tx = this.db }: InTx = {}): Promise<Tag> {
    const t = id === null ? null : await repo.get({ tx }, accountId, id);
    if (!t) throw new AppError('not_found');
    return t;
  }

  async list(accountId: number, q: TagListQuery, { tx = this.db }: InTx = {}) {
    const nameLower = q.name === undefined ? undefined : clean(q.name).toLowerCase();
    return repo.page({ tx }, this.cursors, accountId, { ...q, nameLower });
  }

  async create(accountId: number, input: { name: string }, opts: InTx = {}): Promise<Tag> {
    const name = clean(input.name);
    const now = this.clock.now().toISOString();
    return inTransaction(this.db, opts.tx, async (tx) => {
      if (await repo.findByName({ tx }, accountId, name.toLowerCase())) throw duplicateName();
      let id: number;
      try {
        id = await repo.insert({ tx }, { accountId, name, now });
      } catch (err) {
        // Lost a race with a concurrent create; an aborted PG transaction must not be reused.
        if (isUniqueViolation(err)) throw duplicateName();
        throw err;
      }
      return (await repo.get({ tx }, accountId, id))!;
    });
  }

  async rename(
    accountId: number,
    id: number | null,
    input: { name: string },
    ifMatch: string | undefined,
    opts: InTx = {},
  ): Promise<Tag> {
    const name = clean(input.name);
    return inTransaction(this.db, opts.tx, async (tx) => {
      const t = await guardedWrite({
        load: () => this.get(accountId, id, { tx }),
        ifMatch,
        check: async (t) => {
          const other = await repo.findByName({ tx }, accountId, name.toLowerCase());
          if (other && other.id !== t.id) throw duplicateName();
        },
        write: async (t, guard) => {
          try {
            return await repo.rename(
              { tx },
              t.id,
              { name, now: this.clock.now().toISOString() },
              guard,
            );
          } catch (err) {
            if (isUniqueViolation(err)) throw duplicateName();
            throw err;
          }
        },
      });
      return (await repo.get({ tx }, accountId, t.id))!;
    });
  }

  async remove(
    accountId: number,
    id: number | null,
    ifMatch: string | undefined,
    opts: InTx = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      await guardedWrite({
        load: () => this.get(accountId, id, { tx }),
        ifMatch,
        check: (t) => {
          if (t.usersCount > 0) throw new AppError('tag_in_use');
        },
        write: (t, guard) => repo.removeUnused({ tx }, t.id, guard),
        // Something changed since the read (a new assignment, a write, a delete), or an access
        // schedule owns the tag (the same revision as read).
        lost: async (t) => {
          const now = await repo.get({ tx }, accountId, t.id);
          if (!now) return new AppError('not_found');
          const inUse = now.usersCount > 0 || now.revision === t.revision;
          return new AppError(inUse ? 'tag_in_use' : 'revision_mismatch');
        },
      });
    });
  }

  // ---- assignment to students; another account's user or tag is simply not found ----

  private async user(accountId: number, userId: number | null, { tx }: { tx: Tx }) {
    const u = userId === null ? null : await usersRepo.get({ tx }, accountId, userId);
    if (!u) throw new AppError('not_found');
    return u;
  }

  async listForUser(accountId: number, userId: number | null, { tx = this.db }: InTx = {}) {
    const u = await this.user(accountId, userId, { tx });
    return repo.listForUser({ tx }, u.id);
  }

  /** Puts the tag on the student and answers the tag, with its count of students. */
  async assign(
    accountId: number,
    userId: number | null,
    tagId: number | null,
    opts: InTx = {},
  ): Promise<Tag> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const id = await this.put(tx, accountId, userId, tagId);
      return (await repo.get({ tx }, accountId, id))!;
    });
  }

  /**
   * Puts the tag on the student, for callers that do not show the tag (a sale's or an import
   * row's tags): counting a tag's students reads every one of them, once per sale at scale.
   */
  async add(
    accountId: number,
    userId: number | null,
    tagId: number | null,
    opts: InTx = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, (tx) => this.put(tx, accountId, userId, tagId));
  }

  private async put(tx: Tx, accountId: number, userId: number | null, tagId: number | null) {
    const u = await this.user(accountId, userId, { tx });
    const t = tagId === null ? null : await repo.getName({ tx }, accountId, tagId);
    if (!t) throw new AppError('not_found');
    // Adding a tag the student already has changes nothing, and is not news.
    const had = await repo.isAssigned({ tx }, u.id, t.id);
    await repo.assign({ tx }, u.id, t.id, this.clock.now().toISOString());
    if (!had) await this.tagEvent({ tx }, 'tag.assigned', accountId, u.id, t);
    return t.id;
  }

  async unassign(
    accountId: number,
    userId: number | null,
    tagId: number | null,
    opts: InTx = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      const u = await this.user(accountId, userId, { tx });
      const t = await this.get(accountId, tagId, { tx });
      if ((await repo.unassign({ tx }, u.id, t.id)) === 0) throw new AppError('not_found');
      await this.tagEvent({ tx }, 'tag.removed', accountId, u.id, t);
    });
  }

  // ---- by name, for the legacy v1 routes (adicionar_tag, remover_tag, atualizar_tag_lote) ----

  async findByName(accountId: number, name: string, { tx = this.db }: InTx = {}): Promise<Tag> {
    const t = await repo.findByName({ tx }, accountId, clean(name).toLowerCase());
    if (!t) throw new AppError('not_found');
    return t;
  }

  /** The tag of this name (case-insensitive), created when the account has none. */
  async ensure(accountId: number, name: string, opts: InTx = {}): Promise<Tag> {
    const trimmed = clean(name);
    const now = this.clock.now().toISOString();
    return inTransaction(this.db, opts.tx, async (tx) => {
      await repo.insertIfMissing({ tx }, { accountId, name: trimmed, now });
      return (await repo.findByName({ tx }, accountId, trimmed.toLowerCase()))!;
    });
  }

  /**
   * Gives the student exactly these tags: the others are removed, names the account lacks are
   * created. Returns the student's tags, by name.
   */
  async setForUser(
    accountId: number,
    userId: number | null,
    names: string[],
    opts: InTx = {},
  ): Promise<Tag[]> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const u = await this.user(accountId, userId, { tx });
      const wanted = new Map<number, Tag>();
      for (const name of names) {
        const t = await this.ensure(accountId, name, { tx });
        wanted.set(t.id, t);
      }
      const now = this.clock.now().toISOString();
      const had = await repo.listForUser({ tx }, u.id);
      const current = new Set(had.map((t) => t.id));
      for (const t of had) {
        if (wanted.has(t.id)) continue;
        await repo.unassign({ tx }, u.id, t.id);
        await this.tagEvent({ tx }, 'tag.removed', accountId, u.id, t);
      }
      for (const t of wanted.values()) {
        if (current.has(t.id)) continue;
        await repo.assign({ tx }, u.id, t.id, now);
        await this.tagEvent({ tx }, 'tag.assigned', accountId, u.id, t);
      }
      return repo.listForUser({ tx }, u.id);
    });
  }

  /**
   * v1 atualizar_tag_lote: each item's student (by email) gets exactly its tags, in one
   * transaction; `names: null` leaves that student as is. A missing student is an outcome, not an
   * error, so one unknown email does not undo the rest.
   */
  async setForUsersByEmail(
    accountId: number,
    items: { email: string; names: string[] | null }[],
  ): Promise<{ email: string; userId: number | null; outcome: TagSetOutcome }[]> {
    return transaction(this.db, async (tx) => {
      const results = [];
      for (const item of items) {
        const u = await usersRepo.findByEmail({ tx }, accountId, item.email.toLowerCase());
        if (!u) results.push({ email: item.email, userId: null, outcome: 'not_found' as const });
        else {
          if (item.names !== null) await this.setForUser(accountId, u.id, item.names, { tx });
          const outcome = item.names === null ? ('unchanged' as const) : ('updated' as const);
          results.push({ email: item.email, userId: u.id, outcome });
        }
      }
      return results;
    });
  }
}
