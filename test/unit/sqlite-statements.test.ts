// engine: any
// Value-blind SQLite statements (src/db/sqlite-statements.ts valueBlind): every `?` but a LIMIT's
// or an OFFSET's is prepared as `+?`, so SQLite does not plan the statement again each time
// better-sqlite3 binds it anew; the rows read and written are the same.
import { createRequire } from 'node:module';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import knexFactory, { type Knex } from 'knex';
import {
  CachingSqliteClient,
  literalLimit,
  statement,
  valueBlind,
} from '../../src/db/sqlite-statements.ts';
import { allRows } from '../../src/db/statements.ts';

const Database = createRequire(import.meta.url)('better-sqlite3');

test('every placeholder outside quotes and comments becomes +?, but a LIMIT or OFFSET one', () => {
  assert.is(
    valueBlind("SELECT * FROM t WHERE a = ? AND b = '?' AND c IN (?, ?) LIMIT ? OFFSET ?"),
    "SELECT * FROM t WHERE a = +? AND b = '?' AND c IN (+?, +?) LIMIT ? OFFSET ?",
  );
  assert.is(
    valueBlind('select `a?` from "t?" where [x?] = ? -- ? here\n and y=?/* ? */ limit  ?'),
    'select `a?` from "t?" where [x?] = +? -- ? here\n and y=+?/* ? */ limit  ?',
  );
  assert.is(
    valueBlind("x = 'it''s ?' AND y=? AND a_limit = ?"),
    "x = 'it''s ?' AND y=+? AND a_limit = +?",
  );
  assert.is(valueBlind('UPDATE t SET a=?,b=? WHERE id=?'), 'UPDATE t SET a=+?,b=+? WHERE id=+?');
  assert.is(valueBlind('BEGIN IMMEDIATE'), 'BEGIN IMMEDIATE');
});

test('the same rows: affinity, IN lists, NULL, booleans as 0/1, LIMIT and writes', () => {
  const db = new Database(':memory:');
  db.exec(
    'CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, s TEXT, r REAL); ' +
      'CREATE INDEX t_n ON t (n, s)',
  );
  const insert = statement(db, 'INSERT INTO t (n, s, r) VALUES (?, ?, ?)');
  for (let i = 0; i < 20; i++) insert.run(i % 5, String(i), i / 2);
  // Stored with the columns' affinity, as a plain `?` would have been.
  assert.equal(statement(db, 'SELECT typeof(n) AS n, typeof(s) AS s FROM t WHERE id = ?').get(3), {
    n: 'integer',
    s: 'text',
  });
  const reads: [string, unknown[]][] = [
    ['SELECT id FROM t WHERE n = ? ORDER BY id', ['1']], // text compared to an INTEGER column
    ['SELECT id FROM t WHERE s = ? ORDER BY id', [7]], // a number compared to a TEXT column
    ['SELECT id FROM t WHERE n IN (?, ?) AND r > ? ORDER BY s LIMIT ?', [2, 3, 1.5, 3]],
    ['SELECT id FROM t WHERE n = ? AND s IS ? ORDER BY id', [4, null]],
    ['SELECT COUNT(*) AS c FROM t a JOIN t b ON b.n = a.n WHERE a.id = ? AND b.r >= ?', [1, 0]],
    ['SELECT id FROM t WHERE (n = ?) = ? ORDER BY id DESC LIMIT ? OFFSET ?', [0, 1, 2, 1]],
  ];
  for (const [sql, params] of reads)
    assert.equal(statement(db, sql).all(...params), db.prepare(sql).all(...params), sql);
  assert.equal(statement(db, 'SELECT id FROM t WHERE n = ? ORDER BY id').all('1'), [
    { id: 2 },
    { id: 7 },
    { id: 12 },
    { id: 17 },
  ]);
  assert.is(statement(db, 'UPDATE t SET s = ? WHERE n = ? AND id > ?').run('x', 1, 5).changes, 3);
  assert.is(db.prepare("SELECT COUNT(*) AS c FROM t WHERE s = 'x'").get().c, 3);
  db.close();
});

// What the prepare saves is measured, not asserted here (tests hold no timings): docs/speed.md,
// "Webhook deliveries on SQLite, CPU per delivery". What is checked is that the cache prepares the
// value-blind text, and the read connection's cache too (src/db/reader.ts uses valueBlind).
test('the statement cache prepares the value-blind text', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE e (id INTEGER PRIMARY KEY, account_id INTEGER, status TEXT)');
  const sql = "SELECT * FROM e WHERE account_id = ? AND status = 'enabled' ORDER BY id LIMIT ?";
  assert.is(
    statement(db, sql).source,
    "SELECT * FROM e WHERE account_id = +? AND status = 'enabled' ORDER BY id LIMIT ?",
  );
  db.close();
});

test('a trailing limit ? becomes a literal, its binding taken out; an offset keeps its ?', () => {
  assert.equal(literalLimit('select * from `t` where `n` = ? limit ?', [2, 1]), {
    sql: 'select * from `t` where `n` = ? limit 1',
    bindings: [2],
  });
  assert.equal(literalLimit('select * from `t` where `n` = ? limit ? offset ?', [2, 10, 500]), {
    sql: 'select * from `t` where `n` = ? limit 10 offset ?',
    bindings: [2, 500],
  });
  // knex's offset alone: `limit -1`.
  assert.equal(literalLimit('select * from `t` limit ? offset ?', [-1, 3]), {
    sql: 'select * from `t` limit -1 offset ?',
    bindings: [3],
  });
  assert.equal(literalLimit('SELECT x FROM t GROUP BY x ORDER BY MIN(y) LIMIT ?', [500]), {
    sql: 'SELECT x FROM t GROUP BY x ORDER BY MIN(y) limit 500',
    bindings: [],
  });
  // Left alone: a subquery's limit, a value out of bounds or not an integer, no binding for it.
  const left: [string, unknown[]][] = [
    ['select * from `t` where `id` in (select `id` from `t` limit ?)', [3]],
    ['select * from `t` limit ?', [1001]],
    ['select * from `t` limit ?', [-2]],
    ['select * from `t` limit ?', [2.5]],
    ['select * from `t` limit ?', ['5']],
    ['select * from `t` limit ?', []],
    ['select * from `t` limit ? offset ?', [5]],
    ['select * from `t` where `a_limit` = ?', [5]],
    ['select * from `t` where `id` = ?', [5]],
  ];
  for (const [sql, bindings] of left) assert.is(literalLimit(sql, bindings), null, sql);
});

// knex's SQL shapes, on the app's client and on knex's own better-sqlite3 client side by side:
// the same rows, and the texts the app's client prepared.
test('knex: .first(), .limit().offset(), subqueries and unions read the same rows', async () => {
  const open = (client: unknown) =>
    knexFactory({
      client: client as any,
      connection: { filename: ':memory:' },
      useNullAsDefault: true,
    });
  const ours = open(CachingSqliteClient);
  const theirs = open('better-sqlite3');
  const prepared: string[] = [];
  try {
    for (const k of [ours, theirs]) {
      await k.schema.createTable('t', (t) => {
        t.increments('id');
        t.integer('n');
      });
      await k('t').insert(Array.from({ length: 30 }, (_, i) => ({ n: i % 4 })));
    }
    const conn = await (ours.client as any).acquireConnection();
    const prepare = conn.prepare.bind(conn);
    conn.prepare = (sql: string) => (prepared.push(sql), prepare(sql));
    await (ours.client as any).releaseConnection(conn);

    const sub = (k: Knex) => k('t').select('id').where('n', 3).orderBy('id', 'desc').limit(4);
    const queries: [string, (k: Knex) => PromiseLike<unknown>, string][] = [
      [
        'first',
        (k) => k('t').where('n', 2).orderBy('id').first(),
        'select * from `t` where `n` = +? order by `id` asc limit 1',
      ],
      [
        'limit and offset',
        (k) => k('t').where('n', '>', 0).orderBy('id').limit(3).offset(5),
        'select * from `t` where `n` > +? order by `id` asc limit 3 offset ?',
      ],
      [
        'a large offset',
        (k) => k('t').orderBy('id', 'desc').limit(2).offset(100_000),
        'select * from `t` order by `id` desc limit 2 offset ?',
      ],
      [
        'an offset alone',
        (k) => k('t').orderBy('id').offset(27),
        'select * from `t` order by `id` asc limit -1 offset ?',
      ],
      [
        'a limit above the bound',
        (k) => k('t').orderBy('id').limit(5000),
        'select * from `t` order by `id` asc limit ?',
      ],
      [
        'a subquery with its own limit',
        (k) => k('t').whereIn('id', sub(k)).where('n', 3).orderBy('id'),
        'select * from `t` where `id` in (select `id` from `t` where `n` = +? order by `id` desc limit ?) and `n` = +? order by `id` asc',
      ],
      [
        'a subquery with its own limit, then first',
        (k) => k('t').whereIn('id', sub(k)).where('n', 3).orderBy('id').first('id'),
        'select `id` from `t` where `id` in (select `id` from `t` where `n` = +? order by `id` desc limit ?) and `n` = +? order by `id` asc limit 1',
      ],
      [
        'a union, then limit',
        (k) =>
          k('t')
            .select('id')
            .where('n', 1)
            .union((u) => u.select('id').from('t').where('n', 2))
            .orderBy('id')
            .limit(5),
        'select `id` from `t` where `n` = +? union select `id` from `t` where `n` = +? order by `id` asc limit 5',
      ],
    ];
    for (const [name, query, text] of queries) {
      prepared.length = 0;
      const rows = await query(ours);
      assert.equal(rows, await query(theirs), name);
      // Past the end, nothing: every other query reads rows.
      const none = rows === undefined || (Array.isArray(rows) && rows.length === 0);
      assert.is(none, name === 'a large offset', name);
      assert.equal(prepared, [text], name);
    }
    // The portable statements' allRows too (the webhook sweep's dueEndpoints).
    prepared.length = 0;
    const sql = 'SELECT id FROM t WHERE n = ? ORDER BY id DESC LIMIT ?';
    assert.equal(await allRows({ tx: ours }, sql, [1, 2]), [{ id: 30 }, { id: 26 }]);
    assert.equal(prepared, ['SELECT id FROM t WHERE n = +? ORDER BY id DESC limit 2']);
    // A limit value of its own is a text of its own; the same value, the cached statement.
    prepared.length = 0;
    for (const n of [1, 2, 1]) await ours('t').orderBy('id').limit(n);
    assert.equal(prepared, [
      'select * from `t` order by `id` asc limit 1',
      'select * from `t` order by `id` asc limit 2',
    ]);
  } finally {
    await ours.destroy();
    await theirs.destroy();
  }
});

// createDb's knex (compileSqlOnError: false).
test("a failed statement's error names the statement, not its values", async () => {
  const db = createDb('sqlite::memory:');
  try {
    await db.schema.createTable('kept', (t) => {
      t.integer('id').primary();
      t.text('a');
    });
    await db('kept').insert({ id: 1, a: 'x' });
    const err = await db('kept')
      .insert({ id: 1, a: 'secret value' })
      .catch((e: Error) => e);
    assert.instance(err, Error);
    assert.match((err as Error).message, /UNIQUE constraint failed/);
    assert.not.match((err as Error).message, /secret value/);
  } finally {
    await db.destroy();
  }
});

test.run();
