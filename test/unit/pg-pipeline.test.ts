// PostgreSQL: a transaction's BEGIN travels with its first statement, and a statement given to
// withCommit with its COMMIT (src/db/pg-pipeline.ts): round trips counted, what commits and what
// does not, and the connection clean after a failure. PostgreSQL only.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb, type Db } from '../../src/db/knex.ts';
import { roundTrips, withCommit } from '../../src/db/pg-pipeline.ts';
import { firstRow } from '../../src/db/statements.ts';
import { transaction } from '../../src/db/tx.ts';
import { freshDatabase, type TestDatabase } from '../helpers/app.ts';

const PG = process.env.TEST_DATABASE_URL;
const t = suite<{ database: TestDatabase; one: Db }>('BEGIN and COMMIT with a statement');
const test = PG ? t : t.skip;

t.before(async (ctx) => {
  if (!PG) return;
  ctx.database = await freshDatabase();
  ctx.one = createDb(PG, { schema: ctx.database.schema, poolMax: 1 });
  await ctx.one.raw('create table piped (id int primary key, a text)');
});

t.after(async (ctx) => {
  if (!PG) return;
  await ctx.one.destroy();
  await ctx.database.drop();
});

/** Round trips `fn` sent on folding connections. */
async function trips<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const before = roundTrips();
  const out = await fn();
  return [roundTrips() - before, out];
}

const ids = async (db: Db) => (await db('piped').orderBy('id').pluck('id')).map(Number);
const insert = (id: number) => ({
  text: 'INSERT INTO piped (id, a) VALUES ($1, $2)',
  values: [id, 'c'],
});

test('BEGIN goes with the first statement, a statement with COMMIT', async ({ one }) => {
  await one.raw('select 1'); // the pool's connection exists
  const [n, row] = await trips(() =>
    transaction(one, async (tx) => {
      await tx('piped').insert({ id: 1, a: 'x' });
      assert.ok(await withCommit({ tx }, insert(2)));
      return firstRow({ tx }, 'SELECT count(*)::int AS n FROM piped', []);
    }),
  );
  // [BEGIN, insert], the read, [insert 2, COMMIT]
  assert.is(n, 3);
  assert.equal(row, { n: 1 });
  assert.equal(await ids(one), [1, 2]);
  // A transaction that sends nothing sends no BEGIN or COMMIT either.
  assert.equal(await trips(() => transaction(one, async () => 'none')), [0, 'none']);
});

test('a statement that fails at the COMMIT: nothing commits, the connection is clean', async ({
  one,
}) => {
  try {
    await transaction(one, async (tx) => {
      await tx('piped').insert({ id: 3, a: 'x' });
      await withCommit({ tx }, insert(1)); // taken
    });
    assert.unreachable('the COMMIT must fail with its statement');
  } catch (err: any) {
    assert.is(err.code, '23505');
  }
  assert.equal(await ids(one), [1, 2]);
  // The one connection of the pool is out of any transaction: this commits on its own.
  await one('piped').insert({ id: 4, a: 'y' });
  const { rows } = await one.raw('select now() = statement_timestamp() AS alone');
  assert.is(rows[0].alone, true);
  assert.equal(await ids(one), [1, 2, 4]);
});

test('a first statement without parameters, a rollback, a nested transaction', async ({ one }) => {
  // Several statements in one text cannot go with the BEGIN: it goes first, alone.
  await transaction(one, async (tx) => {
    await tx.raw('insert into piped values (5, null); insert into piped values (6, null)');
  });
  assert.equal(await ids(one), [1, 2, 4, 5, 6]);
  try {
    await transaction(one, async (tx) => {
      await tx('piped').insert({ id: 7, a: 'x' });
      await withCommit({ tx }, insert(8));
      throw new Error('rolled back');
    });
  } catch (err: any) {
    assert.is(err.message, 'rolled back');
  }
  await transaction(one, async (tx) => {
    await tx.transaction(async (inner) => inner('piped').insert({ id: 9, a: 'x' }));
    await tx('piped').insert({ id: 10, a: 'x' });
  });
  assert.equal(await ids(one), [1, 2, 4, 5, 6, 9, 10]);
});

t.run();
