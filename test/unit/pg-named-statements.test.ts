// PostgreSQL hot-path statements (src/db/statements.ts) are named: the server parses and plans
// each once per connection. Not behind a transaction pooler (DATABASE_SESSION_URL set), which
// loses them between transactions. A statement made stale by a migration (a column added under
// a `SELECT *`) answers anyway and is prepared afresh. PostgreSQL only.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb, type Db } from '../../src/db/knex.ts';
import { execute, firstRow } from '../../src/db/statements.ts';
import { transaction } from '../../src/db/tx.ts';
import { freshDatabase, type TestDatabase } from '../helpers/app.ts';

const PG = process.env.TEST_DATABASE_URL;
const t = suite<{ database: TestDatabase; one: Db }>('named statements on PostgreSQL');
const test = PG ? t : t.skip;

/** Statements prepared on the (single) connection of `db`. */
const prepared = async (db: Db) =>
  (await db.raw('select statement from pg_prepared_statements')).rows.map(
    (r: { statement: string }) => r.statement,
  );

t.before(async (ctx) => {
  if (!PG) return;
  ctx.database = await freshDatabase();
  ctx.one = createDb(PG, { schema: ctx.database.schema, poolMax: 1 });
  await ctx.one.raw('create table named_t (id int primary key, a text)');
  await ctx.one.raw("insert into named_t values (1, 'x')");
});

t.after(async (ctx) => {
  if (!PG) return;
  await ctx.one.destroy();
  await ctx.database.drop();
});

test('a hot-path read is prepared once on its connection and reused', async ({ one }) => {
  for (let i = 0; i < 3; i++)
    assert.equal(await firstRow({ tx: one }, 'SELECT * FROM named_t WHERE id = ?', [1]), {
      id: 1,
      a: 'x',
    });
  const mine = (await prepared(one)).filter((s: string) => s.includes('named_t'));
  assert.equal(mine, ['SELECT * FROM named_t WHERE id = $1']);
});

test('a column added under a prepared SELECT *: answered, then prepared afresh', async ({
  one,
}) => {
  const sql = 'SELECT * FROM named_t WHERE id = ?';
  await firstRow({ tx: one }, sql, [1]);
  await one.raw("alter table named_t add column b text not null default 'y'");
  // Outside a transaction the stale statement is run again unnamed at once.
  assert.equal(await firstRow({ tx: one }, sql, [1]), { id: 1, a: 'x', b: 'y' });
  // And from then on under a new name, inside transactions too.
  const row = await transaction(one, (tx) => firstRow({ tx }, sql, [1]));
  assert.equal(row, { id: 1, a: 'x', b: 'y' });
  assert.is(await execute({ tx: one }, 'UPDATE named_t SET a = ? WHERE id = ?', ['z', 1]), 1);
});

test('behind a transaction pooler (DATABASE_SESSION_URL) nothing is named', async ({
  database,
}) => {
  const pooled = createDb(PG!, { schema: database.schema, poolMax: 1, sessionUrl: PG! });
  try {
    assert.equal(await firstRow({ tx: pooled }, 'SELECT a FROM named_t WHERE id = ?', [1]), {
      a: 'z',
    });
    assert.equal(await prepared(pooled), []);
  } finally {
    await pooled.destroy();
  }
});

t.run();
