// Events through HTTP: what the domain records (each checked against its published schema in
// spec/events, compiled here independently of the server), GET /events and /events/{id}, the
// catalog, the 30-day retention, and the after-commit listeners the event streams build on.
import fs from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import Ajv2020Import from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { DAY } from '../../src/clock.ts';
import { transaction } from '../../src/db/tx.ts';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { all, product } from '../helpers/catalog.ts';
import { submit, waitFor } from '../helpers/operations.ts';

const Ajv2020 = Ajv2020Import as unknown as typeof Ajv2020Import.default;
const addFormats = addFormatsImport as unknown as typeof addFormatsImport.default;
const EVENTS_DIR = path.resolve(import.meta.dirname, '../../spec/events');

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
function schemaOf(type: string, version: string) {
  const file = path.join(EVENTS_DIR, type, `${version}.json`);
  assert.ok(fs.existsSync(file), `no schema ${type}/${version}.json`);
  const { $schema: _s, ...schema } = JSON.parse(fs.readFileSync(file, 'utf8'));
  return ajv.compile(schema);
}

const MINE = [
  'operation.finished',
  'product.published',
  'tag.assigned',
  'tag.removed',
  'user.created',
  'user.deleted',
  'user.updated',
];

async function user(b: Booted, email: string, secret?: string) {
  const res = await b.api('POST', '/api/v3/users', {
    body: { name: 'Ana Souza', email },
    key: newKey(),
    secret,
  });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

async function tag(b: Booted, name: string) {
  const res = await b.api('POST', '/api/v3/tags', { body: { name }, key: newKey() });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

const t = suite<{ b: Booted }>('v3 events');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

t(
  'every change records its event, and every recorded event matches its published schema',
  async ({ b }) => {
    const ana = await user(b, 'ana@example.com');
    const upd = await b.api('PATCH', `/api/v3/users/${ana.id}`, { body: { job_title: 'Teacher' } });
    assert.is(upd.status, 200);
    // The same values again change nothing, and are not news.
    await b.api('PATCH', `/api/v3/users/${ana.id}`, { body: { job_title: 'Teacher' } });
    const vip = await tag(b, 'vip');
    assert.is((await b.api('PUT', `/api/v3/users/${ana.id}/tags/${vip.id}`)).status, 200);
    assert.is((await b.api('PUT', `/api/v3/users/${ana.id}/tags/${vip.id}`)).status, 200);
    assert.is((await b.api('DELETE', `/api/v3/users/${ana.id}/tags/${vip.id}`)).status, 204);
    const batch = await submit(b, 'users.upsert', [
      { key: 'a', payload: { email: 'bia@example.com', name: 'Bia' } },
    ]);
    const op = await waitFor(b, batch.body.data.id);
    const p = await product(b, { name: 'Python' });
    const pub = await b.api('POST', `/api/v3/products/${p.id}/publications`, { key: newKey() });
    await waitFor(b, pub.body.data.id);
    assert.is((await b.api('DELETE', `/api/v3/users/${ana.id}`)).status, 204);

    const events = (await all(b, '/api/v3/events?sort=created_at')) as any[];
    for (const e of events) {
      const validate = schemaOf(e.type, e.version);
      assert.ok(validate(e.data), `${e.type} v${e.version}: ${ajv.errorsText(validate.errors)}`);
      assert.equal(Object.keys(e).sort(), [
        'created_at',
        'data',
        'id',
        'object',
        'type',
        'version',
      ]);
    }
    const types = new Set(events.map((e) => e.type));
    for (const type of MINE) assert.ok(types.has(type), `no ${type} event recorded`);

    const byType = (type: string) => events.filter((e) => e.type === type);
    assert.equal(
      byType('user.updated').map((e) => e.data.changed_fields),
      [['job_title']],
      'one update event, for the write that changed something',
    );
    assert.is(byType('user.updated')[0].data.user.job_title, 'Teacher');
    assert.equal(
      byType('tag.assigned').map((e) => e.data),
      [{ user_id: ana.id, tag: { id: vip.id, name: 'vip' } }],
      'assigning a tag the student has is not news',
    );
    assert.equal(byType('tag.removed')[0].data, {
      user_id: ana.id,
      tag: { id: vip.id, name: 'vip' },
    });
    assert.equal(byType('user.deleted')[0].data, {
      user: { id: ana.id, email: 'ana@example.com' },
    });
    const created = byType('user.created').map((e) => e.data.user.email);
    assert.equal(created, ['ana@example.com', 'bia@example.com']);
    assert.not.ok('auto_login_token' in byType('user.created')[0].data.user, 'no sign-in token');
    const finished = byType('operation.finished').find((e) => e.data.operation.id === op.id);
    assert.equal(finished.data.operation.progress, { total: 1, done: 1, failed: 0 });
    assert.is(finished.data.operation.status, 'succeeded');
    assert.equal(byType('product.published')[0].data.product, {
      id: p.id,
      name: 'Python',
      status: 'published',
    });
  },
);

t(
  'GET /events filters and pages; GET /events/{id} answers the event as recorded',
  async ({ b }) => {
    const first = await user(b, 'list1@example.com');
    await user(b, 'list2@example.com');
    await user(b, 'list3@example.com');
    const created = await all(b, '/api/v3/events?type=user.created&limit=2');
    assert.ok(created.length >= 3);
    assert.ok(created.every((e) => e.type === 'user.created'));
    const ids = created.map((e) => Number(e.id));
    assert.equal(
      ids,
      [...ids].sort((x, y) => y - x),
      'newest first',
    );

    const e = created.find((x) => x.data.user.id === first.id);
    const one = await b.api('GET', `/api/v3/events/${e.id}`);
    assert.is(one.status, 200);
    assert.equal(one.body.data, e);
    // The row holds exactly the JSON sent: nothing is rebuilt from the current user.
    await b.api('PATCH', `/api/v3/users/${first.id}`, { body: { name: 'Renamed' } });
    const again = await b.api('GET', `/api/v3/events/${e.id}`);
    assert.is(again.body.data.data.user.name, 'Ana Souza');

    const after = encodeURIComponent(e.created_at);
    const later = await all(b, `/api/v3/events?type=user.created&created_after=${after}`);
    assert.ok(later.every((x) => x.created_at >= e.created_at));
    assert.ok(
      later.some((x) => x.id === e.id),
      'created_after is inclusive',
    );
    const before = await all(b, `/api/v3/events?created_before=${after}`);
    assert.ok(before.every((x) => x.created_at < e.created_at));
    assert.is((await b.api('GET', '/api/v3/events/999999')).status, 404);
    assert.is((await b.api('GET', '/api/v3/events?created_after=nope')).status, 422);

    // Another account sees none of them.
    const { id: other } = await b.app.services.accounts.createAccount({ name: 'Other school' });
    const root = await b.app.services.accounts.createRootCredential({
      accountId: other,
      permissions: ['*'],
    });
    assert.is((await b.api('GET', `/api/v3/events/${e.id}`, { secret: root.secret })).status, 404);
    const theirs = await b.api('GET', '/api/v3/events', { secret: root.secret });
    assert.equal(theirs.body.data, []);
  },
);

t('events.read is required to read events', async ({ b }) => {
  const c = await credentialWith(b, ['users.read']);
  const res = await b.api('GET', '/api/v3/events', { secret: c.secret });
  assert.is(res.status, 403);
  assert.is(res.body.error.code, 'permission_denied');
  assert.is(res.body.error.details[0].reason, 'events.read');
  const reader = await credentialWith(b, ['events.read']);
  assert.is((await b.api('GET', '/api/v3/events', { secret: reader.secret })).status, 200);
});

t('GET /event-types serves the catalog of spec/events', async ({ b }) => {
  const res = await b.api('GET', '/api/v3/event-types');
  assert.is(res.status, 200);
  const entry = res.body.data.find((e: any) => e.type === 'user.updated' && e.version === '1');
  const file = JSON.parse(fs.readFileSync(path.join(EVENTS_DIR, 'user.updated/1.json'), 'utf8'));
  assert.equal(entry, {
    object: 'event_type',
    type: 'user.updated',
    version: '1',
    current: true,
    visibility: 'public',
    description: file.description,
    payload_keys: ['user', 'changed_fields'],
    schema: file,
  });
  const only = await b.api('GET', '/api/v3/event-types?type=tag.assigned');
  assert.equal(
    only.body.data.map((e: any) => [e.type, e.version]),
    [['tag.assigned', '1']],
  );
  // The served document carries the same catalog as its `webhooks` section.
  const doc = await b.api('GET', '/api/v3/openapi.json');
  const hook = doc.body.webhooks?.['user.updated.v1']?.post;
  assert.ok(hook, 'webhooks section');
  const envelope = hook.requestBody.content['application/json'].schema;
  assert.equal(Object.keys(envelope.properties.data.properties), ['user', 'changed_fields']);
});

t('events are kept 30 days, then swept with their deliveries', async ({ b }) => {
  const u = await user(b, 'old@example.com');
  const e = (await all(b, '/api/v3/events?type=user.created')).find((x) => x.data.user.id === u.id);
  b.clock.advance(29 * DAY);
  assert.is((await b.api('GET', `/api/v3/events/${e.id}`)).status, 200);
  b.clock.advance(1 * DAY + 1000);
  assert.is((await b.api('GET', `/api/v3/events/${e.id}`)).status, 404, 'past the retention');
  const listed = await all(b, '/api/v3/events');
  assert.not.ok(listed.some((x) => x.id === e.id));
  const purged = await b.app.services.events.purgeExpired();
  assert.ok(purged >= 1);
  const row = await b.app
    .db('events')
    .where({ id: Number(e.id) })
    .first();
  assert.is(row, undefined);
  const fresh = await user(b, 'new@example.com');
  const kept = await all(b, '/api/v3/events?type=user.created');
  assert.ok(kept.some((x) => x.data.user.id === fresh.id));
});

t(
  'listeners hear of an event once its transaction commits, and never of a rolled-back one',
  async ({ b }) => {
    const heard: [number, number][] = [];
    const stop = b.app.services.events.subscribe((account, id) => heard.push([account, id]));
    await b.app.services.events.listening();
    try {
      const u = await user(b, 'listen@example.com');
      const dup = await b.api('POST', '/api/v3/users', {
        body: { name: 'Dup', email: 'listen@example.com' },
        key: newKey(),
      });
      assert.is(dup.status, 409);
      // A transaction that records an event and then fails.
      const events = b.app.services.events;
      await transaction(b.app.db, async (tx) => {
        await events.record(
          { tx },
          {
            accountId: b.accountId,
            type: 'tag.removed',
            data: { user_id: '1', tag: { id: '1', name: 'x' } },
          },
        );
        throw new Error('rolled back');
      }).catch(() => undefined);
      const after = await user(b, 'listen2@example.com');
      const ids = async () => {
        const list = await all(b, '/api/v3/events?type=user.created');
        return list.filter((e) => [u.id, after.id].includes(e.data.user.id)).map((e) => +e.id);
      };
      const expected = (await ids()).sort((x, y) => x - y);
      const deadline = Date.now() + 10_000;
      while (heard.filter(([, id]) => expected.includes(id)).length < 2) {
        if (Date.now() > deadline) throw new Error(`heard ${JSON.stringify(heard)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      const mine = heard.filter(([account]) => account === b.accountId);
      assert.equal(
        mine.map(([, id]) => id),
        expected,
        'the two committed events, in order, and nothing else',
      );
      const rows = await b.app.db('events').where({ type: 'tag.removed', account_id: b.accountId });
      assert.not.ok(
        rows.some((r: any) => JSON.parse(r.data).tag.name === 'x'),
        'rolled back',
      );
    } finally {
      stop();
    }
  },
);

t(
  'an event whose data breaks its schema, or of an unknown type, fails the change',
  async ({ b }) => {
    const events = b.app.services.events;
    const bad = transaction(b.app.db, (tx) =>
      events.record({ tx }, { accountId: b.accountId, type: 'tag.removed', data: { user_id: 7 } }),
    );
    await bad.then(
      () => assert.unreachable('recorded'),
      (err) => assert.match(String(err), /breaks its schema/),
    );
    const unknown = transaction(b.app.db, (tx) =>
      events.record({ tx }, { accountId: b.accountId, type: 'no.such', data: {} }),
    );
    await unknown.then(
      () => assert.unreachable('recorded'),
      (err) => assert.match(String(err), /not in the catalog/),
    );
  },
);

t.run();
