// Deliveries through HTTP: the gateway catalog, every field of a delivery, secrets that are never
// shown, external ids owned by one delivery, what it grants, archive and restore with their
// permission, the access schedules' deliveries[] and trash rule, replica copies, tenancy.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { P, account, all, product } from '../helpers/catalog.ts';
import { D, delivery } from '../helpers/sales.ts';

const t = suite<{ b: Booted }>('v3 sales: deliveries');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const create = (b: Booted, body: Record<string, unknown>, secret?: string) =>
  b.api('POST', D, { body: { gateway: 'generic', ...body }, key: newKey(), secret });
const schedulesOf = async (b: Booted, productId: string) =>
  (await b.api('GET', `${P}/${productId}/access-schedules`)).body.data;

t('GET /sales/gateways lists the catalog', async ({ b }) => {
  const res = await b.api('GET', '/api/v3/sales/gateways');
  assert.is(res.status, 200);
  assert.equal(res.body.data, [
    { object: 'gateway', key: 'generic', name: 'Generic (JSON)', secret_required: false },
    { object: 'gateway', key: 'marketplace', name: 'Marketplace checkout', secret_required: true },
  ]);
});

t('POST creates a delivery with every field; the secret is never shown', async ({ b }) => {
  const p = await product(b, { name: 'Guitar' });
  const [schedule] = await schedulesOf(b, p.id);
  const tag = (await b.api('POST', '/api/v3/tags', { body: { name: 'Guitarists' }, key: newKey() }))
    .body.data;
  const res = await create(b, {
    name: '  Guitar yearly ',
    external_ids: [' g-1', 'g-2', 'g-1'],
    products: [{ product_id: p.id }],
    tag_ids: [tag.id],
    duration: 12,
    duration_unit: 'month',
    secret: 'a-long-secret',
    hidden: true,
  });
  assert.is(res.status, 201);
  const d = res.body.data;
  assert.equal(d, {
    object: 'delivery',
    id: d.id,
    gateway: 'generic',
    name: 'Guitar yearly',
    postback_url: d.postback_url,
    revision: d.revision,
    kind: 'one_time',
    status: 'active',
    hidden: true,
    replica: false,
    external_ids: ['g-1', 'g-2'],
    products: [{ product_id: p.id, access_schedule_id: schedule.id }],
    tag_ids: [tag.id],
    duration: 12,
    duration_unit: 'month',
    enrollments_count: 0,
    products_count: 1,
    tags_count: 1,
    secret: { configured: true },
    created_at: d.created_at,
    updated_at: d.created_at,
  });
  assert.is(res.headers.get('etag'), `"${d.revision}"`);
  assert.not.ok(res.text.includes('a-long-secret'));
  const got = await b.api('GET', `${D}/${d.id}`);
  assert.equal(got.body.data, d);
  assert.is(got.headers.get('etag'), `"${d.revision}"`);
  // Lifetime by default, and a generated secret (shown in this response only).
  const plain = await delivery(b, { name: 'Plain' });
  assert.equal(
    [plain.duration, plain.duration_unit, plain.secret.configured, plain.external_ids, plain.kind],
    [null, 'lifetime', true, [], 'one_time'],
  );
  assert.match(plain.secret.generated, /^pbsec_[A-Za-z0-9_-]{43}$/);
  const again = (await b.api('GET', `${D}/${plain.id}`)).body.data;
  assert.equal(again.secret, { configured: true });
});

t('POST rejections: gateway, secret, taken ids, references, duration', async ({ b }) => {
  const p = await product(b, { name: 'Drums' });
  const other = await product(b, { name: 'Bass' });
  const [otherSchedule] = await schedulesOf(b, other.id);
  const code = async (body: Record<string, unknown>) => {
    const res = await create(b, { name: 'X', ...body });
    return [res.status, res.body.error.code, res.body.error.details.map((d: any) => d.field)];
  };
  assert.equal(await code({ gateway: 'paypal' }), [422, 'validation_failed', ['gateway']]);
  assert.equal(await code({ gateway: 'marketplace' }), [422, 'validation_failed', ['secret']]);
  assert.equal(await code({ secret: 'short' }), [422, 'validation_failed', ['secret']]);
  await delivery(b, { name: 'Owner', external_ids: ['taken'] });
  const taken = await create(b, { name: 'X', external_ids: ['free', 'taken'] });
  assert.equal([taken.status, taken.body.error.code], [409, 'already_exists']);
  assert.equal(taken.body.error.details[0].reason, 'external_id_taken');
  // Another gateway may use the same id.
  await delivery(b, {
    gateway: 'marketplace',
    secret: 'secret-123',
    name: 'M',
    external_ids: ['taken'],
  });
  assert.equal(
    await code({
      products: [
        { product_id: '999999' },
        { product_id: p.id, access_schedule_id: otherSchedule.id },
        { product_id: p.id },
      ],
      tag_ids: ['999999'],
    }),
    [
      422,
      'validation_failed',
      ['products.0.product_id', 'products.1.access_schedule_id', 'tag_ids.0'],
    ],
  );
  assert.equal(await code({ products: [{ product_id: p.id }, { product_id: p.id }] }), [
    422,
    'validation_failed',
    ['products.1.product_id'],
  ]);
  assert.equal(await code({ duration_unit: 'month' }), [422, 'validation_failed', ['duration']]);
  assert.equal(await code({ duration: 3 }), [422, 'validation_failed', ['duration']]);
  assert.equal(await code({ status: 'archived' }), [422, 'unknown_field', ['status']]);
  const narrow = await credentialWith(b, ['deliveries.read']);
  const denied = await create(b, { name: 'X' }, narrow.secret);
  assert.equal([denied.status, denied.body.error.code], [403, 'permission_denied']);
});

t('list: newest first, filters, cursor pages', async ({ b }) => {
  const { id: accountId, secret } = await account(b, 'Lists school');
  const mk = (body: Record<string, unknown>) => delivery(b, body, secret);
  const a = await mk({ name: 'A', external_ids: ['x-a'] });
  const m = await mk({ gateway: 'marketplace', secret: 'secret-123', name: 'M' });
  const c = await mk({ name: 'C' });
  await b.api('PATCH', `${D}/${c.id}`, { body: { status: 'archived' }, secret });
  const names = async (q: string) =>
    (await all(b, `${D}?limit=1${q}`, secret)).map((d: any) => d.name);
  assert.equal(await names(''), ['C', 'M', 'A']);
  assert.equal(await names('&sort=created_at'), ['A', 'M', 'C']);
  assert.equal(await names('&gateway=marketplace'), ['M']);
  assert.equal(await names('&status=archived'), ['C']);
  assert.equal(await names('&status=active'), ['M', 'A']);
  assert.equal(await names('&external_id=x-a'), ['A']);
  assert.ok(accountId > 0 && m.id && a.id);
  // Another account's deliveries are not there, and not reachable.
  assert.is((await b.api('GET', `${D}/${a.id}`)).status, 404);
  assert.is((await b.api('PATCH', `${D}/${a.id}`, { body: { name: 'Z' } })).status, 404);
});

t('PATCH: fields, lists replaced whole, If-Match, secrets', async ({ b }) => {
  const p1 = await product(b, { name: 'Piano' });
  const p2 = await product(b, { name: 'Organ' });
  const d = await delivery(b, {
    name: 'Keys',
    external_ids: ['k-1'],
    products: [{ product_id: p1.id }],
  });
  const stale = await b.api('PATCH', `${D}/${d.id}`, {
    body: { name: 'Nope' },
    headers: { 'if-match': '"other"' },
  });
  assert.equal([stale.status, stale.body.error.code], [412, 'revision_mismatch']);
  const res = await b.api('PATCH', `${D}/${d.id}`, {
    body: {
      name: 'Keys bundle',
      kind: 'subscription',
      external_ids: ['k-2', 'k-3'],
      products: [{ product_id: p2.id }, { product_id: p1.id }],
      duration: 30,
      duration_unit: 'day',
      hidden: true,
    },
    headers: { 'if-match': `"${d.revision}"` },
  });
  assert.is(res.status, 200);
  const u = res.body.data;
  assert.equal(
    [
      u.name,
      u.kind,
      u.external_ids,
      u.products.map((x: any) => x.product_id),
      u.duration,
      u.hidden,
    ],
    ['Keys bundle', 'subscription', ['k-2', 'k-3'], [p1.id, p2.id].sort(), 30, true],
  );
  assert.is.not(u.revision, d.revision);
  // The ids it let go are free again.
  await delivery(b, { name: 'Reuse', external_ids: ['k-1'] });
  const lifetime = await b.api('PATCH', `${D}/${d.id}`, { body: { duration_unit: 'lifetime' } });
  assert.equal([lifetime.body.data.duration, lifetime.body.data.duration_unit], [null, 'lifetime']);
  const set = await b.api('PATCH', `${D}/${d.id}`, { body: { secret: 'a-new-secret' } });
  assert.equal(set.body.data.secret, { configured: true });
  const cleared = await b.api('PATCH', `${D}/${d.id}`, { body: { secret: null } });
  assert.equal(cleared.body.data.secret, { configured: false });
  const m = await delivery(b, { gateway: 'marketplace', secret: 'secret-123', name: 'M2' });
  const refused = await b.api('PATCH', `${D}/${m.id}`, { body: { secret: null } });
  assert.equal([refused.status, refused.body.error.details[0].reason], [422, 'secret_required']);
  const gateway = await b.api('PATCH', `${D}/${m.id}`, { body: { gateway: 'generic' } });
  assert.equal([gateway.status, gateway.body.error.code], [422, 'unknown_field']);
});

t('status needs deliveries.archive besides deliveries.update', async ({ b }) => {
  const d = await delivery(b, { name: 'Perm' });
  const update = await credentialWith(b, ['deliveries.update']);
  const both = await credentialWith(b, ['deliveries.update', 'deliveries.archive']);
  const renamed = await b.api('PATCH', `${D}/${d.id}`, {
    body: { name: 'Renamed' },
    secret: update.secret,
  });
  assert.is(renamed.status, 200);
  const denied = await b.api('PATCH', `${D}/${d.id}`, {
    body: { status: 'archived' },
    secret: update.secret,
  });
  assert.equal([denied.status, denied.body.error.code], [403, 'permission_denied']);
  assert.is(denied.body.error.details[0].reason, 'deliveries.archive');
  assert.is((await b.api('GET', `${D}/${d.id}`)).body.data.status, 'active');
  const archived = await b.api('PATCH', `${D}/${d.id}`, {
    body: { status: 'archived' },
    secret: both.secret,
  });
  assert.equal([archived.status, archived.body.data.status], [200, 'archived']);
  // Archived deliveries can still be retrieved, and restored.
  assert.is((await b.api('GET', `${D}/${d.id}`)).body.data.status, 'archived');
  const restored = await b.api('PATCH', `${D}/${d.id}`, {
    body: { status: 'active' },
    secret: both.secret,
  });
  assert.is(restored.body.data.status, 'active');
});

t('access schedules show their deliveries; an active one blocks the trash', async ({ b }) => {
  const p = await product(b, { name: 'Violin' });
  const s = (
    await b.api('POST', `${P}/${p.id}/access-schedules`, {
      body: { name: 'Violin - monthly' },
      key: newKey(),
    })
  ).body.data;
  const d = await delivery(b, {
    name: 'Violin',
    products: [{ product_id: p.id, access_schedule_id: s.id }],
  });
  const got = (await b.api('GET', `${P}/${p.id}/access-schedules/${s.id}`)).body.data;
  assert.equal([got.deliveries, got.deliveries_count], [[{ id: d.id }], 1]);
  const blocked = await b.api('DELETE', `${P}/${p.id}/access-schedules/${s.id}`);
  assert.equal([blocked.status, blocked.body.error.details[0].reason], [409, 'schedule_in_use']);
  await b.api('PATCH', `${D}/${d.id}`, { body: { status: 'archived' } });
  assert.is((await b.api('DELETE', `${P}/${p.id}/access-schedules/${s.id}`)).status, 204);
  // A delivery cannot grant a schedule in the trash, nor come back while it is there.
  const trashed = await create(b, {
    name: 'T',
    products: [{ product_id: p.id, access_schedule_id: s.id }],
  });
  assert.equal([trashed.status, trashed.body.error.details[0].reason], [422, 'schedule_in_trash']);
  const restore = await b.api('PATCH', `${D}/${d.id}`, { body: { status: 'active' } });
  assert.equal([restore.status, restore.body.error.details[0].reason], [409, 'schedule_in_trash']);
  await b.api('PATCH', `${P}/${p.id}/access-schedules/${s.id}`, { body: { deleted: false } });
  assert.is((await b.api('PATCH', `${D}/${d.id}`, { body: { status: 'active' } })).status, 200);
});

t('a replica account holds read-only copies that grant its product copies', async ({ b }) => {
  const { id: replicaId, secret } = await account(b, 'Replica school', b.accountId);
  const p = await product(b, { name: 'Cello' });
  const d = await delivery(b, {
    name: 'Cello',
    external_ids: ['c-1'],
    products: [{ product_id: p.id }],
  });
  const [copy] = (await b.api('GET', D, { secret })).body.data;
  const [copyProduct] = (await b.api('GET', P, { secret })).body.data;
  const [copySchedule] = (await b.api('GET', `${P}/${copyProduct.id}/access-schedules`, { secret }))
    .body.data;
  assert.equal(
    [copy.name, copy.replica, copy.external_ids, copy.products, copy.status],
    [
      'Cello',
      true,
      ['c-1'],
      [{ product_id: copyProduct.id, access_schedule_id: copySchedule.id }],
      'active',
    ],
  );
  assert.is.not(copy.id, d.id);
  for (const body of [{ name: 'Mine' }, { status: 'archived' }]) {
    const res = await b.api('PATCH', `${D}/${copy.id}`, { body, secret });
    assert.equal([res.status, res.body.error.code], [403, 'replica_readonly']);
  }
  // Writes to the source reach the copy.
  await b.api('PATCH', `${D}/${d.id}`, { body: { name: 'Cello 2', status: 'archived' } });
  const again = (await b.api('GET', `${D}/${copy.id}`, { secret })).body.data;
  assert.equal([again.name, again.status], ['Cello 2', 'archived']);
  assert.ok(replicaId > b.accountId);
});

t.run();
