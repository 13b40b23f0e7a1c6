// PostgreSQL: a keyed request claims its key inside its own transaction (migration 032; spec/
// DECISIONS.md, "The idempotency claim inside the transaction"). The first request is held inside
// that transaction (its user insert waits on an uncommitted user of the same email) while others
// with its key arrive: the specification's answers for a concurrent key, a rejection recorded
// under the key, and a request that dies between its claim and its result.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('idempotency claim in the transaction');
const pg = Boolean(process.env.TEST_DATABASE_URL);
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

/** The backend of this database whose insert into users (alone, or in a CTE) waits for a lock. */
async function waitingInsert(b: Booted): Promise<number> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await b.app.db.raw(
      "select pid from pg_stat_activity where wait_event_type = 'Lock' " +
        "and datname = current_database() and query ilike '%insert into users%'",
    );
    if (rows.length > 0) return rows[0].pid;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the insert never waited');
}

/** Starts POST /users under `key` while an open transaction holds a user with its email. */
async function held(b: Booted, email: string, key: string) {
  const open = await b.app.db.transaction();
  await b.app.services.users.create(b.accountId, { name: 'Open', email }, { tx: open });
  const first = b.api('POST', '/api/v3/users', { body: { name: 'First', email }, key });
  const pid = await waitingInsert(b);
  return { open, first, pid };
}

/** A request the held one must not make wait: answered within 5 s, or the test fails. */
const soon = <T>(p: Promise<T>) =>
  Promise.race([
    p,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('waited for the held request')), 5000).unref(),
    ),
  ]);

const records = async (b: Booted, key: string) =>
  (await b.app.db('idempotency_keys').where({ key })).map((r: any) => [r.state, r.response_status]);

t(
  'a concurrent same key: 409 in progress, 422 with another body; one 201, replayed',
  async ({ b }) => {
    if (!pg) return console.log('  (PostgreSQL only: SKIPPED)');
    const key = newKey();
    const email = 'claim-commit@example.com';
    const { open, first } = await held(b, email, key);
    try {
      const same = await soon(
        b.api('POST', '/api/v3/users', { body: { name: 'First', email }, key }),
      );
      assert.is(same.status, 409);
      assert.is(same.body.error.code, 'idempotency_in_progress');
      const other = await soon(
        b.api('POST', '/api/v3/users', { body: { name: 'Other', email }, key }),
      );
      assert.is(other.status, 422);
      assert.is(other.body.error.code, 'idempotency_key_reused');
      // Nothing is committed for the key while the first runs.
      assert.equal(await records(b, key), []);
    } finally {
      await open.rollback();
    }
    const res = await first;
    assert.is(res.status, 201);
    const again = await b.api('POST', '/api/v3/users', { body: { name: 'First', email }, key });
    assert.is(again.status, 201);
    assert.is(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body, res.body);
    assert.equal(await records(b, key), [['completed', 201]]);
    const list = await b.api('GET', `/api/v3/users?email=${email}`);
    assert.equal(
      list.body.data.map((u: any) => u.id),
      [res.body.data.id],
    );
  },
);

t('a business rejection is the key answer: its effects undone, replayed', async ({ b }) => {
  if (!pg) return console.log('  (PostgreSQL only: SKIPPED)');
  const key = newKey();
  const email = 'claim-taken@example.com';
  const { open, first } = await held(b, email, key);
  try {
    const same = await soon(
      b.api('POST', '/api/v3/users', { body: { name: 'First', email }, key }),
    );
    assert.is(same.body.error.code, 'idempotency_in_progress');
  } finally {
    await open.commit();
  }
  const res = await first;
  assert.is(res.status, 409);
  assert.is(res.body.error.code, 'already_exists');
  assert.equal(await records(b, key), [['completed', 409]]);
  const again = await b.api('POST', '/api/v3/users', { body: { name: 'First', email }, key });
  assert.is(again.status, 409);
  assert.is(again.body.error.code, 'already_exists');
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  const list = await b.api('GET', `/api/v3/users?email=${email}`);
  assert.equal(
    list.body.data.map((u: any) => u.name),
    ['Open'],
  );
});

t('a request that dies between its claim and its result leaves the key free', async ({ b }) => {
  if (!pg) return console.log('  (PostgreSQL only: SKIPPED)');
  const key = newKey();
  const email = 'claim-crash@example.com';
  const { open, first, pid } = await held(b, email, key);
  try {
    // Its connection ends (what a crash of its process does): its transaction rolls back.
    await b.app.db.raw('select pg_terminate_backend(?)', [pid]);
    const res = await first;
    assert.is(res.status, 503);
    assert.equal(await records(b, key), []);
  } finally {
    await open.rollback();
  }
  const retry = await b.api('POST', '/api/v3/users', { body: { name: 'First', email }, key });
  assert.is(retry.status, 201);
  assert.is(retry.headers.get('idempotent-replayed'), null);
  const list = await b.api('GET', `/api/v3/users?email=${email}`);
  assert.equal(
    list.body.data.map((u: any) => u.id),
    [retry.body.data.id],
  );
});

t.run();
