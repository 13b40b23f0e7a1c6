// Human-mode requests on /api/v3: the five checks in order, every error code of the specification
// produced through HTTP, and the revocation effects.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJwt, decodeProtectedHeader, generateKeyPair } from 'jose';
import type { Booted } from '../helpers/app.ts';
import { rawRequest } from '../helpers/raw.ts';
import {
  Browser,
  bootOAuth,
  field,
  forge,
  human,
  login,
  serverSigningKey,
  setupAdmin,
  type Admin,
} from './helpers.ts';

const t = suite<{ b: Booted }>('oauth human mode');
t.before(async (ctx) => {
  ctx.b = await bootOAuth();
});
t.after(async (ctx) => ctx.b.close());

const PATH = '/api/v3/credentials/current';

async function call(b: Booted, admin: Admin, token: string) {
  return b.api('GET', PATH, human(admin.credentialSecret, token));
}

function expectError(res: { status: number; body: any }, status: number, code: string) {
  assert.is(res.status, status, code);
  assert.is(res.body.error.code, code);
}

t('autonomous mode shows human: null; human mode shows the administrator', async ({ b }) => {
  const admin = await setupAdmin(b);
  const auto = await b.api('GET', PATH, { secret: admin.credentialSecret });
  assert.is(auto.status, 200);
  assert.is(auto.body.data.human, null);
  const { tokens } = await login(b, admin);
  const res = await call(b, admin, tokens.access_token);
  assert.is(res.status, 200);
  assert.is(res.body.data.human.admin_id, String(admin.adminId));
  assert.type(res.body.data.human.eligible_since, 'string');
});

t(
  'human_context_required: API key without bearer; human_required used autonomously',
  async ({ b }) => {
    const admin = await setupAdmin(b, { authMode: 'human_required' });
    const keyOnly = await b.api('GET', PATH, {
      secret: null,
      headers: { 'x-api-key': admin.credentialSecret },
    });
    expectError(keyOnly, 401, 'human_context_required');
    expectError(
      await b.api('GET', PATH, { secret: admin.credentialSecret }),
      401,
      'human_context_required',
    );
    // A browser-like User-Agent changes nothing.
    const ua = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0' };
    expectError(
      await b.api('GET', PATH, { secret: admin.credentialSecret, headers: ua }),
      401,
      'human_context_required',
    );
    const { tokens } = await login(b, admin);
    assert.is((await call(b, admin, tokens.access_token)).status, 200);
  },
);

t(
  'ambiguous_credentials: duplicate headers, ID-token-shaped JWT, secret as bearer',
  async ({ b }) => {
    const admin = await setupAdmin(b);
    const { tokens } = await login(b, admin);
    const dupAuth = await rawRequest(b.url + PATH, 'GET', [
      ['X-API-Key', admin.credentialSecret],
      ['Authorization', `Bearer ${tokens.access_token}`],
      ['Authorization', `Bearer ${tokens.access_token}`],
    ]);
    assert.is(dupAuth.status, 401);
    assert.is(dupAuth.body.error.code, 'ambiguous_credentials');
    const dupKey = await rawRequest(b.url + PATH, 'GET', [
      ['X-API-Key', admin.credentialSecret],
      ['X-API-Key', admin.credentialSecret],
      ['Authorization', `Bearer ${tokens.access_token}`],
    ]);
    assert.is(dupKey.body.error.code, 'ambiguous_credentials');

    expectError(await call(b, admin, admin.credentialSecret), 401, 'ambiguous_credentials');

    // ID tokens: typ JWT (or none), the client as audience, nonce / azp claims. Signed by the
    // server's own key, so only their shape makes them wrong.
    const { kid, key } = await serverSigningKey(b);
    const claims = decodeJwt(tokens.access_token);
    const idTokens = [
      [{ kid, typ: 'JWT' }, claims],
      [{ kid }, claims],
      [
        { kid, typ: 'at+jwt' },
        { ...claims, aud: 'service-cli' },
      ],
      [
        { kid, typ: 'at+jwt' },
        { ...claims, nonce: 'n-0S6_WzA2Mj' },
      ],
      [
        { kid, typ: 'at+jwt' },
        { ...claims, azp: 'service-cli' },
      ],
    ] as const;
    for (const [header, body] of idTokens) {
      const token = await forge(key, header, body);
      expectError(await call(b, admin, token), 401, 'ambiguous_credentials');
    }
  },
);

t('human_mode_not_allowed: an autonomous credential with a valid token', async ({ b }) => {
  const admin = await setupAdmin(b, { authMode: 'autonomous' });
  const { tokens } = await login(b, admin);
  expectError(await call(b, admin, tokens.access_token), 403, 'human_mode_not_allowed');
});

t('invalid_access_token: signature, aud, typ, expiry, revocation, not a JWT', async ({ b }) => {
  const admin = await setupAdmin(b);
  const { tokens } = await login(b, admin);
  const { kid, key } = await serverSigningKey(b);
  const claims = decodeJwt(tokens.access_token);
  assert.is(decodeProtectedHeader(tokens.access_token).kid, kid);

  const [h, p, s] = tokens.access_token.split('.');
  const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: '999' })).toString('base64url')}.${s}`;
  const stranger = (await generateKeyPair('RS256')).privateKey;
  const invalid = [
    tampered,
    `${h}.${p}.${s!.slice(0, -4)}AAAA`,
    await forge(stranger, { kid, typ: 'at+jwt' }, claims),
    await forge(key, { kid, typ: 'at+jwt' }, { ...claims, aud: 'another-api' }),
    await forge(key, { kid, typ: 'at+jwt' }, { ...claims, iss: 'https://evil.example' }),
    await forge(key, { kid, typ: 'dpop+jwt' }, claims),
    await forge(key, { kid, typ: 'at+jwt' }, { ...claims, client_id: 'other' }),
    await forge(key, { kid, typ: 'at+jwt' }, { ...claims, jti: 'never-issued' }),
    await forge(key, { kid: 'unknown-kid', typ: 'at+jwt' }, claims),
    tokens.refresh_token!,
    'not-a-token',
  ];
  for (const token of invalid)
    expectError(await call(b, admin, token), 401, 'invalid_access_token');
  // Sanity: the same forging with the real claims is accepted.
  assert.is((await call(b, admin, await forge(key, { kid, typ: 'at+jwt' }, claims))).status, 200);

  b.clock.advance(3600_000 + 1000);
  expectError(await call(b, admin, tokens.access_token), 401, 'invalid_access_token');

  const again = await login(b, admin);
  await fetch(`${b.url}/oauth/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: again.tokens.access_token }),
  });
  expectError(await call(b, admin, again.tokens.access_token), 401, 'invalid_access_token');
});

t('tenant_mismatch: an administrator of another account', async ({ b }) => {
  const { id: otherAccount } = await b.app.services.accounts.createAccount({
    name: 'Other school',
  });
  const stranger = await setupAdmin(b, { accountId: otherAccount });
  const mine = await setupAdmin(b);
  const { tokens } = await login(b, stranger);
  expectError(await call(b, mine, tokens.access_token), 403, 'tenant_mismatch');
  assert.is((await call(b, stranger, tokens.access_token)).status, 200);
});

t(
  'admin_not_eligible: not linked, sign-out, unlink, removal; autonomous still works',
  async ({ b }) => {
    const accounts = b.app.services.accounts;
    const notLinked = await setupAdmin(b, { link: false });
    expectError(
      await call(b, notLinked, (await login(b, notLinked)).tokens.access_token),
      403,
      'admin_not_eligible',
    );

    // Sign-out of the browser session that granted the token.
    const a = await setupAdmin(b);
    const browser = new Browser(b.url);
    const { tokens } = await login(b, a, browser);
    assert.is((await call(b, a, tokens.access_token)).status, 200);
    const home = await browser.get('/admin');
    await browser.post('/admin/sign-out', { csrf: field(home.text, 'csrf') });
    expectError(await call(b, a, tokens.access_token), 403, 'admin_not_eligible');
    assert.is((await b.api('GET', PATH, { secret: a.credentialSecret })).status, 200);
    // Its refresh token is dead too.
    const refresh = await fetch(`${b.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: 'service-cli',
        refresh_token: tokens.refresh_token!,
      }),
    });
    assert.is((await refresh.json()).error, 'invalid_grant');

    const u = await setupAdmin(b);
    const ut = (await login(b, u)).tokens.access_token;
    await accounts.unlinkAdmin(u.adminId, u.credentialId);
    expectError(await call(b, u, ut), 403, 'admin_not_eligible');
    assert.is((await b.api('GET', PATH, { secret: u.credentialSecret })).status, 200);

    const r = await setupAdmin(b);
    const rt = (await login(b, r)).tokens.access_token;
    await accounts.removeAdmin(r.adminId);
    expectError(await call(b, r, rt), 403, 'admin_not_eligible');
    assert.is((await b.api('GET', PATH, { secret: r.credentialSecret })).status, 200);
  },
);

t('revoking the credential ends both modes', async ({ b }) => {
  const admin = await setupAdmin(b);
  const { tokens } = await login(b, admin);
  assert.is((await call(b, admin, tokens.access_token)).status, 200);
  await b.app.services.accounts.setCredentialStatus(admin.credentialId, 'revoked');
  expectError(await call(b, admin, tokens.access_token), 401, 'credential_revoked');
  expectError(
    await b.api('GET', PATH, { secret: admin.credentialSecret }),
    401,
    'credential_revoked',
  );
});

t.run();
