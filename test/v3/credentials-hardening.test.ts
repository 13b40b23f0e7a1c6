// Credential hardening: a credential manages only credentials it could have issued, a child never
// outlives its issuer chain, and an expires_at Date cannot represent is a 422.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('credentials-hardening');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

/** POST /credentials as `secret` (the root by default); returns the created credential. */
async function issue(
  b: Booted,
  body: { name: string; permissions: string[]; expires_at?: string },
  secret?: string,
) {
  const res = await b.api('POST', '/api/v3/credentials', { secret, key: newKey(), body });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

const inMs = (b: Booted, ms: number) => new Date(b.clock.now().getTime() + ms).toISOString();

async function authError(b: Booted, secret: string): Promise<string | number> {
  const res = await b.api('GET', '/api/v3/credentials/current', { secret });
  return res.status === 200 ? 200 : res.body.error.code;
}

t('a credential cannot PATCH, revoke, delete or link a credential holding more', async ({ b }) => {
  // users.read is delegable by this caller, so only the target's `*` stands in the way.
  const limited = await credentialWith(b, ['credentials.manage', 'credentials.read', 'users.read']);
  const star = await credentialWith(b, ['*']);
  const as = { secret: limited.secret };

  const patch = await b.api('PATCH', `/api/v3/credentials/${star.id}`, {
    ...as,
    body: { permissions: ['users.read'] },
  });
  assert.is(patch.status, 403);
  assert.is(patch.body.error.code, 'delegation_limit_exceeded');
  assert.equal(patch.body.error.details, [
    {
      code: 'delegation_limit_exceeded',
      message: '*',
      reason: 'credential_holds_permission',
    },
  ]);
  const rename = await b.api('PATCH', `/api/v3/credentials/${star.id}`, {
    ...as,
    body: { name: 'mine now' },
  });
  assert.is(rename.body.error.code, 'delegation_limit_exceeded');

  const revoke = await b.api('POST', `/api/v3/credentials/${star.id}/revocations`, {
    ...as,
    key: newKey(),
  });
  assert.is(revoke.status, 403);
  assert.is(revoke.body.error.code, 'delegation_limit_exceeded');

  const del = await b.api('DELETE', `/api/v3/credentials/${star.id}`, as);
  assert.is(del.status, 403);
  assert.is(del.body.error.code, 'delegation_limit_exceeded');

  const admin = await b.app.services.accounts.createAdmin({
    accountId: b.accountId,
    email: 'hardening@school.test',
    password: 'correct horse',
  });
  const link = await b.api('PUT', `/api/v3/credentials/${star.id}/administrators/${admin.id}`, as);
  assert.is(link.status, 403);
  assert.is(link.body.error.code, 'delegation_limit_exceeded');
  const unlink = await b.api(
    'DELETE',
    `/api/v3/credentials/${star.id}/administrators/${admin.id}`,
    as,
  );
  assert.is(unlink.status, 403);
  assert.is(unlink.body.error.code, 'delegation_limit_exceeded');

  // Reading stays allowed, and the target is untouched.
  const got = await b.api('GET', `/api/v3/credentials/${star.id}`, as);
  assert.is(got.status, 200);
  assert.equal(
    [got.body.data.status, got.body.data.permissions, got.body.data.name],
    ['active', ['*'], 'Root credential'],
  );
  assert.is(await authError(b, star.secret), 200);
});

t('a partial overlap is refused and names what the caller lacks', async ({ b }) => {
  const limited = await credentialWith(b, ['credentials.manage', 'users.read']);
  const wider = await credentialWith(b, ['users.read', 'users.write', 'tags.read']);
  const res = await b.api('POST', `/api/v3/credentials/${wider.id}/revocations`, {
    secret: limited.secret,
    key: newKey(),
  });
  assert.is(res.status, 403);
  assert.equal(
    res.body.error.details.map((d: any) => d.message),
    ['users.write', 'tags.read'],
  );
  assert.is(await authError(b, wider.secret), 200);
});

t('a credential manages what it could have issued; `*` manages anything', async ({ b }) => {
  const limited = await credentialWith(b, ['credentials.manage', 'users.read']);
  const narrow = await credentialWith(b, ['users.read']);
  const patch = await b.api('PATCH', `/api/v3/credentials/${narrow.id}`, {
    secret: limited.secret,
    body: { name: 'renamed by a peer' },
  });
  assert.is(patch.status, 200);
  assert.is(patch.body.data.name, 'renamed by a peer');
  const revoke = await b.api('POST', `/api/v3/credentials/${narrow.id}/revocations`, {
    secret: limited.secret,
    key: newKey(),
  });
  assert.is(revoke.status, 200);
  assert.is(revoke.body.data.status, 'revoked');

  const star = await credentialWith(b, ['*']);
  const down = await b.api('PATCH', `/api/v3/credentials/${star.id}`, {
    body: { permissions: ['users.read'] },
  });
  assert.is(down.status, 200);
  assert.equal(down.body.data.permissions, ['users.read']);
});

t('a child gets at most its issuer expires_at, and stops with it', async ({ b }) => {
  const parentExpiry = inMs(b, 20_000);
  const parent = await issue(b, {
    name: 'short-lived',
    permissions: ['credentials.manage', 'credentials.read'],
    expires_at: parentExpiry,
  });
  assert.is(parent.expires_at, parentExpiry);
  const unbounded = await issue(
    b,
    { name: 'c1', permissions: ['credentials.read'] },
    parent.secret,
  );
  const later = await issue(
    b,
    { name: 'c2', permissions: ['credentials.read'], expires_at: inMs(b, 3_600_000) },
    parent.secret,
  );
  const soonerExpiry = inMs(b, 10_000);
  const sooner = await issue(
    b,
    { name: 'c3', permissions: ['credentials.read'], expires_at: soonerExpiry },
    parent.secret,
  );
  assert.equal(
    [unbounded.expires_at, later.expires_at, sooner.expires_at],
    [parentExpiry, parentExpiry, soonerExpiry],
  );
  assert.is(await authError(b, unbounded.secret), 200);

  b.clock.advance(21_000);
  assert.is(await authError(b, parent.secret), 'credential_expired');
  assert.is(await authError(b, unbounded.secret), 'credential_expired');
  assert.is(await authError(b, later.secret), 'credential_expired');
  const shown = await b.api('GET', `/api/v3/credentials/${unbounded.id}`);
  assert.is(shown.body.data.status, 'expired');
});

t('a child stored without the cap still stops when its issuer expires', async ({ b }) => {
  const parent = await issue(b, {
    name: 'expiring issuer',
    permissions: ['credentials.manage', 'credentials.read'],
    expires_at: inMs(b, 20_000),
  });
  const child = await issue(
    b,
    { name: 'old child', permissions: ['credentials.read'] },
    parent.secret,
  );
  // As rows issued before the cap look: no expiry of their own.
  await b.app.db('credentials').where('id', Number(child.id)).update({ expires_at: null });
  assert.is(await authError(b, child.secret), 200);
  b.clock.advance(21_000);
  assert.is(await authError(b, child.secret), 'credential_expired');
});

t('revoking an issuer ends everything it issued, down the chain', async ({ b }) => {
  const parent = await issue(b, {
    name: 'parent',
    permissions: ['credentials.manage', 'credentials.read', 'users.read'],
  });
  const child = await issue(
    b,
    { name: 'child', permissions: ['credentials.manage', 'users.read'] },
    parent.secret,
  );
  const grandchild = await issue(
    b,
    { name: 'grandchild', permissions: ['users.read'] },
    child.secret,
  );
  assert.is((await b.api('GET', '/api/v3/users', { secret: grandchild.secret })).status, 200);

  const revoked = await b.api('POST', `/api/v3/credentials/${parent.id}/revocations`, {
    key: newKey(),
  });
  assert.is(revoked.status, 200);
  assert.is(await authError(b, child.secret), 'credential_revoked');
  assert.is(await authError(b, grandchild.secret), 'credential_revoked');
  const users = await b.api('GET', '/api/v3/users', { secret: grandchild.secret });
  assert.is(users.status, 401);
  for (const id of [child.id, grandchild.id]) {
    const shown = (await b.api('GET', `/api/v3/credentials/${id}`)).body.data;
    assert.equal([shown.status, shown.revoked_at], ['revoked', revoked.body.data.revoked_at]);
  }
});

t('an issuer suspended, expired or revoked outside the API stops its children', async ({ b }) => {
  const accounts = b.app.services.accounts;
  const parent = await issue(b, {
    name: 'parent',
    permissions: ['credentials.manage', 'credentials.read'],
  });
  const child = await issue(b, { name: 'child', permissions: ['credentials.read'] }, parent.secret);
  const parentId = Number(parent.id);

  await accounts.setCredentialStatus(parentId, 'suspended');
  assert.is(await authError(b, child.secret), 'credential_suspended');
  await accounts.setCredentialStatus(parentId, 'active');
  assert.is(await authError(b, child.secret), 200);
  await accounts.setCredentialStatus(parentId, 'expired');
  assert.is(await authError(b, child.secret), 'credential_expired');
  await accounts.setCredentialStatus(parentId, 'revoked');
  assert.is(await authError(b, child.secret), 'credential_revoked');
  // Human mode looks the credential up the same way.
  const human = await b.api('GET', '/api/v3/credentials/current', {
    secret: null,
    headers: { 'x-api-key': child.secret, authorization: 'Bearer not-a-token' },
  });
  assert.is(human.body.error.code, 'credential_revoked');
});

t('an expires_at Date cannot hold (a leap second) is 422 on expires_at', async ({ b }) => {
  for (const expires_at of ['2030-12-31T23:59:60Z', '2030-12-31T20:59:60-03:00']) {
    const res = await b.api('POST', '/api/v3/credentials', {
      key: newKey(),
      body: { name: 'leap', permissions: ['users.read'], expires_at },
    });
    assert.is(res.status, 422, expires_at);
    assert.is(res.body.error.code, 'validation_failed');
    assert.equal(
      res.body.error.details.map((d: any) => [d.field, d.code]),
      [['expires_at', 'invalid_format']],
    );
  }
  // PATCH does not take expires_at at all.
  const c = await credentialWith(b, ['users.read']);
  const patch = await b.api('PATCH', `/api/v3/credentials/${c.id}`, {
    body: { expires_at: '2030-12-31T23:59:60Z' },
  });
  assert.is(patch.status, 422);
  assert.is(patch.body.error.code, 'unknown_field');
});

t.run();
