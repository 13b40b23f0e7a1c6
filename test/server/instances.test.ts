// Several instances on one PostgreSQL database, as behind a load balancer: two `npm start`
// processes (WORKERS=false) started together on an empty schema, and one `npm run worker`. What a
// client sends to one instance holds on the other: idempotency keys, rate limits, cursors, OAuth
// sessions and tokens, and batches (run once, by the worker). PostgreSQL only: on SQLite the server
// is one process.
import crypto from 'node:crypto';
import { generateSync } from 'otplib';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSpec } from '../../src/app.ts';
import { migrationNames } from '../../src/db/migrate.ts';
import { freshDatabase, makeClient, newKey, type Api, type TestDatabase } from '../helpers/app.ts';
import { ContractChecker } from '../helpers/contract.ts';
import { Browser, authorizePath, field, newPkce } from '../oauth/helpers.ts';
import { startProcess, type Proc } from './processes.ts';

const PG = process.env.TEST_DATABASE_URL;
/** What the balancer's clients know the service as: the OAuth issuer of every instance. */
const PUBLIC_BASE_URL = 'http://school.test';
const LIMIT = 20;

interface Instance extends Proc {
  url: string;
}

interface Ctx {
  database: TestDatabase;
  a: Instance;
  b: Instance;
  worker: Proc;
  demo: any;
  /** A client of instance a or b, with a credential secret. */
  on: (i: Instance, secret: string) => Api;
  /** A fresh credential with every permission, issued over v3 by the demo credential. */
  credential: () => Promise<string>;
}

const t = suite<Ctx>('several instances on PostgreSQL');
const test = PG ? t : t.skip;
if (!PG)
  console.log(
    '  SKIP several instances: PostgreSQL only (set TEST_DATABASE_URL); on SQLite the server is one process.',
  );

t.before(async (ctx) => {
  if (!PG) return;
  ctx.database = await freshDatabase();
  const env = {
    DATABASE_URL: ctx.database.url,
    DATABASE_SCHEMA: ctx.database.schema,
    SECRETS_KEY: crypto.randomBytes(32).toString('base64url'),
    PUBLIC_BASE_URL,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    WORKERS: 'false',
    RATE_LIMIT_CREDENTIAL: String(LIMIT),
  };
  // Started together on an empty schema: both migrate at once.
  const procs = [startProcess('src/main.ts', env), startProcess('src/main.ts', env)];
  const [a, b] = await Promise.all(
    procs.map(async (p) => {
      // Each prints the port it listens on (PORT=0: any free port) in its start line.
      const { port } = await p.waitFor((j) => j.msg === 'School Platform API listening');
      return Object.assign(p, { url: `http://127.0.0.1:${port}` }) as Instance;
    }),
  );
  ctx.a = a!;
  ctx.b = b!;
  ctx.worker = startProcess('src/worker.ts', env);
  await ctx.worker.waitFor((j) => j.msg === 'worker running');
  const printed = procs.flatMap((p) => p.lines.filter((l) => l.json?.demo_bootstrap));
  assert.is(printed.length, 1, 'one instance bootstraps the empty database');
  ctx.demo = printed[0]!.json;
  const checker = new ContractChecker(loadSpec());
  ctx.on = (i, secret) => makeClient(i.url, secret, checker);
  ctx.credential = async () => {
    const res = await ctx.on(ctx.a, ctx.demo.v3_credential_secret)('POST', '/api/v3/credentials', {
      key: newKey(),
      body: { name: 'instances test', permissions: ['*'] },
    });
    assert.is(res.status, 201, res.text);
    return res.body.data.secret;
  };
});

t.after(async (ctx) => {
  if (!PG) return;
  for (const p of [ctx.a, ctx.b, ctx.worker])
    if (p && p.proc.exitCode === null) p.proc.kill('SIGKILL');
  await Promise.all([ctx.a, ctx.b, ctx.worker].filter(Boolean).map((p) => p.exited));
  await ctx.database.drop();
});

test('started together: migrations ran once, both are ready', async (ctx) => {
  const rows = await ctx.database.db('knex_migrations').select('name');
  assert.equal(rows.map((r) => r.name).sort(), migrationNames());
  // One OAuth signing key between them, not one each (a token of one would fail on the other).
  const keys = await ctx.database.db('oauth_signing_keys').whereNull('retired_at');
  assert.is(keys.length, 1);
  for (const i of [ctx.a, ctx.b]) {
    const res = await fetch(i.url + '/readyz');
    assert.is(res.status, 200);
    // WORKERS=false: the job engine is the worker's business, not theirs.
    assert.is((await res.json()).checks.jobs, 'not_run_here');
  }
});

test('one Idempotency-Key sent to both instances creates one user', async (ctx) => {
  const secret = await ctx.credential();
  const [a, b] = [ctx.on(ctx.a, secret), ctx.on(ctx.b, secret)];
  const key = newKey();
  const body = { name: 'Ana Souza', email: 'ana.instances@example.com' };
  const racing = await Promise.all(
    [a, b].map((api) => api('POST', '/api/v3/users', { key, body })),
  );
  const statuses = racing.map((r) => r.status).sort();
  assert.ok(
    JSON.stringify(statuses) === '[201,201]' || JSON.stringify(statuses) === '[201,409]',
    `statuses ${statuses}`,
  );
  const created = racing.find((r) => r.status === 201 && !r.headers.get('idempotent-replayed'))!;
  assert.ok(created, 'exactly one of them created');
  for (const api of [a, b]) {
    const again = await api('POST', '/api/v3/users', { key, body });
    assert.is(again.status, 201);
    assert.is(again.headers.get('idempotent-replayed'), 'true');
    assert.is(again.body.data.id, created.body.data.id);
  }
  const users = await ctx.database.db('users').where({ email: body.email }).count({ n: '*' });
  assert.is(Number(users[0]!.n), 1);
});

test('a cursor issued by one instance is accepted by the other', async (ctx) => {
  const secret = await ctx.credential();
  const [a, b] = [ctx.on(ctx.a, secret), ctx.on(ctx.b, secret)];
  for (const n of [1, 2])
    assert.is(
      (
        await a('POST', '/api/v3/users', {
          key: newKey(),
          body: { name: `Cursor ${n}`, email: `c${n}.instances@example.com` },
        })
      ).status,
      201,
    );
  const first = await a('GET', '/api/v3/users?limit=1');
  assert.is(first.status, 200);
  const cursor = first.body.page.next_cursor;
  assert.type(cursor, 'string');
  const second = await b('GET', `/api/v3/users?limit=1&cursor=${encodeURIComponent(cursor)}`);
  assert.is(second.status, 200, second.text);
  assert.is(second.body.data.length, 1);
  assert.is.not(second.body.data[0].id, first.body.data[0].id);
  const third = await a(
    'GET',
    `/api/v3/users?limit=1&cursor=${encodeURIComponent(second.body.page.next_cursor)}`,
  );
  assert.is(third.status, 200);
  const seen = new Set([first, second, third].map((r) => r.body.data[0].id));
  assert.is(seen.size, 3);
});

test('rate limits are shared: calls split across both hit the limit together', async (ctx) => {
  const secret = await ctx.credential();
  const [a, b] = [ctx.on(ctx.a, secret), ctx.on(ctx.b, secret)];
  for (let i = 0; i < LIMIT; i++) {
    const res = await (i % 2 ? b : a)('GET', '/api/v3/capabilities');
    assert.is(res.status, 200, `call ${i + 1}`);
    assert.is(res.headers.get('ratelimit-remaining'), String(LIMIT - i - 1));
  }
  for (const api of [a, b]) {
    const res = await api('GET', '/api/v3/capabilities');
    assert.is(res.status, 429);
    assert.is(res.body.error.code, 'rate_limit_exceeded');
    assert.ok(Number(res.headers.get('retry-after')) >= 1);
  }
});

test('OAuth: signed in on one, approved on the other, the token works on both', async (ctx) => {
  const { demo } = ctx;
  const browser = new Browser(ctx.a.url);
  const form = await browser.get('/admin/sign-in?return_to=%2Fadmin');
  const step1 = await browser.post('/admin/sign-in', {
    csrf: field(form.text, 'csrf'),
    return_to: '/admin',
    email: demo.admin.email,
    password: demo.admin.password,
  });
  assert.is(step1.status, 303, step1.text);
  const page = await browser.get(ctx.b.url + step1.location!);
  const step2 = await browser.post(ctx.b.url + '/admin/sign-in/two-factor', {
    csrf: field(page.text, 'csrf'),
    return_to: field(page.text, 'return_to'),
    code: generateSync({ secret: demo.admin.totp_secret }),
  });
  assert.is(step2.status, 303, step2.text);
  const p = await newPkce();
  const consent = await browser.get(ctx.a.url + authorizePath(p));
  assert.is(consent.status, 200, consent.text);
  const approved = await browser.post(ctx.b.url + authorizePath(p), {
    csrf: field(consent.text, 'csrf'),
    decision: 'approve',
  });
  assert.is(approved.status, 303, approved.text);
  const callback = new URL(approved.location!);
  assert.is(callback.searchParams.get('iss'), PUBLIC_BASE_URL);
  const token = async (i: Instance, form: Record<string, string>) => {
    const res = await fetch(i.url + '/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'service-cli', ...form }),
    });
    assert.is(res.status, 200);
    return res.json();
  };
  const tokens = await token(ctx.a, {
    grant_type: 'authorization_code',
    code: callback.searchParams.get('code')!,
    code_verifier: p.verifier,
    redirect_uri: p.redirectUri,
  });
  const humanOn = (i: Instance, access: string) =>
    ctx.on(i, '')('GET', '/api/v3/credentials/current', {
      secret: null,
      headers: { 'x-api-key': demo.v3_credential_secret, authorization: `Bearer ${access}` },
    });
  for (const i of [ctx.a, ctx.b]) {
    const res = await humanOn(i, tokens.access_token);
    assert.is(
      res.status,
      200,
      i.url +
        ' ' +
        JSON.stringify(tokens) +
        res.text +
        JSON.stringify(
          await ctx.database.db('oauth_signing_keys').select('kid', 'created_at', 'retired_at'),
        ),
    );
    assert.type(res.body.data.human?.admin_id, 'string');
  }
  const refreshed = await token(ctx.b, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token,
  });
  assert.is((await humanOn(ctx.a, refreshed.access_token)).status, 200);
});

test('a batch submitted to one instance is run once, by the worker; read on the other', async (ctx) => {
  const secret = await ctx.credential();
  const [a, b] = [ctx.on(ctx.a, secret), ctx.on(ctx.b, secret)];
  const items = [1, 2, 3].map((n) => ({
    key: `k${n}`,
    payload: { name: `Batch ${n}`, email: `b${n}.instances@example.com` },
  }));
  const res = await a('POST', '/api/v3/operations/batches', {
    key: newKey(),
    body: { type: 'users.upsert', items },
  });
  assert.is(res.status, 202, res.text);
  const id = res.body.data.id;
  let op: any;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    const got = await b('GET', `/api/v3/operations/${id}`);
    if (got.status === 429) {
      await new Promise((r) => setTimeout(r, Number(got.headers.get('retry-after')) * 1000));
      continue;
    }
    assert.is(got.status, 200);
    op = got.body.data;
    if (['succeeded', 'partially_succeeded', 'failed', 'canceled'].includes(op.status)) break;
    await new Promise((r) => setTimeout(r, 300));
  }
  assert.is(op.status, 'succeeded');
  assert.equal(op.progress, { total: 3, done: 3, failed: 0 });
  const list = await b('GET', `/api/v3/operations/${id}/items`);
  assert.equal(
    list.body.data.map((i: any) => [i.status, i.result.created]),
    [
      ['succeeded', true],
      ['succeeded', true],
      ['succeeded', true],
    ],
  );
  const users = await ctx.database.db('users').whereLike('email', 'b_.instances@example.com');
  assert.is(users.length, 3);
});

test('SIGTERM: every process drains and exits 0', async (ctx) => {
  const codes = await Promise.all([ctx.a, ctx.b, ctx.worker].map((p) => p.stop()));
  assert.equal(codes, [0, 0, 0]);
});

t.run();
