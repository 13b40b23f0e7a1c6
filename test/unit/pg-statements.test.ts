// PostgreSQL: the portable statements of src/db/statements.ts go to node-postgres without knex's
// query builder, so what knex did for them is checked here: `?` placeholders numbered, `\?` a
// literal question mark, knex's 'query' event heard (inside a transaction too), a statement
// refused inside a finished transaction, knex's rules kept for `??` and undefined values, and the
// pooled connection given back after an error. PostgreSQL only.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb, type Db } from '../../src/db/knex.ts';
import { allRows, execute, firstRow } from '../../src/db/statements.ts';
import { freshDatabase, type TestDatabase } from '../helpers/app.ts';

const PG = process.env.TEST_DATABASE_URL;
const t = suite<{ database: TestDatabase; one: Db }>('portable statements on PostgreSQL');
const test = PG ? t : t.skip;

t.before(async (ctx) => {
  if (!PG) return;
  ctx.database = await freshDatabase();
  // One connection: a statement that kept it would make the next one wait for ever.
  ctx.one = createDb(PG, { schema: ctx.database.schema, poolMax: 1 });
  await ctx.one.raw('create table portable (id int primary key, a text)');
});

t.after(async (ctx) => {
  if (!PG) return;
  await ctx.one.destroy();
  await ctx.database.drop();
});

test('placeholders are numbered and an escaped one stays a question mark', async ({ one }) => {
  const row = await firstRow<{ q: string; n: number; s: string }>(
    { tx: one },
    "SELECT '\\?'::text AS q, ?::int + ?::int AS n, ?::text AS s",
    [40, 2, 'x?y'],
  );
  assert.equal({ ...row }, { q: '?', n: 42, s: 'x?y' });
});

test("knex's 'query' listeners hear them, inside a transaction too", async ({ one }) => {
  const heard: { sql: string; bindings: unknown[] }[] = [];
  const listen = (q: { sql: string; bindings: unknown[] }) => heard.push(q);
  one.on('query', listen);
  try {
    await execute({ tx: one }, 'INSERT INTO portable (id, a) VALUES (?, ?)', [1, 'one']);
    await one.transaction(async (tx) => {
      assert.equal(await allRows({ tx }, 'SELECT id FROM portable WHERE a = ?', ['one']), [
        { id: 1 },
      ]);
    });
  } finally {
    one.removeListener('query', listen);
  }
  const mine = heard.filter((q) => /portable/.test(q.sql));
  assert.equal(
    mine.map((q) => [q.sql, q.bindings]),
    [
      ['INSERT INTO portable (id, a) VALUES ($1, $2)', [1, 'one']],
      ['SELECT id FROM portable WHERE a = $1', ['one']],
    ],
  );
});

test('a finished transaction refuses a statement', async ({ one }) => {
  let kept: any;
  await one.transaction(async (tx) => {
    kept = tx;
  });
  const err = await firstRow({ tx: kept }, 'SELECT ?::int AS n', [1]).catch((e) => e);
  assert.instance(err, Error);
  assert.match(err.message, /Transaction query already complete/);
});

test("knex's own rules: ?? names an identifier, an undefined value is refused", async ({ one }) => {
  await execute({ tx: one }, 'INSERT INTO portable (id, a) VALUES (?, ?)', [2, 'two']);
  const row = await firstRow<{ a: string }>({ tx: one }, 'SELECT ?? FROM portable WHERE id = ?', [
    'a',
    2,
  ]);
  assert.is(row?.a, 'two');
  const err = await firstRow({ tx: one }, 'SELECT ?::int AS n', [undefined]).catch((e) => e);
  assert.match(String(err?.message), /Undefined binding/);
});

test('an error names the statement, not its values, and gives the connection back', async ({
  one,
}) => {
  const err = await execute({ tx: one }, 'INSERT INTO portable (id, a) VALUES (?, ?)', [
    1,
    'secret value',
  ]).catch((e) => e);
  assert.is(err?.code, '23505');
  assert.ok(err.message.startsWith('INSERT INTO portable (id, a) VALUES ($1, $2) - '), err.message);
  assert.not.match(err.message, /secret value/);
  // knex's own statements word their errors the same way.
  const built = await one('portable')
    .insert({ id: 1, a: 'secret value' })
    .catch((e: Error) => e);
  assert.is((built as any)?.code, '23505');
  assert.not.match((built as Error).message, /secret value/);
  // The pool's only connection is free again.
  assert.equal({ ...(await firstRow({ tx: one }, 'SELECT 1 AS one', [])) }, { one: 1 });
});

t.run();
