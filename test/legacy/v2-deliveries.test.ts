// v2 deliveries (specification: v2, /third/delivery), at /api/v2/third/delivery and
// /api/third/delivery: the same deliveries v3 shows under /sales/deliveries.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Api, Booted } from '../helpers/app.ts';
import { bootLegacy, legacyClient } from '../helpers/legacy-contract.ts';

const t = suite<{ b: Booted; v2: Api }>('v2 deliveries');
t.before(async (ctx) => {
  const { b, legacy } = await bootLegacy();
  ctx.b = b;
  ctx.v2 = legacy;
});
t.after(async (ctx) => ctx.b.close());

const PATHS = ['/api/v2/third/delivery', '/api/third/delivery'] as const;

const ok = (data: unknown) => ({
  code: 200,
  message: 'OK',
  profiler: [],
  success: true,
  version: 2,
  data,
});

t('POST creates a delivery when no delivery has the ids; nested in data.data', async (ctx) => {
  const { b, v2 } = ctx;
  const res = await v2('POST', PATHS[0], {
    body: { external_id: 'prod-1, prod-2', name: 'Curso A', provider: 'generic', type: 'single' },
  });
  assert.is(res.status, 200);
  const id = res.body.data.data.id;
  const configUrl = res.body.data.data.config_url;
  // The postback URL carries an unguessable token beside the id.
  assert.match(configUrl, new RegExp(`^${b.url}/postbacks/${id}/[A-Za-z0-9_-]{32}$`));
  assert.equal(
    res.body,
    ok({
      data: {
        id,
        name: 'Curso A',
        type: 'single',
        external_ids: ['prod-1', 'prod-2'],
        config_url: configUrl,
      },
    }),
  );
  // The same delivery in v3, with the same id and URL; v2 cannot show a secret: none generated.
  const v3 = await b.api('GET', `/api/v3/sales/deliveries/${id}`);
  assert.is(v3.status, 200);
  assert.equal(
    [
      v3.body.data.id,
      v3.body.data.gateway,
      v3.body.data.kind,
      v3.body.data.external_ids,
      v3.body.data.postback_url,
      v3.body.data.secret,
    ],
    [String(id), 'generic', 'one_time', ['prod-1', 'prod-2'], configUrl, { configured: false }],
  );
});

t('POST with one known id adds the missing ones; name and type stay', async ({ b, v2 }) => {
  const first = await v2('POST', PATHS[1], {
    body: { external_id: 'sub-1', name: 'Assinatura', provider: 'generic', type: 'subscription' },
  });
  const id = first.body.data.data.id;
  assert.is(first.body.data.data.type, 'subscription');
  const res = await v2('POST', PATHS[1], {
    body: { external_id: 'sub-2,sub-1', name: 'Outro nome', provider: 'generic', type: 'single' },
  });
  assert.equal(
    res.body,
    ok({
      data: {
        id,
        name: 'Assinatura',
        type: 'subscription',
        external_ids: ['sub-1', 'sub-2'],
        config_url: first.body.data.data.config_url,
      },
    }),
  );
  // All ids known: nothing changes.
  const same = await v2('POST', PATHS[0], {
    body: { external_id: 'sub-2', name: 'X', provider: 'generic' },
  });
  assert.equal(same.body, res.body);
});

t('POST: ids of two different deliveries are refused (409); nothing changes', async (ctx) => {
  const { b, v2 } = ctx;
  await v2('POST', PATHS[0], { body: { external_id: 'c-1', name: 'C1', provider: 'generic' } });
  await v2('POST', PATHS[0], { body: { external_id: 'c-2', name: 'C2', provider: 'generic' } });
  const res = await v2('POST', PATHS[0], {
    body: { external_id: 'c-1,c-2,c-3', name: 'C3', provider: 'generic' },
  });
  assert.is(res.status, 409);
  assert.equal(res.body, {
    code: 409,
    message:
      'The resource already exists. external_ids: c-2 belongs to another delivery of this gateway.',
    profiler: [],
    success: false,
    version: 2,
    data: null,
  });
  const list = await v2('GET', `${PATHS[0]}?provider=generic`);
  const c = list.body.data.data.filter((d: any) => /^C\d$/.test(d.name));
  assert.equal(
    c.map((d: any) => [d.name, d.external_ids]),
    [
      ['C1', ['c-1']],
      ['C2', ['c-2']],
    ],
  );
});

t('POST: bad bodies 422; an unknown gateway 422', async ({ v2 }) => {
  for (const body of [
    {},
    { external_id: 'x', name: 'N' },
    { external_id: ' , ', name: 'N', provider: 'generic' },
    { external_id: 'x', name: '  ', provider: 'generic' },
    { external_id: 'x', name: 'N', provider: 'generic', type: 'weekly' },
    { external_id: 1, name: 'N', provider: 'generic' },
    { external_id: 'x', name: 'N', provider: 'no-such-gateway' },
  ]) {
    const res = await v2('POST', PATHS[1], { body });
    assert.is(res.status, 422, JSON.stringify(body));
    assert.equal([res.body.code, res.body.success, res.body.data], [422, false, null]);
  }
  const json = await v2('POST', PATHS[1], { raw: '{' });
  assert.is(json.status, 422);
});

t('GET lists the gateway’s deliveries, oldest first, at both paths', async ({ b, v2 }) => {
  const { key } = await b.app.services.accounts.createLegacyKey(
    (await b.app.services.accounts.createAccount({ name: 'Fresh school' })).id,
  );
  const fresh = legacyClient(b, key);
  const empty = await fresh('GET', PATHS[1]);
  assert.equal(empty.body, ok({ data: [] }));
  const a = await fresh('POST', PATHS[0], {
    body: { external_id: 'a', name: 'A', provider: 'generic' },
  });
  const z = await fresh('POST', PATHS[1], {
    body: { external_id: 'z', name: 'Z', provider: 'generic' },
  });
  for (const path of PATHS) {
    const res = await fresh('GET', `${path}?provider=generic`);
    assert.equal(res.body, ok({ data: [a.body.data.data, z.body.data.data] }));
    const all = await fresh('GET', path);
    assert.equal(all.body, res.body);
    const none = await fresh('GET', `${path}?provider=marketplace`);
    assert.equal(none.body, ok({ data: [] }));
  }
  // The first school's deliveries are not the fresh school's.
  const mine = await v2('GET', PATHS[0]);
  assert.not.ok(mine.body.data.data.some((d: any) => d.id === a.body.data.data.id));
});

t('other v2 routes are not served under /api/third', async ({ v2 }) => {
  const res = await v2('GET', '/api/third/transaction/external/generic/x');
  assert.is(res.status, 404);
  assert.equal(res.body, {
    code: 404,
    message: 'The requested resource was not found.',
    profiler: [],
    success: false,
    version: 2,
    data: null,
  });
});

t.run();
