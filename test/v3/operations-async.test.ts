// Operations started by their own routes: product publications (and the product.publish_all
// batch type) and sandbox resets.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { account, mod, product, P } from '../helpers/catalog.ts';
import { allItems, submit, waitFor } from '../helpers/operations.ts';

const t = suite<{ b: Booted }>('v3 publications and sandbox resets');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

t('POST /products/{id}/publications publishes the product and its modules', async ({ b }) => {
  const replica = await account(b, 'Replica', b.accountId);
  const p = await product(b, { name: 'Algebra' });
  const m1 = await mod(b, p.id, { name: 'Intro', kind: 'module' });
  const m2 = await mod(b, p.id, { name: 'Part 1', kind: 'group' });
  assert.is(p.status, 'draft');

  const res = await b.api('POST', `${P}/${p.id}/publications`, { key: newKey() });
  assert.is(res.status, 202);
  assert.is(res.body.data.type, 'product.publish_all');
  assert.equal(res.body.data.progress, { total: 1, done: 0, failed: 0 });
  assert.is(res.headers.get('location'), `/api/v3/operations/${res.body.data.id}`);
  const op = await waitFor(b, res.body.data.id);
  assert.is(op.status, 'succeeded');
  const [item] = await allItems(b, op.id);
  assert.equal(item.result, { product_id: p.id });

  assert.is((await b.api('GET', `${P}/${p.id}`)).body.data.status, 'published');
  for (const m of [m1, m2])
    assert.is((await b.api('GET', `${P}/${p.id}/modules/${m.id}`)).body.data.status, 'published');
  // The copy in the replica account is published with it, and cannot be published from there.
  const copies = await b.api('GET', P, { secret: replica.secret });
  const copy = copies.body.data.find((x: any) => x.name === 'Algebra');
  assert.is(copy.status, 'published');
  const refused = await b.api('POST', `${P}/${copy.id}/publications`, {
    key: newKey(),
    secret: replica.secret,
  });
  assert.is(refused.status, 403);
  assert.is(refused.body.error.code, 'replica_readonly');

  const missing = await b.api('POST', `${P}/999999/publications`, { key: newKey() });
  assert.is(missing.status, 404);
});

t('product.publish_all as a batch: one item at most', async ({ b }) => {
  const p = await product(b, { name: 'Geometry' });
  const two = await submit(b, 'product.publish_all', [
    { key: 'a', payload: { product_id: p.id } },
    { key: 'b', payload: { product_id: p.id } },
  ]);
  assert.is(two.status, 422);
  assert.is(two.body.error.code, 'too_many_items');
  const one = await submit(b, 'product.publish_all', [{ key: 'a', payload: { product_id: p.id } }]);
  assert.is(one.status, 202);
  assert.is((await waitFor(b, one.body.data.id)).status, 'succeeded');
  assert.is((await b.api('GET', `${P}/${p.id}`)).body.data.status, 'published');
});

t('a production account cannot be reset: 403 sandbox_only', async ({ b }) => {
  const res = await b.api('POST', '/api/v3/sandbox/resets', { key: newKey() });
  assert.is(res.status, 403);
  assert.is(res.body.error.code, 'sandbox_only');
  const batch = await submit(b, 'sandbox.reset', [{ key: 'r', payload: {} }]);
  assert.is(batch.body.error.code, 'operation_type_unknown');
});

t(
  'a sandbox reset empties students, tags, catalog and operations; credentials stay',
  async ({ b }) => {
    const { id } = await b.app.services.accounts.createAccount({ name: 'Sandbox', sandbox: true });
    const { secret } = await b.app.services.accounts.createRootCredential({
      accountId: id,
      permissions: ['*'],
    });
    const as = { secret };
    const u = await b.api('POST', '/api/v3/users', {
      ...as,
      body: { name: 'Ana', email: 'ana@example.com' },
      key: newKey(),
    });
    const tag = await b.api('POST', '/api/v3/tags', {
      ...as,
      body: { name: 'vip' },
      key: newKey(),
    });
    await b.api('PUT', `/api/v3/users/${u.body.data.id}/tags/${tag.body.data.id}`, as);
    await product(b, { name: 'Sandbox course' }, secret);
    const earlier = await submit(
      b,
      'users.upsert',
      [{ key: 'a', payload: { email: 'bia@example.com', name: 'Bia' } }],
      as,
    );
    await waitFor(b, earlier.body.data.id, undefined, secret);

    const res = await b.api('POST', '/api/v3/sandbox/resets', { ...as, key: newKey() });
    assert.is(res.status, 202);
    assert.is(res.body.data.type, 'sandbox.reset');
    const op = await waitFor(b, res.body.data.id, undefined, secret);
    assert.is(op.status, 'succeeded');
    const [item] = await allItems(b, op.id, secret);
    assert.equal(item.result, {
      users: 2,
      tags: 2,
      diamonds: 0,
      imports: 0,
      exports: 0,
      operations: 1,
      files: 0,
      uploads: 0,
    });

    for (const path of ['/api/v3/users', '/api/v3/tags', P]) {
      const list = await b.api('GET', path, as);
      assert.equal(list.body.data, [], path);
    }
    assert.is((await b.api('GET', `/api/v3/operations/${earlier.body.data.id}`, as)).status, 404);
    assert.is((await b.api('GET', '/api/v3/credentials/current', as)).status, 200);
    // The production account next to it was not touched.
    assert.ok((await b.api('GET', P)).body.data.length > 0);
  },
);

t.run();
