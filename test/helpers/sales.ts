// Small helpers for the sales and enrollments suites (test/v3/sales-*, enrollments-*).
import * as assert from 'uvu/assert';
import { newKey, type Booted } from './app.ts';

export const D = '/api/v3/sales/deliveries';

/** Creates a delivery (201 expected) and returns it. */
export async function delivery(b: Booted, body: Record<string, unknown>, secret?: string) {
  const res = await b.api('POST', D, {
    body: { gateway: 'generic', ...body },
    key: newKey(),
    secret,
  });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** Creates a student (201 expected) and returns it. */
export async function student(b: Booted, email: string, name = 'Ana Souza') {
  const res = await b.api('POST', '/api/v3/users', { body: { name, email }, key: newKey() });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** POSTs a gateway postback (outside /api/v3: no contract check, no credential). */
export async function postback(
  b: Booted,
  deliveryId: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${b.url}/postbacks/${deliveryId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A generic postback of one sale. */
export const sale = (over: Record<string, unknown> = {}) => ({
  transaction_id: 'T-1',
  status: 'approved',
  product_id: 'ext-1',
  client_name: 'Bia Lima',
  client_email: 'bia@example.com',
  ...over,
});

/** Rows of a table (for what no route shows: the outbox). */
export async function rows(b: Booted, table: string, where: Record<string, unknown> = {}) {
  return b.app.db(table).where(where).orderBy('id');
}
