// Grants applied a chunk at once (EnrollmentsService.grantMany) write what grantAccess writes
// grant after grant: the same item results, enrollments (new ones, renewals of every kind, the
// 36,500-unit cap, schedules, an ended one replaced), welcome emails (each sent by its job) and
// events, in order. Two accounts of one app run the same enrollments.grant batch and the same
// import, one with the type's applyMany and one without. The second chunk of each mixes new
// students, renewals and an item that fails: it goes item by item and that item fails alone.
// enrollments.grant goes set-based on PostgreSQL only; an import's chunks on both engines.
// An import whose delivery adds tags goes through the services (item by item past 100 rows).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSpec } from '../../src/app.ts';
import type { BatchType } from '../../src/domain/operations/batch-types.ts';
import { PROCESS } from '../../src/domain/imports/service.ts';
import { boot, makeClient, newKey, type Booted } from '../helpers/app.ts';
import { account, product } from '../helpers/catalog.ts';
import { ContractChecker } from '../helpers/contract.ts';
import { analyse, catalog, createImport, I } from '../helpers/imports.ts';
import { delivery } from '../helpers/sales.ts';
import { allItems, submit, waitFor } from '../helpers/operations.ts';

const pg = Boolean(process.env.TEST_DATABASE_URL);
const E = '/api/v3/enrollments';

/** An account of the app, and its resources' ids by the names the test gives them. */
type Twin = Booted & { ids: Map<string, string> };

/** What both accounts hold before: products, a second schedule, students, enrollments to renew. */
async function setUp(b: Booted, name: string): Promise<Twin> {
  const { id, secret } = await account(b, name);
  const t: Twin = {
    ...b,
    accountId: id,
    api: makeClient(b.url, secret, new ContractChecker(loadSpec())),
    ids: new Map(),
  };
  const { product: p1, delivery: d1 } = await catalog(t, 'EXT-1');
  const p2 = await product(t, { name: 'Course 2' });
  const later = await t.api('POST', `/api/v3/products/${p2.id}/access-schedules`, {
    body: { name: 'Later' },
    key: newKey(),
  });
  const buyer = await t.api('POST', '/api/v3/tags', { body: { name: 'Buyer' }, key: newKey() });
  const d2 = await delivery(t, {
    name: 'Both',
    external_ids: ['EXT-2'],
    products: [{ product_id: p1.id }, { product_id: p2.id }],
    duration: 1,
    duration_unit: 'month',
    tag_ids: [buyer.body.data.id],
  });
  t.ids.set('P1', p1.id).set('P2', p2.id).set('Later', later.body.data.id);
  t.ids.set('D1', d1.id).set('D2', d2.id);
  for (let i = 0; i < 8; i++) {
    const u = await b.app.services.users.create(id, { name: `Old ${i}`, email: `old${i}@ex.com` });
    t.ids.set(`old${i}`, String(u.id));
  }
  for (let i = 0; i < 92; i++) {
    const u = await b.app.services.users.create(id, { name: `N ${i}`, email: `n${i}@ex.com` });
    t.ids.set(`n${i}`, String(u.id));
  }
  const enroll = async (user: string, productName: string, more: object = {}) => {
    const body = { ...of(t, user, productName), ...more };
    const res = await t.api('POST', E, { body, key: newKey() });
    assert.is(res.status, 201, JSON.stringify(res.body));
    return res.body.data;
  };
  await enroll('old0', 'P1', { duration: 30, duration_unit: 'day' });
  await enroll('old1', 'P1'); // lifetime
  await enroll('old2', 'P1', { duration: 36_400, duration_unit: 'day' }); // meets the cap
  await enroll('old3', 'P1', { duration: 2, duration_unit: 'month' });
  const ended = await enroll('old4', 'P1', { duration: 1, duration_unit: 'year' });
  assert.is((await t.api('PATCH', `${E}/${ended.id}`, { body: { ended: true } })).status, 200);
  // Renewed by 30 days it would end after 9999-12-31: that grant fails.
  await enroll('old5', 'P1', {
    started_at: '9999-12-01T00:00:00Z',
    duration: 10,
    duration_unit: 'day',
  });
  await enroll('old6', 'P2', { duration: 1, duration_unit: 'year' });
  // A student who has EXT-2's tag already: importing them again assigns it, with no event.
  await b.app.services.tags.add(id, Number(t.ids.get('old6')), Number(buyer.body.data.id));
  return t;
}

const of = (t: Twin, user: string, productName: string) => ({
  user_id: t.ids.get(user) ?? user,
  product_id: t.ids.get(productName)!,
});

/** 130 items: 100 that go set-based, then 30 with two that fail (past 9999, no such student). */
function grantItems(t: Twin) {
  const first = [
    { ...of(t, 'old0', 'P1'), duration: 30, duration_unit: 'day' },
    { ...of(t, 'old1', 'P1'), duration: 3, duration_unit: 'month' },
    { ...of(t, 'old2', 'P1'), duration: 200, duration_unit: 'day' },
    { ...of(t, 'old3', 'P1'), duration: 1, duration_unit: 'year' },
    { ...of(t, 'old4', 'P1'), duration: 10, duration_unit: 'day' },
    { ...of(t, 'old6', 'P2'), duration: 45, duration_unit: 'day' },
    {
      ...of(t, 'old7', 'P2'),
      access_schedule_id: t.ids.get('Later'),
      started_at: '2030-01-31T10:00:00+02:00',
    },
    {
      ...of(t, 'old7', 'P1'),
      duration: 1,
      duration_unit: 'month',
      started_at: '2030-01-31T00:00:00Z',
    },
    ...Array.from({ length: 92 }, (_, i) => ({
      ...of(t, `n${i}`, 'P1'),
      ...[{ duration: 30, duration_unit: 'day' }, { duration: 2, duration_unit: 'month' }, {}][
        i % 3
      ],
    })),
  ];
  const second = [
    { ...of(t, 'n0', 'P1'), duration: 1, duration_unit: 'month' },
    { ...of(t, 'old5', 'P1'), duration: 30, duration_unit: 'day' },
    ...Array.from({ length: 14 }, (_, i) => ({
      ...of(t, `n${i + 1}`, 'P1'),
      duration: 5,
      duration_unit: 'day',
    })),
    { ...of(t, '999999', 'P1'), duration: 5, duration_unit: 'day' },
    ...Array.from({ length: 13 }, (_, i) => ({ ...of(t, `n${i + 20}`, 'P2') })),
  ];
  return [...first, ...second].map((payload, i) => ({ key: `k${i}`, payload }));
}

/**
 * 133 rows: 100 that go set-based (three of them end access: what EXT-2 granted gone@ex.com, and
 * nothing for a student EXT-2 never granted or an unknown email), then 33 with one that fails
 * (its renewal ends past 9999).
 */
function importCsv() {
  const rows = [
    'old0@ex.com,EXT-1,active',
    'OLD1@ex.com,EXT-1,active',
    'old2@ex.com,EXT-1,active',
    'old4@ex.com,EXT-1,active',
    'old6@ex.com,EXT-2,active',
    'Gone@ex.com,EXT-2,inactive',
    'old7@ex.com,EXT-2,inactive',
    'ghost@ex.com,EXT-1,Inactive',
    ...Array.from({ length: 92 }, (_, i) => `New${i}@Ex.com,EXT-${1 + (i % 2)},active`),
    ...Array.from({ length: 3 }, (_, i) => `New${92 + i}@Ex.com,EXT-${1 + (i % 2)},active`),
    'old3@ex.com,EXT-2,active',
    'old5@ex.com,EXT-1,active',
    'old7@ex.com,EXT-1,active',
    ...Array.from({ length: 27 }, (_, i) => `new${95 + i}@ex.com,EXT-${1 + (i % 2)},active`),
  ];
  return `email,product_external_id,status\n${rows.join('\n')}\n`;
}

/** Each type with its applyMany counted; `use(false)` runs it without. */
function instrument(b: Booted, name: string, setChunk: number | null = 100) {
  const types = b.app.services.operations.types;
  const original = types[name]!;
  const counts = { calls: 0, applied: 0 };
  const counted: BatchType = {
    ...original,
    // Chunks of 100 on both engines, so that the first goes set-based and the second declines.
    setChunk: setChunk ?? original.setChunk,
    async applyMany(tx, accountId, payloads, ctx) {
      counts.calls++;
      const out = await original.applyMany!(tx, accountId, payloads, ctx);
      if (out) counts.applied++;
      return out;
    },
  };
  const without: BatchType = { ...original, applyMany: undefined };
  return {
    counts,
    use: (withMany: boolean) => (types[name] = withMany ? counted : without),
    restore: () => (types[name] = original),
  };
}

/** Timestamps of this run (the clock runs between the two accounts) say only that they are. */
const when = (v: unknown) => (typeof v === 'string' && !v.startsWith('2030') ? 'this run' : v);

/** What an account holds, with its own ids replaced by names (emails, products, keys). */
async function state(t: Twin, opId: string) {
  const db = t.app.db;
  const users = await db('users').where('account_id', t.accountId).orderBy('email_lower');
  const user = new Map(users.map((u: any) => [String(u.id), u.email_lower as string]));
  const kind = (...keys: string[]) => new Map(keys.map((k) => [t.ids.get(k)!, k]));
  const names: Record<string, Map<string, string>> = {
    product_id: kind('P1', 'P2'),
    access_schedule_id: kind('Later'),
    delivery_id: kind('D1', 'D2'),
  };
  const rows = await db('enrollments').where('account_id', t.accountId).orderBy('id');
  const enrollment = new Map<string, string>();
  for (const e of rows) {
    const label = `${user.get(String(e.user_id))}/${names.product_id!.get(String(e.product_id))}`;
    const n = [...enrollment.values()].filter((l) => l.startsWith(label)).length;
    enrollment.set(String(e.id), `${label}#${n}`);
  }
  const named = (k: string, v: unknown): unknown => {
    if (v === null || v === undefined) return v;
    if (k === 'user_id') return user.get(String(v)) ?? v;
    if (k === 'enrollment_id') return enrollment.get(String(v)) ?? v;
    if (names[k]) return names[k].get(String(v)) ?? (k === 'access_schedule_id' ? 'a default' : v);
    return k.endsWith('_at') ? when(v) : v;
  };
  const shown = (o: Record<string, any>, idOf?: (id: string) => unknown) =>
    Object.fromEntries(
      Object.entries(o).map(([k, v]) => [k, k === 'id' && idOf ? idOf(String(v)) : named(k, v)]),
    );
  // An enrollment ended on purpose ended when it was asked to: its length is the test's timing.
  const span = (e: any) =>
    e.ends_at === null
      ? null
      : e.ended === true || e.ended === 1
        ? 'ended'
        : Date.parse(e.ends_at) - Date.parse(e.started_at);
  const op = (await t.api('GET', `/api/v3/operations/${opId}`)).body.data;
  const items = (await allItems(t, opId)).map((i: any) => ({
    key: i.key,
    status: i.status,
    error: i.error?.code,
    result: i.result && shown(i.result),
  }));
  const events = (await db('events').where('account_id', t.accountId).orderBy('id')).map(
    (e: any) => {
      const data = JSON.parse(e.data);
      if (data.enrollment)
        data.enrollment = {
          ...shown(data.enrollment, (id) => enrollment.get(id)),
          span: span(data.enrollment),
        };
      if (data.user) data.user = shown(data.user, (id) => user.get(id));
      if (data.tag) data.tag = data.tag.name; // tag.assigned: its student is user_id
      if (data.user_id) data.user_id = user.get(data.user_id);
      if (data.operation) data.operation = { ...data.operation, id: 'this', finished_at: 'then' };
      return { type: e.type, version: e.version, data };
    },
  );
  const emails = await db('emails').where('account_id', t.accountId).orderBy('id');
  const tagged = await db('user_tags')
    .join('tags', 'tags.id', 'user_tags.tag_id')
    .where('tags.account_id', t.accountId)
    .select('user_tags.user_id', 'tags.name');
  return {
    tags: tagged.map((r: any) => `${user.get(String(r.user_id))} ${r.name}`).sort(),
    op: { status: op.status, progress: op.progress, error: op.error },
    items,
    users: users.map((u: any) => [u.email, u.name]),
    enrollments: rows.map((e: any): Record<string, any> => ({
      ...shown(e, (id) => enrollment.get(id)),
      account_id: 'this',
      ended: Boolean(e.ended),
      revision: 'r',
      written: e.created_at === e.updated_at ? 'created' : 'changed since',
      span: span(e),
    })),
    emails: emails.map((m: any) => [named('user_id', m.user_id), m.to_email, m.subject, m.body]),
    events,
  };
}

/** Deep equality, naming the first entry that differs (a whole-list diff is unreadable). */
function same(a: unknown[], b: unknown[], what: string) {
  for (let i = 0; i < Math.max(a.length, b.length); i++)
    assert.equal(a[i], b[i], `${what}: entry ${i} of ${a.length} and ${b.length}`);
}

/** Every welcome email of the account is sent: its job exists and ran. */
async function allSent(t: Twin) {
  for (const deadline = Date.now() + 60_000; ;) {
    const left = await t.app.db('emails').where({ account_id: t.accountId, status: 'queued' });
    if (left.length === 0) break;
    if (Date.now() > deadline) throw new Error(`${left.length} emails still queued`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const sent = await t.app.db('emails').where({ account_id: t.accountId, status: 'sent' });
  return sent.length;
}

function compare(x: Awaited<ReturnType<typeof state>>, y: Awaited<ReturnType<typeof state>>) {
  assert.equal(x.op, y.op);
  same(x.items, y.items, 'items');
  same(x.users, y.users, 'students');
  same(x.enrollments, y.enrollments, 'enrollments');
  same(x.emails, y.emails, 'emails');
  same(x.tags, y.tags, 'tags');
  same(x.events, y.events, 'events');
}

const t = suite('set-based grants');

t('enrollments.grant: the same enrollments, emails and events as grant by grant', async () => {
  const b = await boot();
  const types = instrument(b, 'enrollments.grant');
  await b.app.startWorkers();
  try {
    const setBased = await setUp(b, 'Set-based');
    const oneByOne = await setUp(b, 'One by one');
    types.use(true);
    const a = await submit(setBased, 'enrollments.grant', grantItems(setBased));
    assert.is(a.status, 202, JSON.stringify(a.body));
    await waitFor(setBased, a.body.data.id, undefined, undefined, 120_000);
    types.use(false);
    const c = await submit(oneByOne, 'enrollments.grant', grantItems(oneByOne));
    await waitFor(oneByOne, c.body.data.id, undefined, undefined, 120_000);
    // PostgreSQL: the first chunk goes set-based, the second declines; SQLite: item by item.
    assert.equal(types.counts, pg ? { calls: 2, applied: 1 } : { calls: 0, applied: 0 });
    const x = await state(setBased, a.body.data.id);
    compare(x, await state(oneByOne, c.body.data.id));
    // What the batch did, besides being the same both ways.
    assert.equal(x.op.progress, { total: 130, done: 128, failed: 2 });
    assert.equal(
      x.items.filter((i) => i.status === 'failed').map((i) => [i.key, i.error]),
      [
        ['k101', 'validation_failed'],
        ['k116', 'validation_failed'],
      ],
    );
    const at = (label: string) => x.enrollments.find((e) => e.id === label)!;
    assert.equal(
      [at('old0@ex.com/P1#0').duration, at('old0@ex.com/P1#0').duration_unit],
      [60, 'day'],
    );
    assert.equal(at('old1@ex.com/P1#0').duration_unit, 'lifetime');
    assert.equal(
      [at('old2@ex.com/P1#0').duration, at('old2@ex.com/P1#0').span],
      [36_500, 36_500 * 86_400_000],
    );
    assert.equal(
      [at('old3@ex.com/P1#0').duration, at('old3@ex.com/P1#0').duration_unit],
      [14, 'month'],
    );
    assert.equal([at('old4@ex.com/P1#0').ended, at('old4@ex.com/P1#1').duration], [true, 10]);
    assert.equal(at('old7@ex.com/P2#0').access_schedule_id, 'Later');
    assert.equal(at('old7@ex.com/P1#0').ends_at, '2030-02-28T00:00:00.000Z');
    // 30 days, then a month more: counted in days (the month's length depends on the date).
    assert.is(at('n0@ex.com/P1#0').duration_unit, 'day');
    assert.ok(at('n0@ex.com/P1#0').duration >= 58, `${at('n0@ex.com/P1#0').duration}`);
    // A welcome per new enrollment: 7 set up, 95 in the first chunk, 13 in the second.
    assert.is(x.emails.length, 7 + 95 + 13);
    assert.is(await allSent(setBased), 115);
    assert.is(await allSent(oneByOne), 115);
    assert.is(x.events.filter((e) => e.type === 'enrollment.created').length, 115);
    assert.is(x.events.filter((e) => e.type === 'enrollment.updated').length, 5 + 15);
  } finally {
    types.restore();
    await b.close();
  }
});

t('an import: the same students, enrollments, emails and events as row by row', async () => {
  const b = await boot();
  const types = instrument(b, PROCESS);
  await b.app.startWorkers();
  try {
    const setBased = await setUp(b, 'Set-based');
    const oneByOne = await setUp(b, 'One by one');
    // What the inactive row ends: both products EXT-2 granted gone@ex.com.
    for (const twin of [setBased, oneByOne]) {
      const gone = await b.app.services.users.create(twin.accountId, {
        name: 'Gone',
        email: 'gone@ex.com',
      });
      for (const product of ['P1', 'P2'])
        await b.app.services.enrollments.grantAccess({ tx: b.app.db }, twin.accountId, {
          userId: gone.id,
          productId: Number(twin.ids.get(product)),
          duration: { duration: 1, unit: 'month' },
          deliveryId: Number(twin.ids.get('D2')),
        });
    }
    const run = async (twin: Twin, withMany: boolean) => {
      types.use(withMany);
      const imp = await createImport(twin, importCsv());
      assert.is((await analyse(twin, imp.id)).status, 'succeeded');
      // Row by row, 130 rows on PostgreSQL take tens of seconds on a busy machine.
      const res = await twin.api('POST', `${I}/${imp.id}/processing-attempts`, { key: newKey() });
      assert.is(res.status, 202, JSON.stringify(res.body));
      return waitFor(twin, res.body.data.operation_id, undefined, undefined, 180_000);
    };
    const a = await run(setBased, true);
    const c = await run(oneByOne, false);
    // Both engines: the first chunk set-based, the second declined (its failing row).
    assert.equal(types.counts, { calls: 2, applied: 1 });
    const x = await state(setBased, a.id);
    compare(x, await state(oneByOne, c.id));
    assert.equal(x.op.progress, { total: 133, done: 132, failed: 1 });
    assert.equal(
      x.items.filter((i) => i.status === 'failed').map((i) => i.error),
      ['validation_failed'],
    );
    assert.is(x.users.length, 100 + 1 + 122);
    assert.is(x.events.filter((e) => e.type === 'user.created').length, 100 + 1 + 122);
    const ended = x.events.filter((e) => e.type === 'enrollment.ended');
    assert.equal(
      ended.map((e) => [e.data.enrollment.user_id, e.data.enrollment.product_id]),
      [
        ['old4@ex.com', 'P1'], // ended at set-up
        ['gone@ex.com', 'P1'],
        ['gone@ex.com', 'P2'],
      ],
    );
    assert.ok(x.enrollments.filter((e) => e.user_id === 'gone@ex.com').every((e) => e.ended));
    const at = (label: string) => x.enrollments.find((e) => e.id === label)!;
    assert.equal([at('old0@ex.com/P1#0').duration, at('old0@ex.com/P1#0').delivery_id], [60, 'D1']);
    assert.equal(
      [at('old3@ex.com/P1#0').duration, at('old3@ex.com/P1#0').duration_unit],
      [3, 'month'],
    );
    assert.equal(
      [at('old6@ex.com/P2#0').duration, at('old6@ex.com/P2#0').duration_unit],
      [13, 'month'],
    );
    assert.equal([at('old4@ex.com/P1#0').ended, at('old4@ex.com/P1#1').duration], [true, 30]);
    assert.equal(at('new1@ex.com/P2#0').delivery_id, 'D2');
    // EXT-2 tags its students: the 60 new ones, old3 and old6 (who had the tag: no event).
    assert.is(x.tags.length, 60 + 2);
    assert.ok(x.tags.includes('old6@ex.com Buyer') && x.tags.includes('new1@ex.com Buyer'));
    // One event each for the new ones and old3; old6's came at set-up, none on import.
    assert.is(x.events.filter((e) => e.type === 'tag.assigned').length, 60 + 1 + 1);
    assert.is(await allSent(setBased), await allSent(oneByOne));
  } finally {
    types.restore();
    await b.close();
  }
});

t(
  'an import whose delivery adds a tag: set-based too, each student tagged once, one event each',
  async () => {
    const b = await boot();
    const types = instrument(b, PROCESS, null); // the type's own chunks
    types.use(true);
    await b.app.startWorkers();
    try {
      const course = await product(b, { name: 'Tagged course' });
      const tag = await b.api('POST', '/api/v3/tags', { body: { name: 'VIP' }, key: newKey() });
      await delivery(b, {
        name: 'Tagged',
        external_ids: ['EXT-T'],
        products: [{ product_id: course.id }],
        tag_ids: [tag.body.data.id],
      });
      // PostgreSQL's chunk here is 120 rows (setChunk 500 in the type); SQLite's are 100 and 20.
      const rows = Array.from({ length: 120 }, (_, i) => `t${i}@ex.com,EXT-T,active`);
      const imp = await createImport(b, `email,product_external_id,status\n${rows.join('\n')}\n`);
      assert.is((await analyse(b, imp.id)).status, 'succeeded');
      const res = await b.api('POST', `${I}/${imp.id}/processing-attempts`, { key: newKey() });
      const op = await waitFor(b, res.body.data.operation_id, undefined, undefined, 180_000);
      assert.equal([op.status, op.progress], ['succeeded', { total: 120, done: 120, failed: 0 }]);
      assert.equal(types.counts, pg ? { calls: 1, applied: 1 } : { calls: 2, applied: 2 });
      const tagged = await b.app.db('user_tags').where('tag_id', Number(tag.body.data.id));
      assert.is(tagged.length, 120);
      const events = await b.app.db('events').where('type', 'tag.assigned');
      assert.is(events.length, 120);
      const enrollments = await b.app.db('enrollments').where('product_id', Number(course.id));
      assert.is(enrollments.length, 120);
    } finally {
      types.restore();
      await b.close();
    }
  },
);

t.run();
