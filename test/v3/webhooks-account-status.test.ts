// An account that is not active (blocked, removed, unavailable) sends no webhooks: its due
// deliveries wait, neither sent nor given up, however long (the test clock moves past the whole
// retry window), and go out once the account is active again. Both engines.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HOUR } from '../../src/clock.ts';
import { WINDOW_MS } from '../../src/domain/webhooks/schedule.ts';
import { transaction } from '../../src/db/tx.ts';
import { boot, type Booted } from '../helpers/app.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { advance, createUser, createWebhook, settle } from '../helpers/webhooks.ts';

const t = suite<{ b: Booted }>('v3 webhooks: accounts that are not active');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

t('a blocked account keeps its deliveries waiting; active again, they go out', async ({ b }) => {
  const rcv = await startReceiver((_r, n) => ({ status: n === 1 ? 500 : 204 }));
  try {
    const hook = await createWebhook(b, rcv.url);
    const endpointId = Number(hook.id);
    await createUser(b);
    await settle(b, hook.id, (l) => l[0]?.status === 'failed');
    const { accounts, db, events, webhookDispatcher } = b.app.services;
    await accounts.setAccountStatus(b.accountId, 'blocked');
    // Recorded while blocked (its job runs now, and finds the account blocked).
    const event = await transaction(db, (tx) =>
      events.record(
        { tx },
        {
          accountId: b.accountId,
          type: 'tag.removed',
          data: { user_id: '1', tag: { id: '1', name: 'blocked' } },
        },
      ),
    );
    const rows = () => db('webhook_deliveries').where('endpoint_id', endpointId).orderBy('id');
    const [, waiting] = await rows();
    assert.is(Number(waiting.event_id), event.id);
    assert.is(await webhookDispatcher.dispatch(Number(waiting.id)), null, 'nothing claimed');
    // The retry falls due, then the whole retry window passes: still nothing is sent.
    await advance(b, 10_000);
    await advance(b, WINDOW_MS + HOUR);
    assert.is(rcv.received.length, 1, 'only the attempt made before the account was blocked');
    const during = await rows();
    assert.equal(
      during.map((d: any) => [d.status, Number(d.attempts_count), d.lease_owner]),
      [
        ['failed', 1, null],
        ['pending', 0, null],
      ],
    );

    // Active again: both go out (the activation's jobs; no sweep needed).
    await accounts.setAccountStatus(b.accountId, 'active');
    const after = await settle(
      b,
      hook.id,
      (l) => l.length === 2 && l.every((d) => d.status === 'delivered'),
    );
    assert.equal(after.map((d) => d.attempts_count).sort(), [1, 2]);
    await rcv.waitFor(3);
    assert.equal(
      rcv.received
        .slice(1)
        .map((r) => r.headers['webhook-id'])
        .sort(),
      [...new Set(rcv.received.map((r) => String(r.headers['webhook-id'])))].sort(),
      'each event once more, none twice',
    );
  } finally {
    await rcv.close();
  }
});

t.run();
