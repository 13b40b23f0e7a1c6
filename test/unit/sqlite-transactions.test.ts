// engine: any
// SQLite transactions are group-committed (src/db/sqlite-transactions.ts): jobs waiting together
// share one COMMIT, each in its own savepoint. What callers rely on: a result is announced only
// once it is committed, a failing job takes nothing else with it, and when the group cannot commit
// every job of it fails and nothing of it is kept.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb, type Db } from '../../src/db/knex.ts';
import { closeSideConnections } from '../../src/db/reader.ts';
import { SqliteTransactions } from '../../src/db/sqlite-transactions.ts';

async function withDb(fn: (db: Db, other: Database.Database) => Promise<void>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-tx-'));
  const file = path.join(dir, 'x.db');
  const db = createDb(`sqlite:${file}`);
  await db.raw('CREATE TABLE parent (id INTEGER PRIMARY KEY)');
  await db.raw(
    'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT UNIQUE, ' +
      'parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)',
  );
  // Another connection: sees only what is committed.
  const other = new Database(file, { readonly: true });
  try {
    await fn(db, other);
  } finally {
    other.close();
    await db.destroy();
    await closeSideConnections(db);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const bodies = (conn: Database.Database) =>
  conn.prepare('SELECT body FROM t ORDER BY id').pluck().all() as string[];

test('jobs waiting together share one commit, and each hears of it only once it is durable', async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db);
    const seenAtResolve: string[][] = [];
    const jobs = ['a', 'b', 'c', 'd'].map((body) =>
      group
        .run(async (tx) => {
          await tx('t').insert({ body });
          return body;
        })
        .then((value) => {
          seenAtResolve.push(bodies(other));
          return value;
        }),
    );
    assert.equal(await Promise.all(jobs), ['a', 'b', 'c', 'd']);
    assert.is(group.commits, 1);
    // The first caller told already saw every row of the group on another connection.
    assert.equal(seenAtResolve[0], ['a', 'b', 'c', 'd']);
  });
});

test("settled listeners run once per group, after its callers' continuations, in the same turn", async () => {
  await withDb(async (db) => {
    const group = new SqliteTransactions(db);
    const seen: string[] = [];
    let turned = false;
    group.settled.add(() => seen.push(`settled (next turn: ${turned})`));
    const jobs = ['a', 'b', 'c'].map(async (body) => {
      await group.run(async (tx) => {
        await tx('t').insert({ body });
        // Queued while the group runs: anything deferred to the next turn comes after it.
        if (body === 'c') setImmediate(() => (turned = true));
      });
      // A caller's work after its commit that does not wait on I/O: a response's rendering.
      await Promise.resolve();
      seen.push(body);
    });
    await Promise.all(jobs);
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(turned);
    assert.equal(seen, ['a', 'b', 'c', 'settled (next turn: false)']);
    // A group that fails is announced too.
    await group.run((tx) => tx('t').insert({ body: 'orphan', parent_id: 42 })).catch(() => null);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(seen.slice(4), ['settled (next turn: true)']);
  });
});

test('a failing job is rolled back alone; the others of its group commit', async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db);
    const results = await Promise.allSettled([
      group.run((tx) => tx('t').insert({ body: 'kept-1' })),
      group.run(async (tx) => {
        await tx('t').insert({ body: 'gone' });
        throw new Error('business rule');
      }),
      // A constraint error inside the job: SQLite keeps the transaction open.
      group.run((tx) => tx('t').insert({ body: 'kept-1' })),
      group.run((tx) => tx('t').insert({ body: 'kept-2' })),
    ]);
    assert.equal(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[1] as PromiseRejectedResult).reason), /business rule/);
    assert.match(String((results[2] as PromiseRejectedResult).reason), /UNIQUE/);
    assert.equal(bodies(other), ['kept-1', 'kept-2']);
    assert.is(group.commits, 1);
  });
});

test('a transaction inside a job is a savepoint of it', async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db);
    await group.run(async (tx) => {
      await tx('t').insert({ body: 'outer' });
      await tx
        .transaction(async (inner) => {
          await inner('t').insert({ body: 'inner' });
          throw new Error('inner fails');
        })
        .catch(() => undefined);
      await tx.transaction(async (inner) => {
        await inner('t').insert({ body: 'inner-kept' });
        // Two levels down, then a failure there only.
        await inner
          .transaction(async (deeper) => {
            await deeper('t').insert({ body: 'deeper' });
            throw new Error('deeper fails');
          })
          .catch(() => undefined);
        await inner.transaction((deeper) => deeper('t').insert({ body: 'deeper-kept' }));
      });
    });
    assert.equal(bodies(other), ['outer', 'inner-kept', 'deeper-kept']);
  });
});

test('when the group cannot commit, every job of it fails and none of it is kept', async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db);
    const results = await Promise.allSettled([
      group.run((tx) => tx('t').insert({ body: 'innocent' })),
      // A deferred foreign key is checked at COMMIT only.
      group.run((tx) => tx('t').insert({ body: 'orphan', parent_id: 42 })),
    ]);
    assert.equal(
      results.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.match(String((results[0] as PromiseRejectedResult).reason), /FOREIGN KEY/);
    assert.equal(bodies(other), []);
    assert.is(group.commits, 0);
    // The connection is usable again: the next group commits.
    await group.run((tx) => tx('t').insert({ body: 'after' }));
    assert.equal(bodies(other), ['after']);
  });
});

test('if SQLite rolls the whole transaction back under a job, the jobs before it fail too', async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db);
    const results = await Promise.allSettled([
      group.run((tx) => tx('t').insert({ body: 'lost' })),
      // What SQLite does by itself on a full disk or an I/O error.
      group.run(async (tx) => {
        await tx.raw('ROLLBACK');
        throw new Error('disk full');
      }),
      group.run((tx) => tx('t').insert({ body: 'next-group' })),
    ]);
    assert.equal(
      results.map((r) => r.status),
      ['rejected', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[0] as PromiseRejectedResult).reason), /disk full/);
    assert.equal(bodies(other), ['next-group']);
  });
});

test("a query on a job's tx after its group ended is refused, not run outside a transaction", async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db);
    let leaked: Db | null = null;
    await group.run(async (tx) => {
      leaked = tx as Db;
    });
    const err = await Promise.resolve(leaked!('t').insert({ body: 'late' })).then(
      () => null,
      (e: unknown) => e,
    );
    assert.match(String(err), /already complete/);
    assert.equal(bodies(other), []);
  });
});

test('a query a failed job left running is refused, not run in the next job', async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db);
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    let late: unknown = 'not run';
    const results = await Promise.allSettled([
      group.run(async (tx) => {
        const straggler = sleep(5).then(() => tx('t').insert({ body: 'straggler' }));
        straggler.catch((e) => (late = e));
        throw new Error('validation failed');
      }),
      group.run(async (tx) => {
        await sleep(20);
        await tx('t').insert({ body: 'second' });
      }),
    ]);
    assert.equal(
      results.map((r) => r.status),
      ['rejected', 'fulfilled'],
    );
    assert.match(String(late), /already complete/);
    assert.equal(bodies(other), ['second']);
  });
});

test('a rejection decided on rows of an earlier job waits for the group, and fails with it', async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db);
    const settledAt: string[] = [];
    const create = (tag: string) =>
      group
        .run(async (tx) => {
          if (await tx('t').where({ body: 'x' }).first()) throw new Error('email_taken');
          await tx('t').insert({ body: 'x' });
        })
        .then(
          () => settledAt.push(`${tag} ok, commits=${group.commits}`),
          (e) => {
            settledAt.push(`${tag} ${e.message}, commits=${group.commits}`);
            throw e;
          },
        );
    const results = await Promise.allSettled([
      create('A'),
      // B sees A's uncommitted row.
      create('B'),
      group.run(async (tx) => {
        await tx.raw('ROLLBACK');
        throw new Error('disk full');
      }),
    ]);
    assert.equal(
      results.map((r) => (r.status === 'rejected' ? String(r.reason.message) : 'ok')),
      ['disk full', 'disk full', 'disk full'],
    );
    // Nobody was told anything before the group's fate was known.
    assert.equal(settledAt, ['A disk full, commits=0', 'B disk full, commits=0']);
    assert.equal(bodies(other), []);
  });
});

test('nested transactions started side by side run one after another', async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db);
    const results = await group.run(async (tx) =>
      Promise.allSettled([
        tx.transaction(async (a) => {
          await a('t').insert({ body: 'a' });
          await new Promise((r) => setTimeout(r, 5));
          throw new Error('a fails');
        }),
        tx.transaction(async (b) => {
          await b('t').insert({ body: 'b' });
        }),
      ]),
    );
    assert.equal(
      results.map((r) => r.status),
      ['rejected', 'fulfilled'],
    );
    assert.equal(bodies(other), ['b']);
  });
});

test('a job that waits on the connection itself times out instead of blocking the database', async () => {
  await withDb(async (db, other) => {
    const group = new SqliteTransactions(db, 100);
    // Wrong: a transaction of its own inside a job (it should use tx). It needs the connection
    // the group holds.
    const outer = group.run(async (tx) => {
      await tx('t').insert({ body: 'outer' });
      await group.run((inner) => inner('t').insert({ body: 'inner' }));
    });
    const err = await outer.then(
      () => null,
      (e: Error) => e,
    );
    assert.match(String(err), /still running after 100 ms/);
    // The database goes on: the stuck inner job ran, later ones commit, autocommit works.
    await group.run((tx) => tx('t').insert({ body: 'later' }));
    await db('t').insert({ body: 'autocommit' });
    assert.equal(bodies(other), ['inner', 'later', 'autocommit']);
  });
});

test.run();
