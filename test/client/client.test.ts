// The typed v3 client (src/client) against the real app: calls typed by the contract, the
// credential as a bearer token, idempotency keys, errors in the v3 envelope, human-mode headers.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient, idempotencyKey, type V3Client } from '../../src/client/index.ts';
import { boot, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted; api: V3Client }>('typed client (openapi-fetch)');
t.before(async (ctx) => {
  ctx.b = await boot();
  ctx.api = createClient({ baseUrl: ctx.b.url, secret: ctx.b.secret });
});
t.after(async ({ b }) => b.close());

t('creates, reads and lists a user; a retry with the key is a replay', async ({ api }) => {
  const key = idempotencyKey();
  const body = { name: 'Ana Souza', email: 'ana.client@example.com' };
  const created = await api.POST('/users', {
    params: { header: { 'Idempotency-Key': key } },
    body,
  });
  assert.is(created.response.status, 201);
  const user = created.data!.data;
  assert.is(user.object, 'user');
  assert.is(user.email, 'ana.client@example.com');

  const again = await api.POST('/users', { params: { header: { 'Idempotency-Key': key } }, body });
  assert.is(again.response.headers.get('idempotent-replayed'), 'true');
  assert.is(again.data!.data.id, user.id);

  const read = await api.GET('/users/{user_id}', { params: { path: { user_id: user.id } } });
  assert.equal(read.data!.data, user);
  const list = await api.GET('/users', { params: { query: { email: 'ANA.CLIENT@example.com' } } });
  assert.equal(
    list.data!.data.map((u) => u.id),
    [user.id],
  );
});

t('errors come back typed, in the caller language', async ({ b, api }) => {
  const missing = await api.GET('/users/{user_id}', {
    params: { path: { user_id: '2147483647' } },
  });
  assert.is(missing.data, undefined);
  assert.is(missing.response.status, 404);
  assert.is(missing.error!.error.code, 'not_found');
  assert.is(missing.error!.error.request_id, missing.response.headers.get('x-request-id'));

  const pt = createClient({ baseUrl: `${b.url}/api/v3/`, secret: b.secret, locale: 'pt-BR' });
  const invalid = await pt.POST('/users', {
    params: { header: { 'Idempotency-Key': idempotencyKey() } },
    body: { name: 'Ana', email: 'not an email' },
  });
  assert.is(invalid.response.status, 422);
  assert.is(invalid.error!.error.code, 'validation_failed');
  assert.equal(
    invalid.error!.error.details.map((d) => [d.field, d.code]),
    [['email', 'invalid_email']],
  );
  const en = await api.POST('/users', {
    params: { header: { 'Idempotency-Key': idempotencyKey() } },
    body: { name: 'Ana', email: 'not an email' },
  });
  assert.is.not(invalid.error!.error.message, en.error!.error.message);

  const stranger = createClient({ baseUrl: b.url, secret: 'sch_test_unknown' });
  const denied = await stranger.GET('/credentials/current');
  assert.equal([denied.response.status, denied.error!.error.code], [401, 'unauthenticated']);
});

t('human mode: the secret as X-API-Key, a fresh access token on every request', async () => {
  const seen: Headers[] = [];
  let issued = 0;
  const api = createClient({
    baseUrl: 'http://school.test',
    secret: 'sch_live_abc',
    accessToken: async () => `token-${++issued}`,
    fetch: async (request) => {
      seen.push(request.headers);
      assert.is(request.url, 'http://school.test/api/v3/credentials/current');
      return new Response('{"data":{}}', { headers: { 'content-type': 'application/json' } });
    },
  });
  await api.GET('/credentials/current');
  await api.GET('/credentials/current');
  assert.equal(
    seen.map((h) => [h.get('x-api-key'), h.get('authorization'), h.get('accept')]),
    [
      ['sch_live_abc', 'Bearer token-1', 'application/json'],
      ['sch_live_abc', 'Bearer token-2', 'application/json'],
    ],
  );
});

t.run();
