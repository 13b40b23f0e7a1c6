// users.upsert chunks applied set-based (applyMany, PostgreSQL) write what the item-by-item path
// writes: the same item results, students, events (in order) and webhook deliveries, each of
// which reaches its receiver. Two accounts of one app run the same batches, one with applyMany and
// one without; a chunk with an item that fails, or two items of one email, goes item by item and
// its failing item fails alone. On SQLite both accounts go item by item (applyMany is PostgreSQL's).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BatchType } from '../../src/domain/operations/batch-types.ts';
import { loadSpec } from '../../src/app.ts';
import { TestClock } from '../../src/clock.ts';
import { boot, makeClient, type Booted } from '../helpers/app.ts';
import { ContractChecker } from '../helpers/contract.ts';
import { allItems, submit, waitFor } from '../helpers/operations.ts';

const pg = Boolean(process.env.TEST_DATABASE_URL);

/** A local receiver: the webhook ids (evt_<id>) it was sent. */
async function receiver() {
  const got: string[] = [];
  const server = http.createServer((req, res) => {
    got.push(String(req.headers['webhook-id']));
    req.resume().on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return { got, url, close: () => (server.closeAllConnections(), server.close()) };
}

interface Twin {
  accountId: number;
  api: Booted['api'];
}

async function account(b: Booted, name: string, hookUrl: string): Promise<Twin> {
  const { id: accountId } = await b.app.services.accounts.createAccount({ name });
  const root = await b.app.services.accounts.createRootCredential({
    accountId,
    permissions: ['*'],
    name: 'Root',
  });
  const { webhooks, users } = b.app.services;
  await webhooks.create(accountId, { url: hookUrl, event_types: ['*'] });
  await webhooks.create(accountId, { url: `${hookUrl}?created`, event_types: ['user.created'] });
  // Students the batches update: some change, some get the same values again (no event).
  for (let i = 0; i < 30; i++)
    await users.create(accountId, {
      name: `Old ${i}`,
      email: `old${i}@example.com`,
      phone: i % 2 ? '+5511988887777' : undefined,
      utm: { utm_source: 'ads', utm_medium: 'cpc' },
    });
  return { accountId, api: makeClient(b.url, root.secret, new ContractChecker(loadSpec())) };
}

/**
 * 130 items (two set-based chunks): creates, updates, and updates that change nothing. One name
 * has a lone surrogate (JSON allows it): stored as U+FFFD either way, the chunk still set-based.
 */
const mixed = () => [
  ...Array.from({ length: 100 }, (_, i) => ({
    key: `new${i}`,
    payload: {
      email: `New${i}@Example.com`,
      name: i === 7 ? 'New \ud800 7' : `  New ${i} `,
      ...(i % 3 === 0 ? { document: '529.982.247-25', free: true } : {}),
      ...(i % 4 === 0 ? { utm: { utm_source: 'mail' }, job_title: 'Teacher', phone: '' } : {}),
    },
  })),
  ...Array.from({ length: 20 }, (_, i) => ({
    key: `upd${i}`,
    payload: {
      email: i % 2 ? `OLD${i}@example.com` : `old${i}@example.com`,
      name: `Renamed ${i}`,
      ...(i % 3 === 0 ? { phone: null, utm: { utm_medium: 'email', gclid: 'g1' } } : {}),
      ...(i % 5 === 0 ? { company_name: 'ACME', company_size: '10-50', free: true } : {}),
    },
  })),
  ...Array.from({ length: 10 }, (_, i) => ({
    key: `same${i}`,
    payload: { email: `old${20 + i}@example.com`, name: `Old ${20 + i}` },
  })),
];

/** An item that fails (an invalid CPF) and two items of one email: item by item. */
const awkward = () => [
  { key: 'a0', payload: { email: 'late0@example.com', name: 'Late 0' } },
  { key: 'bad', payload: { email: 'bad@example.com', name: 'Bad', document: '111.111.111-12' } },
  { key: 'a1', payload: { email: 'late1@example.com', name: 'Late 1' } },
  { key: 'twice1', payload: { email: 'twice@example.com', name: 'Twice' } },
  { key: 'twice2', payload: { email: 'TWICE@example.com', name: 'Twice again', free: true } },
  { key: 'old', payload: { email: 'old1@example.com', name: 'Once more' } },
];

/**
 * The clock runs: timestamps differ between the two runs, whether a row was changed does not.
 * It ticks a millisecond at every reading, so a student created and updated by two items in one
 * millisecond of the machine still reads as changed (on the real clock one run saw 'created').
 */
class TickingClock extends TestClock {
  override now(): Date {
    this.advance(1);
    return super.now();
  }
}
const moments = (r: { created_at: string; updated_at: string }) =>
  r.updated_at === r.created_at ? 'created' : 'changed since';

/** What an account holds after the batch, with the account's own ids replaced by emails. */
async function state(b: Booted, twin: Twin, opId: string) {
  const db = b.app.db;
  const users = await db('users').where('account_id', twin.accountId).orderBy('email_lower');
  const emailOf = new Map(users.map((u: any) => [String(u.id), u.email_lower]));
  const op = (await twin.api('GET', `/api/v3/operations/${opId}`)).body.data;
  const items = (await allItems({ ...b, api: twin.api }, opId)).map((i: any) => ({
    key: i.key,
    status: i.status,
    error: i.error,
    created: i.result?.created,
    user: i.result ? emailOf.get(i.result.user_id) : undefined,
  }));
  const events = await db('events').where('account_id', twin.accountId).orderBy('id');
  const endpoints = await db('webhook_endpoints').where('account_id', twin.accountId).orderBy('id');
  const deliveries = await db('webhook_deliveries').where('account_id', twin.accountId);
  const shownEvents = events.map((e: any) => {
    const data = JSON.parse(e.data);
    if (data.user) {
      data.user.id = emailOf.get(data.user.id) ?? 'gone';
      data.user.created_at = moments(data.user);
      delete data.user.updated_at;
    }
    if (data.operation) data.operation = { ...data.operation, id: 'this', finished_at: 'then' };
    const to = deliveries
      .filter((d: any) => Number(d.event_id) === Number(e.id))
      .map((d: any) => endpoints.findIndex((p: any) => Number(p.id) === Number(d.endpoint_id)))
      .sort();
    return { type: e.type, version: e.version, data, to };
  });
  const shownUsers = users.map((u: any) => {
    const { id, account_id, auto_login_token, revision, created_at, updated_at, ...rest } = u;
    return {
      ...rest,
      free: Boolean(rest.free),
      points: Number(rest.points),
      written: moments({ created_at, updated_at }),
    };
  });
  return {
    op: { status: op.status, progress: op.progress, error: op.error },
    items,
    users: shownUsers,
    events: shownEvents,
    eventIds: events.map((e: any) => `evt_${e.id}`),
    deliveries: deliveries.length,
  };
}

/** users.upsert with its applyMany counted; `without` runs the same type without it. */
function instrument(b: Booted) {
  const types = b.app.services.operations.types;
  const original = types['users.upsert']!;
  const counts = { calls: 0, applied: 0 };
  const counted: BatchType = {
    ...original,
    async applyMany(tx, accountId, payloads, ctx) {
      counts.calls++;
      const out = await original.applyMany!(tx, accountId, payloads, ctx);
      if (out) counts.applied++;
      return out;
    },
  };
  const without: BatchType = { ...original, applyMany: undefined };
  return {
    counts,
    use: (withMany: boolean) => (types['users.upsert'] = withMany ? counted : without),
    restore: () => (types['users.upsert'] = original),
  };
}

/** Deep equality, naming the first entry that differs (a whole-list diff is unreadable). */
function same(a: unknown[], b: unknown[], what: string) {
  for (let i = 0; i < Math.max(a.length, b.length); i++)
    assert.equal(a[i], b[i], `${what}: entry ${i} of ${a.length} and ${b.length}`);
}

async function run(b: Booted, twin: Twin, items: { key: string; payload: object }[]) {
  const res = await submit({ ...b, api: twin.api }, 'users.upsert', items);
  assert.is(res.status, 202);
  // A liveness deadline: item by item, every item's events fan out to two endpoints whose
  // deliveries run meanwhile, on a machine tests share.
  await waitFor({ ...b, api: twin.api }, res.body.data.id, undefined, undefined, 120_000);
  return res.body.data.id as string;
}

const t = suite('users.upsert: set-based chunks');

t('the same items, students, events and deliveries as item by item', async () => {
  const hooks = await receiver();
  const b = await boot({
    clock: new TickingClock(),
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
  });
  const types = instrument(b);
  await b.app.startWorkers();
  try {
    const setBased = await account(b, 'Set-based', hooks.url);
    const oneByOne = await account(b, 'One by one', hooks.url);
    for (const [batch, chunks, applied] of [
      [mixed(), 2, 2],
      // Declined: the failing item and the repeated email go item by item.
      [awkward(), 1, 0],
    ] as const) {
      types.use(true);
      const before = { ...types.counts };
      const a = await run(b, setBased, batch);
      types.use(false);
      const c = await run(b, oneByOne, batch);
      const x = await state(b, setBased, a);
      const y = await state(b, oneByOne, c);
      // PostgreSQL applies chunks set-based (two of 100 and 30; the awkward one declines);
      // SQLite never calls applyMany.
      assert.is(types.counts.calls - before.calls, pg ? chunks : 0);
      assert.is(types.counts.applied - before.applied, pg ? applied : 0);
      assert.equal(x.op, y.op);
      same(x.items, y.items, 'items');
      same(x.users, y.users, 'students');
      same(x.events, y.events, 'events');
      assert.is(x.deliveries, y.deliveries);
    }
    // Every delivery reaches the receiver: the jobs the fan-out wrote ran.
    for (const twin of [setBased, oneByOne]) {
      // What the batches did, besides being equal: 100 + 3 students created (30 seeded).
      const users = await b.app.db('users').where('account_id', twin.accountId).count({ n: '*' });
      assert.is(Number(users[0]!.n), 133);
      const seventh = await b.app
        .db('users')
        .where({ account_id: twin.accountId, email_lower: 'new7@example.com' })
        .first();
      assert.is(seventh.name, 'New \ufffd 7');
      const events = await b.app.db('events').where('account_id', twin.accountId).count({ n: '*' });
      const deliveries = await b.app
        .db('webhook_deliveries')
        .where('account_id', twin.accountId)
        .count({ n: '*' });
      assert.ok(Number(deliveries[0]!.n) > Number(events[0]!.n), 'two endpoints');
    }
    const all = await b.app.db('webhook_deliveries').count({ n: '*' });
    const deadline = Date.now() + 15_000;
    while (hooks.got.length < Number(all[0]!.n) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    assert.is(hooks.got.length, Number(all[0]!.n));
  } finally {
    types.restore();
    await b.close();
    hooks.close();
  }
});

t.run();
