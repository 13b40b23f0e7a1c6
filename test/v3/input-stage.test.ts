// The input stage's rules one by one, each with the answer that tells it apart (what mutation
// testing of src/http/v3/stages/input.ts found no test for): the detail of a missing permission,
// query parameters named as parameters, headers read only by the operations that declare them,
// keys ignored on reads and required on writes, the X-Client-Request-Id format, a JSON
// operation's missing Content-Type, a missing body, and U+0000 in a body.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { rawRequest } from '../helpers/raw.ts';

const t = suite<{ b: Booted; webhookId: string }>('v3 input stage, rule by rule');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const hook = await ctx.b.api('POST', '/api/v3/webhooks', {
    body: { url: 'http://127.0.0.1:9/hooks', event_types: ['*'] },
    key: newKey(),
  });
  assert.is(hook.status, 201);
  ctx.webhookId = hook.body.data.id;
});
t.after(async (ctx) => ctx.b.close());

const detail = (res: { body: any }) => res.body.error.details[0];

t('a missing permission: one detail naming it, code missing_permission', async ({ b }) => {
  const reader = await credentialWith(b, ['users.read']);
  const res = await b.api('POST', '/api/v3/users', {
    body: { name: 'Ana', email: 'perm@example.com' },
    key: newKey(),
    secret: reader.secret,
  });
  assert.is(res.status, 403);
  assert.equal(res.body.error.details, [
    { code: 'missing_permission', message: 'users.write', reason: 'users.write' },
  ]);
});

t('query parameters: a bad value and U+0000 are details of kind parameter', async ({ b }) => {
  const bad = await b.api('GET', '/api/v3/users?limit=0');
  assert.is(bad.status, 422);
  assert.is(detail(bad).parameter, 'limit');
  assert.is(detail(bad).field, undefined);
  const nul = await b.api('GET', '/api/v3/users?email=a%00b');
  assert.is(nul.status, 422);
  assert.is(detail(nul).parameter, 'email');
});

t('X-Client-Request-Id: read only where declared; its format; sent twice', async (ctx) => {
  const { b } = ctx;
  const url = `${b.url}/api/v3/webhooks/${ctx.webhookId}/deliveries`;
  const auth: [string, string] = ['Authorization', `Bearer ${b.secret}`];
  // Not declared by GET /users: not checked, not echoed.
  const users = await b.api('GET', '/api/v3/users', { headers: { 'X-Client-Request-Id': 'a b' } });
  assert.is(users.status, 200);
  assert.is(users.headers.get('x-client-request-id'), null);
  // Declared but not sent: nothing to check, nothing echoed.
  const without = await rawRequest(url, 'GET', [auth]);
  assert.equal([without.status, without.headers['x-client-request-id']], [200, undefined]);
  for (const ok of ['a', 'A.b_c-9', 'x'.repeat(64)]) {
    const res = await rawRequest(url, 'GET', [auth, ['X-Client-Request-Id', ok]]);
    assert.is(res.status, 200, ok);
    assert.is(res.headers['x-client-request-id'], ok);
  }
  for (const bad of ['x'.repeat(65), 'a b', '-/', 'é', 'ab!', '!ab']) {
    const res = await rawRequest(url, 'GET', [auth, ['X-Client-Request-Id', bad]]);
    assert.is(res.status, 422, bad);
    assert.equal(
      [detail(res).parameter, detail(res).code],
      ['X-Client-Request-Id', 'invalid_format'],
      bad,
    );
    assert.match(detail(res).message, /64/, bad);
  }
  const twice = await rawRequest(url, 'GET', [
    auth,
    ['X-Client-Request-Id', 'one'],
    ['X-Client-Request-Id', 'two'],
  ]);
  assert.is(twice.status, 422);
  assert.is(detail(twice).parameter, 'X-Client-Request-Id');
});

t('Last-Event-ID: once is a position, twice is refused, elsewhere ignored', async ({ b }) => {
  const auth: [string, string] = ['Authorization', `Bearer ${b.secret}`];
  const accept: [string, string] = ['Accept', 'text/event-stream'];
  const url = `${b.url}/api/v3/event-streams/999999/events`;
  // One: past the input stage (the stream does not exist: 404).
  const once = await rawRequest(url, 'GET', [auth, accept, ['Last-Event-ID', '5']]);
  assert.is(once.status, 404);
  const none = await rawRequest(url, 'GET', [auth, accept]);
  assert.is(none.status, 404);
  const twice = await rawRequest(url, 'GET', [
    auth,
    accept,
    ['Last-Event-ID', '5'],
    ['Last-Event-ID', '6'],
  ]);
  assert.is(twice.status, 422);
  assert.equal([detail(twice).parameter, detail(twice).code], ['Last-Event-ID', 'invalid']);
  assert.ok(detail(twice).message.length > 0);
  // GET /users does not declare it: twice is nothing to it.
  const users = await rawRequest(`${b.url}/api/v3/users`, 'GET', [
    auth,
    ['Last-Event-ID', '1'],
    ['Last-Event-ID', '2'],
  ]);
  assert.is(users.status, 200);
});

t('Idempotency-Key: ignored on a read, required on a create', async ({ b }) => {
  const read = await b.api('GET', '/api/v3/users', { headers: { 'Idempotency-Key': 'bad key!' } });
  assert.is(read.status, 200);
  const missing = await b.api('POST', '/api/v3/users', {
    body: { name: 'Ana', email: 'nokey@example.com' },
  });
  assert.equal([missing.status, missing.body.error.code], [422, 'idempotency_key_required']);
  const invalid = await b.api('POST', '/api/v3/users', {
    body: { name: 'Ana', email: 'badkey@example.com' },
    key: 'bad key!',
  });
  assert.equal([invalid.status, invalid.body.error.code], [422, 'idempotency_key_invalid']);
});

t('a JSON operation: no Content-Type is 415, no body is a validation failure', async ({ b }) => {
  const url = `${b.url}/api/v3/users`;
  const auth: [string, string] = ['Authorization', `Bearer ${b.secret}`];
  const noType = await rawRequest(url, 'POST', [auth, ['Idempotency-Key', newKey()]]);
  assert.equal([noType.status, noType.body.error.code], [415, 'unsupported_media_type']);
  // Node's client frames an empty POST as chunked; `Content-Length: 0` is no body at all, and a
  // JSON operation without a Content-Type is still 415, not a validation failure of nothing.
  const empty = await rawRequest(url, 'POST', [
    auth,
    ['Idempotency-Key', newKey()],
    ['Content-Length', '0'],
  ]);
  assert.equal([empty.status, empty.body.error.code], [415, 'unsupported_media_type']);
  const noBody = await rawRequest(url, 'POST', [
    auth,
    ['Idempotency-Key', newKey()],
    ['Content-Type', 'application/json'],
  ]);
  assert.equal([noBody.status, noBody.body.error.code], [422, 'validation_failed']);
});

t('U+0000 in a body string: 422 on the field, nothing created', async ({ b }) => {
  const res = await b.api('POST', '/api/v3/users', {
    body: { name: 'A\u0000na', email: 'nul@example.com' },
    key: newKey(),
  });
  assert.is(res.status, 422);
  assert.is(detail(res).field, 'name');
  const list = await b.api('GET', '/api/v3/users?email=nul@example.com');
  assert.is(list.body.data.length, 0);
});

t.run();
