// Access schedules (table `access_schedules`), read together with their tag (its name is the
// schedule's name) and whether their product is a copy.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/knex.ts';
import { bool, insertId } from '../../db/dialect.ts';
import { changedRow, newRow } from '../shared/row.ts';
import type { AccessSchedule } from './types.ts';

/** A new schedule's fields; the repository sets its revision and timestamps. */
export type NewSchedule = Pick<
  AccessSchedule,
  'accountId' | 'productId' | 'tagId' | 'isDefault' | 'deleted'
>;

const map = (r: any): AccessSchedule => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  productId: Number(r.product_id),
  tagId: Number(r.tag_id),
  name: r.tag_name,
  isDefault: bool(r.is_default),
  deleted: bool(r.deleted),
  ownRevision: r.revision,
  tagRevision: r.tag_revision,
  replica: r.product_source_id !== null && r.product_source_id !== undefined,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const base = ({ tx }: { tx: Tx }) =>
  tx('access_schedules')
    .join('tags', 'tags.id', 'access_schedules.tag_id')
    .join('products', 'products.id', 'access_schedules.product_id')
    .select(
      'access_schedules.*',
      'tags.name as tag_name',
      'tags.revision as tag_revision',
      'products.source_id as product_source_id',
    );

export interface Delivery {
  id: number;
}

const byCreation = keyset('access_schedules.created_at', 'access_schedules.id');
const schedulePages = pages({
  list: 'access_schedules',
  sorts: { created_at: byCreation.asc, '-created_at': byCreation.desc },
  map,
});

async function grantingDeliveries(
  { tx }: { tx: Tx },
  scheduleId: number,
  status?: string,
): Promise<number[]> {
  const q = tx('delivery_products')
    .join('deliveries', 'deliveries.id', 'delivery_products.delivery_id')
    .where('delivery_products.access_schedule_id', scheduleId);
  if (status !== undefined) q.where('deliveries.status', status);
  const rows = await q.orderBy('deliveries.id').select('deliveries.id');
  return rows.map((r: any) => Number(r.id));
}

export const schedulesRepo = {
  map,

  async get(
    { tx }: { tx: Tx },
    accountId: number,
    productId: number,
    id: number,
  ): Promise<AccessSchedule | null> {
    const r = await base({ tx })
      .where('access_schedules.account_id', accountId)
      .where('access_schedules.product_id', productId)
      .where('access_schedules.id', id)
      .first();
    return r ? map(r) : null;
  },

  /** One page of the product's schedules (or of those in its trash), oldest first by default. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    productId: number,
    f: { deleted: boolean },
    p: PageParams,
  ) {
    const query = schedulesRepo.listQuery({ tx }, productId, f.deleted);
    return schedulePages(query, cursors, { ...p, of: [accountId, productId], filters: f });
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY (created_at, id). */
  listQuery({ tx }: { tx: Tx }, productId: number, deleted: boolean) {
    return base({ tx })
      .where('access_schedules.product_id', productId)
      .where('access_schedules.deleted', deleted);
  },

  async insert({ tx }: { tx: Tx }, s: NewSchedule, now: string): Promise<number> {
    return insertId({ tx }, 'access_schedules', newRow(s, now));
  },

  /** A new revision; with `revision`, only that (own) revision is overwritten. Rows hit. */
  async update(
    { tx }: { tx: Tx },
    id: number,
    changes: { deleted: boolean },
    now: string,
    revision?: string,
  ): Promise<number> {
    const q = tx('access_schedules').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changedRow(changes, now));
  },

  // ---- the sales seam: the deliveries that grant a schedule. The query reads the link table
  // (delivery_products) here rather than calling src/domain/sales, which depends on the catalog:
  // the catalog must not depend back on it. ----

  /** Deliveries that grant this schedule, for `deliveries[]`, oldest first. */
  async deliveries({ tx }: { tx: Tx }, scheduleId: number): Promise<Delivery[]> {
    return (await grantingDeliveries({ tx }, scheduleId)).map((id) => ({ id }));
  },

  /** Active deliveries that grant this schedule: it cannot go to the trash while any exists. */
  async activeDeliveries({ tx }: { tx: Tx }, scheduleId: number): Promise<number> {
    return (await grantingDeliveries({ tx }, scheduleId, 'active')).length;
  },
};
