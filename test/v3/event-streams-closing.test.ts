// Event streams that end, and streams across instances: heartbeats, closing on stream deletion
// and credential revocation (not on the end of an administrator's session), the audit entry
// written when a stream ends, and on PostgreSQL instances sharing the database (events committed
// elsewhere, the shared lease, an event that commits after a later-numbered one).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createDb } from '../../src/db/knex.ts';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import {
  auditEntry,
  closed,
  createStream,
  follow,
  openStream,
  userCreated,
} from '../helpers/sse.ts';
import { human, login, setupAdmin } from '../oauth/helpers.ts';

const pg = Boolean(process.env.TEST_DATABASE_URL);
const t = suite<{ b: Booted }>('v3 event streams: closing, instances');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

t('heartbeats, deletion and revocation close the stream; the audit entry', async ({ b }) => {
  const s = await createStream(b);
  const c = await follow(b, s.id, '?heartbeat_seconds=1');
  await c.until(() => c.comments.includes('heartbeat'), 'a heartbeat');
  assert.is((await b.api('DELETE', `/api/v3/event-streams/${s.id}`)).status, 204);
  await c.until(() => c.comments.includes('closed: stream_deleted'), 'closed on deletion');
  await c.ended;
  // Audited once it ended, with how long it stayed open (a heartbeat's worth at least).
  const entry = await auditEntry(b, String(c.headers['x-request-id']));
  assert.equal([entry.status, entry.operation_id], [200, 'streamEvents']);
  assert.ok(entry.duration_ms >= 500, `duration ${entry.duration_ms}`);

  const other = await credentialWith(b, ['events.read']);
  const s2 = await createStream(b, {}, other.secret);
  // Another credential of the account cannot connect to it.
  assert.is((await follow(b, s2.id)).status, 404);
  const c2 = await follow(b, s2.id, '?heartbeat_seconds=1', { secret: other.secret });
  assert.is(c2.status, 200);
  const revoked = await b.api('POST', `/api/v3/credentials/${other.id}/revocations`, {
    key: newKey(),
  });
  assert.is(revoked.status, 200);
  await c2.until(() => c2.comments.includes('closed: credential_revoked'), 'closed on revocation');
  await c2.ended;
  const refused = await follow(b, s2.id, '', { secret: other.secret });
  assert.is(refused.status, 401);
  assert.is(refused.body.error.code, 'credential_revoked');
});

t('ending an administrator session leaves an open stream open', async ({ b }) => {
  const admin = await setupAdmin(b);
  const { tokens } = await login(b, admin);
  const h = human(admin.credentialSecret, tokens.access_token);
  const s = await createStream(b, {}, admin.credentialSecret);
  const c = await follow(b, s.id, '?heartbeat_seconds=1', { headers: h.headers });
  try {
    assert.is(c.status, 200);
    await b.app.services.accounts.unlinkAdmin(admin.adminId, admin.credentialId);
    const denied = await b.api('GET', '/api/v3/event-streams', h);
    assert.is(denied.body.error?.code, 'admin_not_eligible');
    const beats = c.comments.length;
    await c.until(() => c.comments.length >= beats + 2, 'two more heartbeats');
    const id = await userCreated(b);
    await c.until(() => c.ids().includes(id), 'an event after the session ended');
  } finally {
    await closed(c);
  }
});

if (pg) {
  t('PostgreSQL: a stream on one instance sees events committed through another', async ({ b }) => {
    // Another instance: its own pool and LISTEN connection on the same schema.
    const db = createDb(b.database.url, { schema: b.database.schema });
    const other = await boot({ database: { ...b.database, db } });
    try {
      const secret = (await credentialWith(b, ['*'])).secret;
      const s = await createStream(b, {}, secret);
      const c = await follow(b, s.id, '', { secret });
      try {
        // The lease is shared: the other instance refuses a second connection.
        const busy = await openStream(other.url, `/api/v3/event-streams/${s.id}/events`, {
          secret,
        });
        assert.is(busy.status, 409);
        const res = await other.api('POST', '/api/v3/users', {
          body: { name: 'Elsewhere', email: `elsewhere-${process.pid}@example.com` },
          key: newKey(),
          secret,
        });
        assert.is(res.status, 201);
        await c.until(() => c.events.length >= 1, 'the event from the other instance');
        assert.is(JSON.parse(c.events[0]!.data).data.user.id, res.body.data.id);
      } finally {
        await closed(c);
      }
    } finally {
      await other.close();
    }
  });

  t(
    'PostgreSQL: an event that commits after a later-numbered one is not skipped',
    async ({ b }) => {
      const secret = (await credentialWith(b, ['events.read'])).secret;
      const s = await createStream(b, {}, secret);
      const c = await follow(b, s.id, '', { secret });
      const record = (tx: any, name: string) =>
        b.app.services.events.record(
          { tx },
          {
            accountId: b.accountId,
            type: 'tag.removed',
            data: { user_id: '1', tag: { id: '1', name } },
          },
        );
      let release = () => {};
      const held = new Promise<void>((r) => (release = r));
      let slow: Promise<void> | undefined;
      try {
        // The first transaction takes its id, then stays open while a second one commits.
        const early = await new Promise<number>((recorded, failed) => {
          slow = b.app.db.transaction(async (tx) => {
            recorded((await record(tx, 'early')).id);
            await held;
          });
          slow.catch(failed);
        });
        const late = await b.app.db.transaction((tx) => record(tx, 'late'));
        assert.ok(late.id > early);
        // The later id is visible first; the stream waits for the gap instead of skipping it.
        await new Promise((r) => setTimeout(r, 200));
        release();
        await slow;
        await c.until(() => c.events.length >= 2, 'both events');
        assert.equal(c.ids(), [String(early), String(late.id)]);
      } finally {
        release();
        await slow?.catch(() => undefined);
        await closed(c);
      }
    },
  );
}

t.run();
