// Which endpoints an event fans out to: the enabled ones subscribed to its type, as they are when
// the event is recorded. On PostgreSQL the endpoints are read in the event's INSERT statement
// (spec/DECISIONS.md, "PostgreSQL request path"): an endpoint created or disabled while the
// recording transaction waits before that statement counts, as it did with a read after it.
// No workers run: the deliveries are read from the table, in the recording transaction's commit.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Knex } from 'knex';
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

t.run();
