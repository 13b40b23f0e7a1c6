// product.publish_all: publishes a product and its modules (and their copies in replica accounts).
import type { Tx } from '../db/engine.ts';
import type { BatchType } from '../domain/operations/batch-types.ts';
import { fromId } from '../domain/shared/ids.ts';

export function productPublishAll(
  publish: (tx: Tx, accountId: number, productId: number | null) => Promise<unknown>,
): BatchType {
  return {
    permission: 'products.write',
    maxItems: 1,
    async apply(tx, accountId, payload) {
      await publish(tx, accountId, fromId(payload.product_id));
      return { product_id: payload.product_id };
    },
  };
}
