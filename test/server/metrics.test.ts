// Prometheus metrics on their own listener (METRICS_PORT): real calls, then a scrape, and the
// counters say exactly what happened. Each app has its own registry.
import fs from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';

const pg = Boolean(process.env.TEST_DATABASE_URL);

async function scrape(b: Booted): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${b.app.metricsPort}/metrics`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** The value of one sample, or undefined when the series does not exist. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
    const m = /^([^{\s]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter(Boolean);
    if (want.every((w) => have.includes(w)) && have.length === want.length) return Number(m[3]);
  }
  return undefined;
}

interface Ctx {
  b: Booted;
  secret: string;
}

const t = suite<Ctx>('metrics');

t.before(async (ctx) => {
  ctx.b = await boot({ env: { METRICS_PORT: '0', RATE_LIMIT_CREDENTIAL: '4' } });
  // Each part of the suite spends its own credential's 4 points.
  ctx.secret = (await credentialWith(ctx.b, ['*'])).secret;
});

t.after(async (ctx) => {
  await ctx.b.close();
});

t('a listener of its own: the public port does not serve them', async (ctx) => {
  const { b } = ctx;
  assert.type(b.app.metricsPort, 'number');
  assert.is.not(b.app.metricsPort, Number(new URL(b.url).port));
  const pub = await fetch(b.url + '/metrics');
  assert.is(pub.status, 404);
  const other = await fetch(`http://127.0.0.1:${b.app.metricsPort}/anything`);
  assert.is(other.status, 404);
  const text = await scrape(b);
  assert.match(text, /# TYPE webhook_deliveries_total counter/);
  assert.match(text, /# TYPE process_cpu_user_seconds_total counter/);
});

t('requests by operationId and status, with latency histograms', async (ctx) => {
  const { b, secret } = ctx;
  for (let i = 0; i < 3; i++)
    assert.is((await b.api('GET', '/api/v3/capabilities', { secret })).status, 200);
  assert.is((await b.api('GET', '/api/v3/users/999999', { secret })).status, 404);
  const unmatchedBefore =
    sample(await scrape(b), 'http_requests_total', {
      method: 'GET',
      operation: 'unmatched',
      status: '404',
    }) ?? 0;
  assert.is((await b.api('GET', '/api/v3/no-such-thing', { secret })).status, 404);
  assert.is((await fetch(b.url + '/.well-known/oauth-authorization-server')).status, 200);
  await fetch(b.url + '/healthz');
  const text = await scrape(b);
  const req = (method: string, operation: string, status: string) =>
    sample(text, 'http_requests_total', { method, operation, status });
  assert.is(req('GET', 'getCapabilities', '200'), 3);
  assert.is(req('GET', 'getUser', '404'), 1);
  assert.is(
    req('GET', 'unmatched', '404'),
    unmatchedBefore + 1,
    'an unknown path is never a label of its own',
  );
  assert.is(req('GET', '/.well-known/oauth-authorization-server', '200'), 1);
  assert.not.match(text, /no-such-thing/);
  assert.not.match(text, /healthz/, 'probes are not traffic');
  const hist = { method: 'GET', operation: 'getCapabilities' };
  assert.is(sample(text, 'http_request_duration_seconds_count', hist), 3);
  assert.is(sample(text, 'http_request_duration_seconds_bucket', { ...hist, le: '+Inf' }), 3);
  assert.ok(sample(text, 'http_request_duration_seconds_sum', hist)! > 0);
});

t('idempotency replays and rate-limit rejections by kind', async (ctx) => {
  const { b } = ctx;
  const { secret } = await credentialWith(b, ['*']);
  const key = newKey();
  const body = { name: 'Ana Souza', email: 'ana.metrics@example.com' };
  const first = await b.api('POST', '/api/v3/users', { body, key, secret });
  const again = await b.api('POST', '/api/v3/users', { body, key, secret });
  assert.is(first.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  // 2 points spent; the limit is 4 per credential and minute: 2 more pass, then 2 are refused.
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++)
    statuses.push((await b.api('GET', '/api/v3/capabilities', { secret })).status);
  assert.equal(statuses, [200, 200, 429, 429]);
  const text = await scrape(b);
  assert.is(sample(text, 'idempotency_replays_total', { operation: 'createUser' }), 1);
  assert.is(
    sample(text, 'http_requests_total', { method: 'POST', operation: 'createUser', status: '201' }),
    2,
  );
  assert.is(sample(text, 'rate_limit_rejections_total', { kind: 'credential' }), 2);
  assert.is(sample(text, 'rate_limit_rejections_total', { kind: 'source' }), undefined);
});

t('job queue depth and the age of the oldest ready job', async (ctx) => {
  const { b, secret } = ctx;
  const before = await scrape(b);
  assert.is(sample(before, 'job_queue_depth', { state: 'ready' }), 0);
  assert.is(sample(before, 'job_queue_oldest_ready_age_seconds'), 0);
  // No worker runs in this app: the batch's job waits in the queue.
  const res = await b.api('POST', '/api/v3/operations/batches', {
    secret: b.secret,
    key: newKey(),
    body: {
      type: 'users.upsert',
      items: [{ key: 'a', payload: { name: 'Bia Lima', email: 'bia.metrics@example.com' } }],
    },
  });
  assert.is(res.status, 202, res.text);
  if (!pg) b.clock.advance(120_000); // the SQLite runner's queue runs on the injectable clock
  const text = await scrape(b);
  assert.is(sample(text, 'job_queue_depth', { state: 'ready' }), 1);
  assert.is(sample(text, 'job_queue_depth', { state: 'running' }), 0);
  assert.is(sample(text, 'job_queue_depth', { state: 'failed' }), 0);
  const age = sample(text, 'job_queue_oldest_ready_age_seconds')!;
  if (pg) assert.ok(age >= 0 && age < 60, String(age));
  else assert.ok(age >= 120 && age < 180, String(age));
  void secret;
});

t('SQLite: the size of each write-ahead log', async (ctx) => {
  const { b } = ctx;
  const text = await scrape(b);
  if (pg) {
    assert.is(sample(text, 'sqlite_wal_bytes', { file: 'main' }), undefined);
    return;
  }
  const file = b.database.url.slice('sqlite:'.length);
  const wal = sample(text, 'sqlite_wal_bytes', { file: 'main' })!;
  assert.ok(wal > 0);
  // Checkpoints (PASSIVE) never shrink the log file, and nothing wrote since the scrape.
  assert.is(wal, fs.statSync(file + '-wal').size);
  const auditWal = sample(text, 'sqlite_wal_bytes', { file: 'audit' })!;
  assert.is(auditWal, fs.statSync(file.replace(/\.db$/, '.audit.db') + '-wal').size);
  assert.is(sample(text, 'sqlite_file_bytes', { file: 'main' }), fs.statSync(file).size);
});

t('every app counts only its own requests (a registry per app)', async (ctx) => {
  const other = await boot({ env: { METRICS_PORT: '0' } });
  try {
    assert.is((await other.api('GET', '/api/v3/capabilities')).status, 200);
    const mine = await scrape(ctx.b);
    const theirs = await scrape(other);
    assert.is(
      sample(theirs, 'http_requests_total', {
        method: 'GET',
        operation: 'getCapabilities',
        status: '200',
      }),
      1,
    );
    assert.is(
      sample(mine, 'http_requests_total', {
        method: 'GET',
        operation: 'getCapabilities',
        status: '200',
      }),
      5,
    );
  } finally {
    await other.close();
  }
});

t.run();
