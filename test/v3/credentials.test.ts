// Credential governance: create (secret once), delegation limits, update, revoke, delete, links.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('credentials');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

t('create shows the secret once; the secret works with exactly its permissions', async ({ b }) => {
  const res = await b.api('POST', '/api/v3/credentials', {
    key: newKey(),
    body: { name: 'CRM sync', permissions: ['credentials.read'], auth_mode: 'both' },
  });
  assert.is(res.status, 201);
  const c = res.body.data;
  assert.match(c.secret, /^sch_live_[0-9A-Za-z]{43}$/);
  assert.is(c.secret_last4, c.secret.slice(-4));
  assert.equal(
    [c.name, c.status, c.auth_mode, c.issuer_id, c.environment],
    ['CRM sync', 'active', 'both', String(b.credentialId), 'live'],
  );
  const me = await b.api('GET', '/api/v3/credentials/current', { secret: c.secret });
  assert.is(me.body.data.id, c.id);
  assert.is((await b.api('GET', '/api/v3/credentials', { secret: c.secret })).status, 200);
  assert.is(
    (
      await b.api('POST', '/api/v3/credentials', {
        secret: c.secret,
        key: newKey(),
        body: { name: 'x', permissions: ['credentials.read'] },
      })
    ).status,
    403,
  );
  const shown = await b.api('GET', `/api/v3/credentials/${c.id}`);
  assert.is(shown.body.data.secret, undefined);
  assert.is(shown.headers.get('etag'), `"${shown.body.data.revision}"`);
});

t('a delegated credential cannot get more than its issuer', async ({ b }) => {
  const issuer = await credentialWith(b, ['credentials.manage', 'users.read']);
  const more = await b.api('POST', '/api/v3/credentials', {
    secret: issuer.secret,
    key: newKey(),
    body: { name: 'too much', permissions: ['users.read', 'users.write'] },
  });
  assert.is(more.status, 403);
  assert.is(more.body.error.code, 'delegation_limit_exceeded');
  assert.equal(
    more.body.error.details.map((d: any) => d.message),
    ['users.write'],
  );
  const star = await b.api('POST', '/api/v3/credentials', {
    secret: issuer.secret,
    key: newKey(),
    body: { name: 'star', permissions: ['*'] },
  });
  assert.is(star.body.error.code, 'delegation_limit_exceeded');
  const within = await b.api('POST', '/api/v3/credentials', {
    secret: issuer.secret,
    key: newKey(),
    body: { name: 'ok', permissions: ['users.read'] },
  });
  assert.is(within.status, 201);
  const widen = await b.api('PATCH', `/api/v3/credentials/${within.body.data.id}`, {
    secret: issuer.secret,
    body: { permissions: ['users.read', 'users.write'] },
  });
  assert.is(widen.body.error.code, 'delegation_limit_exceeded');
});

t('list is newest first with a cursor, filterable by status', async ({ b }) => {
  const page1 = await b.api('GET', '/api/v3/credentials?limit=2');
  assert.is(page1.body.data.length, 2);
  assert.ok(page1.body.data[0].created_at >= page1.body.data[1].created_at);
  const page2 = await b.api(
    'GET',
    `/api/v3/credentials?limit=2&cursor=${encodeURIComponent(page1.body.page.next_cursor)}`,
  );
  assert.is(page2.status, 200);
  const ids = new Set([...page1.body.data, ...page2.body.data].map((c: any) => c.id));
  assert.is(ids.size, page1.body.data.length + page2.body.data.length);
  const c = await credentialWith(b, ['users.read']);
  await b.app.services.accounts.setCredentialStatus(c.id, 'revoked');
  const revoked = await b.api('GET', '/api/v3/credentials?status=revoked');
  assert.ok(revoked.body.data.length >= 1);
  for (const r of revoked.body.data) assert.is(r.status, 'revoked');
  const badStatus = await b.api('GET', '/api/v3/credentials?status=sleeping');
  assert.is(badStatus.status, 422);
});

t('PATCH renames with If-Match; a stale ETag is 412', async ({ b }) => {
  const c = await credentialWith(b, ['users.read']);
  const got = await b.api('GET', `/api/v3/credentials/${c.id}`);
  const etag = got.headers.get('etag')!;
  const ok = await b.api('PATCH', `/api/v3/credentials/${c.id}`, {
    headers: { 'if-match': etag },
    body: { name: 'renamed' },
  });
  assert.is(ok.status, 200);
  assert.is(ok.body.data.name, 'renamed');
  assert.is.not(ok.headers.get('etag'), etag);
  const stale = await b.api('PATCH', `/api/v3/credentials/${c.id}`, {
    headers: { 'if-match': etag },
    body: { name: 'again' },
  });
  assert.is(stale.status, 412);
  assert.is(stale.body.error.code, 'revision_mismatch');
  const empty = await b.api('PATCH', `/api/v3/credentials/${c.id}`, { body: {} });
  assert.is(empty.status, 422);
});

t('revoking ends the credential; revoked ones answer 422 to management', async ({ b }) => {
  const c = await credentialWith(b, ['users.read']);
  const res = await b.api('POST', `/api/v3/credentials/${c.id}/revocations`, { key: newKey() });
  assert.is(res.status, 200);
  assert.is(res.body.data.status, 'revoked');
  assert.ok(res.body.data.revoked_at);
  const use = await b.api('GET', '/api/v3/credentials/current', { secret: c.secret });
  assert.is(use.body.error.code, 'credential_revoked');
  const twice = await b.api('POST', `/api/v3/credentials/${c.id}/revocations`, { key: newKey() });
  assert.is(twice.status, 422);
  assert.is(twice.body.error.code, 'credential_revoked');
  const patch = await b.api('PATCH', `/api/v3/credentials/${c.id}`, { body: { name: 'x' } });
  assert.is(patch.status, 422);
  assert.is(patch.body.error.code, 'credential_revoked');
});

t('DELETE removes an unused credential; a used one is not removable', async ({ b }) => {
  const unused = await credentialWith(b, ['users.read']);
  const del = await b.api('DELETE', `/api/v3/credentials/${unused.id}`);
  assert.is(del.status, 204);
  assert.is((await b.api('GET', `/api/v3/credentials/${unused.id}`)).status, 404);
  const used = await credentialWith(b, ['users.read']);
  await b.api('GET', '/api/v3/credentials/current', { secret: used.secret });
  const refused = await b.api('DELETE', `/api/v3/credentials/${used.id}`);
  assert.is(refused.status, 422);
  assert.is(refused.body.error.code, 'credential_not_removable');
});

t('administrators are linked and unlinked within the account', async ({ b }) => {
  const accounts = b.app.services.accounts;
  const admin = await accounts.createAdmin({
    accountId: b.accountId,
    email: 'ana@school.test',
    password: 'correct horse',
  });
  const c = await credentialWith(b, ['users.read'], { authMode: 'both' });
  const link = await b.api('PUT', `/api/v3/credentials/${c.id}/administrators/${admin.id}`);
  assert.is(link.status, 200);
  assert.equal(
    [link.body.data.credential_id, link.body.data.admin_id],
    [String(c.id), String(admin.id)],
  );
  const again = await b.api('PUT', `/api/v3/credentials/${c.id}/administrators/${admin.id}`);
  assert.is(again.body.data.created_at, link.body.data.created_at);
  const { id: otherAccount } = await accounts.createAccount({ name: 'Other' });
  const stranger = await accounts.createAdmin({
    accountId: otherAccount,
    email: 'bob@other.test',
    password: 'x',
  });
  const foreign = await b.api('PUT', `/api/v3/credentials/${c.id}/administrators/${stranger.id}`);
  assert.is(foreign.status, 404);
  assert.is(
    (await b.api('DELETE', `/api/v3/credentials/${c.id}/administrators/${admin.id}`)).status,
    204,
  );
  assert.is(
    (await b.api('DELETE', `/api/v3/credentials/${c.id}/administrators/${admin.id}`)).status,
    404,
  );
});

t.run();
