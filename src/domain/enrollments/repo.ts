// Enrollments (table `enrollments`): a student's access to a product. Every function takes the
// caller's `tx`. "Current" means not ended on purpose and not past its `ends_at`.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/knex.ts';
import { bool, insertId } from '../../db/dialect.ts';
import { firstRow } from '../../db/statements.ts';
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
