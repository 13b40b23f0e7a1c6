// The whole flow with oauth4webapi as the client against the real server: discovery, PKCE,
// sign-in with cookies and TOTP, consent, code exchange, refresh rotation, reuse detection and
// revocation.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as oauth from 'oauth4webapi';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { Booted } from '../helpers/app.ts';
import { CLIENT, INSECURE, bootOAuth, human, login, setupAdmin, tokenRequest } from './helpers.ts';

const t = suite<{ b: Booted }>('oauth flow');
t.before(async (ctx) => {
  ctx.b = await bootOAuth();
});
t.after(async (ctx) => ctx.b.close());

t('discovery is the RFC 8414 document with exactly the specified fields', async ({ b }) => {
  const res = await fetch(`${b.url}/.well-known/oauth-authorization-server`);
  assert.is(res.status, 200);
  assert.equal(await res.json(), {
    issuer: b.url,
    authorization_endpoint: `${b.url}/oauth/authorize`,
    token_endpoint: `${b.url}/oauth/token`,
    revocation_endpoint: `${b.url}/oauth/revoke`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
  });
});

t('login, human-mode call, refresh rotation, reuse revokes the family', async ({ b }) => {
  const admin = await setupAdmin(b);
  const { as, tokens } = await login(b, admin);
  assert.is(tokens.token_type.toLowerCase(), 'bearer');
  assert.is(tokens.expires_in, 3600);
  assert.type(tokens.refresh_token, 'string');
  assert.is(Object.keys(tokens).sort().join(), 'access_token,expires_in,refresh_token,token_type');

  // RFC 9068 claims.
  const header = decodeProtectedHeader(tokens.access_token);
  assert.is(header.typ, 'at+jwt');
  assert.is(header.alg, 'RS256');
  const claims = decodeJwt(tokens.access_token);
  assert.is(claims.iss, b.url);
  assert.is(claims.aud, 'service-api-v3');
  assert.is(claims.sub, String(admin.adminId));
  assert.is(claims.client_id, 'service-cli');
  assert.type(claims.jti, 'string');
  assert.is(claims.exp! - claims.iat!, 3600);

  const me = await b.api(
    'GET',
    '/api/v3/credentials/current',
    human(admin.credentialSecret, tokens.access_token),
  );
  assert.is(me.status, 200);
  assert.is(me.body.data.id, String(admin.credentialId));
  assert.is(me.body.data.human.admin_id, String(admin.adminId));
  assert.is(me.body.data.human.expires_at, new Date(claims.exp! * 1000).toISOString());

  // The audit entry of the human-mode call names the administrator.
  const requestId = me.headers.get('x-request-id')!;
  const audit = await b.api('GET', `/api/v3/requests/${requestId}`, {
    secret: admin.credentialSecret,
  });
  assert.is(audit.status, 200);
  assert.is(audit.body.data.admin_id, String(admin.adminId));

  // Refresh: a new pair; the old refresh token is spent.
  const r1 = await oauth.processRefreshTokenResponse(
    as,
    CLIENT,
    await oauth.refreshTokenGrantRequest(as, CLIENT, oauth.None(), tokens.refresh_token!, INSECURE),
  );
  assert.is.not(r1.refresh_token, tokens.refresh_token);
  assert.is.not(r1.access_token, tokens.access_token);
  const ok = await b.api(
    'GET',
    '/api/v3/credentials/current',
    human(admin.credentialSecret, r1.access_token),
  );
  assert.is(ok.status, 200);

  // A second login (another device) of the same administrator and client.
  const other = await login(b, admin);

  // Reuse of the first, already exchanged refresh token: invalid_grant and the family is revoked.
  const reuse = await tokenRequest(b, {
    grant_type: 'refresh_token',
    client_id: 'service-cli',
    refresh_token: tokens.refresh_token!,
  });
  assert.is(reuse.status, 400);
  assert.is(reuse.body.error, 'invalid_grant');
  assert.is(reuse.headers.get('cache-control'), 'no-store');
  for (const token of [r1.access_token, other.tokens.access_token]) {
    const res = await b.api(
      'GET',
      '/api/v3/credentials/current',
      human(admin.credentialSecret, token),
    );
    assert.is(res.status, 401);
    assert.is(res.body.error.code, 'invalid_access_token');
  }
  for (const refresh of [r1.refresh_token!, other.tokens.refresh_token!]) {
    const res = await tokenRequest(b, {
      grant_type: 'refresh_token',
      client_id: 'service-cli',
      refresh_token: refresh,
    });
    assert.is(res.body.error, 'invalid_grant');
  }
});

t(
  'revocation: access token alone; refresh token ends its grant; always 200 and empty',
  async ({ b }) => {
    const admin = await setupAdmin(b);
    const { as, tokens } = await login(b, admin);
    const call = (token: string) =>
      b.api('GET', '/api/v3/credentials/current', human(admin.credentialSecret, token));

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, CLIENT, oauth.None(), tokens.access_token, INSECURE),
    );
    assert.is((await call(tokens.access_token)).body.error.code, 'invalid_access_token');
    // The refresh token still works and gives a working access token.
    const fresh = await oauth.processRefreshTokenResponse(
      as,
      CLIENT,
      await oauth.refreshTokenGrantRequest(
        as,
        CLIENT,
        oauth.None(),
        tokens.refresh_token!,
        INSECURE,
      ),
    );
    assert.is((await call(fresh.access_token)).status, 200);

    const res = await tokenRequest(
      b,
      { token: fresh.refresh_token!, client_id: 'service-cli' },
      '/oauth/revoke',
    );
    assert.is(res.status, 200);
    assert.is(res.text, '');
    assert.is((await call(fresh.access_token)).body.error.code, 'invalid_access_token');
    const again = await tokenRequest(b, {
      grant_type: 'refresh_token',
      client_id: 'service-cli',
      refresh_token: fresh.refresh_token!,
    });
    assert.is(again.body.error, 'invalid_grant');

    const forms: Record<string, string>[] = [
      { token: 'unknown' },
      { token: fresh.refresh_token! },
      {},
    ];
    for (const form of forms) {
      const r = await tokenRequest(b, form, '/oauth/revoke');
      assert.is(r.status, 200);
      assert.is(r.text, '');
    }
  },
);

t('refresh tokens live 30 days (clock)', async ({ b }) => {
  const admin = await setupAdmin(b);
  const { tokens } = await login(b, admin);
  b.clock.advance(30 * 24 * 3600 * 1000 + 1000);
  const res = await tokenRequest(b, {
    grant_type: 'refresh_token',
    client_id: 'service-cli',
    refresh_token: tokens.refresh_token!,
  });
  assert.is(res.status, 400);
  assert.is(res.body.error, 'invalid_grant');
});

t.run();
