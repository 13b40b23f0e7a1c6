// The `marketplace` gateway: a marketplace checkout's webhook (event + data), which always
// requires the delivery's secret.
//   {event: "PURCHASE_APPROVED", data: {product: {id}, buyer: {name, email, document,
//    checkout_phone}, purchase: {transaction, status}, subscription?: {subscriber: {code}}}}
// A subscription cancellation may carry no purchase: its subscriber code stands in for the
// transaction id. Events about anything but access (a boleto printed, a plan switched) are
// acknowledged and ignored.
import {
  PayloadProblems,
  emailText,
  idText,
  isObject,
  optionalText,
  type IgnoredPostback,
  type SaleEvent,
  type SaleStatus,
} from './postback-fields.ts';

const EVENTS: Record<string, SaleStatus> = {
  PURCHASE_APPROVED: 'approved',
  PURCHASE_COMPLETE: 'approved',
  PURCHASE_REFUNDED: 'refunded',
  PURCHASE_CANCELED: 'canceled',
  PURCHASE_CHARGEBACK: 'chargeback',
  SUBSCRIPTION_CANCELLATION: 'subscription_canceled',
};

const obj = (v: unknown): Record<string, unknown> => (isObject(v) ? v : {});

export function parseMarketplace(body: unknown): SaleEvent | IgnoredPostback {
  const p = new PayloadProblems();
  if (!isObject(body) || typeof body.event !== 'string') {
    p.add('event', 'required', 'The webhook must be a JSON object with an `event`.');
    p.throwIfAny();
  }
  const b = body as Record<string, unknown>;
  // Own keys only: an event named `constructor` or `__proto__` is not a sale status.
  const status = Object.hasOwn(EVENTS, b.event as string) ? EVENTS[b.event as string] : undefined;
  if (!status) return { ignored: 'unsupported_event' };
  const data = obj(b.data);
  const purchase = obj(data.purchase);
  const subscriber = obj(obj(data.subscription).subscriber);
  const buyer = isObject(data.buyer) ? data.buyer : obj(data.subscriber);
  const recurrenceId = idText(subscriber.code, 'data.subscription.subscriber.code', p, false);
  const transactionId =
    purchase.transaction === undefined && recurrenceId !== null
      ? recurrenceId
      : idText(purchase.transaction, 'data.purchase.transaction', p);
  const productId = idText(obj(data.product).id, 'data.product.id', p);
  const name = optionalText(buyer.name, 'data.buyer.name', 200, p);
  const email = emailText(buyer.email, 'data.buyer.email', p);
  const doc = optionalText(buyer.document, 'data.buyer.document', 40, p);
  const phone = optionalText(buyer.checkout_phone, 'data.buyer.checkout_phone', 40, p);
  p.throwIfAny();
  return {
    transactionId: transactionId!,
    recurrenceId,
    status,
    productIds: [productId!],
    client: { name, email, doc, phone },
  };
}
