// Idempotency keys past the second request: every repeat replays, the hash's canonical form,
// lock rows left by dead runs, and the exact edges of the 48 h memory and of the 60 s lease.
// The clock is frozen here (it moves only when a test advances it), so the edges are exact.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HOUR, TestClock } from '../../src/clock.ts';
import { idempotencyRepo } from '../../src/domain/idempotency/repo.ts';
import { requestHash } from '../../src/domain/idempotency/service.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';

const pg = Boolean(process.env.TEST_DATABASE_URL);

class FrozenClock extends TestClock {
  private at = Date.now();
  override now(): Date {
    return new Date(this.at);
  }
  override advance(ms: number): void {
    this.at += ms;
  }
}

const t = suite<{ b: Booted }>('idempotency repeats');
t.before(async (ctx) => {
  ctx.b = await boot({ clock: new FrozenClock() });
});
t.after(async (ctx) => ctx.b.close());

const newUser = (b: Booted, key: string, body: object) =>
  b.api('POST', '/api/v3/users', { key, body });

async function newTarget(b: Booted): Promise<string> {
  const { id } = await b.app.services.accounts.createRootCredential({
    accountId: b.accountId,
    permissions: ['users.read'],
  });
  return String(id);
}

/** A lock row as a request of another process leaves it: no effects, only the lock. */
const leaveLock = (b: Booted, key: string, path: string, owner: string, at: Date) =>
  idempotencyRepo.tryLock(
    { tx: b.app.db },
    {
      credentialId: b.credentialId,
      key,
      hash: requestHash('POST', path, undefined),
      owner,
      now: at.toISOString(),
    },
  );

t('five identical requests: one creation, then four replays', async ({ b }) => {
  const key = newKey();
  const body = { name: 'Five Times', email: 'five@example.com' };
  const first = await newUser(b, key, body);
  assert.is(first.status, 201);
  for (let i = 0; i < 4; i++) {
    const again = await newUser(b, key, body);
    assert.is(again.status, 201, `repeat ${i + 2}: ${again.text}`);
    assert.is(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body.data, first.body.data);
  }
  const users = await b.api('GET', '/api/v3/users?email=five@example.com');
  assert.is(users.body.data.length, 1);
});

t('a recorded rejection replays on every repeat', async ({ b }) => {
  const key = newKey();
  for (let i = 0; i < 4; i++) {
    const res = await b.api('POST', '/api/v3/credentials/999999/revocations', { key });
    assert.is(res.status, 404, `request ${i + 1}`);
    assert.is(res.body.error.code, 'not_found');
    assert.is(res.headers.get('idempotent-replayed'), i === 0 ? null : 'true');
  }
});

t('validation errors, repeated, never hold the key', async ({ b }) => {
  const key = newKey();
  for (let i = 0; i < 3; i++) {
    const bad = await newUser(b, key, { name: 'No Email' });
    assert.is(bad.status, 422, `bad ${i + 1}`);
    assert.is(bad.body.error.code, 'validation_failed');
  }
  // Refused by the service itself (a CPF whose check digits are wrong), not by the schema.
  for (let i = 0; i < 3; i++) {
    const bad = await newUser(b, key, {
      name: 'Bad CPF',
      email: 'bad-cpf@example.com',
      document: '111.444.777-00',
    });
    assert.is(bad.status, 422, `bad CPF ${i + 1}: ${bad.text}`);
    assert.is(bad.body.error.details[0].code, 'invalid_document');
  }
  const body = { name: 'Late', email: 'late@example.com' };
  assert.is((await newUser(b, key, body)).status, 201);
  for (let i = 0; i < 3; i++)
    assert.is((await newUser(b, key, body)).headers.get('idempotent-replayed'), 'true');
});

t('after result_uncertain the retry runs once, then every repeat replays', async ({ b }) => {
  const id = await newTarget(b);
  const key = newKey();
  const path = `/api/v3/credentials/${id}/revocations`;
  await leaveLock(b, key, path, 'a-process-that-died', new Date(b.clock.now().getTime() - HOUR));
  const uncertain = await b.api('POST', path, { key });
  assert.is(uncertain.body.error.code, 'result_uncertain');
  const retried = await b.api('POST', path, { key });
  assert.is(retried.status, 200);
  assert.is(retried.headers.get('idempotent-replayed'), null);
  for (let i = 0; i < 4; i++) {
    const again = await b.api('POST', path, { key });
    assert.is(again.status, 200, `repeat ${i + 1}: ${again.text}`);
    assert.is(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body.data, retried.body.data);
  }
});

t('the request hash ignores the order of keys, not the order of items', async ({ b }) => {
  const key = newKey();
  const first = await newUser(b, key, { name: 'Order', email: 'order@example.com' });
  assert.is(first.status, 201);
  const reordered = await newUser(b, key, { email: 'order@example.com', name: 'Order' });
  assert.is(reordered.status, 201);
  assert.is(reordered.headers.get('idempotent-replayed'), 'true');

  const arrayKey = newKey();
  const perms = ['users.read', 'users.write'];
  const created = await b.api('POST', '/api/v3/credentials', {
    key: arrayKey,
    body: { name: 'arrays', permissions: perms },
  });
  assert.is(created.status, 201);
  const swapped = await b.api('POST', '/api/v3/credentials', {
    key: arrayKey,
    body: { name: 'arrays', permissions: [...perms].reverse() },
  });
  assert.is(swapped.status, 422);
  assert.is(swapped.body.error.code, 'idempotency_key_reused');
  // Nested objects too, and an array is not the object with its indexes as keys.
  assert.is(
    requestHash('POST', '/p', { a: { x: 1, y: [1, 2] } }),
    requestHash('POST', '/p', { a: { y: [1, 2], x: 1 } }),
  );
  assert.is.not(requestHash('POST', '/p', [1, 2]), requestHash('POST', '/p', { 0: 1, 1: 2 }));
  // Where one item ends and the next begins is part of the body.
  assert.is.not(
    requestHash('POST', '/p', { a: [1, 23] }),
    requestHash('POST', '/p', { a: [12, 3] }),
  );
  assert.is.not(requestHash('POST', '/p', {}), requestHash('POST', '/q', {}));
  assert.is.not(requestHash('POST', '/p', {}), requestHash('PATCH', '/p', {}));
});

t(
  'a lock row of another process: dead at once on SQLite, after its lease on PostgreSQL',
  async ({ b }) => {
    const id = await newTarget(b);
    const key = newKey();
    const path = `/api/v3/credentials/${id}/revocations`;
    await leaveLock(b, key, path, 'another-boot:1', b.clock.now());
    const first = await b.api('POST', path, { key });
    assert.is(first.status, 409);
    if (pg) {
      // Another instance may still be running it: in progress for the whole 60 s lease.
      assert.is(first.body.error.code, 'idempotency_in_progress');
      b.clock.advance(60_000);
      assert.is((await b.api('POST', path, { key })).body.error.code, 'idempotency_in_progress');
      b.clock.advance(1);
    }
    // SQLite: one process owns the database, and this one does not hold the lock: it is dead.
    const uncertain = pg ? await b.api('POST', path, { key }) : first;
    assert.is(uncertain.body.error.code, 'result_uncertain');
    const retried = await b.api('POST', path, { key });
    assert.is(retried.status, 200);
    assert.is(retried.body.data.status, 'revoked');
  },
);

t('the retry after result_uncertain holds the key while it runs', async ({ b }) => {
  const idem = b.app.services.idempotency;
  const key = newKey();
  const hash = requestHash('POST', '/p-retry', undefined);
  const at = new Date(b.clock.now().getTime() - HOUR);
  await leaveLock(b, key, '/p-retry', 'a-process-that-died', at);
  try {
    await idem.reserve(b.credentialId, key, hash);
    assert.unreachable('a dead lock is result_uncertain');
  } catch (err: any) {
    assert.is(err.code, 'result_uncertain');
  }
  const retry = await idem.reserve(b.credentialId, key, hash);
  assert.is(retry.kind, 'execute');
  const token = (retry as { token: string }).token;
  try {
    // An identical request meanwhile waits for it: neither a second run nor result_uncertain.
    await idem.reserve(b.credentialId, key, hash);
    assert.unreachable('the retry holds the key');
  } catch (err: any) {
    assert.is(err.code, 'idempotency_in_progress');
  } finally {
    await idem.release(b.credentialId, key, token);
  }
});

t('a key is remembered for exactly 48 hours', async ({ b }) => {
  const key = newKey();
  const create = (name: string) =>
    newUser(b, key, { name, email: `${name.toLowerCase()}@example.com` });
  assert.is((await create('Before')).status, 201);
  b.clock.advance(48 * HOUR - 1);
  const within = await create('After');
  assert.is(within.status, 422);
  assert.is(within.body.error.code, 'idempotency_key_reused');
  const replay = await create('Before');
  assert.is(replay.headers.get('idempotent-replayed'), 'true');
  b.clock.advance(1);
  const after = await create('After');
  assert.is(after.status, 201);
  assert.is(after.headers.get('idempotent-replayed'), null);
  assert.is(after.body.data.name, 'After');
});

t('the sweep deletes the records older than 48 hours and keeps the rest', async ({ b }) => {
  const rows = () => b.app.db('idempotency_keys').where('credential_id', b.credentialId);
  const old = newKey();
  assert.is((await newUser(b, old, { name: 'Old', email: 'old@example.com' })).status, 201);
  b.clock.advance(1);
  const young = newKey();
  assert.is((await newUser(b, young, { name: 'Young', email: 'young@example.com' })).status, 201);
  b.clock.advance(48 * HOUR);
  await b.app.services.idempotency.purgeExpired();
  const left = (await rows().select('key')).map((r: any) => r.key);
  assert.not.ok(left.includes(old), 'the record 48 h + 1 ms old is gone');
  assert.ok(left.includes(young), 'the record of exactly 48 h is left to the next sweep');
});

// PostgreSQL only: there the lock is a row with a lease that another request takes over once it
// has run out. On SQLite a running request's lock is in memory, and a second reservation of a
// held key is refused before any row is read: there is no lease to run out.
if (pg)
  t(
    'a takeover holds its own token: the attempt whose lease ran out is discarded',
    async ({ b }) => {
      const idem = b.app.services.idempotency;
      const key = newKey();
      const complete = (token: string) =>
        b.app.db.transaction((tx) =>
          idem.complete({ tx }, b.credentialId, key, token, {
            status: 201,
            headers: {},
            body: '{}',
            replayable: true,
          }),
        );
      const first = (await idem.reserve(b.credentialId, key, 'h')) as { token: string };
      b.clock.advance(61_000);
      try {
        await idem.reserve(b.credentialId, key, 'h');
        assert.unreachable('a lock past its lease is result_uncertain');
      } catch (err: any) {
        assert.is(err.code, 'result_uncertain');
      }
      const second = await idem.reserve(b.credentialId, key, 'h');
      assert.is(second.kind, 'execute');
      const token = (second as { token: string }).token;
      assert.is.not(token, first.token);
      try {
        await complete(first.token);
        assert.unreachable('the first attempt no longer holds the key');
      } catch (err: any) {
        assert.is(err.code, 'operation_ownership_lost');
      }
      await complete(token);
      const replay = await idem.reserve(b.credentialId, key, 'h');
      assert.is(replay.kind, 'replay');
    },
  );

t.run();
