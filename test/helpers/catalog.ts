// Small helpers for the catalog suites (test/v3/catalog-*.test.ts).
import * as assert from 'uvu/assert';
import { newKey, type Booted } from './app.ts';

export const P = '/api/v3/products';

/** Creates a product (201 expected) and returns it. */
export async function product(
  b: Booted,
  body: Record<string, unknown> = { name: 'Course' },
  secret?: string,
) {
  const res = await b.api('POST', P, { body, key: newKey(), secret });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** Creates a module or group (201 expected) and returns it. */
export async function mod(
  b: Booted,
  productId: string,
  body: Record<string, unknown>,
  secret?: string,
) {
  const res = await b.api('POST', `${P}/${productId}/modules`, { body, key: newKey(), secret });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** Every page of a list, following next_cursor. */
export async function all(b: Booted, path: string, secret?: string): Promise<any[]> {
  const out: any[] = [];
  let url = path;
  for (;;) {
    const res = await b.api('GET', url, { secret });
    assert.is(res.status, 200, JSON.stringify(res.body));
    out.push(...res.body.data);
    const next = res.body.page.next_cursor;
    if (!next) return out;
    url = `${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(next)}`;
  }
}

/** A second account with a root credential; `replicaOf` makes it a replica. */
export async function account(b: Booted, name: string, replicaOf?: number) {
  const { id } = await b.app.services.accounts.createAccount({ name, replicaOf });
  const { secret } = await b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
  });
  return { id, secret };
}

export const names = (rows: any[]) => rows.map((r) => r.name);
