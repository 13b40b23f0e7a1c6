// The guards of an attempt's outcome, written without reading the delivery first
// (deliveriesRepo.recordOutcomes): an outcome whose lease was taken over while it was sending
// writes nothing, and a replay asked while the attempt was sending is kept and sent after it; an
// answer that PostgreSQL's text would refuse is still recorded.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LEASE_MS } from '../../src/domain/webhooks/schedule.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { waitFor } from '../helpers/operations.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { createUser, createWebhook, settle } from '../helpers/webhooks.ts';

const W = '/api/v3/webhooks';

const t = suite<{ b: Booted }>('v3 webhooks: outcomes guarded by the lease and the row');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

/** An endpoint whose first request is answered (200) only once `open()` is called. */
async function held(b: Booted) {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const rcv = await startReceiver((_r, n) =>
    n === 1 ? gate.then(() => ({ status: 200 })) : { status: 200 },
  );
  const { id } = await createWebhook(b, rcv.url, { event_types: ['user.created'] });
  return { rcv, id, open };
}

/** Resolves once the dispatcher's next outcome has been recorded (its transaction committed). */
function nextRecorded(b: Booted): Promise<void> {
  const dispatcher = b.app.services.webhookDispatcher as any;
  const record = dispatcher.record;
  return new Promise((recorded) => {
    dispatcher.record = function (...args: unknown[]) {
      delete dispatcher.record;
      const settled = record.apply(this, args);
      settled.then(
        () => recorded(),
        () => recorded(),
      );
      return settled;
    };
  });
}

const row = (b: Booted, id: string) =>
  b.app.services
    .db('webhook_deliveries')
    .where({ id: Number(id) })
    .first();

t('an outcome whose lease was taken over while it was sending writes nothing', async ({ b }) => {
  const h = await held(b);
  try {
    await createUser(b);
    await h.rcv.waitFor(1);
    const [d] = await settle(b, h.id, (l) => l[0]?.status === 'in_progress');
    // Another worker took the delivery over (the lease ran out while the receiver held it).
    const until = new Date(b.clock.now().getTime() + LEASE_MS).toISOString();
    await b.app.services
      .db('webhook_deliveries')
      .where({ id: Number(d.id) })
      .update({ lease_owner: 'other-worker', lease_until: until });
    const recorded = nextRecorded(b);
    h.open();
    await recorded;
    const r = await row(b, d.id);
    assert.equal(
      [r.status, Number(r.attempts_count), r.lease_owner, r.lease_until, r.delivered_at],
      ['in_progress', 0, 'other-worker', until, null],
      'the delivery is the other worker’s to record',
    );
    const attempt = await b.api('GET', `${W}/${h.id}/deliveries/${d.id}/attempts/1`);
    assert.is(attempt.status, 404, 'no attempt row');
  } finally {
    await b.api('DELETE', `${W}/${h.id}`);
    await h.rcv.close();
  }
});

t('a replay asked while the attempt was sending is kept, and sent after it', async ({ b }) => {
  const h = await held(b);
  try {
    await createUser(b);
    await h.rcv.waitFor(1);
    const [d] = await settle(b, h.id, (l) => l[0]?.status === 'in_progress');
    const res = await b.api('POST', `${W}/${h.id}/replays`, {
      body: { event_ids: [d.event_id] },
      key: newKey(),
    });
    assert.is(res.status, 202);
    await waitFor(b, res.body.data.id);
    assert.is(Number((await row(b, d.id)).replays_pending), 1, 'asked during the attempt');
    h.open();
    const [after] = await settle(
      b,
      h.id,
      (l) => l[0]?.status === 'delivered' && l[0]?.attempts_count === 2,
    );
    assert.is(after.last_attempt.origin, 'replay');
    const first = await b.api('GET', `${W}/${h.id}/deliveries/${d.id}/attempts/1`);
    assert.equal([first.body.data.origin, first.body.data.http_status], ['automatic', 200]);
    assert.is(h.rcv.received.length, 2);
    const r = await row(b, d.id);
    assert.equal([r.lease_owner, Number(r.replays_pending), r.due_at], [null, 0, null]);
  } finally {
    await b.api('DELETE', `${W}/${h.id}`);
    await h.rcv.close();
  }
});

// PostgreSQL: the replay's transaction reads the delivery `in_progress`, then the attempt's
// outcome commits before the replay writes. Written from what it read, the replay was kept but
// never due: no job, and nothing sent. (SQLite: one writer, the two cannot interleave.)
if (process.env.TEST_DATABASE_URL)
  t('a replay asked as the attempt finishes is still sent', async ({ b }) => {
    const h = await held(b);
    const db = b.app.services.db;
    const trx = await db.transaction();
    try {
      await createUser(b);
      await h.rcv.waitFor(1);
      const [d] = await settle(b, h.id, (l) => l[0]?.status === 'in_progress');
      // The outcome, written and not yet committed (the real one then finds its lease gone).
      await trx('webhook_deliveries')
        .where({ id: Number(d.id) })
        .update({
          status: 'delivered',
          attempts_count: 1,
          automatic_attempts: 1,
          delivered_at: b.clock.now().toISOString(),
          due_at: null,
          lease_owner: null,
          lease_until: null,
          prior_status: null,
        });
      const res = await b.api('POST', `${W}/${h.id}/replays`, {
        body: { event_ids: [d.event_id] },
        key: newKey(),
      });
      assert.is(res.status, 202);
      // The replay's write waits for the outcome's row lock; then the outcome commits.
      for (const deadline = Date.now() + 30_000; ;) {
        const waiting = await db.raw(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        );
        if (Number(waiting.rows[0].n) > 0) break;
        if (Date.now() > deadline) throw new Error('the replay never waited for the row');
        await new Promise((r) => setTimeout(r, 10));
      }
      await trx.commit();
      await waitFor(b, res.body.data.id);
      const [after] = await settle(
        b,
        h.id,
        (l) => l[0]?.attempts_count === 2 && l[0]?.last_attempt?.origin === 'replay',
      );
      assert.is(after.status, 'delivered');
      assert.is(h.rcv.received.length, 2, 'the replay reached the receiver');
      const r = await row(b, d.id);
      assert.equal([Number(r.replays_pending), r.due_at], [0, null]);
    } finally {
      if (!trx.isCompleted()) await trx.rollback();
      h.open();
      await b.api('DELETE', `${W}/${h.id}`);
      await h.rcv.close();
    }
  });

t('an answer with a NUL byte is recorded (PostgreSQL text refuses NUL)', async ({ b }) => {
  const rcv = await startReceiver(() => ({ status: 200, body: 'ok\u0000done' }));
  const { id } = await createWebhook(b, rcv.url, { event_types: ['user.created'] });
  try {
    await createUser(b);
    const [d] = await settle(b, id, (l) => l[0]?.status === 'delivered');
    assert.is(d.last_attempt.response_excerpt, 'ok\uFFFDdone');
    assert.is(rcv.received.length, 1);
  } finally {
    await b.api('DELETE', `${W}/${id}`);
    await rcv.close();
  }
});

t.run();
