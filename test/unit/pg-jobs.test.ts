// The PostgreSQL job engine's start and stop: a stop that arrives while graphile-worker's runner is
// still starting must stop that runner too. It did not: the runner came up after stop() had
// returned, claimed a job, and `npm run worker` exited 0 under it, leaving the job's operation
// leased to a dead process (seen in CI as a worker that "released" its batch and still held it).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { transaction } from '../../src/db/tx.ts';
import { PgJobs } from '../../src/jobs/pg.ts';
import { createLogger } from '../../src/log.ts';
import { freshDatabase, type TestDatabase } from '../helpers/app.ts';

const t = suite('PostgreSQL job engine');
const pg = Boolean(process.env.TEST_DATABASE_URL);

async function engine(database: TestDatabase) {
  const jobs = new PgJobs(database.db, createLogger('silent'));
  await jobs.install();
  const seen = { started: 0, running: 0 };
  const tasks = {
    hold: async (_: unknown, ctx: { signal: AbortSignal }) => {
      seen.started++;
      seen.running++;
      // Holds its job until the worker stops (as an operation's chunk loop does).
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      seen.running--;
    },
  };
  return { jobs, seen, tasks };
}

if (pg) {
  t('stop() during start(): no runner is left claiming jobs', async () => {
    const database = await freshDatabase();
    try {
      const { jobs, seen, tasks } = await engine(database);
      await transaction(database.db, (tx) => jobs.enqueue({ tx }, 'hold', {}));
      const started = jobs.start(tasks, []);
      await jobs.stop();
      await started;
      // A runner left behind claims the waiting job within its first poll (1 s); allow twice that.
      await new Promise((r) => setTimeout(r, 2000));
      assert.is(seen.running, 0, 'a task is running after stop() returned');
      assert.is(jobs.status, 'stopped');
      await jobs.close();
    } finally {
      await database.db.destroy();
      await database.drop();
    }
  });

  t('stop() waits for a running task to release its unit', async () => {
    const database = await freshDatabase();
    try {
      const { jobs, seen, tasks } = await engine(database);
      await transaction(database.db, (tx) => jobs.enqueue({ tx }, 'hold', {}));
      await jobs.start(tasks, []);
      for (const deadline = Date.now() + 10_000; seen.started === 0 && Date.now() < deadline;)
        await new Promise((r) => setTimeout(r, 20));
      assert.is(seen.started, 1);
      await jobs.close();
      assert.is(seen.running, 0);
    } finally {
      await database.db.destroy();
      await database.drop();
    }
  });
  t('stop() while the pool is shutting itself down still waits for its tasks', async () => {
    const database = await freshDatabase();
    try {
      const { jobs, seen, tasks } = await engine(database);
      await transaction(database.db, (tx) => jobs.enqueue({ tx }, 'hold', {}));
      await jobs.start(tasks, []);
      for (const deadline = Date.now() + 10_000; seen.started === 0 && Date.now() < deadline;)
        await new Promise((r) => setTimeout(r, 20));
      assert.is(seen.started, 1);
      // What graphile-worker hears when any worker of the database installs a breaking migration
      // (another school's schema, another test suite's): every pool shuts itself down.
      const exitCode = process.exitCode;
      await database.db.raw(`select pg_notify('worker:migrate', '{"breaking":true}')`);
      await new Promise((r) => setTimeout(r, 300));
      await jobs.close();
      process.exitCode = exitCode; // graphile-worker sets 57 for the process it thinks it ends
      assert.is(seen.running, 0, 'stop() returned while a task was still running');
    } finally {
      await database.db.destroy();
      await database.drop();
    }
  });
} else {
  t('PostgreSQL only (TEST_DATABASE_URL is not set)', () => undefined);
}

t.run();
