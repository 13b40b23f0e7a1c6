// webhook.deliver: claims one delivery and starts its attempt (the attempt runs beside the job
// runner, so a slow endpoint holds no runner slot). webhooks.recover (every minute): whatever is
// due by the clock and has no job on its way (a delivery that waited for a free slot of its
// endpoint, a worker that died mid-attempt) is claimed.
import type { Task } from '../jobs/types.ts';
import type { WebhookDispatcher } from '../domain/webhooks/dispatcher.ts';

export const deliverWebhook =
  (dispatcher: WebhookDispatcher): Task =>
  async (payload: { delivery_id: number; endpoint_id?: number }) => {
    // endpoint_id: jobs enqueued before it was added have none.
    await dispatcher.dispatch(payload.delivery_id, payload.endpoint_id);
  };

export const recoverWebhooks =
  (dispatcher: WebhookDispatcher): Task =>
  async () => {
    await dispatcher.runDue();
  };
