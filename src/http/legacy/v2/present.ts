// Domain objects in v2's shapes: deliveries, access entries and transactions, times as
// `{iso, unix}` (unix seconds as a string).
import type { Delivery, DeliveryKind } from '../../../domain/sales/deliveries-repo.ts';
import type { SaleTransaction } from '../../../domain/sales/transactions-repo.ts';
import type { Enrollment } from '../../../domain/enrollments/types.ts';
import { postbackUrl } from '../../../domain/sales/secrets.ts';

export const time = (iso: string) => ({
  iso,
  unix: String(Math.floor(Date.parse(iso) / 1000)),
});

/** v2 `type` <-> v3 `kind`. */
export const V2_TYPE: Record<DeliveryKind, string> = {
  one_time: 'single',
  subscription: 'subscription',
};
export const kindOf = (type: string): DeliveryKind =>
  type === 'subscription' ? 'subscription' : 'one_time';

/** `config_url` is where the gateway sends its postbacks (v3's postback_url). */
export function delivery(d: Delivery, publicBaseUrl: string) {
  return {
    id: d.id,
    name: d.name,
    type: V2_TYPE[d.kind],
    external_ids: d.externalIds,
    config_url: postbackUrl(d, publicBaseUrl),
  };
}

export function accessEntry(
  e: Enrollment,
  t: { transactionId: string; recurrenceId: string | null },
) {
  return {
    id: e.id,
    active: !e.ended,
    delivery_id: e.deliveryId,
    recurrence_id: t.recurrenceId,
    transaction_id: t.transactionId,
    created_at: time(e.createdAt),
  };
}

/** Statuses in capitals, as v2 always showed them (PROCESSED, TRIAL). */
const upper = (s: string | null) => (s === null ? null : s.toUpperCase());

export function transaction(t: SaleTransaction) {
  return {
    id: t.id,
    engine: t.engine,
    transaction_id: t.transactionId,
    recurrence_id: t.recurrenceId,
    product_id: t.productIds,
    client_name: t.clientName,
    client_email: t.clientEmail,
    client_doc: t.clientDoc,
    client_phone: t.clientPhone,
    created_at: time(t.createdAt),
    error: t.error,
    status: t.status.toUpperCase(),
    transaction_status: upper(t.transactionStatus),
    recurrence_status: upper(t.recurrenceStatus),
  };
}
