// The lease primitive (src/db/lease.ts) on the suite's engine: a claim of a free row, refused
// while another owner's lease runs, an expired one taken over (and whose it was said), renewal
// and release refused to anyone but the owner, writes guarded by the lease, and batch claims
// that never hold more than the per-group cap, also (PostgreSQL) when two transactions claim the
// same group at once.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Lease } from '../../src/db/lease.ts';
import type { Tx } from '../../src/db/engine.ts';
import { isPostgres } from '../../src/db/knex.ts';
import { closeSideConnections } from '../../src/db/reader.ts';
import { transaction } from '../../src/db/tx.ts';
import { freshDatabase, type TestDatabase } from '../helpers/app.ts';

const t = suite<{ database: TestDatabase }>('lease primitive');
const lease = new Lease({
  table: 'lease_t',
  owner: 'holder',
  until: 'held_until',
  takeovers: 'takeovers',
});
const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

t.before(async (ctx) => {
  ctx.database = await freshDatabase();
  await ctx.database.db.schema.createTable('lease_t', (tb) => {
    tb.integer('id').primary();
    tb.integer('grp').notNullable();
    tb.string('holder').nullable();
    tb.string('held_until').nullable();
    tb.string('note').nullable();
    tb.integer('takeovers').notNullable().defaultTo(0);
  });
});
t.after(async (ctx) => {
  await ctx.database.db.destroy();
  await closeSideConnections(ctx.database.db);
  await ctx.database.drop();
});

const reset = async (db: TestDatabase['db'], rows: { id: number; grp: number }[]) => {
  await db('lease_t').delete();
  await db('lease_t').insert(rows.map((r) => ({ ...r, holder: null, held_until: null })));
};
const row = (db: TestDatabase['db'], id: number) =>
  db('lease_t').where('id', id).first('holder', 'held_until', 'note');

t('claim, refused while held, expired one taken over and recorded', async ({ database }) => {
  const { db } = database;
  await reset(db, [{ id: 1, grp: 1 }]);
  const a = await transaction(db, (tx) =>
    lease.claim({ tx }, 1, { owner: 'a', now: at(0), until: at(30) }, { set: { note: 'by a' } }),
  );
  assert.equal(a, { claimed: true, tookOver: null });
  assert.equal(await row(db, 1), { holder: 'a', held_until: at(30), note: 'by a' });
  // b before a's lease ends: refused, nothing written.
  const early = await transaction(db, (tx) =>
    lease.claim({ tx }, 1, { owner: 'b', now: at(29), until: at(59) }, { set: { note: 'by b' } }),
  );
  assert.equal(early, { claimed: false, tookOver: null });
  assert.equal(await row(db, 1), { holder: 'a', held_until: at(30), note: 'by a' });
  // a claims again (its own): no takeover.
  assert.equal(
    await transaction(db, (tx) =>
      lease.claim({ tx }, 1, { owner: 'a', now: at(10), until: at(40) }),
    ),
    { claimed: true, tookOver: null },
  );
  // After it expired: b takes it over, and is told it was a's.
  const late = await transaction(db, (tx) =>
    lease.claim({ tx }, 1, { owner: 'b', now: at(41), until: at(71) }),
  );
  assert.equal(late, { claimed: true, tookOver: 'a' });
  assert.equal((await row(db, 1)).holder, 'b');
  const takeovers = async () => Number((await db('lease_t').where('id', 1).first()).takeovers);
  // Recorded in the row: one takeover so far (a's own second claim was none).
  assert.is(await takeovers(), 1);
  // A claim guarded by another condition that fails: refused.
  const guarded = await transaction(db, (tx) =>
    lease.claim(
      { tx },
      1,
      { owner: 'c', now: at(100), until: at(130) },
      { where: (q) => q.where('note', 'never') },
    ),
  );
  assert.equal(guarded.claimed, false);
  // A holder known dead is taken over before its lease ends.
  const dead = await transaction(db, (tx) =>
    lease.claim({ tx }, 1, { owner: 'c', now: at(50), until: at(80) }, { dead: 'b' }),
  );
  assert.equal(dead, { claimed: true, tookOver: 'b' });
  assert.is(await takeovers(), 2);
  // A row that does not exist.
  assert.equal(
    await transaction(db, (tx) =>
      lease.claim({ tx }, 99, { owner: 'a', now: at(0), until: at(1) }),
    ),
    { claimed: false, tookOver: null },
  );
});

t('renew, release and guarded writes: the owner only', async ({ database }) => {
  const { db } = database;
  await reset(db, [{ id: 1, grp: 1 }]);
  await transaction(db, (tx) => lease.claim({ tx }, 1, { owner: 'a', now: at(0), until: at(30) }));
  // Not the owner: refused, nothing written.
  assert.is(
    await transaction(db, (tx) => lease.renew({ tx }, 1, 'b', at(90), { note: 'b' })),
    false,
  );
  assert.is(await transaction(db, (tx) => lease.release({ tx }, 1, 'b')), false);
  assert.is(await transaction(db, (tx) => lease.guarded({ tx }, 1, 'b').update({ note: 'b' })), 0);
  assert.equal(await row(db, 1), { holder: 'a', held_until: at(30), note: null });
  // The owner.
  assert.is(
    await transaction(db, (tx) => lease.renew({ tx }, 1, 'a', at(60), { note: 'a' })),
    true,
  );
  assert.equal(await row(db, 1), { holder: 'a', held_until: at(60), note: 'a' });
  assert.is(await transaction(db, (tx) => lease.guarded({ tx }, 1, 'a').update({ note: 'a2' })), 1);
  assert.is(await transaction(db, (tx) => lease.release({ tx }, 1, 'a')), true);
  assert.equal(await row(db, 1), { holder: null, held_until: null, note: 'a2' });
  // Released: a renewal by the old owner is refused too.
  assert.is(await transaction(db, (tx) => lease.renew({ tx }, 1, 'a', at(90))), false);
});

t(
  'batch claim: in order, at most perGroup held per group, expired ones free',
  async ({ database }) => {
    const { db } = database;
    await reset(
      db,
      [1, 2, 3, 4, 5, 6, 7, 8].map((id) => ({ id, grp: id <= 5 ? 1 : 2 })),
    );
    // Group 1 already has one held (id 1) and one expired (id 2).
    await db('lease_t')
      .where('id', 1)
      .update({ holder: 'x', held_until: at(100) });
    await db('lease_t')
      .where('id', 2)
      .update({ holder: 'y', held_until: at(5) });
    const opts = { group: 'grp', perGroup: 3, limit: 10, orderBy: 'id', set: { note: 'batch' } };
    const ids = await transaction(db, (tx) =>
      lease.claimBatch({ tx }, { owner: 'w', now: at(10), until: at(40) }, opts),
    );
    // Group 1: 1 held, so 2 more (2 the expired one, then 3); group 2: 3 of 3.
    assert.equal(ids, [2, 3, 6, 7, 8]);
    const held = await db('lease_t').where('holder', 'w').orderBy('id').pluck('id');
    assert.equal(held, [2, 3, 6, 7, 8]);
    // Full everywhere: a second claim gets nothing; the limit bounds one claim.
    assert.equal(
      await transaction(db, (tx) =>
        lease.claimBatch({ tx }, { owner: 'v', now: at(11), until: at(40) }, opts),
      ),
      [],
    );
    // Once those leases expire, the next claim takes the group's first rows again, up to `limit`.
    const after = await transaction(db, (tx) =>
      lease.claimBatch({ tx }, { owner: 'v', now: at(50), until: at(80) }, { ...opts, limit: 2 }),
    );
    assert.equal(after, [2, 3]);
    // Taken over from w (2 and 3 had expired): counted in each row; 2 also from y before.
    const counts = await db('lease_t').whereIn('id', [2, 3, 6]).orderBy('id').pluck('takeovers');
    assert.equal(counts.map(Number), [2, 1, 0]);
  },
);

t('batch claims at once in two transactions (PostgreSQL): the cap holds', async ({ database }) => {
  const { db } = database;
  if (!isPostgres(db)) return;
  await reset(
    db,
    [1, 2, 3, 4, 5, 6].map((id) => ({ id, grp: 1 })),
  );
  const opts = { group: 'grp', perGroup: 2, limit: 10, orderBy: 'id' };
  let release!: () => void;
  const hold = new Promise<void>((r) => (release = r));
  let first: number[] = [];
  // The first transaction claims and stays open while the second claims.
  const one = db.transaction(async (tx) => {
    first = await lease.claimBatch({ tx }, { owner: 'p', now: at(0), until: at(30) }, opts);
    await hold;
  });
  while (first.length === 0) await new Promise((r) => setTimeout(r, 5));
  const second = await db.transaction((tx) =>
    lease.claimBatch({ tx }, { owner: 'q', now: at(0), until: at(30) }, opts),
  );
  release();
  await one;
  assert.equal(first, [1, 2]);
  // The group was being claimed: skipped, not waited for and not counted wrong.
  assert.equal(second, []);
  // After the first committed: the group is full.
  const third = await db.transaction((tx) =>
    lease.claimBatch({ tx }, { owner: 'r', now: at(1), until: at(30) }, opts),
  );
  assert.equal(third, []);
  assert.is(Number((await db('lease_t').whereNotNull('holder').count({ n: '*' }))[0]!.n), 2);
});

t(
  'lockGroup (PostgreSQL): a claimer waits for the group, then sees what was released',
  async ({ database }) => {
    const { db } = database;
    if (!isPostgres(db)) return;
    await reset(
      db,
      [1, 2, 3].map((id) => ({ id, grp: 7 })),
    );
    await db('lease_t')
      .whereIn('id', [1, 2])
      .update({ holder: 'p', held_until: at(30) });
    const opts = { group: 'grp', perGroup: 2, limit: 10, orderBy: ['id'] };
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    let locked = false;
    // The first transaction holds the group's lock and frees one of its two slots, uncommitted.
    const one = db.transaction(async (tx) => {
      await lease.lockGroup({ tx }, 7);
      await lease.release({ tx }, 1, 'p');
      locked = true;
      await hold;
    });
    while (!locked) await new Promise((r) => setTimeout(r, 5));
    let claimed: number[] | null = null;
    const two = db.transaction(async (tx) => {
      await lease.lockGroup({ tx }, 7);
      claimed = await lease.claimBatch({ tx }, { owner: 'q', now: at(1), until: at(30) }, opts);
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.is(claimed, null, 'waits for the group instead of skipping it');
    release();
    await Promise.all([one, two]);
    // It saw the slot freed by the first transaction's commit (skipping would have claimed none).
    assert.equal(claimed, [1]);
  },
);

/** A claim by a holder of the group's lock: `locked`, or `lockedGroup` (one statement on PostgreSQL). */
const capHolds =
  (variant: { locked: true } | { lockedGroup: number }) =>
  async ({ database }: { database: TestDatabase }) => {
    const { db } = database;
    await reset(
      db,
      [1, 2, 3, 4].map((id) => ({ id, grp: 7 })),
    );
    await db('lease_t')
      .where('id', 1)
      .update({ holder: 'x', held_until: at(100) });
    const opts = {
      group: 'grp',
      perGroup: 2,
      limit: 10,
      orderBy: 'id',
      where: { sql: 'grp = ?', params: [7] },
      ...variant,
    };
    // The lock, selected in the transaction's first statement (PostgreSQL; SQLite writes alone).
    const lockFirst = async (tx: Tx) => {
      const lock = lease.groupLock({ tx }, 7);
      if (lock) await tx.raw(`SELECT ${lock.sql}`, lock.params as any[]);
    };
    // One held of two: one more (not the row's count column, which is not returned).
    const rows = await transaction(db, async (tx) => {
      await lockFirst(tx);
      return lease.claimBatchRows(
        { tx },
        { owner: 'p', now: at(10), until: at(40) },
        { ...opts, columns: ['id', 'grp'] },
      );
    });
    assert.equal(
      rows.map((r) => ({ ...r, id: Number(r.id), grp: Number(r.grp) })),
      [{ id: 2, grp: 7 }],
    );
    if (!isPostgres(db)) return;
    // PostgreSQL: a second claimer waits for the lock while the first frees a slot and claims
    // two more rows in its place, then sees that commit: the group is full (a count read with a
    // snapshot older than the lock would see one held and claim row 3).
    await db('lease_t').where('id', 2).update({ holder: null, held_until: null });
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    let first: number[] | null = null;
    const one = db.transaction(async (tx) => {
      await lockFirst(tx);
      first = await lease.claimBatch(
        { tx },
        { owner: 'p', now: at(10), until: at(40) },
        { ...opts, limit: 1 },
      );
      await hold;
    });
    while (first === null) await new Promise((r) => setTimeout(r, 5));
    let second: number[] | null = null;
    const two = db.transaction(async (tx) => {
      await lockFirst(tx);
      second = await lease.claimBatch({ tx }, { owner: 'q', now: at(11), until: at(40) }, opts);
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.is(second, null, 'waits for the lock');
    release();
    await Promise.all([one, two]);
    assert.equal(first, [2]);
    assert.equal(second, []);
    assert.equal(await db('lease_t').whereNotNull('holder').orderBy('id').pluck('id'), [1, 2]);
  };

t(
  'a locked claim counts its group in its candidates statement: the cap holds',
  capHolds({ locked: true }),
);
t('a claim of one locked group (lockedGroup): the cap holds', capHolds({ lockedGroup: 7 }));

t(
  'a hand-over (PostgreSQL) claims without the lock, what it released at most, skipping locked rows',
  async ({ database }) => {
    const { db } = database;
    if (!isPostgres(db)) return;
    await reset(
      db,
      [1, 2, 3, 4, 5].map((id) => ({ id, grp: 7 })),
    );
    await db('lease_t')
      .whereIn('id', [1, 2])
      .update({ holder: 'p', held_until: at(100) });
    // Another claimer holds the group's lock and has row 3 locked, uncommitted.
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    let locked = false;
    const one = db.transaction(async (tx) => {
      await lease.lockGroup({ tx }, 7);
      await tx.raw('SELECT id FROM lease_t WHERE id = 3 FOR UPDATE');
      locked = true;
      await hold;
    });
    while (!locked) await new Promise((r) => setTimeout(r, 5));
    // p's attempt on row 1 finishes: its transaction frees the slot and hands it on at once.
    const handed = await transaction(db, async (tx) => {
      assert.ok(await lease.release({ tx }, 1, 'p', { note: 'done' }));
      return lease.claimBatchRows(
        { tx },
        { owner: 'p', now: at(10), until: at(40) },
        {
          group: 'grp',
          perGroup: 2,
          limit: 1,
          orderBy: ['id'],
          where: { sql: 'grp = ? AND note IS NULL', params: [7] },
          handOver: 7,
          columns: ['id'],
        },
      );
    });
    release();
    await one;
    // Row 3 was locked: skipped, not waited for; one claimed for the one released.
    assert.equal(
      handed.map((r) => Number(r.id)),
      [4],
    );
    assert.equal(await db('lease_t').whereNotNull('holder').orderBy('id').pluck('id'), [2, 4]);
  },
);

t('a claim of one locked group returns the rows as they were, in order', async ({ database }) => {
  const { db } = database;
  await reset(db, [...[5, 4, 3, 2, 1].map((id) => ({ id, grp: 7 })), { id: 6, grp: 8 }]);
  await db('lease_t')
    .where('id', 1)
    .update({ holder: 'x', held_until: at(100) });
  await db('lease_t')
    .where('id', 4)
    .update({ holder: 'y', held_until: at(5) });
  await db('lease_t')
    .where('id', 2)
    .update({ holder: 'z', held_until: at(100) });
  const rows = await transaction(db, (tx) =>
    lease.claimBatchRows(
      { tx },
      { owner: 'p', now: at(10), until: at(40) },
      {
        group: 'grp',
        perGroup: 4,
        limit: 10,
        orderBy: ['id'],
        where: { sql: 'grp = ?', params: [7] },
        lockedGroup: 7,
        columns: ['id', 'holder'],
        set: { note: 'claimed' },
      },
    ),
  );
  // Two held (1, 2) of four: the next two free or expired, 3 and 4 (y's lease ran out at 5).
  assert.equal(
    rows.map((r) => [Number(r.id), r.holder]),
    [
      [3, null],
      [4, 'y'],
    ],
  );
  const after = await db('lease_t').orderBy('id').select('id', 'holder', 'note', 'takeovers');
  assert.equal(
    after.map((r: any) => [r.id, r.holder, r.note, Number(r.takeovers)]),
    [
      [1, 'x', null, 0],
      [2, 'z', null, 0],
      [3, 'p', 'claimed', 0],
      [4, 'p', 'claimed', 1],
      [5, null, null, 0],
      [6, null, null, 0],
    ],
  );
});

t.run();
