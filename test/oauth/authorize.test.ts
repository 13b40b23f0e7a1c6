// /oauth/authorize validation order and pages, the consent decision, authorization codes and the
// token endpoint's RFC 6749 errors.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Booted } from '../helpers/app.ts';
import {
  Browser,
  approve,
  authorizePath,
  bootOAuth,
  field,
  human,
  newPkce,
  setupAdmin,
  signIn,
  tokenRequest,
  type Admin,
} from './helpers.ts';

const t = suite<{ b: Booted; admin: Admin; browser: Browser }>('oauth authorize');
t.before(async (ctx) => {
  ctx.b = await bootOAuth();
  ctx.admin = await setupAdmin(ctx.b);
  ctx.browser = new Browser(ctx.b.url);
  await signIn(ctx.b, ctx.browser, ctx.admin);
});
t.after(async (ctx) => ctx.b.close());

const exchange = (b: Booted, code: string, verifier: string, redirectUri: string) =>
  tokenRequest(b, {
    grant_type: 'authorization_code',
    client_id: 'service-cli',
    code,
    code_verifier: verifier,
    redirect_uri: redirectUri,
  });

t('code_challenge_method=plain is rejected before any other check, on a page', async ({ b }) => {
  const p = await newPkce('https://evil.example/callback');
  const res = await new Browser(b.url).get(
    authorizePath(p, {
      code_challenge_method: 'plain',
      client_id: 'someone-else',
      response_type: 'token',
    }),
  );
  assert.is(res.status, 400);
  assert.is(res.location, null);
  assert.match(res.text, /plain/);
  assert.match(res.text, /error=invalid_request/);
  assert.is.not(res.text.includes('Unknown client'), true);
});

t('client_id problems are shown on a page, never redirected', async ({ b }) => {
  const p = await newPkce();
  const browser = new Browser(b.url);
  const unknown = await browser.get(authorizePath(p, { client_id: 'other-cli' }));
  assert.is(unknown.status, 400);
  assert.is(unknown.location, null);
  assert.match(unknown.text, /Unknown client/);
  const missing = await browser.get(authorizePath(p).replace('client_id=service-cli&', ''));
  assert.is(missing.status, 400);
  assert.is(missing.location, null);
  const twice = await browser.get(authorizePath(p) + '&client_id=service-cli');
  assert.is(twice.status, 400);
  assert.match(twice.text, /client_id/);
});

t(
  'only exact loopback redirect URIs are accepted; the rest is shown on a page',
  async ({ b, browser }) => {
    const rejected = [
      'http://localhost:8080/callback',
      'http://10.0.0.1:8080/callback',
      'http://127.0.0.2:8080/callback',
      'http://192.168.1.10:8080/callback',
      'http://169.254.169.254:80/callback',
      'https://127.0.0.1:8080/callback',
      'http://user:pass@127.0.0.1:8080/callback',
      'http://user@127.0.0.1:8080/callback',
      'http://127.0.0.1:8080/callback#fragment',
      'http://127.0.0.1:8080/other',
      'http://127.0.0.1:8080/callback/',
      'http://127.0.0.1:8080/callback?x=1',
      'http://127.0.0.1/callback',
      'http://127.0.0.1:99999/callback',
      'http://[::2]:8080/callback',
      'http://[0:0:0:0:0:0:0:1]:8080/callback',
      'HTTP://127.0.0.1:8080/callback',
      'http://127.0.0.1:8080/CALLBACK',
      'http://2130706433:8080/callback',
      'http://127.0.0.1.nip.io:8080/callback',
      'http://evil.example/callback',
    ];
    for (const uri of rejected) {
      const res = await browser.get(authorizePath(await newPkce(uri)));
      assert.is(res.status, 400, uri);
      assert.is(res.location, null, uri);
      assert.match(res.text, /redirect_uri/, uri);
    }
    for (const uri of ['http://127.0.0.1:1/callback', 'http://[::1]:65535/callback']) {
      const res = await browser.get(authorizePath(await newPkce(uri)));
      assert.is(res.status, 200, uri);
      assert.match(res.text, /Authorize access/);
    }
  },
);

t('other errors go back to the redirect_uri with state and iss', async ({ b, browser }) => {
  const p = await newPkce();
  const cases: [Record<string, string>, string][] = [
    [{ response_type: 'token' }, 'unsupported_response_type'],
    [{ response_type: '' }, 'invalid_request'],
    [{ code_challenge: '' }, 'invalid_request'],
    [{ code_challenge: 'short' }, 'invalid_request'],
    [{ code_challenge_method: 'S512' }, 'invalid_request'],
    [{ scope: 'openid profile' }, 'invalid_scope'],
  ];
  for (const [extra, error] of cases) {
    const res = await browser.get(authorizePath(p, extra));
    assert.is(res.status, 303, error);
    const to = new URL(res.location!);
    assert.is(`${to.origin}${to.pathname}`, p.redirectUri);
    assert.is(to.searchParams.get('error'), error);
    assert.is(to.searchParams.get('state'), p.state);
    assert.is(to.searchParams.get('iss'), b.url);
  }
  const noMethod = await browser.get(authorizePath(p).replace('&code_challenge_method=S256', ''));
  assert.is(new URL(noMethod.location!).searchParams.get('error'), 'invalid_request');
});

t(
  'without a completed sign-in the browser goes to sign-in and comes back',
  async ({ b, admin }) => {
    const browser = new Browser(b.url);
    const p = await newPkce();
    const res = await browser.get(authorizePath(p));
    assert.is(res.status, 303);
    const to = new URL(res.location!, b.url);
    assert.is(to.pathname, '/admin/sign-in');
    assert.is(to.searchParams.get('return_to'), authorizePath(p));
    const back = await signIn(b, browser, admin, to.searchParams.get('return_to')!);
    assert.is(back, authorizePath(p));
    const consent = await browser.get(back);
    assert.is(consent.status, 200);
  },
);

t(
  'the consent page shows the client, the account and what approving grants',
  async ({ browser, admin }) => {
    const p = await newPkce();
    const res = await browser.get(authorizePath(p));
    assert.is(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/html/);
    assert.match(res.text, /School Platform CLI \(service-cli\)/);
    assert.match(res.text, /Test school/);
    assert.ok(res.text.includes(admin.email));
    assert.match(res.text, /API v3/);
    assert.match(res.text, /30 days/);
    assert.match(res.text, /127\.0\.0\.1:45678\/callback/);
    assert.is(res.text.includes('<script'), false);
    assert.is(res.headers.get('x-frame-options'), 'DENY');
    assert.is(res.headers.get('cache-control'), 'no-store');
  },
);

t('consent needs its CSRF token; deny sends access_denied', async ({ browser }) => {
  const p = await newPkce();
  const consent = await browser.get(authorizePath(p));
  const forged = await browser.post(authorizePath(p), { decision: 'approve' });
  assert.is(forged.status, 403);
  assert.is(forged.location, null);
  const wrong = await browser.post(authorizePath(p), { decision: 'approve', csrf: 'x'.repeat(43) });
  assert.is(wrong.status, 403);
  const denied = await browser.post(authorizePath(p), {
    csrf: field(consent.text, 'csrf'),
    decision: 'deny',
  });
  const to = new URL(denied.location!);
  assert.is(to.searchParams.get('error'), 'access_denied');
  assert.is(to.searchParams.get('state'), p.state);
});

t(
  'codes: single use (reuse revokes what they gave), bound to redirect_uri and verifier',
  async ({ b, browser, admin }) => {
    const p = await newPkce();
    const callback = await approve(browser, p);
    assert.is(callback.searchParams.get('state'), p.state);
    assert.is(callback.searchParams.get('iss'), b.url);
    const code = callback.searchParams.get('code')!;
    const first = await exchange(b, code, p.verifier, p.redirectUri);
    assert.is(first.status, 200);
    const second = await exchange(b, code, p.verifier, p.redirectUri);
    assert.is(second.status, 400);
    assert.is(second.body.error, 'invalid_grant');
    const call = await b.api(
      'GET',
      '/api/v3/credentials/current',
      human(admin.credentialSecret, first.body.access_token),
    );
    assert.is(call.body.error.code, 'invalid_access_token');

    const q = await newPkce();
    const c2 = (await approve(browser, q)).searchParams.get('code')!;
    const wrongUri = await exchange(b, c2, q.verifier, 'http://127.0.0.1:45679/callback');
    assert.is(wrongUri.body.error, 'invalid_grant');
    // A failed attempt burns the code.
    assert.is((await exchange(b, c2, q.verifier, q.redirectUri)).body.error, 'invalid_grant');

    const r = await newPkce();
    const c3 = (await approve(browser, r)).searchParams.get('code')!;
    const wrongVerifier = await exchange(b, c3, (await newPkce()).verifier, r.redirectUri);
    assert.is(wrongVerifier.body.error, 'invalid_grant');
  },
);

t('codes expire after 60 seconds (clock)', async ({ b, browser }) => {
  const p = await newPkce();
  const c1 = (await approve(browser, p)).searchParams.get('code')!;
  b.clock.advance(59_000);
  assert.is((await exchange(b, c1, p.verifier, p.redirectUri)).status, 200);
  const q = await newPkce();
  const c2 = (await approve(browser, q)).searchParams.get('code')!;
  b.clock.advance(61_000);
  const late = await exchange(b, c2, q.verifier, q.redirectUri);
  assert.is(late.status, 400);
  assert.is(late.body.error, 'invalid_grant');
});

t('token endpoint errors are RFC 6749 JSON with no-store', async ({ b }) => {
  const cases: [Record<string, string>, number, string][] = [
    [{ grant_type: 'password', client_id: 'service-cli' }, 400, 'unsupported_grant_type'],
    [{ grant_type: 'client_credentials', client_id: 'service-cli' }, 400, 'unsupported_grant_type'],
    [{ client_id: 'service-cli' }, 400, 'invalid_request'],
    [
      { grant_type: 'authorization_code', client_id: 'service-cli', code: 'x' },
      400,
      'invalid_request',
    ],
    [{ grant_type: 'refresh_token', client_id: 'service-cli' }, 400, 'invalid_request'],
    [{ grant_type: 'refresh_token', refresh_token: 'x' }, 400, 'invalid_request'],
    [
      { grant_type: 'refresh_token', client_id: 'other', refresh_token: 'x' },
      401,
      'invalid_client',
    ],
    [
      {
        grant_type: 'refresh_token',
        client_id: 'service-cli',
        client_secret: 's',
        refresh_token: 'x',
      },
      401,
      'invalid_client',
    ],
    [
      { grant_type: 'refresh_token', client_id: 'service-cli', refresh_token: 'unknown' },
      400,
      'invalid_grant',
    ],
    [
      {
        grant_type: 'authorization_code',
        client_id: 'service-cli',
        code: 'unknown',
        code_verifier: 'v',
        redirect_uri: 'http://127.0.0.1:1/callback',
      },
      400,
      'invalid_grant',
    ],
  ];
  for (const [form, status, error] of cases) {
    const res = await tokenRequest(b, form);
    assert.is(res.status, status, JSON.stringify(form));
    assert.is(res.body.error, error, JSON.stringify(form));
    assert.type(res.body.error_description, 'string');
    assert.match(res.headers.get('content-type')!, /^application\/json/);
    assert.is(res.headers.get('cache-control'), 'no-store');
  }
  const json = await fetch(`${b.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'refresh_token',
      client_id: 'service-cli',
      refresh_token: 'x',
    }),
  });
  assert.is(json.status, 400);
  assert.is((await json.json()).error, 'invalid_request');
  const dup = await fetch(`${b.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=refresh_token&client_id=service-cli&refresh_token=a&refresh_token=b',
  });
  assert.is((await dup.json()).error, 'invalid_request');
  const get = await fetch(`${b.url}/oauth/token`);
  assert.is(get.status, 405);
});

t.run();
