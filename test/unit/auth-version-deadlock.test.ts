// PostgreSQL: every UPDATE of an account or a credential also moves the auth-version row
// (migration 018). Two transactions that change accounts and credentials in opposite order, and
// one that changes two rows while another changes one of them, must not deadlock: the version row
// is taken first, before the row, by every such statement (migration 023). PostgreSQL only.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Knex } from 'knex';
import { createDb, type Db } from '../../src/db/knex.ts';
import { migrate } from '../../src/db/migrate.ts';
import { freshDatabase, type TestDatabase } from '../helpers/app.ts';

const PG = process.env.TEST_DATABASE_URL;
const t = suite<{ database: TestDatabase; db: Db; ids: { account: number; credential: number } }>(
  'auth version: no deadlock between account and credential writers',
);
const test = PG ? t : t.skip;

t.before(async (ctx) => {
  if (!PG) return;
  ctx.database = await freshDatabase();
  ctx.db = createDb(PG, { schema: ctx.database.schema, poolMax: 4 });
  await migrate(ctx.db);
  const at = new Date().toISOString();
  const [account] = await ctx.db('accounts').insert({ name: 'A', created_at: at }).returning('id');
  const [credential] = await ctx
    .db('credentials')
    .insert({
      account_id: account.id,
      name: 'C',
      secret_hash: 'h'.repeat(64),
      secret_last4: 'abcd',
      environment: 'live',
      status: 'active',
      auth_mode: 'api_key',
      permissions: '["*"]',
      revision: 'r1',
      created_at: at,
      updated_at: at,
    })
    .returning('id');
  ctx.ids = { account: account.id, credential: credential.id };
});

t.after(async (ctx) => {
  if (!PG) return;
  await ctx.db.destroy();
  await ctx.database.drop();
});

/** Resolves once some session of this database waits for a lock (the second writer is queued). */
async function someoneWaits(db: Db) {
  for (let i = 0; i < 500; i++) {
    const { rows } = await db.raw(
      "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()",
    );
    if (rows[0].n > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the second writer never waited');
}

const hold = (db: Db) => {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  return { released, release };
};

test('opposite order: account then credential, against credential then account', async ({
  db,
  ids,
}) => {
  const gate = hold(db);
  // T1 changes the account, then (once T2 is queued) the credential.
  const t1 = db.transaction(async (tx: Knex.Transaction) => {
    await tx('accounts').where('id', ids.account).update({ name: 'A1' });
    await gate.released;
    await tx('credentials').where('id', ids.credential).update({ name: 'C1' });
  });
  await new Promise((r) => setTimeout(r, 50));
  // T2 changes the credential, then the account.
  const t2 = db.transaction(async (tx: Knex.Transaction) => {
    await tx('credentials').where('id', ids.credential).update({ name: 'C2' });
    await tx('accounts').where('id', ids.account).update({ name: 'A2' });
  });
  await someoneWaits(db);
  gate.release();
  const outcomes = await Promise.allSettled([t1, t2]);
  assert.equal(
    outcomes.map((o) => (o.status === 'rejected' ? String((o.reason as Error).message) : 'ok')),
    ['ok', 'ok'],
  );
  const account = await db('accounts').where('id', ids.account).first();
  const credential = await db('credentials').where('id', ids.credential).first();
  // T2 ran after T1: its values are the last.
  assert.equal([account.name, credential.name], ['A2', 'C2']);
});

test('two rows against one: account then credential, against the credential alone', async ({
  db,
  ids,
}) => {
  const gate = hold(db);
  const t1 = db.transaction(async (tx: Knex.Transaction) => {
    await tx('accounts').where('id', ids.account).update({ name: 'B1' });
    await gate.released;
    await tx('credentials').where('id', ids.credential).update({ status: 'suspended' });
  });
  await new Promise((r) => setTimeout(r, 50));
  const t2 = db.transaction(async (tx: Knex.Transaction) => {
    await tx('credentials').where('id', ids.credential).update({ name: 'D2' });
  });
  await someoneWaits(db);
  gate.release();
  const outcomes = await Promise.allSettled([t1, t2]);
  assert.equal(
    outcomes.map((o) => (o.status === 'rejected' ? String((o.reason as Error).message) : 'ok')),
    ['ok', 'ok'],
  );
});

test("a credential's last_used_at alone neither moves the version nor waits for it", async ({
  db,
  ids,
}) => {
  const before = (await db('auth_version').first()).version;
  const gate = hold(db);
  const t1 = db.transaction(async (tx: Knex.Transaction) => {
    await tx('accounts').where('id', ids.account).update({ name: 'E1' });
    await gate.released;
  });
  await new Promise((r) => setTimeout(r, 50));
  // The per-minute touch of every instance must not queue behind an account change.
  await db('credentials')
    .where('id', ids.credential)
    .update({ last_used_at: new Date().toISOString() });
  gate.release();
  await t1;
  assert.is(Number((await db('auth_version').first()).version), Number(before) + 1);
});

t.run();
