// The `generic` gateway: our own JSON postback, for gateways without a parser of their own.
//   {transaction_id, recurrence_id?, status, product_id | product_ids[], client_name,
//    client_email, client_doc?, client_phone?}
// `status` is one of the normalized sale statuses.
import {
  PayloadProblems,
  SALE_STATUSES,
  emailText,
  idText,
  isObject,
  optionalText,
  type SaleEvent,
  type SaleStatus,
} from './postback-fields.ts';

const MAX_PRODUCTS = 100;

export function parseGeneric(body: unknown): SaleEvent {
  const p = new PayloadProblems();
  if (!isObject(body)) {
    p.add('', 'invalid_type', 'The postback must be a JSON object.');
    p.throwIfAny();
  }
  const b = body as Record<string, unknown>;
  const transactionId = idText(b.transaction_id, 'transaction_id', p);
  const recurrenceId = idText(b.recurrence_id, 'recurrence_id', p, false);
  const status = b.status as SaleStatus;
  if (!SALE_STATUSES.includes(status))
    p.add('status', 'invalid_value', `Must be one of: ${SALE_STATUSES.join(', ')}.`);
  const productIds: string[] = [];
  if (b.product_ids !== undefined) {
    if (
      !Array.isArray(b.product_ids) ||
      !b.product_ids.length ||
      b.product_ids.length > MAX_PRODUCTS
    )
      p.add('product_ids', 'invalid', `Must be an array of 1 to ${MAX_PRODUCTS} product ids.`);
    else
      b.product_ids.forEach((v, i) => {
        const id = idText(v, `product_ids.${i}`, p);
        if (id !== null) productIds.push(id);
      });
  }
  if (b.product_id !== undefined) {
    const id = idText(b.product_id, 'product_id', p);
    if (id !== null) productIds.push(id);
  }
  if (b.product_id === undefined && b.product_ids === undefined)
    p.add('product_id', 'required', 'Send product_id or product_ids.');
  const name = optionalText(b.client_name, 'client_name', 200, p);
  const email = emailText(b.client_email, 'client_email', p);
  const doc = optionalText(b.client_doc, 'client_doc', 40, p);
  const phone = optionalText(b.client_phone, 'client_phone', 40, p);
  p.throwIfAny();
  return {
    transactionId: transactionId!,
    recurrenceId,
    status,
    productIds: [...new Set(productIds)],
    client: { name, email, doc, phone },
  };
}
