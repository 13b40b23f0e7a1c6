// PostgreSQL: a transaction's BEGIN travels with its first statement, and the statements given to
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

test('several statements with the COMMIT, two of them named and new to the connection', async ({
  one,
}) => {
  const named = (id: number, name: string) => ({ ...insert(id), name });
  const prepared = async () =>
    (
      await one.raw("SELECT name FROM pg_prepared_statements WHERE name LIKE 'piped_%' ORDER BY 1")
    ).rows.map((r: { name: string }) => r.name);
  const [n] = await trips(() =>
    transaction(one, async (tx) => {
      await tx('piped').insert({ id: 11, a: 'x' });
      assert.ok(await withCommit({ tx }, named(12, 'piped_a')));
      assert.ok(await withCommit({ tx }, named(13, 'piped_b')));
      assert.ok(await withCommit({ tx }, insert(14)));
    }),
  );
  assert.is(n, 2); // [BEGIN, insert], [three inserts, COMMIT]
  assert.equal((await ids(one)).slice(-4), [11, 12, 13, 14]);
  // One named statement prepared per round trip: the other went unnamed, and is prepared next.
  assert.equal(await prepared(), ['piped_a']);
  await transaction(one, async (tx) => {
    await tx('piped').insert({ id: 15, a: 'x' });
    await withCommit({ tx }, named(16, 'piped_a'));
    await withCommit({ tx }, named(17, 'piped_b'));
  });
  assert.equal(await prepared(), ['piped_a', 'piped_b']);
  assert.equal((await ids(one)).slice(-3), [15, 16, 17]);
});

test("a failing statement at the COMMIT rejects with its step's own error", async ({ one }) => {
  const before = await ids(one);
  const mapped = new Error('mapped');
  try {
    await transaction(one, async (tx) => {
      await tx('piped').insert({ id: 20, a: 'x' });
      await withCommit({ tx }, insert(21));
      await withCommit({ tx }, { ...insert(1), failure: () => mapped }); // taken
    });
    assert.unreachable('the COMMIT must fail with its statement');
  } catch (err) {
    assert.is(err, mapped); // knex puts the COMMIT's text in front of its message
  }
  assert.equal(await ids(one), before);
});

t.run();
