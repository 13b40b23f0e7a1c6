import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { P, account, all, mod, names, product } from '../helpers/catalog.ts';

const t = suite<{ b: Booted }>('v3 catalog: products');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

t('POST /products: a draft by default, with an ETag; GET returns it', async ({ b }) => {
  const res = await b.api('POST', P, {
    body: { name: '  Python from zero ', description: ' Twelve weeks ' },
    key: newKey(),
  });
  assert.is(res.status, 201);
  const p = res.body.data;
  assert.match(p.id, /^[1-9][0-9]*$/);
  assert.equal(p, {
    object: 'product',
    id: p.id,
    name: 'Python from zero',
    description: 'Twelve weeks',
    status: 'draft',
    replica: false,
    modules_count: 0,
    revision: p.revision,
    created_at: p.created_at,
    updated_at: p.created_at,
  });
  assert.is(res.headers.get('etag'), `"${p.revision}"`);
  assert.ok(Math.abs(Date.parse(p.created_at) - b.clock.now().getTime()) < 5000);
  const got = await b.api('GET', `${P}/${p.id}`);
  assert.is(got.status, 200);
  assert.equal(got.body.data, p);
  assert.is(got.headers.get('etag'), `"${p.revision}"`);

  const published = await product(b, { name: 'Live', status: 'published', description: '  ' });
  assert.is(published.status, 'published');
  assert.is(published.description, null);
});

t('POST needs an Idempotency-Key; a replay creates nothing new', async ({ b }) => {
  const none = await b.api('POST', P, { body: { name: 'No key' } });
  assert.is(none.status, 422);
  assert.is(none.body.error.code, 'idempotency_key_required');
  const key = newKey();
  const first = await b.api('POST', P, { body: { name: 'Once' }, key });
  const again = await b.api('POST', P, { body: { name: 'Once' }, key });
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body, first.body);
  const once = (await all(b, `${P}?limit=200`)).filter((x) => x.name === 'Once');
  assert.is(once.length, 1);
});

t('PATCH: only fields present, If-Match guards, null clears description', async ({ b }) => {
  const p = await product(b, { name: 'Patchable', description: 'old' });
  const stale = await b.api('PATCH', `${P}/${p.id}`, {
    body: { name: 'Nope' },
    headers: { 'if-match': '"stale"' },
  });
  assert.is(stale.status, 412);
  assert.is(stale.body.error.code, 'revision_mismatch');
  const ok = await b.api('PATCH', `${P}/${p.id}`, {
    body: { name: ' Renamed ', description: null },
    headers: { 'if-match': `"${p.revision}"` },
  });
  assert.is(ok.status, 200);
  const u = ok.body.data;
  assert.equal(u, {
    ...p,
    name: 'Renamed',
    description: null,
    revision: u.revision,
    updated_at: u.updated_at,
  });
  assert.is.not(u.revision, p.revision);
  assert.is(ok.headers.get('etag'), `"${u.revision}"`);
  const pub = await b.api('PATCH', `${P}/${p.id}`, { body: { status: 'published' } });
  assert.is(pub.body.data.status, 'published');
  assert.is(pub.body.data.name, 'Renamed');
  const bad = await b.api('PATCH', `${P}/${p.id}`, { body: { status: 'archived' } });
  assert.is(bad.status, 422);
  assert.is(bad.body.error.code, 'validation_failed');
  const unknown = await b.api('PATCH', `${P}/${p.id}`, { body: { modules_count: 3 } });
  assert.is(unknown.status, 422);
  assert.is(unknown.body.error.code, 'unknown_field');
  const empty = await b.api('PATCH', `${P}/${p.id}`, { body: {} });
  assert.is(empty.status, 422);
  const blank = await b.api('POST', P, { body: { name: '   ' }, key: newKey() });
  assert.is(blank.status, 422);
  assert.is(blank.body.error.code, 'validation_failed');
});

t('list: newest first, created_at, status filter, cursor pages', async ({ b }) => {
  const other = await account(b, 'List school');
  const made = [];
  for (const [name, status] of [
    ['A', 'draft'],
    ['B', 'published'],
    ['C', 'draft'],
    ['D', 'published'],
  ]) {
    made.push(await product(b, { name, status }, other.secret));
    b.clock.advance(1000);
  }
  const list = await b.api('GET', P, { secret: other.secret });
  assert.is(list.status, 200);
  assert.equal(names(list.body.data), ['D', 'C', 'B', 'A']);
  assert.equal(list.body.page, { limit: 50, next_cursor: null, prev_cursor: null });
  const asc = await b.api('GET', `${P}?sort=created_at`, { secret: other.secret });
  assert.equal(names(asc.body.data), ['A', 'B', 'C', 'D']);
  const drafts = await b.api('GET', `${P}?status=draft`, { secret: other.secret });
  assert.equal(names(drafts.body.data), ['C', 'A']);
  const page1 = await b.api('GET', `${P}?limit=3&sort=created_at`, { secret: other.secret });
  assert.equal(names(page1.body.data), ['A', 'B', 'C']);
  const page2 = await b.api(
    'GET',
    `${P}?limit=3&sort=created_at&cursor=${encodeURIComponent(page1.body.page.next_cursor)}`,
    { secret: other.secret },
  );
  assert.equal(names(page2.body.data), ['D']);
  assert.is(page2.body.page.next_cursor, null);
  // A cursor of one account's list is refused on another's.
  const foreign = await b.api(
    'GET',
    `${P}?limit=3&sort=created_at&cursor=${encodeURIComponent(page1.body.page.next_cursor)}`,
  );
  assert.is(foreign.status, 400);
  assert.is(foreign.body.error.code, 'invalid_cursor');
  for (const limit of ['0', '201']) {
    const res = await b.api('GET', `${P}?limit=${limit}`, { secret: other.secret });
    assert.is(res.status, 422);
    assert.is(res.body.error.code, 'validation_failed');
  }
  // Another account's product is 404, on every operation.
  const theirs = made[0];
  assert.is((await b.api('GET', `${P}/${theirs.id}`)).status, 404);
  assert.is((await b.api('PATCH', `${P}/${theirs.id}`, { body: { name: 'x' } })).status, 404);
  assert.is((await b.api('DELETE', `${P}/${theirs.id}`)).status, 404);
  assert.is((await b.api('GET', `${P}/2147483648`)).status, 404);
});

t('permissions: products.read reads, products.write writes', async ({ b }) => {
  const reader = await credentialWith(b, ['products.read']);
  const denied = await b.api('POST', P, {
    body: { name: 'R' },
    key: newKey(),
    secret: reader.secret,
  });
  assert.is(denied.status, 403);
  assert.is(denied.body.error.code, 'permission_denied');
  assert.equal(
    denied.body.error.details.map((d: any) => d.reason),
    ['products.write'],
  );
  assert.is((await b.api('GET', P, { secret: reader.secret })).status, 200);
  const writer = await credentialWith(b, ['products.write']);
  const created = await product(b, { name: 'By writer' }, writer.secret);
  assert.is((await b.api('GET', `${P}/${created.id}`, { secret: writer.secret })).status, 403);
  const none = await credentialWith(b, ['users.read']);
  assert.is((await b.api('GET', P, { secret: none.secret })).status, 403);
});

t('modules_count counts groups and modules outside the trash', async ({ b }) => {
  const p = await product(b, { name: 'Counted' });
  const g = await mod(b, p.id, { name: 'G', kind: 'group' });
  await mod(b, p.id, { name: 'M1', kind: 'module', parent_id: g.id });
  const m2 = await mod(b, p.id, { name: 'M2', kind: 'module' });
  assert.is((await b.api('GET', `${P}/${p.id}`)).body.data.modules_count, 3);
  await b.api('DELETE', `${P}/${p.id}/modules/${m2.id}`);
  assert.is((await b.api('GET', `${P}/${p.id}`)).body.data.modules_count, 2);
  await b.api('DELETE', `${P}/${p.id}/modules/${g.id}`);
  assert.is((await b.api('GET', `${P}/${p.id}`)).body.data.modules_count, 0);
});

t('DELETE removes the product, its modules and schedules; the tags stay', async ({ b }) => {
  const p = await product(b, { name: 'Doomed course' });
  const m = await mod(b, p.id, { name: 'M', kind: 'module' });
  const [sched] = (await b.api('GET', `${P}/${p.id}/access-schedules`)).body.data;
  const stale = await b.api('DELETE', `${P}/${p.id}`, { headers: { 'if-match': '"x"' } });
  assert.is(stale.status, 412);
  const del = await b.api('DELETE', `${P}/${p.id}`, { headers: { 'if-match': `"${p.revision}"` } });
  assert.is(del.status, 204);
  assert.is((await b.api('GET', `${P}/${p.id}`)).status, 404);
  assert.is((await b.api('GET', `${P}/${p.id}/modules`)).status, 404);
  assert.is((await b.api('GET', `${P}/${p.id}/modules/${m.id}`)).status, 404);
  assert.is((await b.api('GET', `${P}/${p.id}/access-schedules/${sched.id}`)).status, 404);
  assert.is((await b.api('DELETE', `${P}/${p.id}`)).status, 404);
  const tag = await b.api('GET', `/api/v3/tags/${sched.tag_id}`);
  assert.is(tag.status, 200);
  assert.is(tag.body.data.name, 'Doomed course');
  // No longer a schedule's tag: an ordinary tag that can be deleted.
  assert.is((await b.api('DELETE', `/api/v3/tags/${sched.tag_id}`)).status, 204);
  const rows = await b.app.db('modules').where('product_id', Number(p.id)).count({ n: '*' });
  assert.is(Number(rows[0]!.n), 0);
});

t.run();
