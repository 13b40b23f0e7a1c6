// A row's `product_external_id` is a gateway product id, as a sale's postback names it: it
// designates the active delivery that listens to it, and the row grants what that delivery grants.
import type { Tx } from '../../db/engine.ts';
import type { DurationUnit } from '../enrollments/duration.ts';

/** The account's active delivery listening to this id (any gateway; the lowest id if several). */
export async function deliveryIdByExternalId(
  { tx }: { tx: Tx },
  accountId: number,
  externalId: string,
): Promise<number | null> {
  const r = await tx('delivery_external_ids as x')
    .join('deliveries as d', 'd.id', 'x.delivery_id')
    .where({ 'x.account_id': accountId, 'x.external_id': externalId, 'd.status': 'active' })
    .orderBy('d.id')
    .first('d.id');
  return r ? Number(r.id) : null;
}

export interface DeliveryGrant {
  id: number;
  duration: number | null;
  durationUnit: DurationUnit;
  products: { productId: number; accessScheduleId: number }[];
  tagIds: number[];
}

/** What the delivery grants (without the counters a delivery's resource carries). */
export async function deliveryGrant({ tx }: { tx: Tx }, id: number): Promise<DeliveryGrant | null> {
  const d = await tx('deliveries').where({ id }).first('id', 'duration', 'duration_unit');
  if (!d) return null;
  const products = await tx('delivery_products')
    .where('delivery_id', id)
    .orderBy('product_id')
    .select('product_id', 'access_schedule_id');
  const tags = await tx('delivery_tags')
    .where('delivery_id', id)
    .orderBy('tag_id')
    .select('tag_id');
  return {
    id,
    duration: d.duration === null ? null : Number(d.duration),
    durationUnit: d.duration_unit,
    products: products.map((p: any) => ({
      productId: Number(p.product_id),
      accessScheduleId: Number(p.access_schedule_id),
    })),
    tagIds: tags.map((t: any) => Number(t.tag_id)),
  };
}
