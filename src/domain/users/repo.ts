// Students (table `users`). Every function takes the caller's `tx`: inside an idempotent write
// that is the request's transaction, and SQLite has a single connection.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { firstRow, insertJson, textOnce } from '../../db/statements.ts';
import { isPostgres, type Tx } from '../../db/knex.ts';
import { bool, insertId, json } from '../../db/dialect.ts';
import { newRevision } from '../shared/ids.ts';
import { changedRow, newRow, toRow } from '../shared/row.ts';
import type { RecordedInsert } from '../events/types.ts';

export const UTM_KEYS = [
  'adcampaign',
  'adid',
  'fbclid',
  'gclid',
  'groupid',
  'page_name',
  'utm_content',
  'utm_medium',
  'utm_source',
  'utm_term',
] as const;
export type UtmKey = (typeof UTM_KEYS)[number];
export type Utm = Record<UtmKey, string | null>;

export interface User {
  id: number;
  accountId: number;
  name: string;
  email: string;
  phone: string | null;
  document: string | null;
  jobTitle: string | null;
  companyName: string | null;
  companySize: string | null;
  free: boolean;
  points: number;
  autoLoginToken: string;
  utm: Utm;
  startedAt: string | null;
  lastAccessAt: string | null;
  revision: string;
  createdAt: string;
  updatedAt: string;
}

/** A student's profile as written; the repository sets revision, timestamps and derived columns. */
export type UserFields = Pick<
  User,
  | 'name'
  | 'email'
  | 'phone'
  | 'document'
  | 'jobTitle'
  | 'companyName'
  | 'companySize'
  | 'free'
  | 'utm'
>;
export type NewUser = UserFields & Pick<User, 'accountId' | 'autoLoginToken'>;
/** A whole profile written by the set-based upsert; utm null keeps the stored one. */
export type ProfileUpdate = Omit<UserFields, 'utm'> & { id: number; utm: Utm | null };

/** The profile's columns: email_lower beside email (unique per account), utm as JSON text. */
function fields(u: Partial<Omit<UserFields, 'utm'>> & { utm?: Utm | null }) {
  const row = toRow({ ...u, utm: u.utm && JSON.stringify(u.utm) });
  if (u.email !== undefined) row.email_lower = u.email.toLowerCase();
  return row;
}

/** A new student's row: no points, never signed in. */
export const newUserRow = (u: NewUser, now: string): Record<string, unknown> => ({
  ...newRow({ points: 0, startedAt: null, lastAccessAt: null }, now),
  ...fields(u),
  account_id: u.accountId,
  auto_login_token: u.autoLoginToken,
});

/** Always all ten keys, whatever was stored, so the resource shape never varies. */
export function fullUtm(partial: Partial<Record<string, string | null>> | null | undefined): Utm {
  const out = {} as Utm;
  for (const k of UTM_KEYS) out[k] = partial?.[k] ?? null;
  return out;
}

/** createUnlessEmailTaken's statement by its column list (one in practice). */
const insertTexts = new Map<string, string>();

const map = (r: any): User => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  name: r.name,
  email: r.email,
  phone: r.phone,
  document: r.document,
  jobTitle: r.job_title,
  companyName: r.company_name,
  companySize: r.company_size,
  free: bool(r.free),
  points: Number(r.points),
  autoLoginToken: r.auto_login_token,
  utm: fullUtm(json<Partial<Utm>>(r.utm, {})),
  startedAt: r.started_at,
  lastAccessAt: r.last_access_at,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/**
 * Rows read outside a transaction on SQLite are kept and shared, frozen (src/db/reader.ts): the
 * user made from one is kept beside it, frozen too, so a GET does not parse its utm every time.
 */
const mapped = new WeakMap<object, User>();
function mapRow(r: any): User {
  if (!Object.isFrozen(r)) return map(r);
  let user = mapped.get(r);
  if (!user) {
    user = map(r);
    Object.freeze(user.utm);
    mapped.set(r, Object.freeze(user));
  }
  return user;
}

/** PostgreSQL types of a new student's columns (insertMany). */
const NEW_ROW_TYPES: Record<string, string> = {
  account_id: 'int',
  name: 'text',
  email: 'text',
  email_lower: 'text',
  document: 'text',
  free: 'boolean',
  points: 'int',
  auto_login_token: 'text',
  utm: 'text',
  started_at: 'text',
  last_access_at: 'text',
  revision: 'text',
  created_at: 'text',
  updated_at: 'text',
  phone: 'text',
  job_title: 'text',
  company_name: 'text',
  company_size: 'text',
};

/** The columns a profile update writes (updateProfiles). */
const PROFILE_COLUMNS = [
  'name',
  'email',
  'email_lower',
  'phone',
  'document',
  'job_title',
  'company_name',
  'company_size',
  'utm',
  'revision',
  'updated_at',
  'free',
] as const;
type ProfileRow = { id: number; free: boolean } & Record<
  Exclude<(typeof PROFILE_COLUMNS)[number], 'free'>,
  string | null
>;

export interface UserFilters {
  emailLower?: string;
  tagId?: number | null;
  createdAfter?: string;
  createdBefore?: string;
}

const byCreation = keyset('users.created_at', 'users.id');
const userPages = pages({
  list: 'users',
  sorts: { '-created_at': byCreation.desc, created_at: byCreation.asc },
  map,
});
// Every student, or the students of one tag (walked through user_tags), by id.
const byIdPages = pages({ list: 'users-by-id', sorts: { id: keyset('users.id').asc }, map });
const taggedByIdPages = pages({
  list: 'users-by-id',
  sorts: { id: keyset('user_tags.user_id').asc },
  map,
});

export const usersRepo = {
  map,

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<User | null> {
    const r = await firstRow({ tx }, 'SELECT * FROM users WHERE account_id = ? AND id = ?', [
      accountId,
      id,
    ]);
    return r ? mapRow(r) : null;
  },

  /** The account's students with these ids (any order; those it lacks are missing). */
  async getMany({ tx }: { tx: Tx }, accountId: number, ids: number[]): Promise<User[]> {
    if (ids.length === 0) return [];
    const rows = await tx('users')
      .where('account_id', accountId)
      .whereIn('id', [...new Set(ids)]);
    return rows.map(mapRow);
  },

  async findByEmail(
    { tx }: { tx: Tx },
    accountId: number,
    emailLower: string,
  ): Promise<User | null> {
    const r = await firstRow(
      { tx },
      'SELECT * FROM users WHERE account_id = ? AND email_lower = ?',
      [accountId, emailLower],
    );
    return r ? mapRow(r) : null;
  },

  /** The oldest student with this document (a CPF is not unique: families share one). */
  async findByDocument(
    { tx }: { tx: Tx },
    accountId: number,
    document: string,
  ): Promise<User | null> {
    const r = await firstRow(
      { tx },
      'SELECT * FROM users WHERE account_id = ? AND document = ? ORDER BY id LIMIT 1',
      [accountId, document],
    );
    return r ? mapRow(r) : null;
  },

  /** Auto-login tokens are random and global: the token alone names the student and account. */
  async findByAutoLoginToken({ tx }: { tx: Tx }, token: string): Promise<User | null> {
    const r = await tx('users').where('auto_login_token', token).first();
    return r ? mapRow(r) : null;
  },

  /**
   * All students, or the students of one tag, for a keyset walk by id (paginate adds the
   * condition and ORDER BY). The tag's students are read from user_tags in user_id order, so a
   * rare tag's last page costs what its first does.
   */
  listByIdQuery({ tx }: { tx: Tx }, accountId: number, tagId: number | undefined) {
    if (tagId === undefined)
      return tx('users').where('users.account_id', accountId).select('users.*');
    return tx('user_tags')
      .join('users', 'users.id', 'user_tags.user_id')
      .where('user_tags.tag_id', tagId)
      .where('users.account_id', accountId)
      .select('users.*', 'user_tags.user_id');
  },

  /** One page of the account's students, newest first by default. */
  page({ tx }: { tx: Tx }, cursors: CursorCodec, accountId: number, f: UserFilters, p: PageParams) {
    const query = usersRepo.listQuery({ tx }, accountId, f);
    return userPages(query, cursors, { ...p, of: [accountId], filters: { ...f } });
  },

  /** One page of every student (or every student of a tag), by id. */
  pageById(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    tagId: number | undefined,
    p: PageParams,
  ) {
    const query = usersRepo.listByIdQuery({ tx }, accountId, tagId);
    const pager = tagId === undefined ? byIdPages : taggedByIdPages;
    return pager(query, cursors, { ...p, of: [accountId], filters: { tag_id: tagId } });
  },

  /** Unordered, unpaginated: the caller (paginate) adds the keyset condition and ORDER BY. */
  listQuery({ tx }: { tx: Tx }, accountId: number, f: UserFilters) {
    const q = tx('users').where('users.account_id', accountId);
    if (f.emailLower !== undefined) q.where('users.email_lower', f.emailLower);
    if (f.createdAfter !== undefined) q.where('users.created_at', '>=', f.createdAfter);
    if (f.createdBefore !== undefined) q.where('users.created_at', '<', f.createdBefore);
    if (f.tagId !== undefined) {
      // An unparseable tag id matches nothing rather than failing: it is just a filter value.
      const tagId = f.tagId ?? 0;
      q.whereExists(
        tx('user_tags')
          .select(tx.raw('1'))
          .whereRaw('user_tags.user_id = users.id')
          .where('user_tags.tag_id', tagId),
      );
    }
    return q.select('users.*');
  },

  /** Inserts and returns the stored user: on PostgreSQL one round trip (RETURNING *). */
  async create({ tx }: { tx: Tx }, user: NewUser, now: string): Promise<User> {
    const row = newUserRow(user, now);
    if (isPostgres(tx)) {
      const [r] = await tx('users').insert(row).returning('*');
      return map(r);
    }
    const id = await insertId({ tx }, 'users', row);
    return (await usersRepo.get({ tx }, user.accountId, id))!;
  },

  /**
   * PostgreSQL: inserts the student unless the account has one with that email, in one statement
   * (`ON CONFLICT ... DO NOTHING` on the unique index): null when it has. No unique violation, so
   * the caller's transaction stays usable (an idempotent 409 is recorded beside it).
   */
  async createUnlessEmailTaken(
    { tx }: { tx: Tx },
    user: NewUser,
    now: string,
  ): Promise<User | null> {
    const insert = usersRepo.insertUnlessEmailTaken(user, now);
    const r = await firstRow({ tx }, insert.sql, insert.params);
    return r ? map(r) : null;
  },

  /**
   * createUnlessEmailTaken's statement, to run alone or with the event about the student
   * (EventRecorder.recordWithInsert): its text, its values and the row it writes.
   */
  insertUnlessEmailTaken(user: NewUser, now: string): RecordedInsert {
    const row = newUserRow(user, now);
    const columns = Object.keys(row).sort();
    // The text depends only on the columns (always the same): a named statement, planned once,
    // and written once (a fresh text on every call was built, then hashed to find its name).
    const names = columns.join(', ');
    const sql = textOnce(
      insertTexts,
      names,
      () =>
        `INSERT INTO users (${names}) VALUES (${columns.map(() => '?').join(', ')}) ` +
        'ON CONFLICT (account_id, email_lower) DO NOTHING RETURNING *',
    );
    return { sql, params: columns.map((c) => row[c]), row };
  },

  // ---- PostgreSQL, set-based (a chunk of users.upsert): one statement for many students ----

  /** The account's students with these emails, locked until the transaction ends (id order). */
  /** The account's students with these emails (lowercase), on both engines, without a lock. */
  async findManyByEmail(
    { tx }: { tx: Tx },
    accountId: number,
    emailsLower: string[],
  ): Promise<User[]> {
    if (emailsLower.length === 0) return [];
    const rows = await tx('users')
      .where('account_id', accountId)
      .whereIn('email_lower', emailsLower);
    return rows.map(map);
  },

  async lockManyByEmail(
    { tx }: { tx: Tx },
    accountId: number,
    emailsLower: string[],
  ): Promise<User[]> {
    const r = await tx.raw(
      'SELECT * FROM users WHERE account_id = ? AND email_lower = ANY(?::text[]) ORDER BY id FOR UPDATE',
      [accountId, emailsLower],
    );
    return r.rows.map(map);
  },

  /** Inserts the rows (one shape); a row whose email exists already is skipped, not returned. */
  async insertMany({ tx }: { tx: Tx }, users: NewUser[], now: string): Promise<User[]> {
    if (users.length === 0) return [];
    const inserted = await insertJson(
      { tx },
      'users',
      NEW_ROW_TYPES,
      users.map((u) => newUserRow(u, now)),
      'ON CONFLICT (account_id, email_lower) DO NOTHING RETURNING *',
    );
    return inserted.map(map);
  },

  /** Writes each student's profile columns whole (utm null keeps the stored one); returns them. */
  async updateProfiles(
    { tx }: { tx: Tx },
    profiles: ProfileUpdate[],
    now: string,
  ): Promise<User[]> {
    if (profiles.length === 0) return [];
    const rows = profiles.map(
      (p) =>
        ({
          ...fields(p),
          id: p.id,
          revision: newRevision(),
          updated_at: now,
        }) as ProfileRow,
    );
    const text = PROFILE_COLUMNS.filter((c) => c !== 'free');
    const r = await tx.raw(
      `UPDATE users AS u SET ${PROFILE_COLUMNS.map((c) => (c === 'utm' ? 'utm = COALESCE(v.utm, u.utm)' : `${c} = v.${c}`)).join(', ')}
         FROM unnest(?::int[], ${text.map(() => '?::text[]').join(', ')}, ?::boolean[])
              AS v(id, ${text.join(', ')}, free)
        WHERE u.id = v.id
       RETURNING u.*`,
      [
        rows.map((row) => row.id),
        ...text.map((c) => rows.map((row) => row[c])),
        rows.map((row) => row.free),
      ] as any[],
    );
    return r.rows.map(map);
  },

  /**
   * Writes the profile fields given (a new revision); with `revision`, only that revision is
   * overwritten (If-Match made atomic). Returns the rows hit.
   */
  async update(
    { tx }: { tx: Tx },
    id: number,
    changes: Partial<UserFields>,
    now: string,
    revision?: string,
  ): Promise<number> {
    const q = tx('users').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changedRow(fields(changes), now));
  },

  /** A sign-in: a new revision, but updated_at dates the profile's edits and stays. */
  async signedIn({ tx }: { tx: Tx }, id: number, at: { startedAt: string; lastAccessAt: string }) {
    return tx('users')
      .where('id', id)
      .update({ ...toRow(at), revision: newRevision() });
  },

  async remove({ tx }: { tx: Tx }, id: number, revision?: string): Promise<number> {
    await tx('user_tags').where('user_id', id).delete();
    const q = tx('users').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.delete();
  },
};
