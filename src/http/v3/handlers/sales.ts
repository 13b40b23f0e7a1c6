// Sales handlers: the gateway catalog, deliveries and transactions. The services come from the
// composition root so the legacy v2 routes share the same use cases.
import type { components } from '../../../../generated/types.ts';
import type { DeliveriesService } from '../../../domain/sales/deliveries.ts';
import type { Delivery } from '../../../domain/sales/deliveries-repo.ts';
import {
  transactionResource,
  type TransactionsService,
} from '../../../domain/sales/transactions.ts';
import { hasPermission } from '../../../domain/credentials/auth.ts';
import { fromId } from '../../../domain/shared/ids.ts';
import { postbackUrl } from '../../../domain/sales/secrets.ts';
import { etag } from '../../../domain/shared/revision.ts';
import type { Handlers } from './types.ts';

type SalesOps =
  | 'listGateways'
  | 'listDeliveries'
  | 'createDelivery'
  | 'getDelivery'
  | 'updateDelivery'
  | 'listTransactions'
  | 'getTransaction';

/** The postback URL is derived, not stored, so it follows PUBLIC_BASE_URL if that changes. */
export function presentDelivery(
  d: Delivery & { generatedSecret?: string },
  publicBaseUrl: string,
): components['schemas']['Delivery'] {
  return {
    object: 'delivery',
    id: String(d.id),
    gateway: d.gateway,
    name: d.name,
    postback_url: postbackUrl(d, publicBaseUrl),
    revision: d.revision,
    kind: d.kind,
    status: d.status,
    hidden: d.hidden,
    replica: d.sourceId !== null,
    external_ids: d.externalIds,
    products: d.products.map((p) => ({
      product_id: String(p.productId),
      access_schedule_id: String(p.accessScheduleId),
    })),
    tag_ids: d.tagIds.map(String),
    duration: d.duration,
    duration_unit: d.durationUnit,
    enrollments_count: d.enrollmentsCount,
    products_count: d.products.length,
    tags_count: d.tagIds.length,
    secret: {
      configured: d.secretHash !== null,
      ...(d.generatedSecret ? { generated: d.generatedSecret } : {}),
    },
    created_at: d.createdAt,
    updated_at: d.updatedAt,
  };
}

export function salesHandlers(
  publicBaseUrl: string,
  deliveries: DeliveriesService,
  transactions: TransactionsService,
): Pick<Handlers, SalesOps> {
  const show = (d: Delivery) => presentDelivery(d, publicBaseUrl);
  const one = (d: Delivery) => ({ body: { data: show(d) }, headers: { ETag: etag(d.revision) } });
  return {
    async listGateways() {
      const data = deliveries.gateways().map((g) => ({
        object: 'gateway' as const,
        key: g.key,
        name: g.name,
        secret_required: g.secretRequired,
      }));
      return { status: 200, body: { data } };
    },
    async listDeliveries({ auth, query }) {
      const { rows, page } = await deliveries.list(auth.account.id, query);
      return { status: 200, body: { data: rows.map(show), page } };
    },
    async createDelivery({ auth, body, tx }) {
      const d = await deliveries.create(auth.account.id, body, { tx });
      // A generated secret is shown once: never stored with the idempotency record.
      return { status: 201, ...one(d), ...(d.generatedSecret ? { replayable: false } : {}) };
    },
    async getDelivery({ auth, params }) {
      const d = await deliveries.get(auth.account.id, fromId(params.delivery_id));
      return { status: 200, ...one(d) };
    },
    async updateDelivery({ auth, params, body, ifMatch, tx }) {
      const mayArchive = hasPermission(auth.credential.permissions, 'deliveries.archive');
      const id = fromId(params.delivery_id);
      const d = await deliveries.update(auth.account.id, id, body, ifMatch, { tx, mayArchive });
      return { status: 200, ...one(d) };
    },
    async listTransactions({ auth, query }) {
      const { rows, page } = await transactions.list(auth.account.id, query);
      return { status: 200, body: { data: rows.map(transactionResource), page } };
    },
    async getTransaction({ auth, params }) {
      const t = await transactions.get(auth.account.id, fromId(params.transaction_id));
      return { status: 200, body: { data: transactionResource(t) } };
    },
  };
}
