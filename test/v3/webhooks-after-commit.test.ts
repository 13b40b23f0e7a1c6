// PostgreSQL, in a process that runs the job engine: the endpoints of a recording transaction are
// claimed right after its commit (WebhookFanOut's claimAfterCommit), not only when graphile-worker
// picks their job up; never before the commit, never for a transaction rolled back, never where
// the job engine does not run. afterCommit (src/db/tx.ts) ends with the outermost transaction.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { afterCommit, transaction } from '../../src/db/tx.ts';
import { boot, type Booted } from '../helpers/app.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { createWebhook } from '../helpers/webhooks.ts';

const t = suite<{ b: Booted; rcv: Receiver; hookId: number }>('webhooks: claimed after commit');
const pg = Boolean(process.env.TEST_DATABASE_URL);

t.before(async (ctx) => {
  if (!pg) return;
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  ctx.rcv = await startReceiver(() => ({ status: 204 }));
  ctx.hookId = Number(
    (await createWebhook(ctx.b, ctx.rcv.url, { event_types: ['tag.removed'] })).id,
  );
});
t.after(async (ctx) => {
  if (!pg) return;
  await ctx.b.close();
  await ctx.rcv.close();
});

const record = (b: Booted, tx: any, i: number) =>
  b.app.services.events.record(
    { tx },
    {
      accountId: b.accountId,
      type: 'tag.removed',
      data: { user_id: String(i), tag: { id: '1', name: `t${i}` } },
    },
  );

/** Records claimSoon's calls: the endpoint, and how many of its deliveries were committed then. */
function spy(b: Booted) {
  const dispatcher = b.app.services.webhookDispatcher;
  const calls: Promise<[number, number]>[] = [];
  const original = dispatcher.claimSoon.bind(dispatcher);
  dispatcher.claimSoon = (id: number) => {
    calls.push(
      b.app
        .db('webhook_deliveries')
        .where('endpoint_id', id)
        .count({ n: '*' })
        .then((r: any) => [id, Number(r[0].n)]),
    );
    original(id);
  };
  return { calls, restore: () => (dispatcher.claimSoon = original) };
}

if (pg) {
  t(
    'afterCommit: true once the outermost transaction commits, false when it rolls back',
    async ({ b }) => {
      const db = b.app.db;
      let inner: Promise<boolean> | null = null;
      let settledEarly = false;
      await transaction(db, async (tx) => {
        await tx.transaction(async (sp) => {
          inner = afterCommit(sp);
        });
        // The savepoint has ended, the transaction has not.
        void inner!.then(() => (settledEarly = true));
        await new Promise((r) => setTimeout(r, 20));
        assert.is(settledEarly, false, 'not at the savepoint');
      });
      assert.is(await inner!, true);
      let rolled: Promise<boolean> | null = null;
      await transaction(db, async (tx) => {
        rolled = afterCommit(tx);
        throw new Error('roll back');
      }).catch(() => undefined);
      assert.is(await rolled!, false);
      assert.is(afterCommit(db), null, 'outside a transaction');
    },
  );

  t('not where the job engine does not run', async ({ b }) => {
    const s = spy(b);
    try {
      await transaction(b.app.db, (tx) => record(b, tx, 1));
      await new Promise((r) => setTimeout(r, 20));
      assert.is(s.calls.length, 0);
    } finally {
      s.restore();
    }
  });

  t('with the job engine running: claimed once per endpoint after the commit', async (ctx) => {
    const { b, hookId, rcv } = ctx;
    await b.app.startWorkers();
    const s = spy(b);
    try {
      const before = Number(
        (await b.app.db('webhook_deliveries').where('endpoint_id', hookId).count({ n: '*' }))[0]!.n,
      );
      await transaction(b.app.db, async (tx) => {
        await record(b, tx, 2);
        await record(b, tx, 3);
        assert.is(s.calls.length, 0, 'nothing before the commit');
      });
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(await Promise.all(s.calls), [[hookId, before + 2]], 'once, committed');
      await rcv.waitFor(3);
      // A transaction rolled back claims nothing.
      await transaction(b.app.db, async (tx) => {
        await record(b, tx, 4);
        throw new Error('roll back');
      }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
      assert.is(s.calls.length, 1);
    } finally {
      s.restore();
    }
  });
}

t.run();
