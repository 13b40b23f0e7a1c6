// engine: any
// Value-blind SQLite statements (src/db/sqlite-statements.ts valueBlind): every `?` but a LIMIT's
// or an OFFSET's is prepared as `+?`, so SQLite does not plan the statement again each time
// better-sqlite3 binds it anew; the rows read and written are the same.
import { createRequire } from 'node:module';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { statement, valueBlind } from '../../src/db/sqlite-statements.ts';

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

test.run();
