// Enrollments (table `enrollments`): a student's access to a product. Every function takes the
// caller's `tx`. "Current" means not ended on purpose and not past its `ends_at`.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/knex.ts';
import { bool, insertId } from '../../db/dialect.ts';
import { isPostgres } from '../../db/engine.ts';
import { firstRow, insertJson, updateRows } from '../../db/statements.ts';
import { changedRow, newRow } from '../shared/row.ts';
import type { DurationUnit } from './duration.ts';

export interface EnrollmentRow {
  id: number;
  accountId: number;
  userId: number;
  productId: number;
  accessScheduleId: number;
  deliveryId: number | null;
  transactionId: number | null;
  startedAt: string;
  duration: number | null;
  durationUnit: DurationUnit;
  endsAt: string | null;
  /** Ended on purpose; `ended` of the resource also counts a past `endsAt`. */
  endedFlag: boolean;
  revision: string;
  createdAt: string;
  updatedAt: string;
}

/** An enrollment's written fields; the repository sets its revision and timestamps. */
export type EnrollmentFields = Pick<
  EnrollmentRow,
  | 'accessScheduleId'
  | 'deliveryId'
  | 'transactionId'
  | 'duration'
  | 'durationUnit'
  | 'endsAt'
  | 'endedFlag'
>;
export type NewEnrollment = EnrollmentFields &
  Pick<EnrollmentRow, 'accountId' | 'userId' | 'productId' | 'startedAt'>;

/** `endedFlag` is the column `ended`. */
const fields = ({ endedFlag, ...rest }: Partial<EnrollmentFields>) => ({
  ...rest,
  ended: endedFlag,
});

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

const map = (r: any): EnrollmentRow => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  userId: Number(r.user_id),
  productId: Number(r.product_id),
  accessScheduleId: Number(r.access_schedule_id),
  deliveryId: num(r.delivery_id),
  transactionId: num(r.transaction_id),
  startedAt: r.started_at,
  duration: num(r.duration),
  durationUnit: r.duration_unit,
  endsAt: r.ends_at ?? null,
  endedFlag: bool(r.ended),
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** Rows still giving access at `now`. */
const current = (q: any, now: string) =>
  q
    .where('enrollments.ended', false)
    .where((w: any) => w.whereNull('enrollments.ends_at').orWhere('enrollments.ends_at', '>', now));

export interface EnrollmentFilters {
  productId?: number | null;
  ended?: boolean;
  now: string;
}

export interface ScheduleRef {
  id: number;
  deleted: boolean;
}

const pairKey = (p: { userId: number; productId: number }) => `${p.userId}:${p.productId}`;

/** PostgreSQL types of the columns a chunk writes (insertJson, updateRows). */
const COLUMN_TYPES: Record<string, string> = {
  account_id: 'int',
  user_id: 'int',
  product_id: 'int',
  access_schedule_id: 'int',
  delivery_id: 'int',
  transaction_id: 'int',
  started_at: 'text',
  duration: 'int',
  duration_unit: 'text',
  ends_at: 'text',
  ended: 'boolean',
  revision: 'text',
  created_at: 'text',
  updated_at: 'text',
};

const byCreation = keyset('enrollments.created_at', 'enrollments.id');
const enrollmentPages = pages({
  list: 'enrollments',
  sorts: { '-created_at': byCreation.desc, created_at: byCreation.asc },
  map,
});

export const enrollmentsRepo = {
  map,

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<EnrollmentRow | null> {
    // Fixed SQL, prepared once (knex compiles and SQLite prepares anew on every call): read
    // after every grant.
    const r = await firstRow({ tx }, 'SELECT * FROM enrollments WHERE account_id = ? AND id = ?', [
      accountId,
      id,
    ]);
    return r ? map(r) : null;
  },

  /** One page of the student's enrollments, newest first by default. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    userId: number,
    f: EnrollmentFilters,
    p: PageParams,
  ) {
    const query = enrollmentsRepo.listQuery({ tx }, userId, f);
    // `now` moves between pages: it is not part of what the cursor was issued for.
    const filters = { productId: f.productId, ended: f.ended };
    return enrollmentPages(query, cursors, { ...p, of: [accountId, userId], filters });
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY (created_at, id). */
  listQuery({ tx }: { tx: Tx }, userId: number, f: EnrollmentFilters) {
    const q = tx('enrollments').where('enrollments.user_id', userId);
    if (f.productId !== undefined) q.where('enrollments.product_id', f.productId ?? 0);
    if (f.ended === false) current(q, f.now);
    if (f.ended === true)
      q.where((w: any) =>
        w.where('enrollments.ended', true).orWhere('enrollments.ends_at', '<=', f.now),
      );
    return q.select('enrollments.*');
  },

  /** The student's current enrollment in the product, if any (the newest when several). */
  async current(
    { tx }: { tx: Tx },
    userId: number,
    productId: number,
    now: string,
  ): Promise<EnrollmentRow | null> {
    // As `current` below, in fixed SQL prepared once: read before every grant.
    const r = await firstRow(
      { tx },
      'SELECT * FROM enrollments WHERE user_id = ? AND product_id = ? AND ended = ? ' +
        'AND (ends_at IS NULL OR ends_at > ?) ORDER BY id DESC LIMIT 1',
      [userId, productId, false, now],
    );
    return r ? map(r) : null;
  },

  /** The student's current enrollments granted through a delivery. */
  async currentOfDelivery(
    { tx }: { tx: Tx },
    userId: number,
    deliveryId: number,
    now: string,
  ): Promise<EnrollmentRow[]> {
    const q = tx('enrollments').where({ user_id: userId, delivery_id: deliveryId });
    return (await current(q, now).orderBy('id')).map(map);
  },

  /** currentOfDelivery for many (student, delivery) pairs at once, in id order. */
  async currentOfDeliveries(
    { tx }: { tx: Tx },
    pairs: { userId: number; deliveryId: number }[],
    now: string,
  ): Promise<EnrollmentRow[]> {
    if (pairs.length === 0) return [];
    const wanted = new Set(pairs.map((p) => `${p.userId}:${p.deliveryId}`));
    const q = tx('enrollments')
      .whereIn('user_id', [...new Set(pairs.map((p) => p.userId))])
      .whereIn('delivery_id', [...new Set(pairs.map((p) => p.deliveryId))]);
    return (await current(q, now).orderBy('id'))
      .map(map)
      .filter((r: EnrollmentRow) => wanted.has(`${r.userId}:${r.deliveryId}`));
  },

  /**
   * The student's enrollments granted by a transaction whose sale or subscription id at the
   * gateway is `externalId` (v2 access entries), oldest first, with those ids.
   */
  async byExternalId({ tx }: { tx: Tx }, accountId: number, userId: number, externalId: string) {
    const rows = await tx('enrollments')
      .join('sales_transactions', 'sales_transactions.id', 'enrollments.transaction_id')
      .where('enrollments.account_id', accountId)
      .where('enrollments.user_id', userId)
      .where((w) =>
        w
          .where('sales_transactions.transaction_id', externalId)
          .orWhere('sales_transactions.recurrence_id', externalId),
      )
      .orderBy('enrollments.id')
      .select(
        'enrollments.*',
        'sales_transactions.engine as tx_engine',
        'sales_transactions.transaction_id as tx_transaction_id',
        'sales_transactions.recurrence_id as tx_recurrence_id',
      );
    return rows.map((r: any) => ({
      enrollment: map(r),
      transaction: {
        engine: r.tx_engine as string,
        transactionId: r.tx_transaction_id as string,
        recurrenceId: (r.tx_recurrence_id ?? null) as string | null,
      },
    }));
  },

  /** The product's schedule `id`, or its default schedule when `id` is null. */
  async schedule(
    { tx }: { tx: Tx },
    productId: number,
    id: number | null,
  ): Promise<ScheduleRef | null> {
    const q = tx('access_schedules').where('product_id', productId);
    if (id === null) q.where('is_default', true);
    else q.where('id', id);
    const r = await q.first('id', 'deleted');
    return r ? { id: Number(r.id), deleted: bool(r.deleted) } : null;
  },

  // ---- a chunk of grants at once (grantMany): one statement for many enrollments ----

  /**
   * For each (student, product) pair, the current enrollment `current` would read (the newest
   * when several), keyed `userId:productId`; pairs without one are missing.
   */
  async currentMany(
    { tx }: { tx: Tx },
    pairs: { userId: number; productId: number }[],
    now: string,
  ): Promise<Map<string, EnrollmentRow>> {
    const out = new Map<string, EnrollmentRow>();
    if (pairs.length === 0) return out;
    const wanted = new Set(pairs.map((p) => pairKey(p)));
    const q = tx('enrollments')
      .whereIn('user_id', [...new Set(pairs.map((p) => p.userId))])
      .whereIn('product_id', [...new Set(pairs.map((p) => p.productId))]);
    for (const r of (await current(q, now).orderBy('id')).map(map)) {
      const key = pairKey(r);
      if (wanted.has(key)) out.set(key, r); // id order: the newest stays
    }
    return out;
  },

  /** The default schedule of each product that has one, by product id. */
  async defaultSchedules({ tx }: { tx: Tx }, productIds: number[]): Promise<Map<number, number>> {
    if (productIds.length === 0) return new Map();
    const rows = await tx('access_schedules')
      .whereIn('product_id', [...new Set(productIds)])
      .where('is_default', true)
      .orderBy('id', 'desc')
      .select('id', 'product_id');
    return new Map(rows.map((r: any) => [Number(r.product_id), Number(r.id)]));
  },

  /** These schedules (of any product), by id. */
  async schedules({ tx }: { tx: Tx }, ids: number[]) {
    if (ids.length === 0) return new Map<number, ScheduleRef & { productId: number }>();
    const rows = await tx('access_schedules')
      .whereIn('id', [...new Set(ids)])
      .select('id', 'product_id', 'deleted');
    return new Map(
      rows.map((r: any) => [
        Number(r.id),
        { id: Number(r.id), productId: Number(r.product_id), deleted: bool(r.deleted) },
      ]),
    );
  },

  /** The rows with these ids (any order). */
  async getMany({ tx }: { tx: Tx }, ids: number[]): Promise<EnrollmentRow[]> {
    if (ids.length === 0) return [];
    return (await tx('enrollments').whereIn('id', ids)).map(map);
  },

  /**
   * Inserts the enrollments (no two of one student and product); returns them in this order.
   * One statement on PostgreSQL; cached prepared inserts on SQLite.
   */
  async insertMany(
    { tx }: { tx: Tx },
    list: NewEnrollment[],
    now: string,
  ): Promise<EnrollmentRow[]> {
    if (list.length === 0) return [];
    const rows = list.map((e) => newRow(fields(e), now));
    let written: EnrollmentRow[];
    if (isPostgres(tx)) {
      const types = Object.fromEntries(Object.keys(rows[0]!).map((c) => [c, COLUMN_TYPES[c]!]));
      written = (await insertJson({ tx }, 'enrollments', types, rows, 'RETURNING *')).map(map);
    } else {
      const ids: number[] = [];
      for (const r of rows) ids.push(await insertId({ tx }, 'enrollments', r));
      written = await enrollmentsRepo.getMany({ tx }, ids);
    }
    const byPair = new Map(written.map((r) => [pairKey(r), r]));
    return list.map((e) => byPair.get(pairKey(e))!);
  },

  /**
   * Writes each row's fields (the same fields in every row; one statement on PostgreSQL), only
   * where its revision is still
   * the one given; returns the rows changed, in this order, or null when one had changed since
   * (a concurrent write: the caller gives up its chunk).
   */
  async updateMany(
    { tx }: { tx: Tx },
    list: { id: number; revision: string; changes: Partial<EnrollmentFields> }[],
    now: string,
  ): Promise<EnrollmentRow[] | null> {
    if (list.length === 0) return [];
    const rows = list.map((u) => ({
      id: u.id,
      values: changedRow(fields(u.changes), now),
      guardValue: u.revision,
    }));
    const types = Object.fromEntries(
      Object.keys(rows[0]!.values).map((c) => [c, COLUMN_TYPES[c]!]),
    );
    const changed = await updateRows({ tx }, 'enrollments', types, rows, 'revision');
    if (changed !== list.length) return null;
    const byId = new Map(
      (
        await enrollmentsRepo.getMany(
          { tx },
          list.map((u) => u.id),
        )
      ).map((r) => [r.id, r]),
    );
    return list.map((u) => byId.get(u.id)!);
  },

  async insert({ tx }: { tx: Tx }, e: NewEnrollment, now: string): Promise<number> {
    return insertId({ tx }, 'enrollments', newRow(fields(e), now));
  },

  /**
   * Writes the fields given (a new revision); with `revision`, only that revision is overwritten
   * (If-Match made atomic). Returns the rows hit.
   */
  async update(
    { tx }: { tx: Tx },
    id: number,
    changes: Partial<EnrollmentFields>,
    now: string,
    revision?: string,
  ): Promise<number> {
    const q = tx('enrollments').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changedRow(fields(changes), now));
  },
};
