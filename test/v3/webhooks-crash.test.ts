// A worker that dies after an attempt reached its receiver and before the outcome was recorded:
// the delivery must not stay `in_progress` once the lease has run out. The death is in-process:
// the sender hands the receiver's answer to nobody (the attempt's outcome is never written, its
// lease stays), as a process killed at that moment would. At-least-once: the attempt is sent
// again (same webhook-id, the receiver deduplicates), and the GET shows only attempts whose
// outcome was seen.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LEASE_MS, RETRY_MS } from '../../src/domain/webhooks/schedule.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { waitFor } from '../helpers/operations.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { advance, createUser, createWebhook, settle } from '../helpers/webhooks.ts';

const W = '/api/v3/webhooks';

const t = suite<{ b: Booted }>('v3 webhooks: a worker that dies mid-attempt');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

/**
 * The next attempt sent is the dying worker's: it reaches the receiver, then its outcome is lost.
 * Resolves once it has been sent.
 */
function dieAfterNextSend(b: Booted): Promise<void> {
  const sender = b.app.services.webhookDispatcher.sender;
  const send = sender.send;
  return new Promise((died) => {
    sender.send = async (...args) => {
      sender.send = send;
      await send.apply(sender, args);
      died();
      // The outcome goes nowhere: nothing is recorded and the lease stays behind, as with a
      // process that is gone (the slot of this one, which lives on, is given back).
      throw new Error('worker killed (test)');
    };
  });
}

async function hook(b: Booted, status: (n: number) => number) {
  const rcv = await startReceiver((_r, n) => ({ status: status(n) }));
  const { id } = await createWebhook(b, rcv.url, { event_types: ['user.created'] });
  return { rcv, id };
}

const row = (b: Booted, id: string) =>
  b.app.services
    .db('webhook_deliveries')
    .where({ id: Number(id) })
    .first();

/** The lease runs out; the sweep finds the delivery. */
async function pastLease(b: Booted) {
  await advance(b, LEASE_MS + 1000);
}

async function attempts(b: Booted, hookId: string, d: any): Promise<any[]> {
  const out: any[] = [];
  for (let n = 1; ; n++) {
    const res = await b.api('GET', `${W}/${hookId}/deliveries/${d.id}/attempts/${n}`);
    if (res.status === 404) return out;
    assert.is(res.status, 200);
    out.push(res.body.data);
  }
}

async function close(b: Booted, h: { rcv: Receiver; id: string }) {
  await b.api('DELETE', `${W}/${h.id}`);
  await h.rcv.close();
}

t('a first attempt whose worker died is sent again after its lease', async ({ b }) => {
  const died = dieAfterNextSend(b);
  const h = await hook(b, () => 200);
  try {
    await createUser(b);
    await died;
    const [d] = await settle(b, h.id, (l) => l[0]?.status === 'in_progress');
    assert.equal([d.attempts_count, d.last_attempt ?? null], [0, null], 'no outcome claimed');
    await pastLease(b);
    const [after] = await settle(b, h.id, (l) => l[0]?.status === 'delivered');
    assert.is(after.attempts_count, 1);
    assert.equal(
      (await attempts(b, h.id, d)).map((a) => [a.origin, a.http_status]),
      [['automatic', 200]],
    );
    const ids = h.rcv.received.map((r) => r.headers['webhook-id']);
    assert.equal([ids.length, ids[0]], [2, ids[1]], 'sent twice, one event id');
    assert.is(Number((await row(b, d.id)).lease_takeovers), 1);
  } finally {
    await close(b, h);
  }
});

t('a retry whose worker died is sent again after its lease', async ({ b }) => {
  const h = await hook(b, (n) => (n === 1 ? 500 : 200));
  try {
    await createUser(b);
    const [d] = await settle(b, h.id, (l) => l[0]?.status === 'failed');
    const died = dieAfterNextSend(b);
    await advance(b, RETRY_MS[0]!);
    await died;
    const [held] = await settle(b, h.id, (l) => l[0]?.status === 'in_progress');
    assert.equal([held.attempts_count, held.last_attempt.http_status], [1, 500]);
    await pastLease(b);
    const [after] = await settle(b, h.id, (l) => l[0]?.status === 'delivered');
    assert.is(after.attempts_count, 2);
    assert.equal(
      (await attempts(b, h.id, d)).map((a) => [a.origin, a.http_status]),
      [
        ['automatic', 500],
        ['automatic', 200],
      ],
    );
    assert.is(h.rcv.received.length, 3);
  } finally {
    await close(b, h);
  }
});

/** A delivered delivery, replayed `times` (the first replay's worker dies once it has sent). */
async function replayDying(b: Booted, times: number) {
  const h = await hook(b, () => 200);
  await createUser(b);
  const [d] = await settle(b, h.id, (l) => l[0]?.status === 'delivered');
  const died = dieAfterNextSend(b);
  for (let i = 0; i < times; i++) {
    const res = await b.api('POST', `${W}/${h.id}/replays`, {
      body: { event_ids: [d.event_id] },
      key: newKey(),
    });
    assert.is(res.status, 202);
    await waitFor(b, res.body.data.id);
  }
  await died;
  return { h, d };
}

t('a replay of a delivered delivery whose worker died, none more pending', async ({ b }) => {
  const { h, d } = await replayDying(b, 1);
  try {
    const [held] = await settle(b, h.id, (l) => l[0]?.status === 'in_progress');
    assert.equal([held.attempts_count, held.last_attempt.origin], [1, 'automatic']);
    await pastLease(b);
    const [after] = await settle(b, h.id, (l) => l[0]?.status !== 'in_progress');
    assert.equal([after.status, after.attempts_count], ['delivered', 2]);
    assert.equal(
      (await attempts(b, h.id, d)).map((a) => [a.origin, a.http_status]),
      [
        ['automatic', 200],
        ['replay', 200],
      ],
    );
    assert.is(h.rcv.received.length, 3, 'the replay sent again');
    const r = await row(b, d.id);
    assert.equal([r.lease_owner, r.replays_pending, r.due_at], [null, 0, null]);
  } finally {
    await close(b, h);
  }
});

t('a replay of a delivered delivery whose worker died, another pending', async ({ b }) => {
  const { h, d } = await replayDying(b, 2);
  try {
    await settle(b, h.id, (l) => l[0]?.status === 'in_progress');
    await pastLease(b);
    const [after] = await settle(b, h.id, (l) => l[0]?.attempts_count === 3);
    assert.is(after.status, 'delivered');
    assert.equal(
      (await attempts(b, h.id, d)).map((a) => [a.origin, a.http_status]),
      [
        ['automatic', 200],
        ['replay', 200],
        ['replay', 200],
      ],
    );
    assert.is(h.rcv.received.length, 4, 'the lost replay sent again, then the other');
    const r = await row(b, d.id);
    assert.equal([r.lease_owner, r.replays_pending, r.due_at], [null, 0, null]);
  } finally {
    await close(b, h);
  }
});

t(
  'an attempt whose worker died, its account blocked since: not in_progress past the lease',
  async ({ b }) => {
    const died = dieAfterNextSend(b);
    const h = await hook(b, () => 200);
    const { accounts } = b.app.services;
    try {
      await createUser(b);
      await died;
      await accounts.setAccountStatus(b.accountId, 'blocked');
      await pastLease(b);
      // (The API answers 403 while the account is blocked: the row is what its GET will show.)
      const [r] = await b.app.services.db('webhook_deliveries').where('endpoint_id', Number(h.id));
      // The attempt's outcome was never seen: not counted; the delivery waits as before it.
      assert.equal(
        [r.status, Number(r.attempts_count), r.lease_owner, r.prior_status],
        ['pending', 0, null, null],
      );
      assert.is(Number(r.lease_takeovers), 1);
      assert.is(h.rcv.received.length, 1);
      await accounts.setAccountStatus(b.accountId, 'active');
      const [after] = await settle(b, h.id, (l) => l[0]?.status === 'delivered');
      assert.is(after.attempts_count, 1);
      assert.is(h.rcv.received.length, 2);
    } finally {
      await accounts.setAccountStatus(b.accountId, 'active');
      await close(b, h);
    }
  },
);

t('a lease left with no attempt due goes back to the status before it', async ({ b }) => {
  const h = await hook(b, () => 200);
  try {
    await createUser(b);
    const [d] = await settle(b, h.id, (l) => l[0]?.status === 'delivered');
    // What a worker that died mid-replay leaves once nothing more is due (no replay pending).
    const until = new Date(b.clock.now().getTime() + LEASE_MS).toISOString();
    await b.app.services
      .db('webhook_deliveries')
      .where({ id: Number(d.id) })
      .update({
        status: 'in_progress',
        prior_status: 'delivered',
        lease_owner: 'dead-worker',
        lease_until: until,
        due_at: until,
      });
    await pastLease(b);
    const [after] = await settle(b, h.id, (l) => l.length === 1);
    assert.equal(
      [after.status, after.attempts_count, after.delivered_at],
      ['delivered', 1, d.delivered_at],
    );
    const r = await row(b, d.id);
    assert.equal([r.lease_owner, r.due_at, r.prior_status], [null, null, null]);
    assert.is(h.rcv.received.length, 1, 'nothing to send');
  } finally {
    await close(b, h);
  }
});

/** Resolves once the attempt of the lease `owner` has been through recording (written or not). */
function outcomeOf(b: Booted, owner: string): Promise<unknown> {
  // The dispatcher's own step (private): what the test waits for, not something it changes.
  const dispatcher = b.app.services.webhookDispatcher as any;
  const record = dispatcher.record;
  return new Promise((resolve) => {
    dispatcher.record = function (claim: { owner: string }, ...rest: unknown[]) {
      const p = record.call(this, claim, ...rest);
      if (claim.owner === owner) {
        dispatcher.record = record;
        p.then(resolve, resolve);
      }
      return p;
    };
  });
}

t(
  'the sweep leaves a lease that holds; an answer after the lease ran out is not recorded',
  async ({ b }) => {
    let answer!: () => void;
    const late = new Promise<void>((r) => (answer = r));
    const rcv = await startReceiver((_r, n) =>
      n === 1 ? late.then(() => ({ status: 500 })) : { status: 200 },
    );
    const { id } = await createWebhook(b, rcv.url, { event_types: ['user.created'] });
    const h = { rcv, id };
    try {
      await createUser(b);
      await rcv.waitFor(1);
      const [held] = await settle(b, id, (l) => l[0]?.status === 'in_progress');
      const owner = (await row(b, held.id)).lease_owner;
      await advance(b, LEASE_MS - 1000);
      const kept = await row(b, held.id);
      assert.equal(
        [kept.status, kept.lease_owner, Number(kept.lease_takeovers)],
        ['in_progress', owner, 0],
      );
      await pastLease(b);
      const [after] = await settle(b, id, (l) => l[0]?.status === 'delivered');
      assert.equal([after.attempts_count, after.last_attempt.http_status], [1, 200]);
      // The first worker's receiver answers at last: its lease is gone, its outcome not written.
      const recorded = outcomeOf(b, owner);
      answer();
      await recorded;
      const [still] = await settle(b, id, (l) => l.length === 1);
      assert.equal([still.status, still.attempts_count], ['delivered', 1]);
      assert.is(Number((await row(b, held.id)).lease_takeovers), 1);
    } finally {
      answer();
      await close(b, h);
    }
  },
);

t.run();
