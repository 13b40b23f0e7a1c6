// Health checks on the root host: /healthz answers while the process does; /readyz names what keeps
// this instance from serving (database, migrations, the job engine when it runs workers here).
// Neither is a v3 call: no credential, no rate limit, no audit entry.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot } from '../helpers/app.ts';

const t = suite('health checks');

const get = async (base: string, path: string, method = 'GET') => {
  const res = await fetch(base + path, { method });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
};

t('/healthz answers 200 without a credential, outside limits and the audit trail', async () => {
  const b = await boot({ env: { RATE_LIMIT_SOURCE: '4' } });
  try {
    let last = '';
    for (let i = 0; i < 10; i++) {
      const res = await get(b.url, '/healthz');
      assert.is(res.status, 200);
      assert.equal(res.body, { status: 'ok' });
      assert.is(res.headers.get('cache-control'), 'no-store');
      assert.ok(res.headers.get('x-service-release'));
      last = res.headers.get('x-request-id')!;
      assert.is((await get(b.url, '/readyz')).status, 503, 'no workers yet');
    }
    // Twenty probes took none of the source's 4 points; the audit trail has no entry for them.
    const entry = await b.api('GET', `/api/v3/requests/${last}`);
    assert.is(entry.status, 404);
    for (let i = 0; i < 3; i++) assert.is((await b.api('GET', '/api/v3/capabilities')).status, 200);
    assert.is((await b.api('GET', '/api/v3/capabilities')).status, 429, 'the 5th v3 call');
    assert.is((await get(b.url, '/healthz')).status, 200, 'probes are never rate limited');
    const post = await get(b.url, '/healthz', 'POST');
    assert.is(post.status, 405);
    assert.is(post.headers.get('allow'), 'GET, HEAD');
  } finally {
    await b.close();
  }
});

t('/readyz: 503 naming the job engine until the workers run, then 200', async () => {
  const b = await boot();
  try {
    const before = await get(b.url, '/readyz');
    assert.is(before.status, 503);
    assert.equal(before.body, {
      status: 'unavailable',
      failing: ['jobs'],
      checks: { database: 'ok', migrations: 'ok', jobs: 'not_running' },
    });
    await b.app.startWorkers();
    // graphile-worker restarts itself when another suite installs its schema: allow for a restart.
    let after = await get(b.url, '/readyz');
    for (let i = 0; i < 50 && after.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await get(b.url, '/readyz');
    }
    assert.is(after.status, 200);
    assert.equal(after.body, {
      status: 'ok',
      checks: { database: 'ok', migrations: 'ok', jobs: 'ok' },
    });
    await b.app.services.jobs.stop();
    const stopped = await get(b.url, '/readyz');
    assert.is(stopped.status, 503, 'a stopping instance leaves the balancer');
    assert.equal(stopped.body.failing, ['jobs']);
  } finally {
    await b.close();
  }
});

t('/readyz: an HTTP-only instance (WORKERS=false) does not need the job engine', async () => {
  const b = await boot({ env: { WORKERS: 'false' } });
  try {
    const res = await get(b.url, '/readyz');
    assert.is(res.status, 200);
    assert.equal(res.body.checks, { database: 'ok', migrations: 'ok', jobs: 'not_run_here' });
  } finally {
    await b.close();
  }
});

t('/readyz: a migration not applied, then a database that does not answer', async () => {
  const b = await boot({ env: { WORKERS: 'false' } });
  try {
    const row = await b.app.db('knex_migrations').orderBy('id', 'desc').first();
    await b.app.db('knex_migrations').where({ id: row.id }).delete();
    const pending = await get(b.url, '/readyz');
    assert.is(pending.status, 503);
    assert.equal(pending.body.failing, ['migrations']);
    assert.is(pending.body.checks.database, 'ok');
    await b.app.db('knex_migrations').insert(row);
    assert.is((await get(b.url, '/readyz')).status, 200);

    await b.app.db.destroy();
    const down = await get(b.url, '/readyz');
    assert.is(down.status, 503);
    assert.equal(down.body.failing, ['database', 'migrations']);
    assert.is(down.body.checks.database, 'failed');
    // Liveness does not depend on the database: the process is fine, restarting it would not help.
    assert.is((await get(b.url, '/healthz')).status, 200);
  } finally {
    await b.close();
  }
});

t.run();
