// PostgreSQL: two instances (two apps, each with its own pool, on one schema) dispatch the deliveries
// of one endpoint at once, and the endpoint's concurrency limit holds across them: claims take the
// endpoint's lock, then count what is under way. Every event reaches the receiver exactly once.
// (SQLite is one process: no second instance to race with.)
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import { Lease } from '../../src/db/lease.ts';
import { transaction } from '../../src/db/tx.ts';
import { PER_ENDPOINT } from '../../src/domain/webhooks/schedule.ts';
import { boot, type Booted } from '../helpers/app.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { createWebhook, settle } from '../helpers/webhooks.ts';

const t = suite('webhooks: two instances, one endpoint');
const pg = Boolean(process.env.TEST_DATABASE_URL);

/** Two apps (each with its own pool) on one schema. */
async function twoInstances(): Promise<[Booted, Booted]> {
  const a = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const db = createDb(a.database.url, { schema: a.database.schema });
  const b = await boot({
    database: { ...a.database, db },
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
  });
  return [a, b];
}

/** A receiver answering 204 once `hold` settles; `most()`: the most requests it had open at once. */
async function countingReceiver(hold: (open: number) => Promise<unknown>) {
  let open = 0;
  let peak = 0;
  const rcv = await startReceiver(async () => {
    peak = Math.max(peak, ++open);
    await hold(open);
    open--;
    return { status: 204 };
  });
  return { rcv, most: () => peak };
}

/** Every delivery at the endpoint delivered in one attempt, and every event received once. */
async function deliveredOnce(a: Booted, hookId: string, rcv: Receiver, events: string[]) {
  const list = await settle(
    a,
    hookId,
    (l) => l.length === events.length && l.every((d) => d.status === 'delivered'),
  );
  assert.ok(
    list.every((d) => d.attempts_count === 1),
    'one attempt each',
  );
  const got = rcv.received.map((r) => String(r.headers['webhook-id']));
  assert.equal([...got].sort(), [...events].sort(), 'every event once');
}

/** `n` events recorded in one transaction of `a`: their ids, and their deliveries' ids at `hookId`. */
async function recordEvents(a: Booted, hookId: string, n: number) {
  const events = await transaction(a.app.db, async (tx) => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const data = { user_id: String(i + 1), tag: { id: '1', name: `t${i}` } };
      const e = await a.app.services.events.record(
        { tx },
        { accountId: a.accountId, type: 'tag.removed', data },
      );
      out.push(`evt_${e.id}`);
    }
    return out;
  });
  const ids = (
    await a.app.db('webhook_deliveries').where('endpoint_id', Number(hookId)).orderBy('id')
  ).map((d: any) => Number(d.id));
  return { events, ids };
}

if (pg)
  t('the per-endpoint limit holds across two dispatchers; each event once', async () => {
    const [a, b] = await twoInstances();
    // Requests are held until released: what both instances claimed is under way at once.
    let release: () => void = () => undefined;
    let held = new Promise<void>((r) => (release = r));
    const { rcv, most } = await countingReceiver(() => held);
    try {
      const hook = await createWebhook(a, rcv.url, { event_types: ['tag.removed'] });
      const n = PER_ENDPOINT * 6;
      const { events, ids } = await recordEvents(a, hook.id, n);
      assert.is(ids.length, n);
      // Both dispatchers go for every delivery at once (as jobs of two instances would).
      const started = await Promise.all(
        ids.flatMap((id) => [
          a.app.services.webhookDispatcher.dispatch(id),
          b.app.services.webhookDispatcher.dispatch(id),
        ]),
      );
      const claimed = started.filter((s) => s).flatMap((s) => s!.runs).length;
      await rcv.waitFor(PER_ENDPOINT);
      const inProgress = await a.app
        .db('webhook_deliveries')
        .where({ endpoint_id: Number(hook.id), status: 'in_progress' })
        .count({ n: '*' });
      assert.is(Number(inProgress[0]!.n), PER_ENDPOINT, 'claimed across both instances');
      assert.is(claimed, PER_ENDPOINT, 'attempts started across both instances');
      assert.is(most(), PER_ENDPOINT);
      // Released: each finished attempt hands its slot to the next delivery waiting.
      release();
      held = Promise.resolve();
      await deliveredOnce(a, hook.id, rcv, events);
      assert.ok(most() <= PER_ENDPOINT, `${most()} attempts at once`);
    } finally {
      release();
      await b.close();
      await a.close();
      await rcv.close();
    }
  });

if (pg)
  t('hand-overs and claims of two instances racing: the limit holds, each event once', async () => {
    // Finishing attempts hand their slots on without the endpoint's lock (no more claimed than
    // released); claims under the lock race them from both instances all along.
    const [a, b] = await twoInstances();
    // The first attempts are held until the endpoint is full (at most 2 s), so the race starts
    // from a full endpoint; then each answer takes 0-3 ms.
    let full!: () => void;
    const filled = new Promise<void>((r) => (full = r));
    const { rcv, most } = await countingReceiver(async (open) => {
      if (open === PER_ENDPOINT) full();
      await Promise.race([filled, new Promise((r) => setTimeout(r, 2000))]);
      await new Promise((r) => setTimeout(r, Math.random() * 3));
    });
    try {
      const hook = await createWebhook(a, rcv.url, { event_types: ['tag.removed'] });
      const n = PER_ENDPOINT * 6;
      const { events, ids } = await recordEvents(a, hook.id, n);
      // Claims from both instances, a few at a time, while the first attempts finish and hand on.
      for (let i = 0; i < ids.length; i += 6)
        await Promise.all(
          ids
            .slice(i, i + 6)
            .flatMap((id) => [
              a.app.services.webhookDispatcher.dispatch(id),
              b.app.services.webhookDispatcher.dispatch(id),
            ]),
        );
      await deliveredOnce(a, hook.id, rcv, events);
      assert.ok(most() <= PER_ENDPOINT, `${most()} attempts at once`);
      assert.is(most(), PER_ENDPOINT, 'the endpoint was full at times');
    } finally {
      await b.close();
      await a.close();
      await rcv.close();
    }
  });

if (pg)
  t(
    'a finished attempt hands its slot on while another claimer holds the endpoint lock',
    async () => {
      // One slot: the second delivery goes out only through the first attempt's hand-over, which
      // does not wait for the endpoint's lock (no more claimed than released).
      const a = await boot({
        env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_PER_ENDPOINT: '1' },
      });
      const side = createDb(a.database.url, { schema: a.database.schema });
      const leases = new Lease({
        table: 'webhook_deliveries',
        owner: 'lease_owner',
        until: 'lease_until',
      });
      let unlock!: () => void;
      const held = new Promise<void>((r) => (unlock = r));
      let holder: Promise<void> | null = null;
      const rcv = await startReceiver(async (_req, count) => {
        if (count === 1) {
          // While the first attempt is under way, someone takes the endpoint's lock and keeps it.
          let locked!: () => void;
          const taken = new Promise<void>((r) => (locked = r));
          holder = side.transaction(async (tx) => {
            await leases.lockGroup({ tx }, Number(hook.id));
            locked();
            await held;
          });
          await taken;
        }
        return { status: 204 };
      });
      const hook = await createWebhook(a, rcv.url, { event_types: ['tag.removed'] });
      try {
        const { ids } = await recordEvents(a, hook.id, 2);
        await a.app.services.webhookDispatcher.dispatch(ids[0]!);
        // Both arrive while the lock is still held.
        await rcv.waitFor(2, 3000);
        assert.is(rcv.received.length, 2);
      } finally {
        unlock();
        await holder;
        await side.destroy();
        await a.close();
        await rcv.close();
      }
    },
  );

t.run();
