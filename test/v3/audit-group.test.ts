// Audit entries are group-written: entries recorded while a write is under way go together in
// the next INSERT (src/domain/audit/repo.ts), so on PostgreSQL a busy instance commits the trail
// once per round trip, not once per request. PostgreSQL: there a write can be held open (a lock
// taken by another transaction) to see what queues behind it. SQLite: the entries recorded by the
// requests of a group commit are written as it settles, in its turn (the POST tail).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { AuditEntry } from '../../src/domain/audit/repo.ts';
import { transaction } from '../../src/db/tx.ts';
import { boot, type Booted } from '../helpers/app.ts';

const PG = Boolean(process.env.TEST_DATABASE_URL);

const t = suite<{ b: Booted }>('audit group writes');
const test = PG ? t : t.skip;
const sqlite = PG ? t.skip : t;

t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => {
  await ctx.b.close();
});

const entry = (b: Booted, n: number): AuditEntry => ({
  requestId: `req_group_${n}`,
  accountId: b.accountId,
  credentialId: b.credentialId,
  adminId: null,
  method: 'GET',
  route: '/capabilities',
  operationId: 'getCapabilities',
  path: '/api/v3/capabilities',
  status: 200,
  durationMs: 1,
  ip: '127.0.0.1',
  createdAt: new Date().toISOString(),
});

const turn = () => new Promise((r) => setImmediate(r));

test('entries recorded during a write share the next one', async ({ b }) => {
  const db = b.database.db;
  const inserts: unknown[][] = [];
  const listener = (q: { sql: string; bindings: unknown[] }) => {
    // On PostgreSQL the rows go as one JSON parameter (one statement text whatever their number).
    if (/insert into "?audit_entries"?/i.test(q.sql)) inserts.push(q.bindings);
  };
  db.on('query', listener);
  const lock = await db.transaction();
  try {
    await lock.raw('LOCK TABLE audit_entries IN EXCLUSIVE MODE');
    const audit = b.app.services.audit;
    const first = audit.record(entry(b, 1));
    while (inserts.length === 0) await turn(); // the first INSERT is sent, and waits on the lock
    const second = audit.record(entry(b, 2));
    await turn();
    const third = audit.record(entry(b, 3));
    await turn();
    await lock.commit();
    await Promise.all([first, second, third]);
  } finally {
    db.removeListener('query', listener);
    if (!lock.isCompleted()) await lock.rollback();
  }
  assert.is(inserts.length, 2);
  const ids = await db('audit_entries').whereLike('request_id', 'req_group_%').pluck('request_id');
  assert.equal(ids.sort(), ['req_group_1', 'req_group_2', 'req_group_3']);
  const second = JSON.stringify(inserts[1]);
  assert.ok(second.includes('req_group_2') && second.includes('req_group_3'), second);
  assert.not.ok(second.includes('req_group_1'), second);
});

sqlite("SQLite: a group commit's callers' entries are written in its turn", async ({ b }) => {
  let turned = false;
  const written = transaction(b.app.db, async (tx) => {
    await tx('accounts').where('id', b.accountId).first();
    // Queued while the group runs: a write left to the next turn would come after it.
    setImmediate(() => (turned = true));
  }).then(async () => {
    await b.app.services.audit.record(entry(b, 10));
    return turned;
  });
  assert.is(await written, false);
  const kept = await b.app.services.audit.get(b.accountId, 'req_group_10');
  assert.is(kept?.requestId, 'req_group_10');
});

t.run();
