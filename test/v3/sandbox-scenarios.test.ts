// POST /sandbox/scenarios: named, reproducible data sets loaded as an operation into a sandbox
// account after it is emptied as a reset empties it.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { account, product } from '../helpers/catalog.ts';
import { allItems, waitFor } from '../helpers/operations.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';

const SC = '/api/v3/sandbox/scenarios';
const t = suite<{ b: Booted; hooks: Receiver }>('v3 sandbox scenarios');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  ctx.hooks = await startReceiver();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => {
  await ctx.b.close();
  await ctx.hooks.close();
});

async function sandbox(b: Booted, name = 'Sandbox') {
  const { id } = await b.app.services.accounts.createAccount({ name, sandbox: true });
  const { secret } = await b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
  });
  return { id, secret };
}

/**
 * Loads a scenario and waits for its operation to end. Polls twice a second: every poll is a call
 * with its audit entry, written beside the load. The stop is generous (a shared, busy machine
 * took minutes), not a speed rule.
 */
async function load(b: Booted, secret: string, body: object) {
  const res = await b.api('POST', SC, { body, key: newKey(), secret });
  assert.is(res.status, 202, JSON.stringify(res.body));
  assert.is(res.body.data.type, 'sandbox.scenario');
  assert.is(res.headers.get('location'), `/api/v3/operations/${res.body.data.id}`);
  const deadline = Date.now() + 1_800_000;
  for (;;) {
    const op = (await b.api('GET', `/api/v3/operations/${res.body.data.id}`, { secret })).body.data;
    if (['succeeded', 'partially_succeeded', 'failed', 'canceled'].includes(op.status)) {
      assert.is(op.status, 'succeeded', JSON.stringify(await allItems(b, op.id, secret)));
      return op;
    }
    if (Date.now() > deadline) throw new Error(`scenario stuck: ${JSON.stringify(op)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function all(b: Booted, secret: string, path: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const res = await b.api('GET', `${path}${sep}limit=200${q}`, { secret });
    assert.is(res.status, 200, JSON.stringify(res.body));
    out.push(...res.body.data);
    cursor = res.body.page.next_cursor;
  } while (cursor);
  return out;
}

const sorted = <T>(rows: T[]) => rows.map((r) => JSON.stringify(r)).sort();

/** The account's data without ids, revisions, tokens and times: what a scenario fixes. */
async function exported(b: Booted, sb: { id: number; secret: string }) {
  const db = b.app.services.db;
  return {
    users: sorted(
      (await all(b, sb.secret, '/api/v3/users')).map((u) => [u.name, u.email, u.phone, u.document]),
    ),
    tags: sorted((await all(b, sb.secret, '/api/v3/tags')).map((x) => [x.name, x.users_count])),
    products: sorted(
      (await all(b, sb.secret, '/api/v3/products')).map((p) => [p.name, p.status, p.description]),
    ),
    deliveries: sorted(
      (await all(b, sb.secret, '/api/v3/sales/deliveries')).map((d) => [
        d.name,
        d.gateway,
        d.external_ids,
        d.products_count,
        d.tags_count,
      ]),
    ),
    transactions: sorted(
      (await all(b, sb.secret, '/api/v3/sales/transactions')).map((x) => [
        x.transaction_id,
        x.event,
        x.client_email,
        x.status,
        x.product_ids,
      ]),
    ),
    // Enrollments and tag assignments have no account-wide list: read as the database holds them.
    enrollments: sorted(
      (
        await db('enrollments as e')
          .join('users as u', 'u.id', 'e.user_id')
          .join('products as p', 'p.id', 'e.product_id')
          .where('e.account_id', sb.id)
          .select('u.email', 'p.name', 'e.ended', 'e.duration', 'e.duration_unit')
      ).map((r: any) => [r.email, r.name, Boolean(r.ended), r.duration, r.duration_unit]),
    ),
    userTags: sorted(
      (
        await db('user_tags as ut')
          .join('users as u', 'u.id', 'ut.user_id')
          .join('tags as t', 't.id', 'ut.tag_id')
          .where('u.account_id', sb.id)
          .select('u.email', 't.name')
      ).map((r: any) => [r.email, r.name]),
    ),
  };
}

t('a production account: 409 sandbox_required; nothing is queued', async ({ b }) => {
  const res = await b.api('POST', SC, { body: { name: 'empty_school' }, key: newKey() });
  assert.is(res.status, 409);
  assert.is(res.body.error.code, 'sandbox_required');
  const ops = await b.api('GET', '/api/v3/operations?limit=200');
  if (ops.status === 200)
    assert.not.ok(ops.body.data.some((o: any) => o.type === 'sandbox.scenario'));
});

t('unknown names and bad seeds answer 422; sandbox.manage is needed', async ({ b }) => {
  const sb = await sandbox(b);
  for (const name of ['school_2000', '__proto__', 'toString', 'constructor', '']) {
    const res = await b.api('POST', SC, { body: { name }, key: newKey(), secret: sb.secret });
    assert.is(res.status, 422, name);
    assert.is(res.body.error.code, 'validation_failed', name);
    assert.is(res.body.error.details[0].field, 'name');
  }
  for (const seed of [-1, 2147483648, 1.5, '7']) {
    const res = await b.api('POST', SC, {
      body: { name: 'empty_school', seed },
      key: newKey(),
      secret: sb.secret,
    });
    assert.is(res.status, 422, String(seed));
  }
  const extra = await b.api('POST', SC, {
    body: { name: 'empty_school', size: 3 },
    key: newKey(),
    secret: sb.secret,
  });
  assert.is(extra.body.error.code, 'unknown_field');
  const narrow = await credentialWith(b, ['users.write']);
  const denied = await b.api('POST', SC, {
    body: { name: 'empty_school' },
    key: newKey(),
    secret: narrow.secret,
  });
  assert.is(denied.status, 403);
});

t(
  'empty_school: empties the account as a reset does, then one product and no students',
  async ({ b }) => {
    const sb = await sandbox(b);
    const as = { secret: sb.secret };
    await b.api('POST', '/api/v3/users', {
      ...as,
      body: { name: 'Ana', email: 'ana@example.com' },
      key: newKey(),
    });
    await b.api('POST', '/api/v3/tags', { ...as, body: { name: 'old' }, key: newKey() });
    await product(b, { name: 'Old course' }, sb.secret);

    const op = await load(b, sb.secret, { name: 'empty_school', seed: 7 });
    const items = await allItems(b, op.id, sb.secret);
    assert.equal(
      items.map((i) => i.key),
      ['reset', 'product'],
    );
    assert.equal(items[0].result, {
      users: 1,
      tags: 2,
      diamonds: 0,
      imports: 0,
      exports: 0,
      operations: 0,
      files: 0,
      uploads: 0,
    });
    assert.equal((await b.api('GET', '/api/v3/users', as)).body.data, []);
    const products = (await b.api('GET', '/api/v3/products', as)).body.data;
    assert.is(products.length, 1);
    assert.is.not(products[0].name, 'Old course');
    // The same seed names the same product; the default seed is fixed too.
    await load(b, sb.secret, { name: 'empty_school', seed: 7 });
    assert.is((await b.api('GET', '/api/v3/products', as)).body.data[0].name, products[0].name);
    const other = await sandbox(b, 'Other sandbox');
    await load(b, other.secret, { name: 'empty_school' });
    await load(b, sb.secret, { name: 'empty_school', seed: 1 });
    assert.is(
      (await b.api('GET', '/api/v3/products', as)).body.data[0].name,
      (await b.api('GET', '/api/v3/products', { secret: other.secret })).body.data[0].name,
    );
  },
);

t(
  'every_event: each event type of the catalog once; webhooks receive them',
  async ({ b, hooks }) => {
    const sb = await sandbox(b);
    const hook = await b.api('POST', '/api/v3/webhooks', {
      body: { url: hooks.url, event_types: ['*'] },
      key: newKey(),
      secret: sb.secret,
    });
    assert.is(hook.status, 201, JSON.stringify(hook.body));
    const op = await load(b, sb.secret, { name: 'every_event', seed: 3 });
    const catalog = (await b.api('GET', '/api/v3/event-types', { secret: sb.secret })).body.data;
    const types = catalog.map((e: any) => e.type ?? e.name).sort();
    assert.is(types.length, 12);
    const events = await all(b, sb.secret, '/api/v3/events');
    assert.equal(events.map((e) => e.type).sort(), types);
    const finished = events.find((e) => e.type === 'operation.finished');
    assert.is(finished.data.operation.id, op.id);
    await hooks.waitFor(12, 30_000);
    const received = hooks.received.map((r) => JSON.parse(r.body).type).sort();
    assert.equal(received, types);
    // The scenario leaves its student deleted, so the account has no students.
    assert.equal((await b.api('GET', '/api/v3/users', { secret: sb.secret })).body.data, []);
  },
);

t(
  'school_1000: 1,000 students; the same seed gives the same data, another seed differs',
  async ({ b }) => {
    // Two sandboxes load at once (PostgreSQL runs both; SQLite one after the other).
    const sb = await sandbox(b);
    const other = await sandbox(b, 'Other sandbox');
    const [op] = await Promise.all([
      load(b, sb.secret, { name: 'school_1000', seed: 42 }),
      load(b, other.secret, { name: 'school_1000', seed: 43 }),
    ]);
    assert.is(op.progress.total, 1002);
    const first = await exported(b, sb);
    assert.is(first.users.length, 1000);
    assert.is(first.tags.length, 6 + 5); // the scenario's tags and the products' schedule tags
    assert.is(first.products.length, 5);
    assert.is(first.deliveries.length, 3);
    assert.ok(first.transactions.length > 400, String(first.transactions.length));
    assert.ok(first.transactions.some((x) => x.includes('"refunded"')));
    assert.ok(first.enrollments.length > first.transactions.length);
    assert.ok(first.userTags.length > 500);
    const second = await exported(b, other);
    assert.is(second.users.length, 1000);
    assert.not.equal(second.users, first.users);
    assert.not.equal(second.transactions, first.transactions);
    assert.not.equal(second.enrollments, first.enrollments);
    // Loaded again over its own data (the reset empties it first): the same data.
    await load(b, sb.secret, { name: 'school_1000', seed: 42 });
    assert.equal(await exported(b, sb), first);
  },
);

t.run();
