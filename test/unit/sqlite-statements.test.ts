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

/**
 * Median CPU microseconds of one run, over 3 rounds of 3,000 (the thread's CPU time moves in
 * scheduler ticks of a few ms: a round of a prepare or a planned run lasts tens of them).
 */
function cpuPerRun(run: () => void): number {
  const rounds: number[] = [];
  for (let r = 0; r < 3; r++) {
    const start = process.threadCpuUsage();
    for (let i = 0; i < 3000; i++) run();
    const used = process.threadCpuUsage(start);
    rounds.push((used.user + used.system) / 3000);
  }
  return rounds.sort((a, b) => a - b)[1]!;
}

test('a statement SQLite would plan for its values is not planned again at every run', () => {
  // The fan-out's read of an account's endpoints (an `x = ?` under an ORDER BY) and the claim's
  // `LIMIT ?`: planned again whenever better-sqlite3 binds them anew (it clears the bindings
  // after each run), which costs a prepare (tens of us) where a run costs a few.
  const db = new Database(':memory:');
  db.exec(
    'CREATE TABLE e (id INTEGER PRIMARY KEY, account_id INTEGER, status TEXT, deleted_at TEXT, ' +
      'url TEXT, a TEXT, b TEXT, c TEXT); CREATE INDEX e_a ON e (account_id, status); ' +
      "INSERT INTO e (account_id, status, url) VALUES (7, 'enabled', 'http://x')",
  );
  const sql =
    "SELECT * FROM e WHERE account_id = ? AND status = 'enabled' AND deleted_at IS NULL ORDER BY id";
  const raw = db.prepare(sql);
  const blind = statement(db, sql);
  assert.equal(blind.all(7), raw.all(7));
  const prepare = cpuPerRun(() => db.prepare(sql));
  const planned = cpuPerRun(() => raw.all(7));
  const kept = cpuPerRun(() => blind.all(7));
  // The raw statement costs about a prepare per run; the value-blind one a fraction of it.
  assert.ok(planned > prepare / 2, `raw run ${planned} us, prepare ${prepare} us`);
  assert.ok(kept < planned / 2, `value-blind run ${kept} us, raw run ${planned} us`);
  db.close();
});

test.run();
