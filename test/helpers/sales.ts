// Small helpers for the sales and enrollments suites (test/v3/sales-*, enrollments-*).
import * as assert from 'uvu/assert';
import { newKey, type Booted } from './app.ts';

export const D = '/api/v3/sales/deliveries';

/** The secrets the server generated for deliveries these tests created, by postback URL. */
const generated = new Map<string, string>();

/** Creates a delivery (201 expected) and returns it. */
export async function delivery(b: Booted, body: Record<string, unknown>, secret?: string) {
  const res = await b.api('POST', D, {
    body: { gateway: 'generic', ...body },
    key: newKey(),
    secret,
  });
  assert.is(res.status, 201, JSON.stringify(res.body));
  const d = res.body.data;
  if (d.secret.generated) generated.set(d.postback_url, d.secret.generated);
  return d;
}

/** A delivery's postback URL, as GET shows it. */
export async function postbackUrl(b: Booted, deliveryId: string): Promise<string> {
  const res = await b.api('GET', `${D}/${deliveryId}`);
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.data.postback_url;
}

/** Creates a student (201 expected) and returns it. */
export async function student(b: Booted, email: string, name = 'Ana Souza') {
  const res = await b.api('POST', '/api/v3/users', { body: { name, email }, key: newKey() });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

/**
 * POSTs a gateway postback (outside /api/v3: no contract check, no credential) to the delivery's
 * postback URL, with its generated secret unless `headers` say otherwise.
 */
export async function postback(
  b: Booted,
  delivery: string | { postback_url: string },
  body: unknown,
  headers: Record<string, string> = {},
) {
  const url = typeof delivery === 'string' ? await postbackUrl(b, delivery) : delivery.postback_url;
  const secret = generated.get(url);
  const auth: Record<string, string> = secret ? { 'x-postback-secret': secret } : {};
  return postTo(url, body, { ...auth, ...headers });
}

/** POSTs a postback body to any URL. */
export async function postTo(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
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
