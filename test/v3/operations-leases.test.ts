// Operation guarantees the other suites leave open: the lease (taken over when expired, refused
// while held, a chunk rolled back when its renewal finds the lease gone), `error` on
// partially_succeeded, and the 100-detail cap of batch rejections. No workers run here: the
// runner is called directly (as a worker would) with a frozen clock, so lease edges are exact.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { TestClock } from '../../src/clock.ts';
import { LEASE_MS } from '../../src/domain/operations/runner.ts';
import { AppError } from '../../src/errors.ts';
import { JobReleased } from '../../src/jobs/types.ts';
import { boot, type Booted } from '../helpers/app.ts';
import { allItems, submit, testType } from '../helpers/operations.ts';

class FrozenClock extends TestClock {
  private at = Date.now();
  override now(): Date {
    return new Date(this.at);
  }
  override advance(ms: number): void {
    this.at += ms;
  }
}

const t = suite<{ b: Booted }>('operation leases');
t.before(async (ctx) => {
  ctx.b = await boot({ clock: new FrozenClock() });
});
t.after(async (ctx) => ctx.b.close());

/** Runs the operation's current attempt as a worker of another host would. */
const run = (b: Booted, id: string) =>
  b.app.services.operationRunner.run(Number(id), {
    jobId: 'test',
    attempt: 1,
    workerId: 'test-host/1/runner',
    signal: new AbortController().signal,
  });

const op = async (b: Booted, id: string) =>
  (await b.api('GET', `/api/v3/operations/${id}`)).body.data;

const items = (n: number, payload: (i: number) => object = (i) => ({ id: `p${i}` })) =>
  Array.from({ length: n }, (_, i) => ({ key: `k${i}`, payload: payload(i) }));

/** A queued operation whose lease is held by a live worker of another host until `until`. */
async function leased(b: Booted, type: string, until: Date) {
  const res = await submit(b, type, items(3));
  assert.is(res.status, 202);
  await b.app
    .db('operations')
    .where({ id: Number(res.body.data.id) })
    .update({
      status: 'running',
      lease_owner: 'elsewhere/1/alive',
      lease_expires_at: until.toISOString(),
    });
  return res.body.data.id as string;
}

t('a second attempt of a leased operation does nothing, to the last millisecond', async ({ b }) => {
  const { calls } = testType(b, 'test.held');
  const id = await leased(b, 'test.held', b.clock.now());
  await run(b, id);
  const held = await op(b, id);
  assert.is(held.status, 'running');
  assert.equal(held.progress, { total: 3, done: 0, failed: 0 });
  assert.is(calls.size, 0);
  const row = await b.app
    .db('operations')
    .where({ id: Number(id) })
    .first();
  assert.is(row.lease_owner, 'elsewhere/1/alive');
  assert.is(Number(row.lease_takeovers), 0);
});

t('a lease already expired is taken over and the operation finishes', async ({ b }) => {
  const { calls } = testType(b, 'test.expired');
  const id = await leased(b, 'test.expired', new Date(b.clock.now().getTime() - 1));
  await run(b, id);
  const done = await op(b, id);
  assert.is(done.status, 'succeeded');
  assert.equal(done.progress, { total: 3, done: 3, failed: 0 });
  assert.is(calls.size, 3);
  const row = await b.app
    .db('operations')
    .where({ id: Number(id) })
    .first();
  assert.is(row.lease_owner, null);
  // The takeover is counted in the row (src/db/lease.ts).
  assert.is(Number(row.lease_takeovers), 1);
});

t('a chunk whose lease renewal fails rolls back, effects and all', async ({ b }) => {
  // The second item takes the lease away inside the chunk's transaction: what another attempt
  // does when this one's lease ran out while it worked. That write is the chunk's effect here.
  const calls: string[] = [];
  b.app.services.operations.types['test.stolen'] = {
    permission: 'users.write',
    maxItems: 10,
    async apply(tx, _account, payload, { operationId }) {
      calls.push(payload.id);
      if (payload.id === 'p1')
        await tx('operations').where({ id: operationId }).update({ lease_owner: 'thief/1/x' });
      return { id: payload.id };
    },
  };
  const res = await submit(b, 'test.stolen', items(3));
  const id = res.body.data.id;
  await run(b, id);
  assert.equal(calls, ['p0', 'p1', 'p2']);
  const after = await op(b, id);
  assert.equal(after.progress, { total: 3, done: 0, failed: 0 });
  assert.equal(
    (await allItems(b, id)).map((i) => i.status),
    ['pending', 'pending', 'pending'],
  );
  const row = await b.app
    .db('operations')
    .where({ id: Number(id) })
    .first();
  assert.is.not(row.lease_owner, 'thief/1/x');
});

t('partially_succeeded carries no error; failed says why', async ({ b }) => {
  testType(b, 'test.mixed');
  const mixed = await submit(b, 'test.mixed', [
    { key: 'ok', payload: { id: 'm1' } },
    { key: 'no', payload: { id: 'm2', fail: 'app' } },
  ]);
  await run(b, mixed.body.data.id);
  const partial = await op(b, mixed.body.data.id);
  assert.is(partial.status, 'partially_succeeded');
  assert.equal(partial.progress, { total: 2, done: 1, failed: 1 });
  assert.is(partial.error, null);
  const allFail = await submit(b, 'test.mixed', [
    { key: 'no', payload: { id: 'm3', fail: 'app' } },
  ]);
  await run(b, allFail.body.data.id);
  const failed = await op(b, allFail.body.data.id);
  assert.is(failed.status, 'failed');
  assert.equal(failed.error, {
    code: 'domain_rule_violation',
    message: "Every item failed; each item's error says why.",
  });
});

t('the lease runs 30 s from the claim and from each chunk', async ({ b }) => {
  // Each item reads the lease its attempt holds; the 26th (second chunk) after a 5 s jump.
  const seen: [string, string][] = [];
  b.app.services.operations.types['test.lease'] = {
    permission: 'users.write',
    maxItems: 100,
    async apply(tx, _account, payload, { operationId }) {
      const row = await tx('operations').where({ id: operationId }).first();
      seen.push([payload.id, row.lease_expires_at]);
      if (payload.id === 'p24') b.clock.advance(5_000);
      return { id: payload.id };
    },
  };
  const res = await submit(b, 'test.lease', items(26));
  const start = b.clock.now().getTime();
  await run(b, res.body.data.id);
  assert.is(seen.length, 26);
  assert.is(seen[0]![1], new Date(start + LEASE_MS).toISOString());
  assert.is(seen[25]![1], new Date(start + 5_000 + LEASE_MS).toISOString());
  assert.is(LEASE_MS, 30_000);
  assert.is((await op(b, res.body.data.id)).status, 'succeeded');
});

t('rejections list at most 100 details', async ({ b }) => {
  const dup = await submit(
    b,
    'users.upsert',
    Array.from({ length: 150 }, (_, i) => ({
      key: 'same',
      payload: { email: `d${i}@example.com`, name: 'D' },
    })),
  );
  assert.is(dup.status, 422);
  assert.is(dup.body.error.code, 'duplicate_item_key');
  assert.is(dup.body.error.details.length, 100);
  assert.is(dup.body.error.details[99].field, 'items.100.key');
  const invalid = await submit(
    b,
    'users.upsert',
    Array.from({ length: 150 }, (_, i) => ({ key: `i${i}`, payload: { name: 'No email' } })),
  );
  assert.is(invalid.status, 422);
  assert.is(invalid.body.error.code, 'item_invalid');
  assert.is(invalid.body.error.details.length, 100);
  assert.is(invalid.body.error.details[99].field, 'items.99.payload.email');
});

t(
  'a worker stopping mid-way keeps what it did, lets go of the lease, and is run again',
  async ({ b }) => {
    const stop = new AbortController();
    b.app.services.operations.types['test.stop'] = {
      permission: 'users.write',
      maxItems: 100,
      async apply(_tx, _account, payload) {
        // The worker is told to stop while the first chunk (25 items) runs.
        if (payload.id === 'p3') stop.abort();
        return { id: payload.id };
      },
    };
    const res = await submit(b, 'test.stop', items(30));
    const id = res.body.data.id;
    const released = await b.app.services.operationRunner
      .run(Number(id), {
        jobId: 'test',
        attempt: 1,
        workerId: 'test-host/1/runner',
        signal: stop.signal,
      })
      .then(
        () => null,
        (err) => err,
      );
    assert.ok(released instanceof JobReleased, String(released));
    const row = await b.app
      .db('operations')
      .where({ id: Number(id) })
      .first();
    assert.equal([row.status, row.lease_owner, Number(row.done)], ['running', null, 25]);
    await run(b, id);
    const done = await op(b, id);
    assert.equal([done.status, done.progress], ['succeeded', { total: 30, done: 30, failed: 0 }]);
  },
);

t('a set-based type applies whole chunks; a chunk it declines goes item by item', async ({ b }) => {
  const chunks: number[] = [];
  const single: string[] = [];
  let id = '';
  b.app.services.operations.types['test.many'] = {
    permission: 'users.write',
    maxItems: 1000,
    setBasedOnSqlite: true,
    async apply(_tx, _account, payload) {
      single.push(payload.id);
      if (payload.fail) throw new AppError('not_found');
      return { id: payload.id, one: true };
    },
    async applyMany(_tx, _account, payloads, { operationId }) {
      assert.is(String(operationId), id);
      chunks.push(payloads.length);
      // An item that would fail: the chunk goes item by item, where it fails alone.
      if (payloads.some((p) => p.fail)) return null;
      return payloads.map((p) => ({ id: p.id, many: true }));
    },
  };
  const res = await submit(
    b,
    'test.many',
    items(250, (i) => (i === 220 ? { id: `p${i}`, fail: true } : { id: `p${i}` })),
  );
  id = res.body.data.id;
  await run(b, id);
  // 100 items a set-based chunk; the third (200-249) declined and went 25 a transaction.
  assert.equal(chunks, [100, 100, 50]);
  assert.is(single.length, 50);
  const done = await op(b, id);
  assert.equal(
    [done.status, done.progress],
    ['partially_succeeded', { total: 250, done: 249, failed: 1 }],
  );
  const all = await allItems(b, id);
  assert.equal(all[0].result, { id: 'p0', many: true });
  assert.equal(all[210].result, { id: 'p210', one: true });
  assert.equal([all[220].status, all[220].error.code], ['failed', 'not_found']);
});

t(
  'a prepared type: each item prepared outside the transaction, one a chunk; a failed preparation fails its item',
  async ({ b }) => {
    const order: string[] = [];
    b.app.services.operations.types['test.prepared'] = {
      permission: 'users.write',
      maxItems: 100,
      async prepare(_account, payload) {
        order.push(`prepare ${payload.id}`);
        if (payload.fail) throw new AppError('not_found');
        return `ready ${payload.id}`;
      },
      async apply(_tx, _account, payload, { prepared }) {
        order.push(`apply ${payload.id}`);
        return { id: payload.id, prepared };
      },
    };
    const res = await submit(
      b,
      'test.prepared',
      items(3, (i) => (i === 1 ? { id: `p${i}`, fail: true } : { id: `p${i}` })),
    );
    await run(b, res.body.data.id);
    assert.equal(order, ['prepare p0', 'apply p0', 'prepare p1', 'prepare p2', 'apply p2']);
    const all = await allItems(b, res.body.data.id);
    assert.equal(all[0].result, { id: 'p0', prepared: 'ready p0' });
    assert.equal([all[1].status, all[1].error.code], ['failed', 'not_found']);
    assert.is((await op(b, res.body.data.id)).status, 'partially_succeeded');
  },
);

t(
  'a set-based chunk whose lease is gone rolls back, and is not applied item by item',
  async ({ b }) => {
    let single = 0;
    b.app.services.operations.types['test.many-stolen'] = {
      permission: 'users.write',
      maxItems: 100,
      setBasedOnSqlite: true,
      async apply(_tx, _account, payload) {
        single++;
        return { id: payload.id };
      },
      async applyMany(tx, _account, payloads, { operationId }) {
        await tx('operations').where({ id: operationId }).update({ lease_owner: 'thief/1/x' });
        return payloads.map((p) => ({ id: p.id }));
      },
    };
    const res = await submit(b, 'test.many-stolen', items(3));
    await run(b, res.body.data.id);
    assert.is(single, 0);
    assert.equal(
      (await allItems(b, res.body.data.id)).map((i) => i.status),
      ['pending', 'pending', 'pending'],
    );
    const row = await b.app
      .db('operations')
      .where({ id: Number(res.body.data.id) })
      .first();
    // The theft rolled back with the chunk (a real one would be another attempt's committed claim).
    assert.is.not(row.lease_owner, 'thief/1/x');
    assert.is(Number(row.done), 0);
  },
);

t(
  'two runs of one operation in one worker: one holds it, each item applies once',
  async ({ b }) => {
    const { calls } = testType(b, 'test.twice');
    const res = await submit(
      b,
      'test.twice',
      items(5, (i) => ({ id: `p${i}`, delay: 20 })),
    );
    const id = res.body.data.id;
    // A recovery's job beside the original, in the same worker process: same worker id.
    await Promise.all([run(b, id), run(b, id)]);
    assert.equal([...calls.values()], [1, 1, 1, 1, 1]);
    const done = await op(b, id);
    assert.equal([done.status, done.progress], ['succeeded', { total: 5, done: 5, failed: 0 }]);
    const [attempt] = (await b.api('GET', `/api/v3/operations/${id}/attempts`)).body.data;
    assert.is(attempt.status, 'succeeded');
    assert.is(attempt.started_at, b.clock.now().toISOString());
    assert.is(attempt.finished_at, b.clock.now().toISOString());
  },
);

t('a run that fails outside its items lets go of the lease and says so', async ({ b }) => {
  testType(b, 'test.vanishing');
  const res = await submit(b, 'test.vanishing', items(2));
  const id = res.body.data.id;
  // The type is gone by the time the job runs (a worker of an older release).
  delete b.app.services.operations.types['test.vanishing'];
  const err = await run(b, id).then(
    () => null,
    (e) => e as Error,
  );
  assert.match(String(err), 'unknown batch type test.vanishing');
  const row = await b.app
    .db('operations')
    .where({ id: Number(id) })
    .first();
  assert.equal([row.status, row.lease_owner, Number(row.done)], ['running', null, 0]);
});

t(
  'a store that failed (503) stops the attempt as a transient failure, not a rejection',
  async ({ b }) => {
    b.app.services.operations.types['test.store'] = {
      permission: 'users.write',
      maxItems: 10,
      async apply(_tx, _account, payload) {
        if (payload.id === 'p1') throw new AppError('storage_unavailable');
        return { id: payload.id };
      },
    };
    const res = await submit(b, 'test.store', items(3));
    await run(b, res.body.data.id);
    const stopped = await op(b, res.body.data.id);
    assert.equal([stopped.status, stopped.error.code], ['failed', 'storage_unavailable']);
    const all = await allItems(b, res.body.data.id);
    assert.equal(
      all.map((i) => [i.status, i.retryable]),
      [
        ['succeeded', false],
        ['failed', true],
        ['pending', false],
      ],
    );
  },
);

t('orphans: operations whose lease ran out or whose worker died, each once', async ({ b }) => {
  testType(b, 'test.orphans');
  const expired = await leased(b, 'test.orphans', new Date(b.clock.now().getTime() - 1));
  const alive = await leased(b, 'test.orphans', new Date(b.clock.now().getTime() + 60_000));
  const dead = await leased(b, 'test.orphans', new Date(b.clock.now().getTime() + 60_000));
  // A process of this host that no longer exists: one that ran and ended.
  const gone = `${os.hostname()}/${spawnSync(process.execPath, ['-e', '']).pid}/gone`;
  await b.app
    .db('operations')
    .where({ id: Number(dead) })
    .update({ lease_owner: gone });
  const both = await leased(b, 'test.orphans', new Date(b.clock.now().getTime() - 1));
  await b.app
    .db('operations')
    .where({ id: Number(both) })
    .update({ lease_owner: gone });
  const orphans = await b.app.services.operationRunner.orphans();
  const mine = orphans.filter((o) => [expired, alive, dead, both].includes(String(o)));
  assert.equal(mine.map(String).sort(), [expired, dead, both].sort());
});

t.run();
