// The input stage, second round: bodies sent to operations that take none (capped details, and
// non-object bodies), headers that must appear once, media types, and webhook URLs that `new URL`
// accepts but no delivery can use. Each pinned through HTTP on both engines.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { rawRequest } from '../helpers/raw.ts';

const t = suite<{ b: Booted; productId: string; userId: string }>('v3 input, second round');
t.before(async (ctx) => {
  ctx.b = await boot();
  const product = await ctx.b.api('POST', '/api/v3/products', {
    body: { name: 'Input course' },
    key: newKey(),
  });
  assert.is(product.status, 201);
  ctx.productId = product.body.data.id;
  const user = await ctx.b.api('POST', '/api/v3/users', {
    body: { name: 'Ana', email: 'input@example.com' },
    key: newKey(),
  });
  ctx.userId = user.body.data.id;
});
t.after(async (ctx) => ctx.b.close());

const auth = (b: Booted): [string, string] => ['Authorization', `Bearer ${b.secret}`];
const JSON_TYPE: [string, string] = ['Content-Type', 'application/json'];
const sized = (body: string): [string, string] => [
  'Content-Length',
  String(Buffer.byteLength(body)),
];

t('1: 80,000 keys sent to any body-less operation answer at most 100 details', async (ctx) => {
  const { b } = ctx;
  const big: Record<string, number> = {};
  for (let i = 0; i < 80_000; i++) big['k' + i] = 1;
  const text = JSON.stringify(big);
  const calls: [string, string, [string, string][]][] = [
    ['GET', '/api/v3/users', []],
    ['DELETE', `/api/v3/users/${ctx.userId}`, [['If-Match', '*']]],
    ['POST', '/api/v3/sandbox/resets', [['Idempotency-Key', newKey()]]],
    ['POST', `/api/v3/products/${ctx.productId}/publications`, [['Idempotency-Key', newKey()]]],
  ];
  for (const [method, path, extra] of calls) {
    const res = await rawRequest(
      b.url + path,
      method,
      [auth(b), JSON_TYPE, sized(text), ...extra],
      text,
    );
    assert.is(res.status, 422, `${method} ${path}`);
    assert.is(res.body.error.code, 'unknown_field');
    assert.is(res.body.error.details.length, 100);
    assert.equal(res.body.error.details[0], {
      field: 'k0',
      code: 'unknown_field',
      message: 'This operation takes no body.',
    });
    assert.ok(JSON.stringify(res.body).length < 20_000);
  }
  const still = await b.api('GET', `/api/v3/users/${ctx.userId}`);
  assert.is(still.status, 200, 'the DELETE did nothing');
});

t(
  '18: [], 5, "x" and null sent to a body-less operation are 422, {} is accepted',
  async ({ b }) => {
    for (const text of ['[]', '5', '"x"', 'null']) {
      const res = await rawRequest(
        b.url + '/api/v3/users',
        'GET',
        [auth(b), JSON_TYPE, sized(text)],
        text,
      );
      assert.is(res.status, 422, text);
      assert.is(res.body.error.code, 'unknown_field');
      assert.equal(
        res.body.error.details.map((d: any) => [d.field, d.code]),
        [['', 'unknown_field']],
      );
    }
    const empty = await rawRequest(
      b.url + '/api/v3/users',
      'GET',
      [auth(b), JSON_TYPE, sized('{}')],
      '{}',
    );
    assert.is(empty.status, 200);
  },
);

t(
  '18: a JSON operation with no body and no Content-Type is 415; so is application/jsonp',
  async ({ b }) => {
    const none = await rawRequest(b.url + '/api/v3/tags', 'POST', [
      auth(b),
      ['Idempotency-Key', newKey()],
    ]);
    assert.is(none.status, 415);
    assert.is(none.body.error.code, 'unsupported_media_type');
    const body = JSON.stringify({ name: 'jsonp' });
    for (const type of ['application/jsonp', 'application/json-patch+json', 'text/json']) {
      const res = await rawRequest(
        b.url + '/api/v3/tags',
        'POST',
        [auth(b), ['Content-Type', type], ['Idempotency-Key', newKey()], sized(body)],
        body,
      );
      assert.is(res.status, 415, type);
    }
    const tags = await b.api('GET', '/api/v3/tags?name=jsonp');
    assert.equal(tags.body.data, [], 'nothing was created');
  },
);

t('18: headers that must appear once are refused when sent twice', async ({ b }) => {
  const body = JSON.stringify({ name: 'twice' });
  const post = (extra: [string, string][]) =>
    rawRequest(b.url + '/api/v3/tags', 'POST', [auth(b), sized(body), ...extra], body);

  const keys = await post([
    JSON_TYPE,
    ['Idempotency-Key', newKey()],
    ['Idempotency-Key', newKey()],
  ]);
  assert.is(keys.status, 422);
  assert.is(keys.body.error.code, 'idempotency_key_invalid');

  const types = await post([
    JSON_TYPE,
    ['Content-Type', 'text/plain'],
    ['Idempotency-Key', newKey()],
  ]);
  assert.is(types.status, 415, 'two Content-Type headers');
  const same = await post([JSON_TYPE, JSON_TYPE, ['Idempotency-Key', newKey()]]);
  assert.is(same.status, 415, 'even the same one twice');

  const twoAuth = await rawRequest(b.url + '/api/v3/tags', 'GET', [auth(b), auth(b)]);
  assert.is(twoAuth.status, 401);
  assert.is(twoAuth.body.error.code, 'ambiguous_credentials');

  const hook = await b.api('POST', '/api/v3/webhooks', {
    body: { url: 'https://hooks.example.com/in', event_types: ['user.created'] },
    key: newKey(),
  });
  assert.is(hook.status, 201);
  const deliveries = `/api/v3/webhooks/${hook.body.data.id}/deliveries`;
  const ids = await rawRequest(b.url + deliveries, 'GET', [
    auth(b),
    ['X-Client-Request-Id', 'one'],
    ['X-Client-Request-Id', 'two'],
  ]);
  assert.is(ids.status, 422);
  assert.is(ids.body.error.details[0].parameter, 'X-Client-Request-Id');

  const stream = await b.api('POST', '/api/v3/event-streams', {
    body: { types: ['user.created'] },
    key: newKey(),
  });
  assert.is(stream.status, 201, JSON.stringify(stream.body));
  {
    const lastIds = await rawRequest(
      b.url + `/api/v3/event-streams/${stream.body.data.id}/events`,
      'GET',
      [auth(b), ['Accept', 'text/event-stream'], ['Last-Event-ID', '1'], ['Last-Event-ID', '2']],
    );
    assert.is(lastIds.status, 422);
    assert.is(lastIds.body.error.details[0].parameter, 'Last-Event-ID');
  }
  const tags = await b.api('GET', '/api/v3/tags?name=twice');
  assert.equal(tags.body.data, [], 'nothing was created');
});

t('18: webhook URLs no delivery can use are 422 on the field, never a 500', async ({ b }) => {
  for (const url of [
    'https://hooks.example.com:99999/in',
    'https://hooks.example.com:65536/in',
    'https://hooks.example.com:0/in',
    'https://user@hooks.example.com/in',
    'https://user:@hooks.example.com/in',
    'https://:pass@hooks.example.com/in',
  ]) {
    const res = await b.api('POST', '/api/v3/webhooks', {
      body: { url, event_types: ['user.created'] },
      key: newKey(),
    });
    assert.is(res.status, 422, url);
    assert.equal(
      res.body.error.details.map((d: any) => [d.field, d.code]),
      [['url', 'invalid_format']],
    );
  }
});

t.run();
