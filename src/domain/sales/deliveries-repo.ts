// Deliveries (table `deliveries`) with what they listen to (`delivery_external_ids`) and grant
// (`delivery_products`, `delivery_tags`). Every function takes the caller's `tx`.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/knex.ts';
import { bool, insertId } from '../../db/dialect.ts';
import type { DurationUnit } from '../enrollments/duration.ts';
import { changedRow, newRow } from '../shared/row.ts';

export type DeliveryKind = 'one_time' | 'subscription';
export type DeliveryStatus = 'active' | 'archived';

export interface DeliveryProduct {
  productId: number;
  accessScheduleId: number;
}

export interface Delivery {
  id: number;
  accountId: number;
  /** Set on a copy in a replica account: the delivery it copies (read-only). */
  sourceId: number | null;
  gateway: string;
  name: string;
  kind: DeliveryKind;
  status: DeliveryStatus;
  hidden: boolean;
  secretHash: string | null;
  /** The unguessable part of its postback URL (`/postbacks/{id}/{token}`). */
  postbackToken: string | null;
  /** Created before postback tokens: `/postbacks/{id}` still answers while it has a secret. */
  bareUrl: boolean;
  duration: number | null;
  durationUnit: DurationUnit;
  externalIds: string[];
  products: DeliveryProduct[];
  tagIds: number[];
  enrollmentsCount: number;
  revision: string;
  createdAt: string;
  updatedAt: string;
}

/** A delivery's written fields; the repository sets its revision and timestamps. */
export type DeliveryFields = Pick<
  Delivery,
  'gateway' | 'name' | 'kind' | 'status' | 'hidden' | 'secretHash' | 'duration' | 'durationUnit'
>;
export type NewDelivery = DeliveryFields &
  Pick<Delivery, 'accountId' | 'sourceId' | 'postbackToken'>;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

type Row = Omit<Delivery, 'externalIds' | 'products' | 'tagIds'>;

const mapRow = (r: any): Row => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  sourceId: num(r.source_id),
  gateway: r.gateway,
  name: r.name,
  kind: r.kind,
  status: r.status,
  hidden: bool(r.hidden),
  secretHash: r.secret_hash ?? null,
  postbackToken: r.postback_token ?? null,
  bareUrl: bool(r.bare_url),
  duration: num(r.duration),
  durationUnit: r.duration_unit,
  // PostgreSQL returns count(*) as a bigint string.
  enrollmentsCount: Number(r.enrollments_count ?? 0),
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** enrollments_count is derived, never stored, so it cannot drift. */
const withCount = ({ tx }: { tx: Tx }) =>
  tx.raw(
    '(select count(*) from enrollments where enrollments.delivery_id = deliveries.id) as enrollments_count',
  );

/** Loads what each delivery listens to and grants, one query per relation. */
async function withRelations({ tx }: { tx: Tx }, rows: Row[]): Promise<Delivery[]> {
  if (!rows.length) return [];
  const ids = rows.map((r) => r.id);
  // One after another: a transaction has one connection.
  const ext = await tx('delivery_external_ids').whereIn('delivery_id', ids).orderBy('id');
  const products = await tx('delivery_products')
    .whereIn('delivery_id', ids)
    .orderBy([{ column: 'delivery_id' }, { column: 'product_id' }]);
  const tags = await tx('delivery_tags')
    .whereIn('delivery_id', ids)
    .orderBy([{ column: 'delivery_id' }, { column: 'tag_id' }]);
  const by = <T>(list: any[], f: (r: any) => T) => {
    const m = new Map<number, T[]>();
    for (const r of list) {
      const k = Number(r.delivery_id);
      if (!m.has(k)) m.set(k, []);
      m.get(k)!.push(f(r));
    }
    return m;
  };
  const e = by(ext, (r) => String(r.external_id));
  const p = by(products, (r) => ({
    productId: Number(r.product_id),
    accessScheduleId: Number(r.access_schedule_id),
  }));
  const t = by(tags, (r) => Number(r.tag_id));
  return rows.map((r) => ({
    ...r,
    externalIds: e.get(r.id) ?? [],
    products: p.get(r.id) ?? [],
    tagIds: t.get(r.id) ?? [],
  }));
}

export interface DeliveryFilters {
  gateway?: string;
  status?: DeliveryStatus;
  externalId?: string;
}

const byCreation = keyset('deliveries.created_at', 'deliveries.id');
const deliveryPages = pages({
  list: 'deliveries',
  sorts: { '-created_at': byCreation.desc, created_at: byCreation.asc },
  map: mapRow,
});

export const deliveriesRepo = {
  mapRow,
  withRelations,

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Delivery | null> {
    const r = await tx('deliveries')
      .where({ account_id: accountId, id })
      .first('*', withCount({ tx }));
    return r ? (await withRelations({ tx }, [mapRow(r)]))[0]! : null;
  },

  /** Any account's delivery: a postback names only the delivery. */
  async getAny({ tx }: { tx: Tx }, id: number): Promise<Delivery | null> {
    const r = await tx('deliveries').where({ id }).first('*', withCount({ tx }));
    return r ? (await withRelations({ tx }, [mapRow(r)]))[0]! : null;
  },

  async findCopy(
    { tx }: { tx: Tx },
    accountId: number,
    sourceId: number,
  ): Promise<Delivery | null> {
    const r = await tx('deliveries')
      .where({ account_id: accountId, source_id: sourceId })
      .first('*', withCount({ tx }));
    return r ? (await withRelations({ tx }, [mapRow(r)]))[0]! : null;
  },

  /** One page of the account's deliveries, newest first by default, with their products. */
  async page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    f: DeliveryFilters,
    p: PageParams,
  ) {
    const query = deliveriesRepo.listQuery({ tx }, accountId, f);
    const page = await deliveryPages(query, cursors, { ...p, of: [accountId], filters: { ...f } });
    return { rows: await withRelations({ tx }, page.rows), page: page.page };
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY (created_at, id). */
  listQuery({ tx }: { tx: Tx }, accountId: number, f: DeliveryFilters) {
    const q = tx('deliveries').where('deliveries.account_id', accountId);
    if (f.gateway !== undefined) q.where('deliveries.gateway', f.gateway);
    if (f.status !== undefined) q.where('deliveries.status', f.status);
    if (f.externalId !== undefined)
      q.whereExists(
        tx('delivery_external_ids')
          .select(tx.raw('1'))
          .whereRaw('delivery_external_ids.delivery_id = deliveries.id')
          .where('delivery_external_ids.external_id', f.externalId),
      );
    return q.select('deliveries.*', withCount({ tx }));
  },

  /** Which deliveries of the account and gateway already listen to these gateway ids. */
  async owners({ tx }: { tx: Tx }, accountId: number, gateway: string, externalIds: string[]) {
    if (!externalIds.length) return [];
    const rows = await tx('delivery_external_ids')
      .where({ account_id: accountId, gateway })
      .whereIn('external_id', externalIds)
      .orderBy('id');
    return rows.map((r: any) => ({
      deliveryId: Number(r.delivery_id),
      externalId: String(r.external_id),
    }));
  },

  async insert({ tx }: { tx: Tx }, d: NewDelivery, now: string): Promise<number> {
    return insertId({ tx }, 'deliveries', newRow(d, now));
  },

  /**
   * Writes the fields given (a new revision); with `revision`, only that revision is overwritten
   * (If-Match made atomic). Returns the rows hit.
   */
  async update(
    { tx }: { tx: Tx },
    id: number,
    changes: Partial<DeliveryFields>,
    now: string,
    revision?: string,
  ): Promise<number> {
    const q = tx('deliveries').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changedRow(changes, now));
  },

  async setExternalIds(
    { tx }: { tx: Tx },
    d: { id: number; accountId: number; gateway: string },
    ids: string[],
  ) {
    await tx('delivery_external_ids').where('delivery_id', d.id).delete();
    if (ids.length)
      await tx('delivery_external_ids').insert(
        ids.map((external_id) => ({
          delivery_id: d.id,
          account_id: d.accountId,
          gateway: d.gateway,
          external_id,
        })),
      );
  },

  async setProducts({ tx }: { tx: Tx }, deliveryId: number, products: DeliveryProduct[]) {
    await tx('delivery_products').where('delivery_id', deliveryId).delete();
    if (products.length)
      await tx('delivery_products').insert(
        products.map((p) => ({
          delivery_id: deliveryId,
          product_id: p.productId,
          access_schedule_id: p.accessScheduleId,
        })),
      );
  },

  async setTags({ tx }: { tx: Tx }, deliveryId: number, tagIds: number[]) {
    await tx('delivery_tags').where('delivery_id', deliveryId).delete();
    if (tagIds.length)
      await tx('delivery_tags').insert(
        tagIds.map((tag_id) => ({ delivery_id: deliveryId, tag_id })),
      );
  },

  /** Schedules among these that are in the trash. */
  async trashedSchedules({ tx }: { tx: Tx }, ids: number[]): Promise<number[]> {
    if (!ids.length) return [];
    const rows = await tx('access_schedules')
      .whereIn('id', ids)
      .where('deleted', true)
      .select('id');
    return rows.map((r: any) => Number(r.id));
  },

  async removeAccount({ tx }: { tx: Tx }, accountId: number): Promise<number> {
    return tx('deliveries').where('account_id', accountId).delete();
  },
};
