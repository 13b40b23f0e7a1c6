// Autonomous authentication and the account checks, through real HTTP.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { rawRequest } from '../helpers/raw.ts';

const t = suite<{ b: Booted }>('auth');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const code = (r: { body: any }) => r.body.error.code;

t('missing, malformed and unknown credentials are unauthenticated', async ({ b }) => {
  assert.is(
    code(await b.api('GET', '/api/v3/credentials/current', { secret: null })),
    'unauthenticated',
  );
  const malformed = await b.api('GET', '/api/v3/credentials/current', { secret: 'not-a-secret' });
  assert.is(malformed.status, 401);
  assert.is(code(malformed), 'unauthenticated');
  const unknown = await b.api('GET', '/api/v3/credentials/current', {
    secret: 'sch_live_' + 'A'.repeat(43),
  });
  assert.is(unknown.status, 401);
  assert.is(code(unknown), 'unauthenticated');
  const basic = await b.api('GET', '/api/v3/credentials/current', {
    headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
  });
  assert.is(code(basic), 'unauthenticated');
});

t('a valid credential authenticates and shows itself', async ({ b }) => {
  const res = await b.api('GET', '/api/v3/credentials/current');
  assert.is(res.status, 200);
  assert.is(res.body.data.id, String(b.credentialId));
  assert.is(res.body.data.status, 'active');
  assert.is(res.body.data.human, null);
  assert.equal(res.body.data.permissions, ['*']);
});

t('revoked, suspended and expired credentials have their own codes', async ({ b }) => {
  const accounts = b.app.services.accounts;
  for (const status of ['revoked', 'suspended', 'expired'] as const) {
    const c = await credentialWith(b, ['*']);
    assert.is(
      (await b.api('GET', '/api/v3/credentials/current', { secret: c.secret })).status,
      200,
    );
    await accounts.setCredentialStatus(c.id, status);
    const res = await b.api('GET', '/api/v3/credentials/current', { secret: c.secret });
    assert.is(res.status, 401);
    assert.is(code(res), `credential_${status}`);
  }
});

t('a credential past expires_at is expired (injectable clock)', async ({ b }) => {
  const expiresAt = new Date(b.clock.now().getTime() + 3_600_000).toISOString();
  const created = await b.api('POST', '/api/v3/credentials', {
    key: newKey(),
    body: { name: 'short-lived', permissions: ['users.read'], expires_at: expiresAt },
  });
  assert.is(created.status, 201);
  const secret = created.body.data.secret;
  assert.is((await b.api('GET', '/api/v3/credentials/current', { secret })).status, 200);
  b.clock.advance(3_600_000 + 1000);
  const res = await b.api('GET', '/api/v3/credentials/current', { secret });
  assert.is(res.status, 401);
  assert.is(code(res), 'credential_expired');
  const shown = await b.api('GET', `/api/v3/credentials/${created.body.data.id}`);
  assert.is(shown.body.data.status, 'expired');
});

t('a duplicated Authorization header is ambiguous', async ({ b }) => {
  const res = await rawRequest(`${b.url}/api/v3/credentials/current`, 'GET', [
    ['Authorization', `Bearer ${b.secret}`],
    ['Authorization', `Bearer ${b.secret}`],
  ]);
  assert.is(res.status, 401);
  assert.is(res.body.error.code, 'ambiguous_credentials');
});

t('human mode rules that need no access token', async ({ b }) => {
  const required = await credentialWith(b, ['*'], { authMode: 'human_required' });
  const alone = await b.api('GET', '/api/v3/credentials/current', { secret: required.secret });
  assert.is(alone.status, 401);
  assert.is(code(alone), 'human_context_required');

  const keyOnly = await b.api('GET', '/api/v3/credentials/current', {
    secret: null,
    headers: { 'x-api-key': b.secret },
  });
  assert.is(code(keyOnly), 'human_context_required');

  const secretAsBearer = await b.api('GET', '/api/v3/credentials/current', {
    headers: { 'x-api-key': b.secret },
  });
  assert.is(secretAsBearer.status, 401);
  assert.is(code(secretAsBearer), 'ambiguous_credentials');

  const autonomousHuman = await b.api('GET', '/api/v3/credentials/current', {
    headers: { 'x-api-key': b.secret, authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln' },
  });
  assert.is(autonomousHuman.status, 403);
  assert.is(code(autonomousHuman), 'human_mode_not_allowed');

  const both = await credentialWith(b, ['*'], { authMode: 'both' });
  const garbage = await b.api('GET', '/api/v3/credentials/current', {
    headers: { 'x-api-key': both.secret, authorization: 'Bearer not.a.jwt' },
  });
  assert.is(garbage.status, 401);
  assert.is(code(garbage), 'invalid_access_token');

  // A revoked credential is rejected before Authorization is looked at.
  await b.app.services.accounts.setCredentialStatus(both.id, 'revoked');
  const revoked = await b.api('GET', '/api/v3/credentials/current', {
    headers: { 'x-api-key': both.secret, authorization: 'Bearer not.a.jwt' },
  });
  assert.is(code(revoked), 'credential_revoked');
});

t('the User-Agent never decides the mode', async ({ b }) => {
  const res = await b.api('GET', '/api/v3/credentials/current', {
    headers: { 'user-agent': 'school-cli/1.0 (human)' },
  });
  assert.is(res.status, 200);
  assert.is(res.body.data.human, null);
});

t('blocked, removed and unavailable accounts', async ({ b }) => {
  const accounts = b.app.services.accounts;
  for (const [status, expected] of [
    ['blocked', 'instance_blocked'],
    ['removed', 'instance_blocked'],
    ['unavailable', 'instance_unavailable'],
  ] as const) {
    const { id } = await accounts.createAccount({ name: `acct ${status}` });
    const c = await accounts.createRootCredential({ accountId: id, permissions: ['*'] });
    await accounts.setAccountStatus(id, status);
    const res = await b.api('GET', '/api/v3/credentials/current', { secret: c.secret });
    assert.is(res.status, 403);
    assert.is(code(res), expected);
  }
});

t('permission_denied names the missing permission', async ({ b }) => {
  const reader = await credentialWith(b, ['users.read']);
  const res = await b.api('GET', '/api/v3/credentials', { secret: reader.secret });
  assert.is(res.status, 403);
  assert.is(code(res), 'permission_denied');
  assert.is(res.body.error.details[0].reason, 'credentials.read');
  const ok = await b.api('GET', '/api/v3/credentials/current', { secret: reader.secret });
  assert.is(ok.status, 200);
});

t('another account’s resource is 404, like a missing one', async ({ b }) => {
  const { id } = await b.app.services.accounts.createAccount({ name: 'Other school' });
  const other = await b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
  });
  const res = await b.api('GET', `/api/v3/credentials/${b.credentialId}`, { secret: other.secret });
  assert.is(res.status, 404);
  assert.is(code(res), 'not_found');
  const missing = await b.api('GET', '/api/v3/credentials/999999');
  assert.is(missing.status, 404);
  const notAnId = await b.api('GET', '/api/v3/credentials/abc');
  assert.is(notAnId.status, 404);
});

t('fails closed when the credential store cannot be read', async ({ b }) => {
  const credentials = b.app.services.credentials;
  const original = credentials.findBySecret;
  credentials.findBySecret = async () => {
    throw new Error('database is locked');
  };
  try {
    const res = await b.api('GET', '/api/v3/credentials/current');
    assert.is(res.status, 503);
    assert.is(code(res), 'credential_state_unverifiable');
  } finally {
    credentials.findBySecret = original;
  }
});

t.run();
