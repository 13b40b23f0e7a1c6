// PostgreSQL: a keyed call that runs in a transaction sends its audit entry with that transaction's
// COMMIT (AuditService.withCommit), so the entry and the change it records commit together or not
// at all, with no write of the entry's own. On SQLite the entry is written after the commit, as
// for every other call (the group commit's settle); the same answers are checked there.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { AuditEntry } from '../../src/domain/audit/repo.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';

const PG = Boolean(process.env.TEST_DATABASE_URL);

const t = suite<{ b: Booted; recorded: string[] }>('audit entries with the COMMIT');
t.before(async (ctx) => {
  ctx.b = await boot();
  // The request ids of the entries written on their own (after the call's commit, or without one).
  ctx.recorded = [];
  const audit = ctx.b.app.services.audit;
  const record = audit.record.bind(audit);
  audit.record = (entry: AuditEntry) => {
    ctx.recorded.push(entry.requestId);
    return record(entry);
  };
});
t.after(async (ctx) => ctx.b.close());

const entryOf = async (b: Booted, requestId: string) =>
  (await b.api('GET', `/api/v3/requests/${requestId}`)).body.data;
const students = async (b: Booted, email: string) =>
  Number(
    (await b.app.db('users').where({ email_lower: email.toLowerCase() }).count({ n: '*' }))[0]!.n,
  );

t('a keyed create: its entry commits with the student', async ({ b, recorded }) => {
  const res = await b.api('POST', '/api/v3/users', {
    key: newKey(),
    body: { name: 'Ana', email: 'ana.commit@example.com' },
  });
  assert.is(res.status, 201);
  const id = res.headers.get('x-request-id')!;
  const entry = await entryOf(b, id);
  assert.equal(
    [entry.status, entry.operation_id, entry.method, entry.path],
    [201, 'createUser', 'POST', '/api/v3/users'],
  );
  assert.ok(entry.duration_ms >= 0);
  // On PostgreSQL nothing was left for the audit stage to write.
  assert.is(recorded.includes(id), !PG);
});

t(
  'a business rejection: its entry commits with the recorded rejection',
  async ({ b, recorded }) => {
    const key = newKey();
    const body = { name: 'Ana again', email: 'ANA.commit@example.com' };
    const res = await b.api('POST', '/api/v3/users', { key, body });
    assert.is(res.status, 409);
    const id = res.headers.get('x-request-id')!;
    assert.equal([(await entryOf(b, id)).status, recorded.includes(id)], [409, !PG]);
    // The rejection is the key's answer.
    const again = await b.api('POST', '/api/v3/users', { key, body });
    assert.is(again.status, 409);
    assert.is(again.headers.get('idempotent-replayed'), 'true');
  },
);

t(
  'an entry that cannot be written: 503 audit_unavailable, and on PostgreSQL nothing commits',
  async ({ b, recorded }) => {
    const audit = b.app.services.audit;
    const record = audit.record;
    const withCommit = audit.withCommit;
    // A request id the trail holds already: the entry's insert fails (unique request_id).
    const taken = (await b.api('GET', '/api/v3/capabilities')).headers.get('x-request-id')!;
    audit.withCommit = (scope, entry, failure) =>
      withCommit.call(audit, scope, { ...entry, requestId: taken }, failure);
    if (!PG)
      audit.record = async () => {
        throw new Error('disk full');
      };
    const key = newKey();
    const body = { name: 'Bea', email: 'bea.commit@example.com' };
    let res;
    try {
      res = await b.api('POST', '/api/v3/users', { key, body });
    } finally {
      audit.withCommit = withCommit;
      audit.record = record;
    }
    assert.is(res.status, 503, JSON.stringify(res.body));
    assert.is(res.body.error.code, 'audit_unavailable');
    // PostgreSQL: the student did not commit without its entry; the 503 itself is on the trail.
    // SQLite: the student committed, its entry could not be written after.
    assert.is(await students(b, body.email), PG ? 0 : 1);
    const id = res.headers.get('x-request-id')!;
    if (PG) assert.equal([(await entryOf(b, id)).status, recorded.includes(id)], [503, true]);
    // A retry with the same key: runs anew where nothing committed, else replays the result.
    const retry = await b.api('POST', '/api/v3/users', { key, body });
    assert.is(retry.status, 201);
    assert.is(retry.headers.get('idempotent-replayed'), PG ? null : 'true');
    assert.is(await students(b, body.email), 1);
  },
);

t(
  'a call without a key (a read): its entry is written after its answer',
  async ({ b, recorded }) => {
    const res = await b.api('GET', '/api/v3/users?limit=1');
    assert.is(res.status, 200);
    const id = res.headers.get('x-request-id')!;
    assert.equal([(await entryOf(b, id)).status, recorded.includes(id)], [200, true]);
  },
);

t.run();
