// An import's processing attempt run by `npm run worker` processes: a worker killed with SIGKILL
// in the middle applies nothing twice and loses nothing once another worker starts.
import type { ChildProcess } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DAY } from '../../src/clock.ts';
import { newKey } from '../helpers/app.ts';
import { bootFiles, type FilesBoot } from '../helpers/files.ts';
import { allItems, waitFor } from '../helpers/operations.ts';
import { catalog, createImport, I } from '../helpers/imports.ts';
import { exited, workerProcess } from '../helpers/workers.ts';

// The server under test and its worker processes share one secrets key, as every process of one
// database must (a worker with another key refuses to start: spec/DECISIONS.md).
const SECRETS_KEY = 'imports-workers-test-key';
// PostgreSQL processes 500 rows a chunk: more than one chunk, so that the kill lands between two.
const N = process.env.TEST_DATABASE_URL ? 1200 : 300;

function startWorker(b: FilesBoot, slowMs = 0): ChildProcess {
  return workerProcess(b.database, {
    secretsKey: SECRETS_KEY,
    env: { FILES_DIR: b.filesDir, SLOW_GRANT_MS: String(slowMs) },
    preload: slowMs ? './test/helpers/slow-grants.ts' : undefined,
  });
}

/** Waits until the worker has applied some rows (read from the table: GETs write audit rows). */
async function someApplied(b: FilesBoot, importId: string) {
  for (const deadline = Date.now() + 90_000; Date.now() < deadline;) {
    const row = await b.app
      .db('imports')
      .where({ id: Number(importId) })
      .first();
    if (Number(row.rows_applied) > 0) return Number(row.rows_applied);
    await new Promise((r) => setTimeout(r, 5));
  }
  const ops = await b.app.db('operations').select('id', 'type', 'status', 'done', 'lease_owner');
  throw new Error(`the attempt never started: ${JSON.stringify(ops)}`);
}

/**
 * Waits for an operation's final status reading its row: polling over HTTP writes an audit entry
 * per GET, and on SQLite that keeps a worker that is starting from taking the write lock.
 */
async function finished(b: FilesBoot, id: string) {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
    const row = await b.app
      .db('operations')
      .where({ id: Number(id) })
      .first();
    if (!['queued', 'running'].includes(row.status)) return row.status as string;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`operation ${id} never finished`);
}

const t = suite('imports in worker processes');

t('SIGKILL mid-attempt: after a restart every row is applied exactly once', async () => {
  const b = await bootFiles('local', { env: { SECRETS_KEY } });
  const workers: ChildProcess[] = [];
  try {
    await catalog(b, 'EXT-K');
    const lines = Array.from({ length: N }, (_, i) => `k${i}@example.com,EXT-K,active`);
    const imp = await createImport(b, `email,product_external_id,status\n${lines.join('\n')}\n`);
    workers.push(startWorker(b));
    const requested = await b.api('POST', `${I}/${imp.id}/analyses`, { key: newKey() });
    assert.is(await finished(b, requested.body.data.id), 'succeeded');
    workers[0]!.kill('SIGKILL');
    await exited(workers[0]!);

    const res = await b.api('POST', `${I}/${imp.id}/processing-attempts`, { key: newKey() });
    assert.is(res.status, 202);
    const opId = res.body.data.operation_id;
    workers.push(startWorker(b, 5));
    const seen = await someApplied(b, imp.id);
    workers[1]!.kill('SIGKILL');
    await exited(workers[1]!);
    const atKill = (await b.api('GET', `/api/v3/operations/${opId}`)).body.data;
    assert.is(atKill.status, 'running', 'killed mid-attempt');
    assert.ok(
      atKill.progress.done >= seen && atKill.progress.done < N,
      `done ${atKill.progress.done}`,
    );

    workers.push(startWorker(b));
    assert.is(await finished(b, opId), 'succeeded');
    const op = await waitFor(b, opId);
    assert.equal(op.progress, { total: N, done: N, failed: 0 });
    assert.equal(op.attempt, { number: 1, status: 'succeeded' });
    const items = await allItems(b, opId);
    assert.is(items.filter((i) => i.status === 'succeeded' && i.result.created === true).length, N);
    // Once each: one enrollment per student, 30 days long (a second grant would have renewed it).
    const enrollments = await b.app.db('enrollments');
    assert.is(enrollments.length, N);
    assert.is(new Set(enrollments.map((e: any) => e.user_id)).size, N);
    for (const e of enrollments)
      assert.is(new Date(e.ends_at).getTime() - new Date(e.started_at).getTime(), 30 * DAY);
    const row = await b.app
      .db('imports')
      .where({ id: Number(imp.id) })
      .first();
    assert.is(Number(row.rows_applied), N);
    assert.is((await b.api('GET', `${I}/${imp.id}`)).body.data.status, 'processed');
  } finally {
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(workers.map(exited));
    await b.close();
  }
});

t.run();
