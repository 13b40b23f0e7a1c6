// webhook.replay (its own route only): adds a replay attempt to one webhook delivery.
import type { Tx } from '../db/engine.ts';
import type { BatchType } from '../domain/operations/batch-types.ts';
import { fromId, toId } from '../domain/shared/ids.ts';

export function webhookReplay(
  replay: (tx: Tx, accountId: number, deliveryId: number | null) => Promise<{ eventId: number }>,
): BatchType {
  return {
    permission: 'webhooks.manage',
    maxItems: 1000,
    internal: true,
    async apply(tx, accountId, payload) {
      const { eventId } = await replay(tx, accountId, fromId(payload.delivery_id));
      return { event_id: toId(eventId), delivery_id: payload.delivery_id };
    },
  };
}
