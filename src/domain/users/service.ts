// Students: create, read, list, update, delete. Takes an account id rather than a v3 AuthContext so
// the legacy v1/v2 routes (authenticated by a legacy key) can call the same use cases.
import { inTransaction, transaction } from '../../db/tx.ts';
import type { Db, Tx } from '../../db/knex.ts';
import type { Clock } from '../../clock.ts';
import { isUniqueViolation } from '../../db/dialect.ts';
import { isPostgres } from '../../db/engine.ts';
import type { PageResult } from '../../db/page.ts';
import { AppError, type ErrorDetail } from '../../errors.ts';
import { detailMessage } from '../../i18n/messages.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { fromId, timeOrderedToken } from '../shared/ids.ts';
import { guardedWrite } from '../shared/revision.ts';
import { normalizeCpf } from './cpf.ts';
import {
  fullUtm,
  usersRepo as repo,
  type NewUser,
  type ProfileUpdate,
  type User,
  type UserFields,
  type Utm,
} from './repo.ts';
import { noEvents, recordAll, type EventRecorder, type NewEvent } from '../events/types.ts';
import { changedFields, userSnapshot } from './events.ts';

type Nullable = string | null | undefined;

export interface UserInput {
  name?: string;
  email?: string;
  phone?: Nullable;
  document?: Nullable;
  job_title?: Nullable;
  company_name?: Nullable;
  company_size?: Nullable;
  free?: boolean;
  utm?: Partial<Utm>;
}

export interface UserListQuery {
  sort?: 'created_at' | '-created_at';
  email?: string;
  tag_id?: number | null;
  created_after?: string;
  created_before?: string;
  limit?: number;
  cursor?: string;
}

/** How the legacy generations name a student (v1 `usuario_email_id`, v2 `identifier`). */
export type UserRef =
  | { email: string }
  | { id: number | null }
  | { document: string }
  /** Digits that are the id or the document (never both: a CPF has 11 digits, an id at most 10). */
  | { idOrDocument: string };

/** Trimmed; a blank optional value means "no value" (forms send "" for empty inputs). */
const text = (v: string | null): string | null => {
  const t = v?.trim();
  return t ? t : null;
};

const detail = (field: string, code: string): ErrorDetail => ({
  field,
  code,
  message: detailMessage(code, 'en-US'),
});

const duplicateEmail = () =>
  new AppError('already_exists', { details: [detail('email', 'already_exists')] });

function documentValue(raw: string | null): string | null {
  const t = text(raw);
  if (t === null) return null;
  const digits = normalizeCpf(t);
  if (!digits) {
    throw new AppError('validation_failed', { details: [detail('document', 'invalid_document')] });
  }
  return digits;
}

/** ISO instants compare as strings only once normalized to UTC with milliseconds. */
function instant(parameter: string, v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const ms = Date.parse(v);
  // The schema's date-time format admits a leap second (…:60Z), which Date cannot represent.
  if (Number.isNaN(ms)) {
    throw new AppError('validation_failed', {
      details: [{ parameter, code: 'invalid_format', message: detailMessage('invalid', 'en-US') }],
    });
  }
  return new Date(ms).toISOString();
}

/** A new student (create, and the set-based upsert). */
function newUser(
  accountId: number,
  input: UserInput & { name: string; email: string },
  document: string | null,
  now: string,
): NewUser {
  return {
    accountId,
    name: input.name.trim(),
    email: input.email,
    document,
    free: Boolean(input.free),
    // The v1 "login_crstk": a bearer token for password-less sign-in, so it is random (208
    // bits) after a time prefix that keeps its index's inserts at one edge.
    autoLoginToken: timeOrderedToken(Date.parse(now)),
    utm: fullUtm(input.utm),
    phone: text(input.phone ?? null),
    jobTitle: text(input.job_title ?? null),
    companyName: text(input.company_name ?? null),
    companySize: text(input.company_size ?? null),
  };
}

/** The optional texts `input` gives (null clears one). */
function optionalTexts(input: UserInput): Partial<UserFields> {
  const out: Partial<UserFields> = {};
  if (input.phone !== undefined) out.phone = text(input.phone);
  if (input.job_title !== undefined) out.jobTitle = text(input.job_title);
  if (input.company_name !== undefined) out.companyName = text(input.company_name);
  if (input.company_size !== undefined) out.companySize = text(input.company_size);
  return out;
}

/** What update() writes without If-Match, as a whole profile (the set-based upsert). */
function updatedProfile(u: User, input: UserInput & { email: string }): ProfileUpdate {
  return {
    id: u.id,
    name: input.name === undefined ? u.name : input.name.trim(),
    email: input.email,
    phone: u.phone,
    document: input.document === undefined ? u.document : documentValue(input.document),
    jobTitle: u.jobTitle,
    companyName: u.companyName,
    companySize: u.companySize,
    free: input.free ?? u.free,
    ...optionalTexts(input),
    // Null keeps the stored utm as it is, as update() does when no utm is given.
    utm: input.utm === undefined ? null : fullUtm({ ...u.utm, ...input.utm }),
  };
}

/** The event a new student is recorded with (user.created). */
const createdEvent = (accountId: number, u: User): NewEvent => ({
  accountId,
  type: 'user.created',
  data: { user: userSnapshot(u) },
});

export class UsersService {
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

  async get(
    accountId: number,
    id: number | null,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<User> {
    const u = id === null ? null : await repo.get({ tx }, accountId, id);
    if (!u) throw new AppError('not_found');
    return u;
  }

  async list(
    accountId: number,
    q: UserListQuery,
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<User>> {
    const filters = {
      emailLower: q.email?.toLowerCase(),
      tagId: q.tag_id,
      createdAfter: instant('created_after', q.created_after),
      createdBefore: instant('created_before', q.created_before),
    };
    return repo.page({ tx }, this.cursors, accountId, filters, q);
  }

  async create(
    accountId: number,
    input: UserInput & { name: string; email: string },
    opts: { tx?: Tx } = {},
  ): Promise<User> {
    const document = documentValue(input.document ?? null);
    const now = this.clock.now().toISOString();
    const emailLower = input.email.toLowerCase();
    return inTransaction(this.db, opts.tx, async (tx) => {
      const row = newUser(accountId, input, document, now);
      let created: User | null;
      // PostgreSQL: the student and its event in one statement, where the recorder can.
      const together =
        isPostgres(tx) && this.events.recordWithInsert
          ? await this.events.recordWithInsert({ tx }, repo.insertUnlessEmailTaken(row, now), (r) =>
              createdEvent(accountId, repo.map(r)),
            )
          : undefined;
      if (together !== undefined) {
        if (!together) throw duplicateEmail();
        return repo.map(together.row);
      }
      if (isPostgres(tx)) {
        // The check and the insert in one round trip: a concurrent create of the email waits on
        // the unique index and, once that commits, inserts nothing here (the same 409), without
        // the unique violation that would abort the caller's transaction.
        created = await repo.createUnlessEmailTaken({ tx }, row, now);
      } else {
        // SQLite: its one writer holds the lock, so the read then the insert cannot race.
        const taken = await repo.findByEmail({ tx }, accountId, emailLower);
        created = taken ? null : await repo.create({ tx }, row, now);
      }
      if (!created) throw duplicateEmail();
      await this.events.record({ tx }, createdEvent(accountId, created));
      return created;
    });
  }

  /**
   * create() for a chunk of new students (an import's), one multi-row insert on PostgreSQL. Each
   * comes with its `user.created` event, not recorded: the caller records it among its own, in
   * the order of its items. Null when an email was taken meanwhile (nothing is kept then).
   */
  async createMany(
    { tx }: { tx: Tx },
    accountId: number,
    inputs: { name: string; email: string }[],
  ): Promise<{ user: User; event: NewEvent }[] | null> {
    if (inputs.length === 0) return [];
    const now = this.clock.now().toISOString();
    const rows = inputs.map((input) => newUser(accountId, input, null, now));
    let created: User[];
    if (isPostgres(tx)) {
      created = await repo.insertMany({ tx }, rows, now);
      if (created.length !== rows.length) return null;
    } else {
      // SQLite: prepared inserts, one a row (its writer holds the lock: no email taken meanwhile).
      created = [];
      for (const row of rows) created.push(await repo.create({ tx }, row, now));
    }
    const byEmail = new Map(created.map((u) => [u.email.toLowerCase(), u]));
    return inputs.map((input) => {
      const user = byEmail.get(input.email.toLowerCase())!;
      return {
        user,
        event: { accountId, type: 'user.created', data: { user: userSnapshot(user) } },
      };
    });
  }

  /**
   * The batch type users.upsert: the user with this email (case-insensitive) gets the given
   * fields, or is created with them.
   */
  async upsertByEmail(
    accountId: number,
    input: UserInput & { name: string; email: string },
    opts: { tx?: Tx } = {},
  ): Promise<{ user: User; created: boolean }> {
    return inTransaction(this.db, opts.tx, async (tx) => {
      const found = await repo.findByEmail({ tx }, accountId, input.email.toLowerCase());
      if (!found) return { user: await this.create(accountId, input, { tx }), created: true };
      return {
        user: await this.update(accountId, found.id, input, undefined, { tx }),
        created: false,
      };
    });
  }

  /**
   * upsertByEmail for a chunk of a users.upsert batch, set-based (PostgreSQL): one locked lookup,
   * one multi-row insert, one multi-row update and the events in one go, the same rows and events
   * as upsertByEmail item after item. Null when it cannot be that (an item would fail, two items
   * name one email, an email taken meanwhile by another transaction): nothing is kept then, and
   * the caller goes item by item. In item order.
   */
  async upsertManyByEmail(
    accountId: number,
    inputs: (UserInput & { name: string; email: string })[],
    opts: { tx: Tx },
  ): Promise<{ user: User; created: boolean }[] | null> {
    const { tx } = opts;
    const lowers = inputs.map((i) => i.email.toLowerCase());
    if (new Set(lowers).size !== lowers.length) return null;
    const now = this.clock.now().toISOString();
    const found = new Map(
      (await repo.lockManyByEmail({ tx }, accountId, lowers)).map((u) => [
        u.email.toLowerCase(),
        u,
      ]),
    );
    const creates: NewUser[] = [];
    const updates: ProfileUpdate[] = [];
    try {
      for (const input of inputs) {
        const u = found.get(input.email.toLowerCase());
        if (u) updates.push(updatedProfile(u, input));
        else creates.push(newUser(accountId, input, documentValue(input.document ?? null), now));
      }
    } catch (err) {
      if (err instanceof AppError) return null; // that item fails alone, item by item
      throw err;
    }
    const inserted = await repo.insertMany({ tx }, creates, now);
    if (inserted.length !== creates.length) return null; // created meanwhile: rolled back
    const written = new Map(
      [...inserted, ...(await repo.updateProfiles({ tx }, updates, now))].map((u) => [
        u.email.toLowerCase(),
        u,
      ]),
    );
    const out: { user: User; created: boolean }[] = [];
    const events: NewEvent[] = [];
    for (const lower of lowers) {
      const user = written.get(lower)!;
      const before = found.get(lower);
      out.push({ user, created: !before });
      if (!before) {
        events.push({ accountId, type: 'user.created', data: { user: userSnapshot(user) } });
        continue;
      }
      const after = userSnapshot(user);
      const changed = changedFields(userSnapshot(before), after);
      if (changed.length > 0)
        events.push({
          accountId,
          type: 'user.updated',
          data: { user: after, changed_fields: changed },
        });
    }
    await recordAll(this.events, tx, events);
    return out;
  }

  /** Only present fields change; null clears an optional field; utm merges key by key. */
  async update(
    accountId: number,
    id: number | null,
    input: UserInput,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<User> {
    const changes: Partial<UserFields> = optionalTexts(input);
    if (input.document !== undefined) changes.document = documentValue(input.document);
    if (input.name !== undefined) changes.name = input.name.trim();
    if (input.free !== undefined) changes.free = input.free;
    if (input.email !== undefined) changes.email = input.email;
    return inTransaction(this.db, opts.tx, async (tx) => {
      const u = await guardedWrite({
        load: () => this.get(accountId, id, { tx }),
        ifMatch,
        check: async (u) => {
          if (input.email === undefined) return;
          const other = await repo.findByEmail({ tx }, accountId, input.email.toLowerCase());
          if (other && other.id !== u.id) throw duplicateEmail();
        },
        write: async (u, guard) => {
          if (input.utm !== undefined) changes.utm = fullUtm({ ...u.utm, ...input.utm });
          try {
            return await repo.update({ tx }, u.id, changes, this.clock.now().toISOString(), guard);
          } catch (err) {
            if (isUniqueViolation(err)) throw duplicateEmail();
            throw err;
          }
        },
      });
      const updated = (await repo.get({ tx }, accountId, u.id))!;
      const [before, after] = [userSnapshot(u), userSnapshot(updated)];
      const changed = changedFields(before, after);
      // A write that changed nothing (the same values again) is not news.
      if (changed.length > 0) {
        await this.events.record(
          { tx },
          {
            accountId,
            type: 'user.updated',
            data: { user: after, changed_fields: changed },
          },
        );
      }
      return updated;
    });
  }

  async remove(
    accountId: number,
    id: number | null,
    ifMatch: string | undefined,
    opts: { tx?: Tx } = {},
  ): Promise<void> {
    await inTransaction(this.db, opts.tx, async (tx) => {
      const u = await guardedWrite({
        load: () => this.get(accountId, id, { tx }),
        ifMatch,
        // Tags go first and roll back with the rest if the user changed meanwhile.
        write: (u, guard) => repo.remove({ tx }, u.id, guard),
      });
      await this.events.record(
        { tx },
        {
          accountId,
          type: 'user.deleted',
          data: { user: { id: String(u.id), email: u.email } },
        },
      );
    });
  }

  // ---- the legacy generations' lookups, walks and the student's own sign-in ----

  /** A student by email (case-insensitive), id or document (its digits); else 404. */
  async find(accountId: number, ref: UserRef, { tx = this.db }: { tx?: Tx } = {}): Promise<User> {
    let u: User | null = null;
    if ('email' in ref) u = await repo.findByEmail({ tx }, accountId, ref.email.toLowerCase());
    else if ('id' in ref) u = ref.id === null ? null : await repo.get({ tx }, accountId, ref.id);
    else {
      const digits = ('document' in ref ? ref.document : ref.idOrDocument).replace(/\D/g, '');
      const id = 'idOrDocument' in ref ? fromId(digits) : null;
      if (id !== null) u = await repo.get({ tx }, accountId, id);
      if (!u && digits) u = await repo.findByDocument({ tx }, accountId, digits);
    }
    if (!u) throw new AppError('not_found');
    return u;
  }

  /** Every student (or every student of a tag) by id, a keyset page at a time. */
  async listById(
    accountId: number,
    q: { tagId?: number; limit: number; cursor?: string },
    { tx = this.db }: { tx?: Tx } = {},
  ): Promise<PageResult<User>> {
    return repo.pageById({ tx }, this.cursors, accountId, q.tagId, q);
  }

  /**
   * Signs a student in by their auto-login token: the first access sets started_at, every one
   * last_access_at. The revision changes (the resource shows both); updated_at does not, as it
   * dates the profile's edits. Null for an unknown token.
   */
  async signInWithToken(token: string): Promise<User | null> {
    if (!token) return null;
    return transaction(this.db, async (tx) => {
      const u = await repo.findByAutoLoginToken({ tx }, token);
      if (!u) return null;
      const now = this.clock.now().toISOString();
      await repo.signedIn({ tx }, u.id, { startedAt: u.startedAt ?? now, lastAccessAt: now });
      return (await repo.get({ tx }, u.accountId, u.id))!;
    });
  }
}
