// Postbacks hardened (issue 21): the URL carries a token and new deliveries a generated secret;
// a sale of a product the delivery does not listen to is no oracle; U+0000 is 422 with nothing
// recorded; parallel sales for one new buyer are all recorded, with one student.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { product } from '../helpers/catalog.ts';
import { D, delivery, postTo, postback, rows, sale } from '../helpers/sales.ts';

const t = suite<{ b: Booted }>('v3 sales: postbacks hardened');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const countTransactions = async (b: Booted) => (await rows(b, 'sales_transactions')).length;
const studentsNamed = async (b: Booted, email: string) =>
  (await b.api('GET', `/api/v3/users?email=${encodeURIComponent(email)}`)).body.data;

t('a new delivery: tokened URL, generated secret shown once, both required', async ({ b }) => {
  const p = await product(b, { name: 'Tokens' });
  const key = newKey();
  const body = {
    gateway: 'generic',
    name: 'T',
    external_ids: ['tk-1'],
    products: [{ product_id: p.id }],
  };
  const res = await b.api('POST', D, { body, key });
  assert.is(res.status, 201);
  const d = res.body.data;
  const [, token] = new RegExp(`^${b.url}/postbacks/${d.id}/([A-Za-z0-9_-]{32})$`).exec(
    d.postback_url,
  )!;
  const secret = d.secret.generated as string;
  assert.match(secret, /^pbsec_[A-Za-z0-9_-]{43}$/);
  // Never again: not in GET, not replayed under the same key.
  assert.equal((await b.api('GET', `${D}/${d.id}`)).body.data.secret, { configured: true });
  const again = await b.api('POST', D, { body, key });
  assert.equal([again.status, again.body.error.code], [409, 'secret_not_replayable']);

  const before = await countTransactions(b);
  const one = sale({ transaction_id: 'TK-1', product_id: 'tk-1', client_email: 'tk@example.com' });
  const auth = { 'x-postback-secret': secret };
  // The id alone, a wrong token: 404, as for an id that does not exist.
  assert.is((await postTo(`${b.url}/postbacks/${d.id}`, one, auth)).status, 404);
  const wrong = `${b.url}/postbacks/${d.id}/${token!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}`;
  assert.is((await postTo(wrong, one, auth)).status, 404);
  // The right URL without the secret: 401.
  assert.is((await postTo(d.postback_url, one)).status, 401);
  assert.is(await countTransactions(b), before);
  const ok = await postTo(d.postback_url, one, auth);
  assert.equal([ok.status, ok.body.transaction.status], [200, 'processed']);
});

t('generate_secret: false opts out; the token alone then authenticates', async ({ b }) => {
  const d = await delivery(b, { name: 'Open', external_ids: ['op-1'], generate_secret: false });
  assert.equal(d.secret, { configured: false });
  const one = sale({ transaction_id: 'OP-1', product_id: 'op-1', client_email: 'op@example.com' });
  assert.is((await postTo(`${b.url}/postbacks/${d.id}`, one)).status, 404);
  assert.is((await postTo(d.postback_url, one)).status, 200);
  // A gateway whose secret is its own still needs one given: nothing is generated for it.
  const m = await b.api('POST', D, {
    body: { gateway: 'marketplace', name: 'M', generate_secret: true },
    key: newKey(),
  });
  assert.equal([m.status, m.body.error.details[0].field], [422, 'secret']);
});

t('a delivery from before tokens: its old URL works while it has a secret', async ({ b }) => {
  const d = await delivery(b, { name: 'Old', external_ids: ['old-1'], secret: 'old-secret-1' });
  // What migration 014 leaves on a delivery that existed before it.
  await b.app.db('deliveries').where('id', Number(d.id)).update({ bare_url: true });
  const bare = `${b.url}/postbacks/${d.id}`;
  const one = sale({ transaction_id: 'OLD-1', product_id: 'old-1', client_email: 'o@example.com' });
  assert.is((await postTo(bare, one)).status, 401);
  assert.is((await postTo(bare, one, { 'x-postback-secret': 'old-secret-1' })).status, 200);
  // Without a secret the bare id would be an open door at a sequential number: 404.
  assert.is((await b.api('PATCH', `${D}/${d.id}`, { body: { secret: null } })).status, 200);
  const two = { ...one, transaction_id: 'OLD-2' };
  assert.is((await postTo(bare, two)).status, 404);
  assert.is((await postTo(d.postback_url, two)).status, 200);
});

t(
  'a product the delivery does not listen to: the answer of any ignored postback',
  async ({ b }) => {
    const p = await product(b, { name: 'Oracle' });
    const d = await delivery(b, {
      gateway: 'marketplace',
      name: 'Mk',
      external_ids: ['555'],
      products: [{ product_id: p.id }],
      secret: 'market-secret',
    });
    const auth = { 'x-postback-secret': 'market-secret' };
    const approved = (productId: number, tx: string) => ({
      event: 'PURCHASE_APPROVED',
      data: {
        product: { id: productId },
        buyer: { name: 'Eva', email: 'eva@example.com' },
        purchase: { transaction: tx },
      },
    });
    const unknown = await postback(b, d, approved(556, 'OR-1'), auth);
    const unsupported = await postback(b, d, { event: 'PURCHASE_BILLET_PRINTED', data: {} }, auth);
    assert.equal(
      [unknown.status, unknown.body],
      [200, { received: true, ignored: 'not_applicable' }],
    );
    assert.equal([unsupported.status, unsupported.body], [unknown.status, unknown.body]);
    assert.equal(await studentsNamed(b, 'eva@example.com'), []);
    // Own keys only: an event named like a member of Object.prototype says nothing about access.
    const before = await countTransactions(b);
    for (const event of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const res = await postback(b, d, { ...approved(555, `P-${event}`), event }, auth);
      assert.equal(
        [res.status, res.body],
        [200, { received: true, ignored: 'not_applicable' }],
        event,
      );
    }
    assert.is(await countTransactions(b), before);
  },
);

t('U+0000 in any postback text: 422 invalid_characters, nothing recorded', async ({ b }) => {
  const d = await delivery(b, { name: 'Nul', external_ids: ['nul-1'] });
  const m = await delivery(b, {
    gateway: 'marketplace',
    name: 'NulM',
    external_ids: ['nul-2'],
    secret: 'nul-secret-1',
  });
  const before = await countTransactions(b);
  const email = 'nul@example.com';
  for (const [field, value] of [
    ['client_name', 'Ana\u0000'],
    ['transaction_id', 'NUL\u00001'],
    ['client_doc', '529\u0000'],
    ['client_phone', '\u0000'],
  ] as const) {
    const res = await postback(
      b,
      d.id,
      sale({ product_id: 'nul-1', client_email: email, [field]: value }),
    );
    assert.is(res.status, 422, field);
    assert.equal(
      res.body.error.details.map((x: any) => [x.field, x.code]),
      [[field, 'invalid_characters']],
    );
  }
  const res = await postback(
    b,
    m,
    {
      event: 'PURCHASE_APPROVED',
      data: {
        product: { id: 'nul-2' },
        buyer: { name: 'N\u0000', email },
        purchase: { transaction: 'NM-1' },
      },
    },
    { 'x-postback-secret': 'nul-secret-1' },
  );
  assert.equal(
    [res.status, res.body.error.details.map((x: any) => x.field)],
    [422, ['data.buyer.name']],
  );
  assert.is(await countTransactions(b), before);
  assert.equal(await studentsNamed(b, email), []);
});

t(
  'parallel sales for one new buyer: each recorded, repeats duplicate, one student',
  async ({ b }) => {
    const p = await product(b, { name: 'Rush' });
    const d = await delivery(b, {
      name: 'Rush',
      external_ids: ['rush'],
      products: [{ product_id: p.id }],
    });
    const email = 'rush@example.com';
    const distinct = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        postback(b, d, sale({ transaction_id: `R-${i}`, product_id: 'rush', client_email: email })),
      ),
    );
    assert.equal(
      distinct.map((r) => [r.status, r.body.duplicate]),
      Array.from({ length: 10 }, () => [200, false]),
      JSON.stringify(distinct.map((r) => r.body)),
    );
    const same = sale({
      transaction_id: 'R-SAME',
      product_id: 'rush',
      client_email: 'rush2@example.com',
    });
    const repeats = await Promise.all(Array.from({ length: 20 }, () => postback(b, d, same)));
    assert.equal(
      repeats.map((r) => r.status),
      Array.from({ length: 20 }, () => 200),
      JSON.stringify(repeats.map((r) => r.body)),
    );
    assert.is(repeats.filter((r) => r.body.duplicate === false).length, 1);
    assert.is(new Set(repeats.map((r) => r.body.transaction.id)).size, 1);
    const recorded = await rows(b, 'sales_transactions', { delivery_id: Number(d.id) });
    assert.is(recorded.length, 11);
    assert.is((await studentsNamed(b, email)).length, 1);
    assert.is((await studentsNamed(b, 'rush2@example.com')).length, 1);
  },
);

t.run();
