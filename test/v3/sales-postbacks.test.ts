// Gateway postbacks through HTTP: a sale becomes a transaction, a student and an enrollment that
// v3 shows; repeats are harmless; an archived delivery grants nothing; a wrong secret is 401 with
// nothing recorded; refunds and subscription events end or renew access.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DAY } from '../../src/clock.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { product } from '../helpers/catalog.ts';
import { D, delivery, postTo, postback, rows, sale, student } from '../helpers/sales.ts';

const t = suite<{ b: Booted }>('v3 sales: gateway postbacks');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const enrollmentsOf = async (b: Booted, userId: string) =>
  (await b.api('GET', `/api/v3/users/${userId}/enrollments`)).body.data;
const countTransactions = async (b: Booted) => (await rows(b, 'sales_transactions')).length;
const events = async (b: Booted, type: string) =>
  (await b.api('GET', `/api/v3/events?type=${type}`)).body.data;

t('a sale: transaction, new student, enrollment, welcome email, events', async ({ b }) => {
  const p = await product(b, { name: 'Python from zero' });
  const tag = (await b.api('POST', '/api/v3/tags', { body: { name: 'Buyers' }, key: newKey() }))
    .body.data;
  const d = await delivery(b, {
    name: 'Python',
    external_ids: ['py-1', 'py-2'],
    products: [{ product_id: p.id }],
    tag_ids: [tag.id],
    duration: 1,
    duration_unit: 'year',
  });
  const res = await postback(
    b,
    d.id,
    sale({
      transaction_id: 'HP-100',
      product_ids: ['other', 'py-2'],
      product_id: undefined,
      client_email: 'Caio@Example.com',
      client_name: 'Caio Prado',
      client_doc: '529.982.247-25',
      client_phone: '+55 11 99999-0000',
    }),
  );
  assert.is(res.status, 200);
  assert.equal(res.body, {
    received: true,
    duplicate: false,
    transaction: { id: res.body.transaction.id, status: 'processed', error: null },
  });
  const tx = (await b.api('GET', `/api/v3/sales/transactions/${res.body.transaction.id}`)).body
    .data;
  const userId = tx.user_id;
  assert.equal(tx, {
    object: 'transaction',
    id: res.body.transaction.id,
    delivery_id: d.id,
    user_id: userId,
    engine: 'generic',
    transaction_id: 'HP-100',
    recurrence_id: null,
    event: 'approved',
    product_ids: ['other', 'py-2'],
    client_name: 'Caio Prado',
    client_email: 'Caio@Example.com',
    client_doc: '529.982.247-25',
    client_phone: '+55 11 99999-0000',
    status: 'processed',
    transaction_status: 'approved',
    recurrence_status: null,
    error: null,
    created_at: tx.created_at,
  });
  const user = (await b.api('GET', `/api/v3/users/${userId}`)).body.data;
  assert.equal(
    [user.name, user.email, user.document, user.phone],
    ['Caio Prado', 'Caio@Example.com', '52998224725', '+55 11 99999-0000'],
  );
  const [e] = await enrollmentsOf(b, userId);
  assert.equal(
    [e.product_id, e.delivery_id, e.transaction_id, e.duration, e.duration_unit, e.ended],
    [p.id, d.id, tx.id, 1, 'year', false],
  );
  assert.is(Date.parse(e.ends_at) - Date.parse(e.started_at), 365 * DAY);
  const schedules = (await b.api('GET', `/api/v3/products/${p.id}/access-schedules`)).body.data;
  assert.is(e.access_schedule_id, schedules[0].id);
  const tags = (await b.api('GET', `/api/v3/users/${userId}/tags`)).body.data;
  assert.equal(
    tags.map((x: any) => x.name),
    ['Buyers'],
  );
  const emails = await rows(b, 'emails', { user_id: Number(userId) });
  assert.equal(
    emails.map((m: any) => [m.kind, m.to_email, m.subject, m.status]),
    [['enrollment.welcome', 'Caio@Example.com', 'Welcome to Python from zero', 'queued']],
  );
  const got = (await b.api('GET', `${D}/${d.id}`)).body.data;
  assert.is(got.enrollments_count, 1);
  const [recorded] = await events(b, 'transaction.recorded');
  assert.is(recorded.data.transaction.id, tx.id);
  const [created] = await events(b, 'enrollment.created');
  assert.is(created.data.enrollment.id, e.id);
});

t('a repeated postback is harmless; an existing student is reused', async ({ b }) => {
  const p = await product(b, { name: 'Repeat' });
  const d = await delivery(b, {
    name: 'R',
    external_ids: ['r-1'],
    products: [{ product_id: p.id }],
  });
  const ana = await student(b, 'ana.repeat@example.com');
  const body = sale({
    transaction_id: 'R-1',
    product_id: 'r-1',
    client_email: 'ANA.repeat@example.com',
  });
  const first = await postback(b, d.id, body);
  const before = await countTransactions(b);
  const emailsBefore = (await rows(b, 'emails')).length;
  const again = await postback(b, d.id, { ...body, client_name: 'Someone Else' });
  assert.is(again.status, 200);
  assert.is(again.body.duplicate, true);
  assert.is(again.body.transaction.id, first.body.transaction.id);
  assert.is(await countTransactions(b), before);
  assert.is((await rows(b, 'emails')).length, emailsBefore);
  const list = await enrollmentsOf(b, ana.id);
  assert.is(list.length, 1);
  assert.is((await b.api('GET', `/api/v3/users/${ana.id}`)).body.data.name, 'Ana Souza');
  // Another status of the same sale is news.
  const refund = await postback(b, d.id, { ...body, status: 'refunded' });
  assert.is(refund.body.duplicate, false);
  assert.is((await enrollmentsOf(b, ana.id))[0].ended, true);
});

t('an archived delivery records the sale as ignored and grants nothing', async ({ b }) => {
  const p = await product(b, { name: 'Archived course' });
  const d = await delivery(b, {
    name: 'A',
    external_ids: ['a-1'],
    products: [{ product_id: p.id }],
  });
  await postback(
    b,
    d.id,
    sale({ transaction_id: 'A-1', product_id: 'a-1', client_email: 'kept@example.com' }),
  );
  const kept = (await b.api('GET', '/api/v3/sales/transactions?transaction_id=A-1')).body.data[0];
  const archived = await b.api('PATCH', `${D}/${d.id}`, { body: { status: 'archived' } });
  assert.is(archived.body.data.status, 'archived');
  const res = await postback(
    b,
    d.id,
    sale({ transaction_id: 'A-2', product_id: 'a-1', client_email: 'late@example.com' }),
  );
  assert.is(res.status, 200);
  assert.equal(res.body.transaction.status, 'ignored');
  assert.equal(res.body.transaction.error, 'delivery_archived');
  const tx = (await b.api('GET', `/api/v3/sales/transactions/${res.body.transaction.id}`)).body
    .data;
  assert.is(tx.user_id, null);
  const late = await b.api('GET', '/api/v3/users?email=late@example.com');
  assert.equal(late.body.data, []);
  // A refund of an earlier sale is not processed either: access already granted stays.
  const refund = await postback(
    b,
    d.id,
    sale({
      transaction_id: 'A-1',
      product_id: 'a-1',
      status: 'refunded',
      client_email: 'kept@example.com',
    }),
  );
  assert.is(refund.body.transaction.status, 'ignored');
  assert.is((await enrollmentsOf(b, kept.user_id))[0].ended, false);
  // Restored, it grants again.
  await b.api('PATCH', `${D}/${d.id}`, { body: { status: 'active' } });
  const again = await postback(
    b,
    d.id,
    sale({ transaction_id: 'A-3', product_id: 'a-1', client_email: 'late@example.com' }),
  );
  assert.is(again.body.transaction.status, 'processed');
  const lateUser = (await b.api('GET', '/api/v3/users?email=late@example.com')).body.data[0];
  assert.is((await enrollmentsOf(b, lateUser.id)).length, 1);
});

t('a sale of no product the delivery listens to is ignored', async ({ b }) => {
  const p = await product(b, { name: 'Listening' });
  const d = await delivery(b, {
    name: 'L',
    external_ids: ['l-1'],
    products: [{ product_id: p.id }],
  });
  const res = await postback(
    b,
    d.id,
    sale({ transaction_id: 'L-1', product_id: 'nope', client_email: 'no@example.com' }),
  );
  // Answered like any postback that does not apply (no oracle for the delivery's external ids),
  // recorded for the school to see.
  assert.equal(res.body, { received: true, ignored: 'not_applicable' });
  const [row] = (await b.api('GET', '/api/v3/sales/transactions?transaction_id=L-1')).body.data;
  assert.equal([row.status, row.error, row.user_id], ['ignored', 'unknown_product', null]);
  assert.equal((await b.api('GET', '/api/v3/users?email=no@example.com')).body.data, []);
});

t('a delivery with a secret: wrong or missing secret is 401 and records nothing', async ({ b }) => {
  const p = await product(b, { name: 'Secret course' });
  const d = await delivery(b, {
    gateway: 'marketplace',
    name: 'M',
    external_ids: ['777'],
    products: [{ product_id: p.id }],
    secret: 'hottok-secret-1',
  });
  assert.equal(d.secret, { configured: true });
  const body = {
    event: 'PURCHASE_APPROVED',
    data: {
      product: { id: 777 },
      buyer: { name: 'Duda', email: 'duda@example.com', document: '123', checkout_phone: '55119' },
      purchase: { transaction: 'HP-9', status: 'APPROVED' },
    },
  };
  const before = await countTransactions(b);
  for (const headers of [{}, { 'x-postback-secret': 'wrong-secret' }] as Record<string, string>[]) {
    const res = await postback(b, d.id, body, headers);
    assert.is(res.status, 401);
    assert.is(res.body.error.code, 'unauthenticated');
  }
  // Not even a malformed body is looked at without the secret.
  assert.is((await postback(b, d.id, '{oops', { 'x-postback-secret': 'nope' })).status, 401);
  assert.is(await countTransactions(b), before);
  assert.equal((await b.api('GET', '/api/v3/users?email=duda@example.com')).body.data, []);
  const ok = await postback(b, d.id, body, { 'x-postback-secret': 'hottok-secret-1' });
  assert.is(ok.status, 200);
  const tx = (await b.api('GET', `/api/v3/sales/transactions/${ok.body.transaction.id}`)).body.data;
  assert.equal(
    [tx.engine, tx.transaction_id, tx.product_ids, tx.client_doc],
    ['marketplace', 'HP-9', ['777'], '123'],
  );
  // An invalid CPF is kept on the transaction but left off the new student.
  assert.is((await b.api('GET', `/api/v3/users/${tx.user_id}`)).body.data.document, null);
  // Events that say nothing about access are acknowledged, not recorded.
  const printed = await postback(
    b,
    d.id,
    { event: 'PURCHASE_BILLET_PRINTED', data: {} },
    {
      'x-postback-secret': 'hottok-secret-1',
    },
  );
  assert.equal(printed.body, { received: true, ignored: 'not_applicable' });
  // A rotated secret: the old one stops working at once.
  await b.api('PATCH', `${D}/${d.id}`, { body: { secret: 'hottok-secret-2' } });
  const old = await postback(b, d.id, body, { 'x-postback-secret': 'hottok-secret-1' });
  assert.is(old.status, 401);
});

t('refunds and chargebacks end access; subscriptions renew and end it', async ({ b }) => {
  const p = await product(b, { name: 'Monthly club' });
  const d = await delivery(b, {
    name: 'Club',
    kind: 'subscription',
    external_ids: ['club'],
    products: [{ product_id: p.id }],
    duration: 1,
    duration_unit: 'month',
  });
  const base = { product_id: 'club', client_email: 'sub@example.com', recurrence_id: 'SUB-1' };
  await postback(b, d.id, sale({ ...base, transaction_id: 'S-1', status: 'trial' }));
  const user = (await b.api('GET', '/api/v3/users?email=sub@example.com')).body.data[0];
  const [first] = await enrollmentsOf(b, user.id);
  assert.equal([first.duration, first.duration_unit], [1, 'month']);
  const trial = (await b.api('GET', '/api/v3/sales/transactions?recurrence_id=SUB-1')).body.data[0];
  assert.equal([trial.transaction_status, trial.recurrence_status], ['trial', 'trial']);
  await postback(b, d.id, sale({ ...base, transaction_id: 'S-2', status: 'subscription_active' }));
  const [renewed] = await enrollmentsOf(b, user.id);
  assert.is(renewed.id, first.id);
  assert.equal([renewed.duration, renewed.duration_unit, renewed.ended], [2, 'month', false]);
  assert.ok(renewed.ends_at > first.ends_at);
  assert.is(
    renewed.transaction_id,
    (await b.api('GET', '/api/v3/sales/transactions?transaction_id=S-2')).body.data[0].id,
  );
  await postback(
    b,
    d.id,
    sale({ ...base, transaction_id: 'S-2', status: 'subscription_canceled' }),
  );
  const [ended] = await enrollmentsOf(b, user.id);
  assert.equal([ended.ended, ended.ends_at <= new Date(b.clock.now()).toISOString()], [true, true]);
  const [endedEvent] = await events(b, 'enrollment.ended');
  assert.is(endedEvent.data.enrollment.id, ended.id);
  // A new sale after the end starts a new enrollment.
  await postback(b, d.id, sale({ ...base, transaction_id: 'S-3' }));
  const list = await enrollmentsOf(b, user.id);
  assert.equal(
    list.map((e: any) => e.ended),
    [false, true],
  );
  await postback(b, d.id, sale({ ...base, transaction_id: 'S-3', status: 'chargeback' }));
  assert.equal(
    (await enrollmentsOf(b, user.id)).map((e: any) => e.ended),
    [true, true],
  );
  // Ending for a buyer who is not a student creates nobody.
  const stranger = await postback(
    b,
    d.id,
    sale({ ...base, transaction_id: 'S-9', status: 'refunded', client_email: 'who@example.com' }),
  );
  assert.is(stranger.body.transaction.status, 'processed');
  assert.equal((await b.api('GET', '/api/v3/users?email=who@example.com')).body.data, []);
});

t('malformed requests: 404, 405, 415, 400 and 422 record nothing', async ({ b }) => {
  const d = await delivery(b, { name: 'Bad', external_ids: ['bad'], generate_secret: false });
  const before = await countTransactions(b);
  const token = d.postback_url.split('/').pop();
  assert.is((await postTo(`${b.url}/postbacks/999999/${token}`, sale())).status, 404);
  assert.is((await postTo(`${b.url}/postbacks/abc/${token}`, sale())).status, 404);
  const get = await fetch(d.postback_url);
  assert.is(get.status, 405);
  assert.is(get.headers.get('allow'), 'POST');
  const form = await fetch(d.postback_url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'a=1',
  });
  assert.is(form.status, 415);
  const broken = await postback(b, d.id, '{"transaction_id":');
  assert.equal([broken.status, broken.body.error.code], [400, 'malformed_json']);
  const invalid = await postback(b, d.id, {
    transaction_id: ' ',
    status: 'paid',
    client_email: 'x',
  });
  assert.is(invalid.status, 422);
  assert.equal(
    invalid.body.error.details.map((x: any) => x.field),
    ['transaction_id', 'status', 'product_id', 'client_email'],
  );
  assert.is(await countTransactions(b), before);
});

t.run();
