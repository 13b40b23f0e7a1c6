// Legacy authentication (specification: Authentication, v1 and v2): the school API key in
// Authorization with an optional `Bearer `, never a v3 secret, and errors in each generation's
// own envelope. An accepted key reaches the routes (test/legacy/v1-*, v2-* test what they do).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, type Booted, type Response } from '../helpers/app.ts';

const t = suite<{ b: Booted; key: string }>('legacy auth');
t.before(async (ctx) => {
  ctx.b = await boot();
  ctx.key = (await ctx.b.app.services.accounts.createLegacyKey(ctx.b.accountId)).key;
});
t.after(async (ctx) => ctx.b.close());

const V1 = '/api/v1/usuario';
const V2 = '/api/v2/user/x/access/by_external_id/y';
const THIRD = '/api/third/delivery';

/** The whole v1 error body; only the message text is free. */
function v1Error(res: Response, status: number) {
  assert.is(res.status, status);
  assert.match(res.headers.get('content-type')!, /^application\/json/);
  assert.type(res.body.msg, 'string');
  assert.ok(res.body.msg.length > 0);
  assert.equal(res.body, { success: false, code: status, msg: res.body.msg });
}

/** The whole v2 error body; only the message text is free. */
function v2Error(res: Response, status: number) {
  assert.is(res.status, status);
  assert.match(res.headers.get('content-type')!, /^application\/json/);
  assert.type(res.body.message, 'string');
  assert.ok(res.body.message.length > 0);
  assert.equal(res.body, {
    code: status,
    message: res.body.message,
    profiler: [],
    success: false,
    version: 2,
    data: null,
  });
}

t('a legacy key on /api/v3 is 401 unauthenticated in the v3 envelope', async ({ b, key }) => {
  for (const headers of [{ authorization: `Bearer ${key}` }, { authorization: key }]) {
    const res = await b.api('GET', '/api/v3/capabilities', { secret: null, headers });
    assert.is(res.status, 401);
    assert.is(res.body.error.code, 'unauthenticated');
  }
});

t('a v3 secret is 401 on every legacy surface, in its envelope', async ({ b }) => {
  v1Error(await b.api('GET', V1), 401);
  v2Error(await b.api('GET', V2), 401);
  v2Error(await b.api('GET', THIRD), 401);
  v2Error(await b.api('GET', '/api/v2/third/delivery'), 401);
  // Without the Bearer prefix as well: the shape, not the prefix, rules it out.
  v1Error(await b.api('GET', V1, { secret: null, headers: { authorization: b.secret } }), 401);
});

t('a missing, empty or unknown key is 401', async ({ b, key }) => {
  v1Error(await b.api('GET', V1, { secret: null }), 401);
  v2Error(await b.api('GET', V2, { secret: null }), 401);
  v2Error(await b.api('GET', THIRD, { secret: null }), 401);
  v1Error(await b.api('GET', V1, { secret: null, headers: { authorization: 'Bearer ' } }), 401);
  const other = key.slice(0, -1) + (key.endsWith('x') ? 'y' : 'x');
  v2Error(await b.api('GET', THIRD, { secret: other }), 401);
});

t('a valid key, with or without Bearer, reaches the routes', async ({ b, key }) => {
  for (const headers of [{ authorization: `Bearer ${key}` }, { authorization: key }]) {
    const opts = { secret: null, headers };
    const v1 = await b.api('GET', V1, opts);
    assert.equal([v1.status, v1.body.code, v1.body.success], [200, 200, true]);
    const third = await b.api('GET', THIRD, opts);
    assert.equal([third.status, third.body.code, third.body.version], [200, 200, 2]);
    v1Error(await b.api('POST', '/api/v1', opts), 404);
    // An unknown student, and a delivery without a body: the routes' own errors.
    v2Error(await b.api('GET', V2, opts), 404);
    v2Error(await b.api('POST', '/api/v2/third/delivery', opts), 422);
  }
});

t('every legacy answer carries X-Request-Id', async ({ b, key }) => {
  const res = await b.api('GET', V1, { secret: key });
  assert.match(res.headers.get('x-request-id')!, /^req_[0-9a-f]{24}$/);
});

t('a blocked or unavailable account is 403 on legacy surfaces', async ({ b }) => {
  const accounts = b.app.services.accounts;
  const { id } = await accounts.createAccount({ name: 'Other school' });
  const { key } = await accounts.createLegacyKey(id);
  await accounts.setAccountStatus(id, 'blocked');
  v1Error(await b.api('GET', V1, { secret: key }), 403);
  await accounts.setAccountStatus(id, 'unavailable');
  v2Error(await b.api('GET', THIRD, { secret: key }), 403);
  await accounts.setAccountStatus(id, 'active');
  v2Error(await b.api('GET', V2, { secret: key }), 404);
});

t('paths that only look legacy are not legacy surfaces', async ({ b, key }) => {
  const res = await b.api('GET', '/api/v10/usuario', { secret: key });
  assert.is(res.status, 404);
  assert.is(res.body?.success, undefined);
});

t.run();
