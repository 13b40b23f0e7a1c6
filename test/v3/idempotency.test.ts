// Idempotency keys: required on POST, replay, reuse, in-progress, crash (result_uncertain), 48 h.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { HOUR } from '../../src/clock.ts';
import { idempotencyRepo } from '../../src/domain/idempotency/repo.ts';
import { requestHash } from '../../src/domain/idempotency/service.ts';

const t = suite<{ b: Booted }>('idempotency');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

async function countCredentials(b: Booted): Promise<number> {
  const res = await b.api('GET', '/api/v3/credentials?limit=200');
  return res.body.data.length;
}

async function newTarget(b: Booted): Promise<string> {
  const { id } = await b.app.services.accounts.createRootCredential({
    accountId: b.accountId,
    permissions: ['users.read'],
  });
  return String(id);
}

t('a state-changing POST requires a well-formed key', async ({ b }) => {
  const body = { name: 'x', permissions: ['users.read'] };
  const missing = await b.api('POST', '/api/v3/credentials', { body });
  assert.is(missing.status, 422);
  assert.is(missing.body.error.code, 'idempotency_key_required');
  for (const key of ['a'.repeat(129), 'has space', 'accent-é', 'slash/no']) {
    const res = await b.api('POST', '/api/v3/credentials', {
      body,
      headers: { 'idempotency-key': key },
    });
    assert.is(res.status, 422, key);
    assert.is(res.body.error.code, 'idempotency_key_invalid');
  }
  const ok = await b.api('POST', '/api/v3/credentials', {
    body,
    key: 'A.b_c:d-' + 'x'.repeat(120),
  });
  assert.is(ok.status, 201);
});

t('same key, body and route replays the recorded response', async ({ b }) => {
  const id = await newTarget(b);
  const key = newKey();
  const first = await b.api('POST', `/api/v3/credentials/${id}/revocations`, { key });
  assert.is(first.status, 200);
  assert.is(first.headers.get('idempotent-replayed'), null);
  const again = await b.api('POST', `/api/v3/credentials/${id}/revocations`, { key });
  assert.is(again.status, 200);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body, first.body);
  assert.is.not(again.headers.get('x-request-id'), first.headers.get('x-request-id'));
  // Without the key the same call is a new request, and the credential is already revoked.
  const fresh = await b.api('POST', `/api/v3/credentials/${id}/revocations`, { key: newKey() });
  assert.is(fresh.status, 422);
  assert.is(fresh.body.error.code, 'credential_revoked');
});

t('a recorded business rejection is replayed too', async ({ b }) => {
  const key = newKey();
  const first = await b.api('POST', '/api/v3/credentials/999999/revocations', { key });
  assert.is(first.status, 404);
  const again = await b.api('POST', '/api/v3/credentials/999999/revocations', { key });
  assert.is(again.status, 404);
  assert.is(again.body.error.code, 'not_found');
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.is(again.body.error.request_id, again.headers.get('x-request-id'));
});

t('another body or another route with the same key is reuse', async ({ b }) => {
  const key = newKey();
  assert.is(
    (
      await b.api('POST', '/api/v3/credentials', {
        key,
        body: { name: 'a', permissions: ['users.read'] },
      })
    ).status,
    201,
  );
  const otherBody = await b.api('POST', '/api/v3/credentials', {
    key,
    body: { name: 'b', permissions: ['users.read'] },
  });
  assert.is(otherBody.status, 422);
  assert.is(otherBody.body.error.code, 'idempotency_key_reused');
  const id = await newTarget(b);
  const otherRoute = await b.api('POST', `/api/v3/credentials/${id}/revocations`, { key });
  assert.is(otherRoute.body.error.code, 'idempotency_key_reused');
});

t('a secret shown once is never replayed', async ({ b }) => {
  const key = newKey();
  const body = { name: 'once', permissions: ['users.read'] };
  const first = await b.api('POST', '/api/v3/credentials', { key, body });
  assert.is(first.status, 201);
  assert.match(first.body.data.secret, /^sch_live_/);
  const again = await b.api('POST', '/api/v3/credentials', { key, body });
  assert.is(again.status, 409);
  assert.is(again.body.error.code, 'secret_not_replayable');
  assert.not.match(again.text, /sch_live_/);
});

t('the secret is not stored with the idempotency record', async ({ b }) => {
  const key = newKey();
  const res = await b.api('POST', '/api/v3/credentials', {
    key,
    body: { name: 'stored?', permissions: ['users.read'] },
  });
  assert.is(res.status, 201);
  const row = await b.app.db('idempotency_keys').where({ key }).first();
  assert.is(row.state, 'completed');
  assert.is(row.response_body, null);
  assert.not.match(JSON.stringify(row), /sch_live_/);
});

t('an attempt whose lock was taken over is discarded', async ({ b }) => {
  const idem = b.app.services.idempotency;
  const key = newKey();
  const first = await idem.reserve(b.credentialId, key, 'h');
  assert.is(first.kind, 'execute');
  // Another attempt takes the key over (what an expired lease allows on PostgreSQL; on SQLite,
  // where a running request's lock is in memory, another process writing the key).
  const taken = await b.app
    .db('idempotency_keys')
    .where({ key })
    .update({ owner: 'someone-else:1' });
  if (taken === 0) {
    await idempotencyRepo.tryLock(
      { tx: b.app.db },
      {
        credentialId: b.credentialId,
        key,
        hash: 'h',
        owner: 'someone-else:1',
        now: b.clock.now().toISOString(),
      },
    );
  }
  try {
    await b.app.db.transaction((tx) =>
      idem.complete({ tx }, b.credentialId, key, (first as { token: string }).token, {
        status: 201,
        headers: {},
        body: '{}',
        replayable: true,
      }),
    );
    assert.unreachable('complete must refuse a lock it no longer holds');
  } catch (err: any) {
    assert.is(err.code, 'operation_ownership_lost');
  }
  const row = await b.app.db('idempotency_keys').where({ key }).first();
  assert.is(row.state, 'in_progress');
});

t('a validation error does not consume the key', async ({ b }) => {
  const key = newKey();
  const bad = await b.api('POST', '/api/v3/credentials', { key, body: { name: 'x' } });
  assert.is(bad.status, 422);
  assert.is(bad.body.error.code, 'validation_failed');
  const good = await b.api('POST', '/api/v3/credentials', {
    key,
    body: { name: 'x', permissions: ['users.read'] },
  });
  assert.is(good.status, 201);
});

t('twenty concurrent identical requests create exactly one resource', async ({ b }) => {
  const before = await countCredentials(b);
  const key = newKey();
  const body = { name: 'concurrent', permissions: ['users.read'] };
  const results = await Promise.all(
    Array.from({ length: 20 }, () => b.api('POST', '/api/v3/credentials', { key, body })),
  );
  const statuses = results.map((r) => r.status);
  assert.is(statuses.filter((s) => s === 201).length, 1, statuses.join(','));
  for (const r of results.filter((r) => r.status !== 201)) {
    assert.ok(
      ['idempotency_in_progress', 'secret_not_replayable'].includes(r.body.error.code),
      r.body.error.code,
    );
  }
  assert.is(await countCredentials(b), before + 1);
});

t('a lock left by a crashed request is result_uncertain, then the retry runs', async ({ b }) => {
  const id = await newTarget(b);
  const key = newKey();
  const path = `/api/v3/credentials/${id}/revocations`;
  // What a process that died mid-request leaves behind: the lock row, and no effects (they were
  // in the transaction that never committed).
  const lockedAt = new Date(b.clock.now().getTime() - 2 * 60_000).toISOString();
  await idempotencyRepo.tryLock(
    { tx: b.app.db },
    {
      credentialId: b.credentialId,
      key,
      hash: requestHash('POST', path, undefined),
      owner: 'a-process-that-died',
      now: lockedAt,
    },
  );
  const uncertain = await b.api('POST', path, { key });
  assert.is(uncertain.status, 409);
  assert.is(uncertain.body.error.code, 'result_uncertain');
  const retried = await b.api('POST', path, { key });
  assert.is(retried.status, 200);
  assert.is(retried.body.data.status, 'revoked');
  const replay = await b.api('POST', path, { key });
  assert.is(replay.headers.get('idempotent-replayed'), 'true');
});

t('a live lock is idempotency_in_progress; another body with its key is reused', async ({ b }) => {
  const id = await newTarget(b);
  const key = newKey();
  const path = `/api/v3/credentials/${id}/revocations`;
  // A request of this process still running with the key (a lock row on PostgreSQL, the
  // in-memory lock on SQLite).
  const idem = b.app.services.idempotency;
  const running = await idem.reserve(b.credentialId, key, requestHash('POST', path, undefined));
  assert.is(running.kind, 'execute');
  const token = (running as { token: string }).token;
  try {
    const res = await b.api('POST', path, { key });
    assert.is(res.status, 409);
    assert.is(res.body.error.code, 'idempotency_in_progress');
    const other = await b.api('POST', '/api/v3/credentials', {
      key,
      body: { name: 'other', permissions: ['users.read'] },
    });
    assert.is(other.status, 422);
    assert.is(other.body.error.code, 'idempotency_key_reused');
  } finally {
    await idem.release(b.credentialId, key, token);
  }
  const after = await b.api('POST', path, { key });
  assert.is(after.status, 200);
});

t('after 48 hours the same key is a new request', async ({ b }) => {
  const key = newKey();
  assert.is(
    (
      await b.api('POST', '/api/v3/credentials', {
        key,
        body: { name: 'a', permissions: ['users.read'] },
      })
    ).status,
    201,
  );
  b.clock.advance(47 * HOUR);
  const within = await b.api('POST', '/api/v3/credentials', {
    key,
    body: { name: 'b', permissions: ['users.read'] },
  });
  assert.is(within.body.error.code, 'idempotency_key_reused');
  b.clock.advance(HOUR);
  const after = await b.api('POST', '/api/v3/credentials', {
    key,
    body: { name: 'b', permissions: ['users.read'] },
  });
  assert.is(after.status, 201);
  assert.is(after.body.data.name, 'b');
});

t('sweep.idempotency deletes the records older than 48 h and keeps the rest', async ({ b }) => {
  const create = (key: string, name: string) =>
    b.api('POST', '/api/v3/credentials', {
      key,
      body: { name, permissions: ['users.read'] },
    });
  const count = async () => {
    const [row] = await b.app
      .db('idempotency_keys')
      .where('credential_id', b.credentialId)
      .count({ n: '*' });
    return Number(row!.n);
  };
  const before = await count();
  for (const name of ['s1', 's2', 's3']) assert.is((await create(newKey(), name)).status, 201);
  b.clock.advance(49 * HOUR);
  const young = newKey();
  assert.is((await create(young, 's4')).status, 201);
  assert.is(await count(), before + 4);
  await b.app.services.idempotency.purgeExpired();
  // Everything from before the 49 hours went (this suite's earlier records too); the young one stays.
  assert.is(await count(), 1);
  // Still remembered: a credential's answer (its secret) is never replayed.
  assert.is((await create(young, 's4')).body.error.code, 'secret_not_replayable');
});

t('keys are scoped per credential', async ({ b }) => {
  const other = await b.app.services.accounts.createRootCredential({
    accountId: b.accountId,
    permissions: ['*'],
  });
  const key = newKey();
  assert.is(
    (
      await b.api('POST', '/api/v3/credentials', {
        key,
        body: { name: 'a', permissions: ['users.read'] },
      })
    ).status,
    201,
  );
  const res = await b.api('POST', '/api/v3/credentials', {
    key,
    secret: other.secret,
    body: { name: 'other', permissions: ['users.read'] },
  });
  assert.is(res.status, 201);
});

t('PATCH accepts a key; GET ignores one', async ({ b }) => {
  const id = await newTarget(b);
  const key = newKey();
  const first = await b.api('PATCH', `/api/v3/credentials/${id}`, {
    key,
    body: { name: 'renamed' },
  });
  assert.is(first.status, 200, JSON.stringify(first.body));
  const again = await b.api('PATCH', `/api/v3/credentials/${id}`, {
    key,
    body: { name: 'renamed' },
  });
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  const get = await b.api('GET', `/api/v3/credentials/${id}`, { key: 'whatever' });
  assert.is(get.status, 200, JSON.stringify(get.body));
});

t.run();
