// engine: any
// The shared rate-limit counters (src/domain/ratelimit-shared.ts) against a table kept in memory
// that answers their one statement as PostgreSQL would: the bound across instances, exactness
// for one instance, and failing closed while the table cannot be written.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { TestClock } from '../../src/clock.ts';
import type { Db } from '../../src/db/knex.ts';
import { SharedCounters, slackOf } from '../../src/domain/ratelimit-shared.ts';

/** `rate_limits` in memory; `down` makes every statement fail. */
function fakeTable() {
  const rows = new Map<string, { points: number; expire: number }>();
  const state = { down: false, statements: 0 };
  const db = {
    async raw(sql: string, params: any[]) {
      state.statements++;
      if (state.down) throw new Error('connection refused');
      if (sql.startsWith('DELETE')) return { rows: [] };
      const [keys, deltas, expires, now] = params as [string[], number[], number[], number];
      const out = keys.map((key, i) => {
        const r = rows.get(key);
        const next =
          !r || r.expire <= now
            ? { points: Math.max(deltas[i]!, 0), expire: expires[i]! }
            : { points: Math.max(r.points + deltas[i]!, 0), expire: r.expire };
        rows.set(key, next);
        return { key, ...next };
      });
      return { rows: out };
    },
  } as unknown as Db;
  return { db, rows, state };
}

async function admitted(c: SharedCounters, key: string, limit: number): Promise<boolean> {
  try {
    await c.consume(key, limit, 1);
    return true;
  } catch (err) {
    if (err instanceof RateLimiterRes) return false;
    throw err;
  }
}

const t = suite('shared rate-limit counters');

t('three instances admit between limit and limit + 2 * slack; each stays exact alone', async () => {
  const { db } = fakeTable();
  const clock = new TestClock();
  const instances = [0, 1, 2].map(() => new SharedCounters(db, clock));
  try {
    const limit = 200;
    let total = 0;
    for (let i = 0; i < 3 * limit; i++) if (await admitted(instances[i % 3]!, 'k', limit)) total++;
    assert.ok(total >= limit && total <= limit + 2 * slackOf(limit), String(total));
    // Alone, an instance is exact: it knows every point.
    const alone = new SharedCounters(fakeTable().db, clock);
    let mine = 0;
    for (let i = 0; i < limit + 20; i++) if (await admitted(alone, 'k', limit)) mine++;
    assert.is(mine, limit);
    await alone.close();
  } finally {
    for (const c of instances) await c.close();
  }
});

t('within the slack no statement is sent; past it one statement carries every key', async () => {
  const { db, rows, state } = fakeTable();
  const c = new SharedCounters(db, new TestClock());
  try {
    const limit = 100; // slack 2
    for (const key of ['a', 'b']) {
      assert.ok(await admitted(c, key, limit));
      assert.ok(await admitted(c, key, limit));
    }
    assert.is(state.statements, 0);
    assert.ok(await admitted(c, 'a', limit));
    assert.is(state.statements, 1);
    assert.equal(
      [...rows].map(([k, r]) => [k, r.points]),
      [
        ['a', 3],
        ['b', 2],
      ],
    );
  } finally {
    await c.close();
  }
});

t('fails closed: once a sync fails every request is refused until the table answers', async () => {
  const { db, state } = fakeTable();
  const c = new SharedCounters(db, new TestClock());
  try {
    const limit = 10; // slack 0: every request syncs
    assert.ok(await admitted(c, 'k', limit));
    state.down = true;
    for (const [key, max] of [
      ['k', limit],
      ['other', 1000], // within its slack, yet refused: the instance knows it is failing
    ] as const) {
      const err = await c.consume(key, max, 1).then(
        () => null,
        (e: unknown) => e,
      );
      assert.instance(err, Error);
      assert.match(String(err), /connection refused/);
    }
    state.down = false;
    assert.ok(await admitted(c, 'k', limit));
    assert.ok(await admitted(c, 'other', 1000));
  } finally {
    await c.close();
  }
});

t.run();
