// Transactions through HTTP: the list with every filter and cursor pages, the item, tenancy, the
// permission, and a sandbox reset that takes deliveries and transactions with it.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HOUR } from '../../src/clock.ts';
import { boot, credentialWith, type Booted } from '../helpers/app.ts';
import { account, all, product } from '../helpers/catalog.ts';
import { delivery, postback, sale } from '../helpers/sales.ts';
import { waitFor } from '../helpers/operations.ts';

const t = suite<{ b: Booted; ids: Record<string, string>; start: string }>(
  'v3 sales: transactions',
);
const T = '/api/v3/sales/transactions';

t.before(async (ctx) => {
  const b = (ctx.b = await boot());
  const p = await product(b, { name: 'Flute' });
  const d1 = await delivery(b, {
    name: 'D1',
    external_ids: ['f-1'],
    products: [{ product_id: p.id }],
  });
  const d2 = await delivery(b, { name: 'D2', external_ids: ['f-2'] });
  ctx.start = b.clock.now().toISOString();
  const send = async (d: any, body: Record<string, unknown>) => {
    const res = await postback(b, d.id, sale(body));
    assert.is(res.status, 200);
    b.clock.advance(HOUR);
    // A sale of no product the delivery listens to is recorded, but not named in the answer.
    const q = `/api/v3/sales/transactions?transaction_id=${body.transaction_id}`;
    return res.body.transaction?.id ?? ((await b.api('GET', q)).body.data[0].id as string);
  };
  ctx.ids = {
    a: await send(d1, { transaction_id: 'TA', product_id: 'f-1', client_email: 'a@example.com' }),
    b: await send(d1, {
      transaction_id: 'TB',
      recurrence_id: 'RB',
      product_id: 'f-1',
      client_email: 'B@example.com',
    }),
    c: await send(d2, { transaction_id: 'TC', product_id: 'zzz', client_email: 'a@example.com' }),
    d1: d1.id,
    d2: d2.id,
  };
});
t.after(async (ctx) => ctx.b.close());

const ids = async (b: Booted, q = '') =>
  (await all(b, `${T}?limit=1${q}`)).map((x: any) => x.transaction_id);

t('newest first by default; every filter narrows', async ({ b, ids: i, start }) => {
  assert.equal(await ids(b), ['TC', 'TB', 'TA']);
  assert.equal(await ids(b, '&sort=created_at'), ['TA', 'TB', 'TC']);
  assert.equal(await ids(b, `&delivery_id=${i.d2}`), ['TC']);
  assert.equal(await ids(b, '&delivery_id=999999'), []);
  assert.equal(await ids(b, '&engine=generic'), ['TC', 'TB', 'TA']);
  assert.equal(await ids(b, '&engine=marketplace'), []);
  assert.equal(await ids(b, '&transaction_id=TB'), ['TB']);
  assert.equal(await ids(b, '&recurrence_id=RB'), ['TB']);
  assert.equal(await ids(b, '&status=ignored'), ['TC']);
  assert.equal(await ids(b, '&status=processed'), ['TB', 'TA']);
  assert.equal(await ids(b, '&email=A@EXAMPLE.com'), ['TC', 'TA']);
  const second = new Date(Date.parse(start) + HOUR).toISOString();
  assert.equal(await ids(b, `&created_after=${encodeURIComponent(second)}`), ['TC', 'TB']);
  assert.equal(await ids(b, `&created_before=${encodeURIComponent(second)}`), ['TA']);
  const bad = await b.api('GET', `${T}?status=paid`);
  assert.equal([bad.status, bad.body.error.code], [422, 'validation_failed']);
  const unknown = await b.api('GET', `${T}?colour=red`);
  assert.equal([unknown.status, unknown.body.error.code], [400, 'unknown_parameter']);
  // A cursor is bound to its filters.
  const page = await b.api('GET', `${T}?limit=1&engine=generic`);
  const other = await b.api(
    'GET',
    `${T}?limit=1&engine=marketplace&cursor=${encodeURIComponent(page.body.page.next_cursor)}`,
  );
  assert.equal([other.status, other.body.error.code], [400, 'invalid_cursor']);
});

t('GET one; another account and a missing id are 404; the permission', async ({ b, ids: i }) => {
  const one = await b.api('GET', `${T}/${i.c}`);
  const first = (await b.api('GET', `${T}/${i.a}`)).body.data;
  // Ignored, yet linked to the student the buyer already is.
  assert.equal(
    [one.status, one.body.data.status, one.body.data.error, one.body.data.user_id],
    [200, 'ignored', 'unknown_product', first.user_id],
  );
  assert.is((await b.api('GET', `${T}/999999`)).status, 404);
  const other = await account(b, 'Other school');
  assert.is((await b.api('GET', `${T}/${i.a}`, { secret: other.secret })).status, 404);
  assert.equal((await b.api('GET', T, { secret: other.secret })).body.data, []);
  const narrow = await credentialWith(b, ['deliveries.read']);
  const denied = await b.api('GET', T, { secret: narrow.secret });
  assert.equal([denied.status, denied.body.error.details[0].reason], [403, 'transactions.read']);
});

t('a sandbox reset deletes deliveries, transactions and the outbox', async ({ b }) => {
  const { id, secret } = await b.app.services.accounts
    .createAccount({ name: 'Sandbox', sandbox: true })
    .then(async ({ id }) => ({
      id,
      secret: (
        await b.app.services.accounts.createRootCredential({ accountId: id, permissions: ['*'] })
      ).secret,
    }));
  const p = await product(b, { name: 'Sandboxed' }, secret);
  const d = await delivery(
    b,
    { name: 'S', external_ids: ['s-1'], products: [{ product_id: p.id }] },
    secret,
  );
  await postback(b, d, sale({ transaction_id: 'SB', product_id: 's-1' }));
  assert.is((await b.api('GET', T, { secret })).body.data.length, 1);
  await b.app.startWorkers();
  const res = await b.api('POST', '/api/v3/sandbox/resets', { key: 'reset-1', secret });
  assert.is(res.status, 202);
  const done = await waitFor(b, res.body.data.id, undefined, secret);
  assert.is(done.status, 'succeeded');
  assert.equal((await b.api('GET', T, { secret })).body.data, []);
  assert.equal((await b.api('GET', '/api/v3/sales/deliveries', { secret })).body.data, []);
  assert.equal(await b.app.db('emails').where('account_id', id), []);
});

t.run();
