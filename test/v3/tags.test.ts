import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('v3 tags');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const createTag = (b: Booted, name: string, secret?: string) =>
  b.api('POST', '/api/v3/tags', { body: { name }, key: newKey(), secret });

const createUser = async (b: Booted, email: string, secret?: string) =>
  (await b.api('POST', '/api/v3/users', { body: { name: email, email }, key: newKey(), secret }))
    .body.data;

t('tags CRUD: create, get, rename with If-Match, delete', async ({ b }) => {
  const res = await createTag(b, ' Gold ');
  assert.is(res.status, 201);
  const tag = res.body.data;
  assert.equal(tag, {
    object: 'tag',
    id: tag.id,
    name: 'Gold',
    users_count: 0,
    revision: tag.revision,
    created_at: tag.created_at,
    updated_at: tag.created_at,
  });
  assert.is(res.headers.get('etag'), `"${tag.revision}"`);

  const got = await b.api('GET', `/api/v3/tags/${tag.id}`);
  assert.is(got.status, 200);
  assert.equal(got.body.data, tag);
  assert.is(got.headers.get('etag'), `"${tag.revision}"`);

  const stale = await b.api('PATCH', `/api/v3/tags/${tag.id}`, {
    body: { name: 'Platinum' },
    headers: { 'if-match': '"nope"' },
  });
  assert.is(stale.status, 412);
  assert.is(stale.body.error.code, 'revision_mismatch');

  const renamed = await b.api('PATCH', `/api/v3/tags/${tag.id}`, {
    body: { name: 'Platinum' },
    headers: { 'if-match': `"${tag.revision}"` },
  });
  assert.is(renamed.status, 200);
  assert.is(renamed.body.data.name, 'Platinum');
  assert.is.not(renamed.body.data.revision, tag.revision);
  assert.is(renamed.headers.get('etag'), `"${renamed.body.data.revision}"`);

  const del = await b.api('DELETE', `/api/v3/tags/${tag.id}`, {
    headers: { 'if-match': `"${renamed.body.data.revision}"` },
  });
  assert.is(del.status, 204);
  assert.is((await b.api('GET', `/api/v3/tags/${tag.id}`)).status, 404);
  assert.is((await b.api('DELETE', `/api/v3/tags/${tag.id}`)).status, 404);
});

t('tag names are unique per account, case-insensitively (create and rename)', async ({ b }) => {
  const vip = (await createTag(b, 'VIP')).body.data;
  const dup = await createTag(b, 'vip');
  assert.is(dup.status, 409);
  assert.is(dup.body.error.code, 'already_exists');
  assert.is(dup.body.error.details[0].field, 'name');
  const other = (await createTag(b, 'Basic')).body.data;
  const clash = await b.api('PATCH', `/api/v3/tags/${other.id}`, { body: { name: 'Vip' } });
  assert.is(clash.status, 409);
  assert.is(clash.body.error.code, 'already_exists');
  // Renaming a tag to its own name in another case is not a clash.
  const recase = await b.api('PATCH', `/api/v3/tags/${vip.id}`, { body: { name: 'vip' } });
  assert.is(recase.status, 200);
  assert.is(recase.body.data.name, 'vip');
  const blank = await createTag(b, '   ');
  assert.is(blank.status, 422);
  assert.is(blank.body.error.code, 'validation_failed');
});

t('list is sorted by name (case-insensitive) or -name; name filter', async ({ b }) => {
  const { id: acc } = await b.app.services.accounts.createAccount({ name: 'Tag school' });
  const { secret } = await b.app.services.accounts.createRootCredential({
    accountId: acc,
    permissions: ['*'],
  });
  for (const n of ['beta', 'Alpha', 'gamma'])
    assert.is((await createTag(b, n, secret)).status, 201);
  const asc = await b.api('GET', '/api/v3/tags', { secret });
  assert.is(asc.status, 200);
  assert.equal(
    asc.body.data.map((x: any) => x.name),
    ['Alpha', 'beta', 'gamma'],
  );
  assert.equal(asc.body.page, { limit: 50, next_cursor: null, prev_cursor: null });
  const desc = await b.api('GET', '/api/v3/tags?sort=-name', { secret });
  assert.equal(
    desc.body.data.map((x: any) => x.name),
    ['gamma', 'beta', 'Alpha'],
  );
  const page = await b.api('GET', '/api/v3/tags?limit=2', { secret });
  assert.equal(
    page.body.data.map((x: any) => x.name),
    ['Alpha', 'beta'],
  );
  const next = await b.api(
    'GET',
    `/api/v3/tags?limit=2&cursor=${encodeURIComponent(page.body.page.next_cursor)}`,
    { secret },
  );
  assert.equal(
    next.body.data.map((x: any) => x.name),
    ['gamma'],
  );
  assert.is(next.body.page.next_cursor, null);
  const byName = await b.api('GET', '/api/v3/tags?name=ALPHA', { secret });
  assert.equal(
    byName.body.data.map((x: any) => x.name),
    ['Alpha'],
  );
});

t('user tags: add twice, list by name, remove, 404 when absent', async ({ b }) => {
  const u = await createUser(b, 'tagged@example.com');
  const zeta = (await createTag(b, 'zeta')).body.data;
  const eta = (await createTag(b, 'Eta')).body.data;
  const path = (tagId: string) => `/api/v3/users/${u.id}/tags/${tagId}`;

  const add = await b.api('PUT', path(zeta.id));
  assert.is(add.status, 200);
  assert.equal(add.body.data, { ...zeta, users_count: 1 });
  const twice = await b.api('PUT', path(zeta.id), { key: newKey() });
  assert.is(twice.status, 200);
  assert.is(twice.body.data.users_count, 1);
  assert.is(twice.body.data.revision, zeta.revision);
  assert.is((await b.api('PUT', path(eta.id))).status, 200);

  const list = await b.api('GET', `/api/v3/users/${u.id}/tags`);
  assert.is(list.status, 200);
  assert.equal(
    list.body.data.map((x: any) => [x.name, x.users_count]),
    [
      ['Eta', 1],
      ['zeta', 1],
    ],
  );

  const inUse = await b.api('DELETE', `/api/v3/tags/${zeta.id}`);
  assert.is(inUse.status, 409);
  assert.is(inUse.body.error.code, 'tag_in_use');
  assert.is((await b.api('GET', `/api/v3/tags/${zeta.id}`)).body.data.users_count, 1);

  const removed = await b.api('DELETE', path(zeta.id));
  assert.is(removed.status, 204);
  const again = await b.api('DELETE', path(zeta.id));
  assert.is(again.status, 404);
  assert.is(again.body.error.code, 'not_found');
  assert.equal(
    (await b.api('GET', `/api/v3/users/${u.id}/tags`)).body.data.map((x: any) => x.name),
    ['Eta'],
  );
  assert.is((await b.api('DELETE', `/api/v3/tags/${zeta.id}`)).status, 204);

  assert.is((await b.api('PUT', path('999999'))).status, 404);
  assert.is((await b.api('PUT', `/api/v3/users/999999/tags/${eta.id}`)).status, 404);
});

t('deleting a user removes their tags (users_count drops)', async ({ b }) => {
  const u = await createUser(b, 'leaving@example.com');
  const tag = (await createTag(b, 'alumni')).body.data;
  await b.api('PUT', `/api/v3/users/${u.id}/tags/${tag.id}`);
  assert.is((await b.api('GET', `/api/v3/tags/${tag.id}`)).body.data.users_count, 1);
  assert.is((await b.api('DELETE', `/api/v3/users/${u.id}`, { key: newKey() })).status, 204);
  assert.is((await b.api('GET', `/api/v3/tags/${tag.id}`)).body.data.users_count, 0);
  assert.is((await b.api('DELETE', `/api/v3/tags/${tag.id}`)).status, 204);
});

t('tag_id filter on GET /users', async ({ b }) => {
  const a = await createUser(b, 'filter-a@example.com');
  const c = await createUser(b, 'filter-c@example.com');
  await createUser(b, 'filter-none@example.com');
  const tag = (await createTag(b, 'cohort-1')).body.data;
  await b.api('PUT', `/api/v3/users/${a.id}/tags/${tag.id}`);
  await b.api('PUT', `/api/v3/users/${c.id}/tags/${tag.id}`);
  const res = await b.api('GET', `/api/v3/users?tag_id=${tag.id}&sort=created_at`);
  assert.is(res.status, 200);
  assert.equal(
    res.body.data.map((x: any) => x.id),
    [a.id, c.id],
  );
  const none = await b.api('GET', '/api/v3/users?tag_id=999999');
  assert.equal(none.body.data, []);
});

t("another account's tag or user is 404 on the user-tag routes", async ({ b }) => {
  const mine = await createUser(b, 'cross@example.com');
  const myTag = (await createTag(b, 'cross')).body.data;
  const { id: acc } = await b.app.services.accounts.createAccount({ name: 'Cross school' });
  const { secret } = await b.app.services.accounts.createRootCredential({
    accountId: acc,
    permissions: ['*'],
  });
  const theirs = await createUser(b, 'cross@example.com', secret);
  const theirTag = (await createTag(b, 'cross', secret)).body.data;
  for (const [u, tg] of [
    [theirs.id, myTag.id],
    [mine.id, theirTag.id],
  ]) {
    const res = await b.api('PUT', `/api/v3/users/${u}/tags/${tg}`);
    assert.is(res.status, 404);
    assert.is(res.body.error.code, 'not_found');
  }
  assert.is((await b.api('GET', `/api/v3/tags/${theirTag.id}`)).status, 404);
  assert.is((await b.api('DELETE', `/api/v3/tags/${theirTag.id}`)).status, 404);
  assert.is((await b.api('GET', `/api/v3/tags/${myTag.id}`, { secret })).status, 404);
  // Their tag as a filter of my list matches nothing.
  await b.api('PUT', `/api/v3/users/${theirs.id}/tags/${theirTag.id}`, { secret });
  assert.equal((await b.api('GET', `/api/v3/users?tag_id=${theirTag.id}`)).body.data, []);
});

t('permissions: tags.read cannot create; users.write needed to assign', async ({ b }) => {
  const reader = await credentialWith(b, ['tags.read', 'users.read']);
  const denied = await createTag(b, 'nope', reader.secret);
  assert.is(denied.status, 403);
  assert.is(denied.body.error.code, 'permission_denied');
  assert.is((await b.api('GET', '/api/v3/tags', { secret: reader.secret })).status, 200);
  const u = await createUser(b, 'perm@example.com');
  const tag = (await createTag(b, 'perm')).body.data;
  const put = await b.api('PUT', `/api/v3/users/${u.id}/tags/${tag.id}`, {
    secret: reader.secret,
  });
  assert.is(put.status, 403);
  assert.is(put.body.error.code, 'permission_denied');
});

t.run();
