// What a delivery grants, checked against the account: products (each under an access schedule
// of that product outside the trash, its default one unless told) and tags. A reference to
// nothing is 422 validation_failed naming the item (`products.1.product_id`).
import type { Tx } from '../../db/knex.ts';
import { AppError, type ErrorDetail } from '../../errors.ts';
import { fromId } from '../shared/ids.ts';
import { productsRepo } from '../catalog/repo.ts';
import { tagsRepo } from '../tags/repo.ts';
import { enrollmentsRepo } from '../enrollments/repo.ts';
import type { DeliveryProduct } from './deliveries-repo.ts';

export interface GrantsInput {
  product_id: string;
  access_schedule_id?: string;
}

export async function checkGrants(
  { tx }: { tx: Tx },
  accountId: number,
  products: GrantsInput[],
  tagIds: string[],
): Promise<{ products: DeliveryProduct[]; tagIds: number[] }> {
  const details: ErrorDetail[] = [];
  const bad = (field: string, code: string, message: string, reason: string) =>
    details.push({ field, code, message, reason });
  const out: DeliveryProduct[] = [];
  for (const [i, p] of products.entries()) {
    const id = fromId(p.product_id);
    const product = id === null ? null : await productsRepo.get({ tx }, accountId, id);
    if (!product) {
      bad(
        `products.${i}.product_id`,
        'not_found',
        'No product of this account has this id.',
        'not_found',
      );
      continue;
    }
    if (out.some((o) => o.productId === product.id)) {
      bad(`products.${i}.product_id`, 'duplicate', 'This product is listed twice.', 'duplicate');
      continue;
    }
    const scheduleId = p.access_schedule_id === undefined ? null : fromId(p.access_schedule_id);
    const s =
      p.access_schedule_id !== undefined && scheduleId === null
        ? null
        : await enrollmentsRepo.schedule({ tx }, product.id, scheduleId);
    const field = `products.${i}.access_schedule_id`;
    if (!s) bad(field, 'not_found', 'No access schedule of this product has this id.', 'not_found');
    else if (s.deleted)
      bad(field, 'invalid', 'The access schedule is in the trash.', 'schedule_in_trash');
    else out.push({ productId: product.id, accessScheduleId: s.id });
  }
  const tags: number[] = [];
  for (const [i, raw] of tagIds.entries()) {
    const id = fromId(raw);
    const tag = id === null ? null : await tagsRepo.get({ tx }, accountId, id);
    if (!tag) bad(`tag_ids.${i}`, 'not_found', 'No tag of this account has this id.', 'not_found');
    else if (!tags.includes(tag.id)) tags.push(tag.id);
  }
  if (details.length) throw new AppError('validation_failed', { details: details.slice(0, 100) });
  return { products: out, tagIds: tags };
}
