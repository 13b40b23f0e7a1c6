// Webhook endpoints, their deliveries and attempts, replays and secret rotations.
import type { components } from '../../../../generated/types.ts';
import type { Attempt, Delivery } from '../../../domain/webhooks/deliveries-repo.ts';
import type { Endpoint } from '../../../domain/webhooks/repo.ts';
import type { WebhooksService } from '../../../domain/webhooks/service.ts';
import type { WebhookDeliveries } from '../../../domain/webhooks/deliveries.ts';
import { fromId } from '../../../domain/shared/ids.ts';
import { etag } from '../../../domain/shared/revision.ts';
import { accepted } from './operations.ts';
import type { Handlers } from './types.ts';

type S = components['schemas'];

type WebhookOps =
  | 'listWebhooks'
  | 'createWebhook'
  | 'getWebhook'
  | 'updateWebhook'
  | 'deleteWebhook'
  | 'listWebhookDeliveries'
  | 'getWebhookDelivery'
  | 'getWebhookDeliveryAttempt'
  | 'createWebhookReplay'
  | 'createWebhookSecretRotation';

export const presentWebhook = (e: Endpoint): S['Webhook'] => ({
  object: 'webhook',
  id: String(e.id),
  url: e.url,
  description: e.description,
  event_types: e.eventTypes,
  payload_version: e.payloadVersion,
  status: e.status,
  disabled_reason: e.disabledReason,
  revision: e.revision,
  signing_secrets: (e.signingSecrets ?? []).map((x) => ({
    hint: x.hint,
    created_at: x.createdAt,
    expires_at: x.expiresAt,
  })),
  created_at: e.createdAt,
  updated_at: e.updatedAt,
});

const presentAttempt = (a: Attempt): S['WebhookDeliveryAttempt'] => ({
  object: 'webhook_delivery_attempt',
  number: a.number,
  origin: a.origin,
  http_status: a.httpStatus,
  duration_ms: a.durationMs,
  started_at: a.startedAt,
  finished_at: a.finishedAt,
  next_attempt_at: a.nextAttemptAt,
  response_excerpt: a.responseExcerpt,
  transport_error: a.transportError,
});

const presentDelivery = (
  e: Endpoint,
  d: Delivery,
  last: Attempt | null | undefined,
): S['WebhookDelivery'] => ({
  object: 'webhook_delivery',
  id: String(d.id),
  webhook_id: String(d.endpointId),
  event_id: String(d.eventId),
  event_type: d.eventType,
  url: e.url,
  status: d.status,
  attempts_count: d.attemptsCount,
  created_at: d.createdAt,
  deadline_at: d.deadlineAt,
  delivered_at: d.deliveredAt,
  next_attempt_at: d.nextAttemptAt,
  last_attempt: last ? presentAttempt(last) : null,
});

export function webhookHandlers(
  s: WebhooksService,
  deliveries: WebhookDeliveries,
): Pick<Handlers, WebhookOps> {
  const one = (e: Endpoint) => ({
    body: { data: presentWebhook(e) },
    headers: { ETag: etag(e.revision) },
  });
  return {
    async listWebhooks({ auth, query }) {
      const { rows, page } = await s.list(auth.account.id, query);
      return { status: 200, body: { data: rows.map(presentWebhook), page } };
    },
    async createWebhook({ auth, body, tx }) {
      const { endpoint, secret } = await s.create(auth.account.id, body, { tx });
      const data = { ...presentWebhook(endpoint), secret };
      // Shown once: never stored with the idempotency record, never replayed.
      const headers = { ETag: etag(endpoint.revision) };
      return { status: 201, body: { data }, headers, replayable: false };
    },
    async getWebhook({ auth, params }) {
      return { status: 200, ...one(await s.read(auth.account.id, fromId(params.webhook_id))) };
    },
    async updateWebhook({ auth, params, body, ifMatch, tx }) {
      const id = fromId(params.webhook_id);
      return { status: 200, ...one(await s.update(auth.account.id, id, body, ifMatch, { tx })) };
    },
    async deleteWebhook({ auth, params, ifMatch, tx }) {
      await s.remove(auth.account.id, fromId(params.webhook_id), ifMatch, { tx });
      return { status: 204 };
    },
    async listWebhookDeliveries({ auth, params, query }) {
      const r = await deliveries.list(auth.account.id, fromId(params.webhook_id), query);
      const data = r.rows.map((d) => presentDelivery(r.endpoint, d, r.last.get(d.id)));
      return { status: 200, body: { data, page: r.page } };
    },
    async getWebhookDelivery({ auth, params }) {
      const ids = [fromId(params.webhook_id), fromId(params.delivery_id)] as const;
      const { endpoint, delivery, last } = await deliveries.get(auth.account.id, ...ids);
      return { status: 200, body: { data: presentDelivery(endpoint, delivery, last) } };
    },
    async getWebhookDeliveryAttempt({ auth, params }) {
      const ids = [fromId(params.webhook_id), fromId(params.delivery_id)] as const;
      const a = await deliveries.attempt(auth.account.id, ...ids, params.number);
      return { status: 200, body: { data: presentAttempt(a) } };
    },
    async createWebhookReplay({ auth, params, body, tx }) {
      return accepted(await deliveries.replay(auth, fromId(params.webhook_id), body, { tx }));
    },
    async createWebhookSecretRotation({ auth, params, body, tx }) {
      const id = fromId(params.webhook_id);
      const r = await s.rotateSecret(auth.account.id, id, body.overlap_hours, { tx });
      const data = {
        object: 'webhook_secret_rotation' as const,
        secret: r.secret,
        previous_secret_expires_at: r.previousExpiresAt,
      };
      return { status: 201, body: { data }, replayable: false };
    },
  };
}
