// The v3 text rule (U+0000 is refused before anything runs, alike on both engines) on every path
// that takes text outside the v3 pipeline: legacy v1/v2 queries, bodies and paths, the OAuth
// endpoints' forms and queries, the admin sign-in form, and the admin CLI's flags.
// (Postbacks: test/v3/sales-postbacks-hardening.test.ts.)
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Api, Booted } from '../helpers/app.ts';
import { bootLegacy } from '../helpers/legacy-contract.ts';
import { runAdmin } from '../../src/cli/admin.ts';
import { Browser, field, setupAdmin, tokenRequest, CLIENT } from '../oauth/helpers.ts';

const t = suite<{ b: Booted; legacy: Api; key: string }>('text rules outside v3');
t.before(async (ctx) => {
  const { b, legacy, key } = await bootLegacy();
  ctx.b = b;
  ctx.legacy = legacy;
  ctx.key = key;
});
t.after(async (ctx) => ctx.b.close());

t('legacy queries: 422 with the detail, in the generation envelope', async ({ legacy }) => {
  for (const path of [
    '/api/v2/third/delivery?provider=gen%00eric',
    '/api/third/delivery?provider=%00',
    '/api/v1/usuario?cursor=%00',
    '/api/v1/usuario/lista_por_tag/1?cursor=a%00',
  ]) {
    const res = await legacy('GET', path);
    assert.is(res.status, 422, `${path} ${res.text}`);
    assert.is(res.body.success, false, path);
  }
  const v2 = await legacy('GET', '/api/v2/third/delivery?provider=%00');
  assert.equal(v2.body.version, 2);
  // A clean query is answered.
  assert.is((await legacy('GET', '/api/v2/third/delivery?provider=generic')).status, 200);
});

t('legacy bodies and paths: 422 and 404, nothing recorded', async ({ b, legacy, key }) => {
  const body = await legacy('POST', '/api/v2/third/delivery', {
    body: { external_id: 'x-1', name: 'Na\u0000me', provider: 'generic' },
  });
  assert.is(body.status, 422, body.text);
  const v1 = await legacy('POST', '/api/v1/usuario/update/ana@example.com', {
    body: { nome: 'A\u0000' },
  });
  assert.is(v1.status, 422, v1.text);
  for (const path of [
    '/api/v2/transaction/external/generic/T%001',
    '/api/v2/user/ana%00/access/by_external_id/x',
    '/api/v1/usuario/ana%00@example.com',
  ]) {
    // Not every one of these documents its 404 (issue 21 leaves the legacy documents to
    // another change): read without the document check.
    const res = await b.api('GET', path, { secret: null, headers: { authorization: key } });
    assert.equal([res.status, res.body.success], [404, false], `${path} ${res.text}`);
  }
  assert.equal(await b.app.db('deliveries').select('id'), []);
});

t('OAuth token and revoke forms: 400 invalid_request', async ({ b }) => {
  for (const form of [
    { grant_type: 'refresh_token', refresh_token: 'abc\u0000', ...CLIENT },
    {
      grant_type: 'authorization_code',
      code: 'c\u0000',
      code_verifier: 'v',
      redirect_uri: 'http://127.0.0.1/cb',
      ...CLIENT,
    },
    { grant_type: 'refresh_token\u0000', ...CLIENT },
    { ...CLIENT, client_id: 'service-cli\u0000' },
  ]) {
    const res = await tokenRequest(b, form);
    assert.equal([res.status, res.body.error], [400, 'invalid_request'], JSON.stringify(form));
  }
  const revoke = await tokenRequest(b, { token: 'x\u0000' }, '/oauth/revoke');
  assert.equal([revoke.status, revoke.body?.error], [400, 'invalid_request']);
});

t('OAuth pages: a query or a sign-in form with U+0000 is a 400 page', async ({ b }) => {
  const browser = new Browser(b.url);
  const authorize = await browser.get('/oauth/authorize?client_id=service-cli&state=%00');
  assert.is(authorize.status, 400);
  assert.match(authorize.text, /U\+0000/);
  const admin = await setupAdmin(b);
  const page = await browser.get('/admin/sign-in');
  for (const [name, value] of [
    ['email', `${admin.email}\u0000`],
    ['password', `${admin.password}\u0000`],
  ] as const) {
    const res = await browser.post('/admin/sign-in', {
      csrf: field(page.text, 'csrf'),
      return_to: '/admin',
      email: admin.email,
      password: admin.password,
      [name]: value,
    });
    assert.is(res.status, 400, name);
    assert.match(res.text, /U\+0000/);
  }
  // The clean form still signs in.
  const ok = await browser.post('/admin/sign-in', {
    csrf: field(page.text, 'csrf'),
    return_to: '/admin',
    email: admin.email,
    password: admin.password,
  });
  assert.is(ok.status, 303);
});

t('admin CLI flags: a usage error (exit 2), nothing reaches the database', async () => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAdmin(['account', 'create', '--name', 'School\u0000X'], {
    env: { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
    stdout: (s) => out.push(s),
    stderr: (s) => err.push(s),
  });
  assert.is(code, 2);
  assert.equal(out, []);
  assert.match(err.join(''), /usage_error/);
  assert.match(err.join(''), /--name must not contain the NUL character/);
});

t.run();
