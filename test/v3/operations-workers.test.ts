// Operations run by `npm run worker` processes: a worker killed with SIGKILL mid-batch loses
// nothing and applies nothing twice once another starts; SIGTERM finishes or releases the current
// chunk and exits 0 (users.upsert; SIGKILL of an enrollments.grant batch too, whose chunks go
// set-based on PostgreSQL); on PostgreSQL two workers share one batch without running an item twice.
import type { ChildProcess } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { transaction } from '../../src/db/tx.ts';
import { boot as bootApp, type Booted } from '../helpers/app.ts';
import { product } from '../helpers/catalog.ts';
import { allItems, submit, waitFor } from '../helpers/operations.ts';
import { exited, workerProcess } from '../helpers/workers.ts';

const pg = Boolean(process.env.TEST_DATABASE_URL);

// The server under test and its worker processes share one secrets key, as every process of one
// database must (a worker with another key refuses to start: spec/DECISIONS.md).
const SECRETS_KEY = 'operations-workers-test-key';
const boot = () => bootApp({ env: { SECRETS_KEY } });

/** A `npm run worker` process; `slowMs` makes each item that much slower (to stop it mid-batch). */
function startWorker(b: Booted, slowMs = 0): ChildProcess {
  return workerProcess(b.database, {
    secretsKey: SECRETS_KEY,
    env: { SLOW_ITEM_MS: String(slowMs) },
    preload: slowMs ? './test/helpers/slow-items.ts' : undefined,
  });
}

const rows = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({
    key: `${tag}${i}`,
    payload: { email: `${tag}${i}@example.com`, name: `${tag} ${i}` },
  }));

/** Every item succeeded once: had an item run again after its effect committed, it would say created: false. */
async function assertAppliedOnce(b: Booted, id: string, n: number) {
  // A restarted worker process starts (the app's modules, the job engine) before it resumes.
  const op = await waitFor(b, id, undefined, undefined, 90_000);
  assert.is(op.status, 'succeeded');
  assert.equal(op.progress, { total: n, done: n, failed: 0 });
  const items = await allItems(b, id);
  assert.is(items.length, n);
  assert.is(items.filter((i) => i.status === 'succeeded' && i.result.created === true).length, n);
  assert.is(new Set(items.map((i) => i.result.user_id)).size, n);
  return op;
}

/**
 * Waits until the worker has committed some items, reading the row itself: an HTTP GET writes an
 * audit entry, and on SQLite the worker process holds the write lock for most of a batch.
 */
async function startedWork(b: Booted, id: string) {
  // A worker process starts (the modules, the job engine) before its first item: on a busy
  // machine that alone has taken over 15 s.
  for (const deadline = Date.now() + 90_000; Date.now() < deadline;) {
    const row = await b.app
      .db('operations')
      .where({ id: Number(id) })
      .first();
    if (Number(row.done) > 0) return row;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`operation ${id} never started`);
}

const t = suite('operations in worker processes');

t('SIGKILL mid-batch: after a restart all 1,000 items are applied exactly once', async () => {
  const b = await boot();
  const workers: ChildProcess[] = [];
  try {
    const res = await submit(b, 'users.upsert', rows(1000, 'kill'));
    const id = res.body.data.id;
    workers.push(startWorker(b, 4));
    const seen = await startedWork(b, id);
    workers[0]!.kill('SIGKILL');
    await exited(workers[0]!);
    const atKill = (await b.api('GET', `/api/v3/operations/${id}`)).body.data;
    assert.is(atKill.status, 'running', 'killed mid-batch');
    assert.ok(atKill.progress.done < 1000, `done ${atKill.progress.done}`);
    assert.ok(Number(seen.done) <= atKill.progress.done);

    workers.push(startWorker(b));
    const op = await assertAppliedOnce(b, id, 1000);
    // The same attempt went on: a crash is not a new attempt.
    assert.equal(op.attempt, { number: 1, status: 'succeeded' });
    const users = await b.app.db('users').count({ n: '*' }).first();
    assert.is(Number(users!.n), 1000);
  } finally {
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(workers.map(exited));
    await b.close();
  }
});

t('SIGTERM: the worker finishes its chunk, releases the batch and exits 0', async () => {
  const b = await boot();
  const workers: ChildProcess[] = [];
  try {
    const res = await submit(b, 'users.upsert', rows(1000, 'term'));
    const id = res.body.data.id;
    // Slow enough that the rest of the batch outlasts graphile-worker's 5 s of grace before it
    // aborts the job (PostgreSQL): set-based chunks of 100 items go by fast.
    workers.push(startWorker(b, 10));
    await startedWork(b, id);
    workers[0]!.kill('SIGTERM');
    assert.is(await exited(workers[0]!), 0);
    const stopped = (await b.api('GET', `/api/v3/operations/${id}`)).body.data;
    assert.is(stopped.status, 'running', 'stopped mid-batch');
    assert.ok(stopped.progress.done < 1000);
    // Released, not held: the next worker takes it over at once.
    const row = await b.app
      .db('operations')
      .where({ id: Number(id) })
      .first();
    assert.is(row.lease_owner, null);
    workers.push(startWorker(b));
    await assertAppliedOnce(b, id, 1000);
  } finally {
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(workers.map(exited));
    await b.close();
  }
});

t('enrollments.grant: SIGKILL mid-batch, then every grant applied exactly once', async () => {
  const b = await boot();
  const workers: ChildProcess[] = [];
  // Each grant slower by 5 ms (a set-based chunk by 5 ms per grant), so the kill lands mid-batch.
  const grantWorker = (slowMs = 0) =>
    workerProcess(b.database, {
      secretsKey: SECRETS_KEY,
      env: { SLOW_GRANT_MS: String(slowMs) },
      preload: slowMs ? './test/helpers/slow-grants.ts' : undefined,
    });
  try {
    const course = await product(b, { name: 'Kill course' });
    const items = [];
    // 1,000: two set-based chunks on PostgreSQL (500 each), so the kill lands between them.
    for (let i = 0; i < 1000; i++) {
      const u = await b.app.services.users.create(b.accountId, {
        name: `Grant ${i}`,
        email: `grant${i}@example.com`,
      });
      items.push({
        key: `g${i}`,
        payload: {
          user_id: String(u.id),
          product_id: course.id,
          duration: 30,
          duration_unit: 'day',
        },
      });
    }
    const res = await submit(b, 'enrollments.grant', items);
    const id = res.body.data.id;
    workers.push(grantWorker(5));
    await startedWork(b, id);
    workers[0]!.kill('SIGKILL');
    await exited(workers[0]!);
    const atKill = (await b.api('GET', `/api/v3/operations/${id}`)).body.data;
    assert.is(atKill.status, 'running', 'killed mid-batch');
    assert.ok(atKill.progress.done < 1000, `done ${atKill.progress.done}`);

    workers.push(grantWorker());
    const op = await waitFor(b, id, undefined, undefined, 90_000);
    assert.is(op.status, 'succeeded');
    assert.equal(op.progress, { total: 1000, done: 1000, failed: 0 });
    assert.equal(op.attempt, { number: 1, status: 'succeeded' });
    // Once each: a grant applied twice would have said created: false and renewed to 60 days.
    const done = await allItems(b, id);
    assert.is(done.filter((i) => i.result.created === true).length, 1000);
    const enrollments = await b.app.db('enrollments').where('product_id', Number(course.id));
    assert.is(enrollments.length, 1000);
    assert.is(new Set(enrollments.map((e: any) => e.user_id)).size, 1000);
    for (const e of enrollments) assert.is(e.duration, 30);
    // One welcome email each.
    const emails = await b.app.db('emails').where('kind', 'enrollment.welcome');
    assert.is(emails.length, 1000);
  } finally {
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(workers.map(exited));
    await b.close();
  }
});

if (pg) {
  t('PostgreSQL: two workers on one batch never run an item twice', async () => {
    const b = await boot();
    const workers = [startWorker(b), startWorker(b)];
    try {
      const res = await submit(b, 'users.upsert', rows(1000, 'two'));
      const id = Number(res.body.data.id);
      // Extra runs of the same operation: both workers go for it; the lease lets one through.
      await transaction(b.app.db, async (tx) => {
        for (let i = 0; i < 3; i++)
          await b.app.services.jobs.enqueue({ tx }, 'operation.run', { operation_id: id });
      });
      await assertAppliedOnce(b, String(id), 1000);
      for (const w of workers) w.kill('SIGTERM');
      assert.equal(await Promise.all(workers.map(exited)), [0, 0]);
    } finally {
      for (const w of workers) w.kill('SIGKILL');
      await b.close();
    }
  });
}

t.run();
