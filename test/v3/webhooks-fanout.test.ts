// Which endpoints an event fans out to: the enabled ones of its account subscribed to its type in
// its version, as they are when the event is recorded. On PostgreSQL the deliveries are inserted
// by the event's INSERT statement (spec/DECISIONS.md, "A recorded event's deliveries inserted by
// its own statement"): an endpoint created or disabled while the recording transaction waits
// before that statement counts, as it did with a read after it.
// No workers run: the deliveries are read from the table, in the recording transaction's commit.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Knex } from 'knex';
import { transaction } from '../../src/db/tx.ts';
import { DELIVER_TASK, WINDOW_MS } from '../../src/domain/webhooks/schedule.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { createUser, createWebhook } from '../helpers/webhooks.ts';

const pg = Boolean(process.env.TEST_DATABASE_URL);
const W = '/api/v3/webhooks';
// Nothing listens there: no worker runs in this suite, so nothing is sent.
const URL = 'http://127.0.0.1:9/hook';

const t = suite<{ b: Booted }>('v3 webhooks: fan-out');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
});
t.after(async (ctx) => ctx.b.close());

/** The endpoints (ids, ascending) that got a delivery of the account's newest event. */
async function fannedTo(b: Booted): Promise<string[]> {
  const [event] = await b.app.db('events').where('account_id', b.accountId).max({ id: 'id' });
  const rows = await b.app
    .db('webhook_deliveries')
    .where('event_id', event!.id)
    .orderBy('endpoint_id')
    .select('endpoint_id');
  return rows.map((r: any) => String(r.endpoint_id));
}

const hook = async (b: Booted, body: Record<string, unknown>) =>
  (await createWebhook(b, URL, body)).id;

t('an event goes to the enabled endpoints subscribed to its type, once each', async ({ b }) => {
  const created = await hook(b, { event_types: ['user.created'] });
  const every = await hook(b, { event_types: ['*'] });
  const updated = await hook(b, { event_types: ['user.updated'] });
  const disabled = await hook(b, { event_types: ['user.created'] });
  const deleted = await hook(b, { event_types: ['*'] });
  assert.is(
    (await b.api('PATCH', `${W}/${disabled}`, { body: { status: 'disabled' } })).status,
    200,
  );
  assert.is((await b.api('DELETE', `${W}/${deleted}`)).status, 204);

  const user = await createUser(b);
  assert.equal(await fannedTo(b), [created, every]);

  const patched = await b.api('PATCH', `/api/v3/users/${user.id}`, { body: { name: 'Bia' } });
  assert.is(patched.status, 200);
  assert.equal(await fannedTo(b), [every, updated]);

  assert.is(
    (await b.api('PATCH', `${W}/${disabled}`, { body: { status: 'enabled' } })).status,
    200,
  );
  await createUser(b);
  assert.equal(await fannedTo(b), [created, every, disabled]);
  for (const id of [created, every, updated, disabled])
    assert.is((await b.api('DELETE', `${W}/${id}`)).status, 204);
  await createUser(b);
  assert.equal(await fannedTo(b), []);
});

/** Holds `events` against writers until released: a POST /users waits before its event. */
async function holdEvents(b: Booted) {
  const trx: Knex.Transaction = await b.app.db.transaction();
  await trx.raw('LOCK TABLE events IN SHARE MODE');
  return trx;
}

/** Resolves once a session of this database waits for a lock in an INSERT INTO events. */
async function eventInsertWaits(b: Booted) {
  for (let i = 0; i < 500; i++) {
    const { rows } = await b.app.db.raw(
      "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' " +
        "and datname = current_database() and query like '%INSERT INTO events%'",
    );
    if (rows[0].n > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the event insert never waited');
}

const postUser = (b: Booted, email: string) =>
  b.api('POST', '/api/v3/users', { body: { name: 'Ana', email }, key: newKey() });

t('PostgreSQL: an endpoint created while the event waits to be recorded gets it', async ({ b }) => {
  if (!pg) return;
  const held = await holdEvents(b);
  const post = postUser(b, `fan-new-${process.pid}@example.com`);
  try {
    await eventInsertWaits(b);
  } catch (err) {
    await held.rollback();
    throw err;
  }
  const id = await hook(b, { event_types: ['user.created'] });
  await held.commit();
  assert.is((await post).status, 201);
  assert.equal(await fannedTo(b), [id]);
  assert.is((await b.api('DELETE', `${W}/${id}`)).status, 204);
});

t(
  'PostgreSQL: an endpoint disabled while the event waits to be recorded does not',
  async ({ b }) => {
    if (!pg) return;
    const kept = await hook(b, { event_types: ['user.created'] });
    const id = await hook(b, { event_types: ['user.created'] });
    const held = await holdEvents(b);
    const post = postUser(b, `fan-off-${process.pid}@example.com`);
    try {
      await eventInsertWaits(b);
    } catch (err) {
      await held.rollback();
      throw err;
    }
    const off = await b.api('PATCH', `${W}/${id}`, { body: { status: 'disabled' } });
    await held.commit();
    assert.is(off.status, 200);
    assert.is((await post).status, 201);
    assert.equal(await fannedTo(b), [kept]);
  },
);

/** Each event's deliveries (by endpoint id) as `type:endpoint:account:status`, events in order. */
async function fannedEach(b: Booted, events: { id: number }[]): Promise<string[][]> {
  const out: string[][] = [];
  for (const e of events) {
    const rows = await b.app
      .db('webhook_deliveries')
      .where('event_id', e.id)
      .orderBy('endpoint_id')
      .select('endpoint_id', 'event_type', 'account_id', 'status');
    out.push(rows.map((r: any) => `${r.event_type}:${r.endpoint_id}:${r.account_id}:${r.status}`));
  }
  return out;
}

t(
  'subscriptions: type, `*`, version, status, deletion and account, one event or several',
  async ({ b }) => {
    // On PostgreSQL the deliveries' INSERT is a CTE of the events' (deliveries-repo
    // INSERT_FOR_EVENTS): this pins its predicate, record() and recordMany() alike.
    const { webhooks, events } = b.app.services;
    const mk = async (accountId: number, event_types: string[]) =>
      String((await webhooks.create(accountId, { url: URL, event_types })).endpoint.id);
    const a = b.accountId;
    const removed = await mk(a, ['tag.removed']);
    const every = await mk(a, ['*']);
    const both = await mk(a, ['tag.assigned', 'tag.removed']);
    const assigned = await mk(a, ['tag.assigned']);
    const otherVersion = await mk(a, ['*']);
    const longer = await mk(a, ['tag.removed']);
    const off = await mk(a, ['*']);
    const gone = await mk(a, ['*']);
    // No other payload version exists yet, nor a type that contains another's name, nor a deleted
    // endpoint still enabled (DELETE disables too): written here.
    await b.app.db('webhook_endpoints').where('id', otherVersion).update({ payload_version: '2' });
    await b.app
      .db('webhook_endpoints')
      .where('id', longer)
      .update({ event_types: JSON.stringify(['tag.removed.v2', 'tag']) });
    await b.app
      .db('webhook_endpoints')
      .where('id', gone)
      .update({ deleted_at: b.clock.now().toISOString() });
    assert.is((await b.api('PATCH', `${W}/${off}`, { body: { status: 'disabled' } })).status, 200);
    const { id: other } = await b.app.services.accounts.createAccount({ name: 'Other school' });
    await mk(other, ['*']);

    // The webhook.deliver jobs enqueued, as `delivery:endpoint`.
    const jobs = b.app.services.jobs;
    const enqueued: string[] = [];
    const enqueue = jobs.enqueue;
    jobs.enqueue = async (scope, task, payload: any, options) => {
      if (task === DELIVER_TASK) enqueued.push(`${payload.delivery_id}:${payload.endpoint_id}`);
      return enqueue.call(jobs, scope, task, payload, options);
    };
    const data = { user_id: '1', tag: { id: '1', name: 'x' } };
    const one = await transaction(b.app.db, (tx) =>
      events.record({ tx }, { accountId: a, type: 'tag.removed', data }),
    );
    const many = await transaction(b.app.db, (tx) =>
      events.recordMany!({ tx }, [
        { accountId: a, type: 'tag.assigned', data },
        { accountId: other, type: 'tag.removed', data },
        { accountId: a, type: 'tag.removed', data },
      ]),
    );
    const otherEvery = (await b.app.db('webhook_endpoints').where('account_id', other))[0].id;
    const to = (type: string, account: number, endpoints: (string | number)[]) =>
      endpoints.map((id) => `${type}:${id}:${account}:pending`);
    const ids = [one.id, ...many.map((e) => e.id)];
    assert.equal(await fannedEach(b, [one, ...many]), [
      to('tag.removed', a, [removed, every, both]),
      to('tag.assigned', a, [every, both, assigned]),
      to('tag.removed', other, [otherEvery]),
      to('tag.removed', a, [removed, every, both]),
    ]);
    jobs.enqueue = enqueue;
    // One job per endpoint and transaction, with its first delivery (in id order).
    const first = new Map<string, string>();
    for (const d of await b.app.db('webhook_deliveries').whereIn('event_id', ids).orderBy('id')) {
      const key = `${Number(d.event_id) === one.id ? 1 : 2}:${d.endpoint_id}`;
      if (!first.has(key)) first.set(key, `${d.id}:${d.endpoint_id}`);
    }
    assert.equal(enqueued, [...first.values()]);
    // Due at once, within the retry window, as fanOutMany writes them on SQLite.
    for (const d of await b.app.db('webhook_deliveries').whereIn('event_id', ids)) {
      assert.is(d.due_at, d.created_at);
      assert.is(d.next_attempt_at, d.created_at);
      assert.is(d.updated_at, d.created_at);
      assert.is(Date.parse(d.deadline_at) - Date.parse(d.created_at), WINDOW_MS);
      assert.is(d.event_id > 0 && d.attempts_count === 0 && d.lease_owner === null, true);
    }
    for (const id of [removed, every, both, assigned, otherVersion, longer, off])
      assert.is((await b.api('DELETE', `${W}/${id}`)).status, 204);
  },
);

t.run();
