// A sale across generations: a delivery made in v2 and given a product in v3, a gateway postback
// (POST /postbacks/{id}) that records a transaction and grants an enrollment, then the v2 lookups
// (transactions by the sale's id, access by external id), v1's acesso and v3's enrollments all
// showing the same records with the same ids; a refund ends the access everywhere.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Api, Booted } from '../helpers/app.ts';
import { newKey } from '../helpers/app.ts';
import { bootLegacy, legacyClient } from '../helpers/legacy-contract.ts';

interface Ctx {
  b: Booted;
  legacy: Api;
  deliveryId: number;
  productId: string;
}

const t = suite<Ctx>('v2 across generations: postback -> transaction -> enrollment');
t.before(async (ctx) => {
  const { b, legacy } = await bootLegacy();
  ctx.b = b;
  ctx.legacy = legacy;
  const product = await b.api('POST', '/api/v3/products', {
    key: newKey(),
    body: { name: 'Python do zero' },
  });
  ctx.productId = product.body.data.id;
  const made = await legacy('POST', '/api/third/delivery', {
    body: { external_id: 'py-0', name: 'Python', provider: 'generic', type: 'single' },
  });
  ctx.deliveryId = made.body.data.data.id;
  const patched = await b.api('PATCH', `/api/v3/sales/deliveries/${ctx.deliveryId}`, {
    body: { products: [{ product_id: ctx.productId }], duration: 1, duration_unit: 'year' },
  });
  assert.is(patched.status, 200, JSON.stringify(patched.body));
});
t.after(async (ctx) => ctx.b.close());

const ok = (data: unknown) => ({
  code: 200,
  message: 'OK',
  profiler: [],
  success: true,
  version: 2,
  data,
});

const time = (iso: string) => ({ iso, unix: String(Math.floor(Date.parse(iso) / 1000)) });

async function postback(b: Booted, deliveryId: number, body: Record<string, unknown>) {
  const url = (await b.api('GET', `/api/v3/sales/deliveries/${deliveryId}`)).body.data.postback_url;
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.is(res.status, 200, await res.clone().text());
  return res.json();
}

const SALE = {
  transaction_id: 'sale-1001',
  recurrence_id: 'sub-77',
  product_id: 'py-0',
  client_name: 'Ana Souza',
  client_email: 'ana@example.com',
  client_doc: '529.982.247-25',
  client_phone: '+5511988887777',
};

t('an approved sale: the transaction, the access entry, acesso and v3 agree', async (ctx) => {
  const { b, legacy, deliveryId, productId } = ctx;
  await postback(b, deliveryId, { ...SALE, status: 'approved' });

  const txs = await legacy('GET', '/api/v2/transaction/external/generic/sale-1001');
  assert.is(txs.status, 200);
  const [tx] = txs.body.data.transactions;
  assert.equal(
    txs.body,
    ok({
      transactions: [
        {
          id: tx.id,
          engine: 'generic',
          transaction_id: 'sale-1001',
          recurrence_id: 'sub-77',
          product_id: ['py-0'],
          client_name: 'Ana Souza',
          client_email: 'ana@example.com',
          client_doc: '529.982.247-25',
          client_phone: '+5511988887777',
          created_at: time(tx.created_at.iso),
          error: null,
          status: 'PROCESSED',
          transaction_status: 'APPROVED',
          recurrence_status: 'ACTIVE',
        },
      ],
    }),
  );
  // By the subscription's id too; another engine or an unknown id is an empty list.
  const bySub = await legacy('GET', '/api/v2/transaction/external/generic/sub-77');
  assert.equal(bySub.body, txs.body);
  for (const path of [
    '/api/v2/transaction/external/marketplace/sale-1001',
    '/api/v2/transaction/external/generic/nope',
  ])
    assert.equal((await legacy('GET', path)).body, ok({ transactions: [] }), path);

  // The student the sale created, the same in every generation.
  const users = await b.api('GET', '/api/v3/users?email=ana@example.com');
  const user = users.body.data[0];
  const enrollments = await b.api('GET', `/api/v3/users/${user.id}/enrollments`);
  const [e] = enrollments.body.data;
  assert.equal(
    [e.product_id, e.delivery_id, e.transaction_id, e.ended],
    [productId, String(deliveryId), String(tx.id), false],
  );

  const entry = {
    id: Number(e.id),
    active: true,
    delivery_id: deliveryId,
    recurrence_id: 'sub-77',
    transaction_id: 'sale-1001',
    created_at: time(e.created_at),
  };
  for (const identifier of [
    `id:${user.id}`,
    'email:ANA@example.com',
    'doc:529.982.247-25',
    'ana@example.com',
    '52998224725',
    String(user.id),
  ]) {
    const res = await legacy(
      'GET',
      `/api/v2/user/${encodeURIComponent(identifier)}/access/by_external_id/sale-1001`,
    );
    assert.equal(res.body, ok({ entries: [entry] }), identifier);
  }
  const bySubscription = await legacy(
    'GET',
    `/api/v2/user/id:${user.id}/access/by_external_id/sub-77`,
  );
  assert.equal(bySubscription.body, ok({ entries: [entry] }));

  const acesso = await legacy('GET', `/api/v1/usuario/acesso/${user.id}`);
  assert.equal(acesso.body.data.acesso, [
    {
      comecou_em: e.started_at,
      duracao: 1,
      duracao_tipo: 'anos',
      encerra_em: e.ends_at,
      encerrado: false,
      produto: { id: Number(productId), nome: 'Python do zero', oferta_url: null, ordem: 1 },
    },
  ]);
});

t('a refund ends the access: active false; transactions oldest first', async (ctx) => {
  const { b, legacy, deliveryId } = ctx;
  b.clock.advance(2000);
  await postback(b, deliveryId, { ...SALE, status: 'refunded' });
  const txs = await legacy('GET', '/api/v2/transaction/external/generic/sale-1001');
  assert.equal(
    txs.body.data.transactions.map((t: any) => [t.transaction_status, t.status]),
    [
      ['APPROVED', 'PROCESSED'],
      ['REFUNDED', 'PROCESSED'],
    ],
  );
  assert.ok(txs.body.data.transactions[0].id < txs.body.data.transactions[1].id);
  const res = await legacy('GET', '/api/v2/user/ana@example.com/access/by_external_id/sale-1001');
  assert.equal(
    res.body.data.entries.map((x: any) => [x.active, x.transaction_id]),
    [[false, 'sale-1001']],
  );
  const acesso = await legacy('GET', '/api/v1/usuario/acesso/ana@example.com');
  assert.is(acesso.body.data.acesso[0].encerrado, true);
});

t(
  'access by external id: unknown sale empty, unknown student 404, other school 404',
  async (ctx) => {
    const { b, legacy } = ctx;
    const none = await legacy('GET', '/api/v2/user/ana@example.com/access/by_external_id/nope');
    assert.equal(none.body, ok({ entries: [] }));
    const NOT_FOUND = {
      code: 404,
      message: 'The requested resource was not found.',
      profiler: [],
      success: false,
      version: 2,
      data: null,
    };
    for (const identifier of [
      'id:999999',
      'email:nobody@example.com',
      'doc:11144477735',
      'id:abc',
      'x',
    ])
      assert.equal(
        (await legacy('GET', `/api/v2/user/${identifier}/access/by_external_id/sale-1001`)).body,
        NOT_FOUND,
        identifier,
      );
    const other = await b.app.services.accounts.createAccount({ name: 'Other school' });
    const { key } = await b.app.services.accounts.createLegacyKey(other.id);
    const theirs = legacyClient(b, key);
    assert.equal(
      (await theirs('GET', '/api/v2/user/ana@example.com/access/by_external_id/sale-1001')).body,
      NOT_FOUND,
    );
    assert.equal(
      (await theirs('GET', '/api/v2/transaction/external/generic/sale-1001')).body,
      ok({ transactions: [] }),
    );
  },
);

t.run();
