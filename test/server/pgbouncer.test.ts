// The app behind PgBouncer in transaction mode (docs/deploy.md): DATABASE_URL is the pooler,
// DATABASE_SESSION_URL the server itself, for what needs a session of its own (the LISTEN client
// of event streams, graphile-worker's pool and its LISTEN). Requests, batches (set-based chunks,
// xact advisory locks), webhook deliveries and stream wake-ups all work through it. PostgreSQL
// pass only; skipped with a reason when pgbouncer is not installed.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import { createLogger } from '../../src/log.ts';
import { boot, freshDatabase, newKey, type Booted, type TestDatabase } from '../helpers/app.ts';
import { submit, waitFor } from '../helpers/operations.ts';
import { skippedBanner } from '../helpers/own-postgres.ts';
import { pgbouncerProblem, startPgbouncer, type Bouncer } from '../helpers/pgbouncer.ts';
import { openStream } from '../helpers/sse.ts';

const PG = process.env.TEST_DATABASE_URL;
const problem = PG ? pgbouncerProblem() : 'PostgreSQL pass only (set TEST_DATABASE_URL)';
const t = suite<{ database: TestDatabase; bouncer: Bouncer; b: Booted }>('behind PgBouncer');
const test = problem ? t.skip : t;
if (problem) skippedBanner('PgBouncer test', problem);

/** Polls `f` every 20 ms until it returns true; fails after `ms`. */
async function until(what: string, ms: number, f: () => Promise<boolean> | boolean) {
  const deadline = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > deadline) throw new Error(`timed out (${ms} ms) waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.before(async (ctx) => {
  if (problem) return;
  ctx.database = await freshDatabase();
  const schema = ctx.database.schema!;
  ctx.bouncer = await startPgbouncer(PG!, {
    school: { schema },
    // One server connection: two clients sharing it prove the pooling is per transaction.
    probe: { poolSize: 1 },
  });
  const db = createDb(ctx.bouncer.url('school'), { schema, sessionUrl: PG! });
  ctx.b = await boot({
    database: { ...ctx.database, db },
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
    logger: process.env.DEBUG_BOUNCER ? createLogger('debug') : undefined,
  });
  // The job queue (graphile-worker) on DATABASE_SESSION_URL, LISTENing there.
  await ctx.b.app.startWorkers();
});

t.after(async (ctx) => {
  if (problem) return;
  await ctx.b?.close();
  ctx.bouncer?.stop();
  await ctx.database?.drop();
});

test('the pooler is in transaction mode: two clients take turns on one server connection', async ({
  bouncer,
}) => {
  const clients = [0, 1].map(() => new pg.Client({ connectionString: bouncer.url('probe') }));
  try {
    for (const c of clients) await c.connect();
    // In session mode the second client would wait for the first to disconnect.
    const pids = [];
    for (const c of clients) pids.push((await c.query('select pg_backend_pid() as p')).rows[0].p);
    assert.is(pids[0], pids[1]);
  } finally {
    for (const c of clients) await c.end();
  }
});

test('through the pooler: create, read, batch, webhook deliveries, LISTEN wake-ups', async ({
  b,
}) => {
  const got: string[] = [];
  const receiver = http.createServer((req, res) => {
    got.push(String(req.headers['webhook-id']));
    req.resume().on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  try {
    const hook = await b.api('POST', '/api/v3/webhooks', {
      key: newKey(),
      body: { url: hookUrl, event_types: ['user.created'] },
    });
    assert.is(hook.status, 201, hook.text);
    const stream = await b.api('POST', '/api/v3/event-streams', { key: newKey(), body: {} });
    assert.is(stream.status, 201, stream.text);
    const sse = await openStream(b.url, `/api/v3/event-streams/${stream.body.data.id}/events`, {
      secret: b.secret,
    });
    assert.is(sse.status, 200);
    await b.app.services.events.listening();
    try {
      const created = await b.api('POST', '/api/v3/users', {
        key: newKey(),
        body: { name: 'Ana Souza', email: 'ana.bouncer@example.com' },
      });
      assert.is(created.status, 201, created.text);
      const sentAt = Date.now();
      // A stream ticks every 5 s at most; the notification wakes it long before.
      await sse.until(
        () => sse.events.some((e) => e.event === 'user.created'),
        'the event',
        10_000,
      );
      const latency = Date.now() - sentAt;
      assert.ok(latency < 2_500, `the stream heard of the event after ${latency} ms`);
      for (let i = 0; i < 5; i++) {
        const read = await b.api('GET', `/api/v3/users/${created.body.data.id}`);
        assert.is(read.status, 200);
        assert.is(read.body.data.email, 'ana.bouncer@example.com');
      }
    } finally {
      sse.close();
    }
    const items = Array.from({ length: 250 }, (_, i) => ({
      key: `k${i}`,
      payload: { name: `Student ${i}`, email: `bouncer${i}@example.com` },
    }));
    const batch = await submit(b, 'users.upsert', items);
    assert.is(batch.status, 202, batch.text);
    const op = await waitFor(b, batch.body.data.id, undefined, undefined, 60_000);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    assert.equal(op.progress, { total: 250, done: 250, failed: 0 });
    await until('every event at the receiver', 60_000, () => new Set(got).size >= 251);
    // Their outcomes recorded (after the receiver answered), through the pooler too.
    await until('every delivery delivered', 30_000, async () => {
      const open = await b.app.db('webhook_deliveries').whereNot('status', 'delivered');
      return open.length === 0;
    });
    assert.is(got.length, 251, 'each event once');
  } finally {
    receiver.closeAllConnections();
    receiver.close();
  }
});

t.run();
