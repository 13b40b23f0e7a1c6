// PostgreSQL stops and starts again under load: an instance (`npm start`, running jobs too) and a
// `npm run worker` are applying a 1,000-item users.upsert batch, whose user.created events go to a
// webhook receiver (a burst of 1,000 deliveries), when the test's own server stops. While it is
// away /readyz says 503 and API requests get 503 within seconds (never a hang or a 500); once it
// is back every process reconnects by itself (pools, the LISTEN clients, graphile-worker),
// /readyz says 200, every item is applied once and every event reaches the receiver once.
// The server is the test's own (initdb in a temp folder): the machine's cluster is never touched.
// Runs in the PostgreSQL pass only (TEST_DATABASE_URL set): one run is enough.
import { LANES } from '../../src/jobs/lanes.ts';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import knexFactory, { type Knex } from 'knex';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSpec } from '../../src/app.ts';
import { makeClient, newKey, type Api } from '../helpers/app.ts';
import { ContractChecker } from '../helpers/contract.ts';
import {
  ownPostgres,
  ownPostgresProblem,
  skippedBanner,
  type OwnPostgres,
} from '../helpers/own-postgres.ts';
import { openStream, type SseConnection } from '../helpers/sse.ts';
import { startProcess, type Proc } from './processes.ts';

const problem = process.env.TEST_DATABASE_URL
  ? ownPostgresProblem()
  : 'PostgreSQL pass only (set TEST_DATABASE_URL)';
const t = suite('PostgreSQL restarts under load');
const test = problem ? t.skip : t;
if (problem) skippedBanner('PostgreSQL restart test', problem);

const ITEMS = 1000;
/** What a request may be answered while the database is away: each says "retry later". */
const UNAVAILABLE = [
  'database_unavailable',
  'credential_state_unverifiable',
  'rate_limiter_unavailable',
  'audit_unavailable',
];
const debug = (...args: unknown[]) => process.env.DEBUG_RESTART && console.log(...args);

interface Ctx {
  pg: OwnPostgres;
  db: Knex;
  instance: Proc & { url: string };
  worker: Proc;
  api: Api;
  secret: string;
  legacyKey: string;
  sse: SseConnection;
  hooks: { got: string[]; url: string; close(): void };
}
const ctx = {} as Ctx;

/** A receiver that answers each webhook after a moment (so some are under way at the stop). */
async function receiver() {
  const got: string[] = [];
  const server = http.createServer((req, res) => {
    got.push(String(req.headers['webhook-id']));
    req.resume().on('end', () => setTimeout(() => res.writeHead(204).end(), 5));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return { got, url, close: () => (server.closeAllConnections(), server.close()) };
}

/** Polls `f` every 50 ms until it returns a value that is not undefined; fails after `ms`. */
async function until<T>(what: string, ms: number, f: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out (${ms} ms) waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A request with its time: a database away must be answered, not waited on. */
async function timed(url: string, init: RequestInit = {}) {
  const started = Date.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const body = await res.text();
  return { status: res.status, body, ms: Date.now() - started };
}

/** Sessions of the test's server by what they listen to (their last statement). */
async function listeners(db: Knex): Promise<{ events: number; jobs: number }> {
  const rows = (await db.raw(`select query from pg_stat_activity where query like 'LISTEN %'`))
    .rows as { query: string }[];
  return {
    events: rows.filter((r) => r.query.startsWith('LISTEN "school_events')).length,
    jobs: rows.filter((r) => r.query.includes('jobs:insert')).length,
  };
}

t.before(async () => {
  if (problem) return;
  ctx.pg = await ownPostgres();
  ctx.db = knexFactory({ client: 'pg', connection: ctx.pg.url, pool: { min: 0, max: 2 } });
  ctx.hooks = await receiver();
  const env = {
    DATABASE_URL: ctx.pg.url,
    SECRETS_KEY: crypto.randomBytes(32).toString('base64url'),
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    RATE_LIMIT_SOURCE: '100000',
    RATE_LIMIT_ACCOUNT: '100000',
    RATE_LIMIT_CREDENTIAL: '100000',
  };
  const instance = startProcess('src/main.ts', env);
  const { port } = await instance.waitFor((j) => j.msg === 'School Platform API listening');
  ctx.instance = Object.assign(instance, { url: `http://127.0.0.1:${port}` });
  ctx.worker = startProcess('src/worker.ts', env);
  await ctx.worker.waitFor((j) => j.msg === 'worker running');
  const demo = instance.lines.find((l) => l.json?.demo_bootstrap)!.json;
  ctx.secret = demo.v3_credential_secret;
  ctx.legacyKey = demo.legacy_api_key;
  ctx.api = makeClient(ctx.instance.url, ctx.secret, new ContractChecker(loadSpec()));
});

t.after(async () => {
  if (problem) return;
  if (process.env.DEBUG_RESTART)
    for (const p of [ctx.instance, ctx.worker])
      console.log(p?.lines.map((l) => l.raw).join('\n'), p?.stderr, p?.proc.exitCode);
  for (const p of [ctx.instance, ctx.worker]) if (p && p.proc.exitCode === null) await p.stop();
  ctx.sse?.close();
  await ctx.db?.destroy();
  ctx.hooks?.close();
  ctx.pg?.remove();
});

/** Once per suite: the receiver's endpoint, and a stream (its connection subscribes the
 * instance's LISTEN client: the notifier starts with its first listener). */
test('set-up: a webhook for user.created and an open event stream', async () => {
  const hook = await ctx.api('POST', '/api/v3/webhooks', {
    key: newKey(),
    body: { url: ctx.hooks.url, event_types: ['user.created'] },
  });
  assert.is(hook.status, 201, hook.text);
  const stream = await ctx.api('POST', '/api/v3/event-streams', { key: newKey(), body: {} });
  assert.is(stream.status, 201, stream.text);
  const path = `/api/v3/event-streams/${stream.body.data.id}/events`;
  const sse = await openStream(ctx.instance.url, path, { secret: ctx.secret });
  assert.is(sse.status, 200);
  ctx.sse = sse;
});

for (const mode of ['fast', 'immediate'] as const)
  test(`stopped (${mode}) during a batch and a webhook burst: 503 while away, all once after`, async () => {
    const { api, db, pg, instance } = ctx;
    const auth = { authorization: `Bearer ${ctx.secret}` };
    const prefix = `restart-${mode}-`;
    const sent = ctx.hooks.got.length;
    const items = Array.from({ length: ITEMS }, (_, i) => ({
      key: `k${i}`,
      payload: { name: `Student ${i}`, email: `${prefix}${i}@example.com` },
    }));
    const batch = await api('POST', '/api/v3/operations/batches', {
      key: newKey(),
      body: { type: 'users.upsert', items },
    });
    assert.is(batch.status, 202, batch.text);
    const opId = batch.body.data.id;
    // Stopped once the batch and its deliveries are under way, not before, not after.
    await until('the batch under way', 60_000, async () => {
      const op = (await api('GET', `/api/v3/operations/${opId}`)).body.data;
      return op.progress.done >= 100 && ctx.hooks.got.length > sent ? op : undefined;
    });
    const before = await listeners(db);
    pg.stop(mode);
    try {
      const ready = await timed(instance.url + '/readyz');
      assert.is(ready.status, 503, ready.body);
      assert.ok(JSON.parse(ready.body).failing.includes('database'), ready.body);
      assert.ok(ready.ms < 5_000, `readyz took ${ready.ms} ms`);
      const read = await timed(instance.url + '/api/v3/users?limit=1', { headers: auth });
      assert.is(read.status, 503, read.body);
      assert.ok(UNAVAILABLE.includes(JSON.parse(read.body).error.code), read.body);
      assert.ok(read.ms < 10_000, `GET took ${read.ms} ms`);
      const write = await timed(instance.url + '/api/v3/users', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': newKey() },
        body: JSON.stringify({ name: 'While away', email: `${prefix}away@example.com` }),
      });
      assert.is(write.status, 503, write.body);
      assert.ok(UNAVAILABLE.includes(JSON.parse(write.body).error.code), write.body);
      assert.ok(write.ms < 10_000, `POST took ${write.ms} ms`);
      // The legacy generations and the OAuth token endpoint say the same, in their envelopes.
      const v1 = await timed(instance.url + '/api/v1/usuario', {
        headers: { authorization: ctx.legacyKey },
      });
      assert.is(v1.status, 503, v1.body);
      assert.is(JSON.parse(v1.body).code, 503);
      const token = await timed(instance.url + '/oauth/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=refresh_token&refresh_token=rt_1&client_id=service-cli',
      });
      assert.is(token.status, 503, token.body);
      assert.is(JSON.parse(token.body).error, 'temporarily_unavailable');
      // Long enough for every reconnect loop to fail a few times.
      await new Promise((r) => setTimeout(r, 2_000));
    } finally {
      pg.start();
    }
    const restarted = Date.now();
    await until('/readyz 200 again', 30_000, async () =>
      (await fetch(instance.url + '/readyz')).status === 200 ? true : undefined,
    );
    debug(mode, 'ready after', Date.now() - restarted, 'ms');
    const op = await until('the batch finished', 180_000, async () => {
      const o = (await api('GET', `/api/v3/operations/${opId}`)).body.data;
      return ['succeeded', 'partially_succeeded', 'failed'].includes(o.status) ? o : undefined;
    });
    debug(mode, 'batch finished after', Date.now() - restarted, 'ms');
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    assert.equal(op.progress, { total: ITEMS, done: ITEMS, failed: 0 });
    // Each item applied once: one student and one user.created event per email.
    const like = `${prefix}%@example.com`;
    const students = await db('users').where('email', 'like', like).count({ n: '*' });
    assert.is(Number(students[0]!.n), ITEMS);
    const events = (
      await db.raw(
        `select count(*) as n, count(distinct data::json->'user'->>'email') as emails
           from events where type = 'user.created' and data::json->'user'->>'email' like ?`,
        [like],
      )
    ).rows[0];
    assert.equal([Number(events.n), Number(events.emails)], [ITEMS, ITEMS]);
    // Every event delivered, none twice.
    await until('every delivery delivered', 180_000, async () => {
      const open = await db('webhook_deliveries').whereNot('status', 'delivered').count({ n: '*' });
      return Number(open[0]!.n) === 0 ? true : undefined;
    });
    debug(mode, 'delivered after', Date.now() - restarted, 'ms');
    const got = ctx.hooks.got.slice(sent);
    assert.is(new Set(got).size, ITEMS, 'each event reached the receiver');
    assert.is(got.length, ITEMS, `sent twice: ${got.length - new Set(got).size}`);
    // The LISTEN sessions are back: the instance's event notifier, graphile-worker's in both
    // processes (one runner per job lane in each).
    assert.equal(before, { events: 1, jobs: 2 * LANES.length });
    const after = await until('the LISTEN sessions back', 30_000, async () => {
      const l = await listeners(db);
      return l.events >= before.events && l.jobs >= before.jobs ? l : undefined;
    });
    assert.equal(after, before);
    for (const p of [instance, ctx.worker]) assert.is(p.proc.exitCode, null, p.stderr);
  });

t.run();
