// A plan's application run by `npm run worker` processes: a worker killed with SIGKILL mid-way
// applies every change exactly once after a restart (each item's effect and its key commit with
// its status).
import type { ChildProcess } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot as bootApp, newKey } from '../helpers/app.ts';
import { allItems, waitFor } from '../helpers/operations.ts';
import { exited, workerProcess } from '../helpers/workers.ts';

// The server and its workers share one secrets key, as every process of one database must.
const SECRETS_KEY = 'plans-workers-test-key';

function startWorker(b: Awaited<ReturnType<typeof bootApp>>, slowMs = 0): ChildProcess {
  return workerProcess(b.database, {
    secretsKey: SECRETS_KEY,
    env: { SLOW_ITEM_MS: String(slowMs) },
    preload: slowMs ? './test/helpers/slow-plans.ts' : undefined,
  });
}

const t = suite('plans in worker processes');

t('SIGKILL mid-application: after a restart every change is applied exactly once', async () => {
  const b = await bootApp({ env: { SECRETS_KEY } });
  const workers: ChildProcess[] = [];
  try {
    const N = 300;
    const resources = Array.from({ length: N }, (_, i) => ({
      type: 'tag',
      key: `k${i}`,
      properties: { name: `kill ${i}` },
    }));
    const plan = await b.api('POST', '/api/v3/plans', {
      body: { version: 1, resources },
      key: newKey(),
    });
    assert.is(plan.status, 201);
    const res = await b.api('POST', `/api/v3/plans/${plan.body.data.id}/applications`, {
      key: newKey(),
    });
    assert.is(res.status, 202);
    const id = res.body.data.id;
    workers.push(startWorker(b, 10));
    // Read the row itself: on SQLite the worker holds the write lock for most of a chunk.
    for (const deadline = Date.now() + 30_000; ;) {
      const row = await b.app
        .db('operations')
        .where({ id: Number(id) })
        .first();
      if (Number(row.done) > 0) break;
      if (Date.now() > deadline) throw new Error('the application never started');
      await new Promise((r) => setTimeout(r, 5));
    }
    workers[0]!.kill('SIGKILL');
    await exited(workers[0]!);
    const atKill = (await b.api('GET', `/api/v3/operations/${id}`)).body.data;
    assert.is(atKill.status, 'running', 'killed mid-application');
    assert.ok(atKill.progress.done < N, `done ${atKill.progress.done}`);

    workers.push(startWorker(b));
    const op = await waitFor(b, id, undefined, undefined, 90_000);
    assert.is(op.status, 'succeeded');
    assert.equal(op.progress, { total: N, done: N, failed: 0 });
    const items = await allItems(b, id);
    assert.is(items.filter((i) => i.status === 'succeeded').length, N);
    assert.is(new Set(items.map((i) => i.result.id)).size, N);
    const tags = await b.app
      .db('tags')
      .where({ account_id: b.accountId })
      .count({ n: '*' })
      .first();
    assert.is(Number(tags!.n), N);
    const keys = await b.app
      .db('plan_keys')
      .where({ account_id: b.accountId })
      .count({ n: '*' })
      .first();
    assert.is(Number(keys!.n), N);
    const again = await b.api('POST', '/api/v3/plans', {
      body: { version: 1, resources },
      key: newKey(),
    });
    assert.equal(again.body.data.summary, { create: 0, update: 0, delete: 0, unchanged: N });
  } finally {
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(workers.map(exited));
    await b.close();
  }
});

t.run();
