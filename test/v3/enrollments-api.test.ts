// Enrollments through HTTP: create with defaults and durations (calendar months), the one-current
// rule, references the account lacks, GET with ETag, the student's list and its filters, PATCH to
// end, extend or move (If-Match, no reopening), expiry by the clock, the enrollments.grant batch
// type and the events.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DAY } from '../../src/clock.ts';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { P, all, product } from '../helpers/catalog.ts';
import { allItems, submit, waitFor } from '../helpers/operations.ts';
import { student } from '../helpers/sales.ts';

const t = suite<{ b: Booted }>('v3 enrollments');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

const E = '/api/v3/enrollments';
const enroll = (b: Booted, body: Record<string, unknown>, secret?: string) =>
  b.api('POST', E, { body, key: newKey(), secret });
const fields = (res: any) => res.body.error.details.map((d: any) => d.field);

t('POST: lifetime under the default schedule by default', async ({ b }) => {
  const u = await student(b, 'e1@example.com');
  const p = await product(b, { name: 'Chess' });
  const [schedule] = (await b.api('GET', `${P}/${p.id}/access-schedules`)).body.data;
  const res = await enroll(b, { user_id: u.id, product_id: p.id });
  assert.is(res.status, 201);
  const e = res.body.data;
  assert.equal(e, {
    object: 'enrollment',
    id: e.id,
    user_id: u.id,
    product_id: p.id,
    access_schedule_id: schedule.id,
    delivery_id: null,
    transaction_id: null,
    started_at: e.created_at,
    duration: null,
    duration_unit: 'lifetime',
    ends_at: null,
    ended: false,
    revision: e.revision,
    created_at: e.created_at,
    updated_at: e.created_at,
  });
  assert.is(res.headers.get('etag'), `"${e.revision}"`);
  const got = await b.api('GET', `${E}/${e.id}`);
  assert.equal(got.body.data, e);
  assert.is(got.headers.get('etag'), `"${e.revision}"`);
  // One current enrollment per product.
  const again = await enroll(b, { user_id: u.id, product_id: p.id });
  assert.equal([again.status, again.body.error.details[0].reason], [409, 'enrollment_current']);
  const [event] = (await b.api('GET', '/api/v3/events?type=enrollment.created')).body.data;
  assert.equal(event.data.enrollment.id, e.id);
});

t('durations: days, calendar months and years, from started_at', async ({ b }) => {
  const u = await student(b, 'e2@example.com');
  const ends = async (name: string, body: Record<string, unknown>) => {
    const p = await product(b, { name });
    const res = await enroll(b, { user_id: u.id, product_id: p.id, ...body });
    assert.is(res.status, 201, JSON.stringify(res.body));
    return res.body.data;
  };
  const month = await ends('Jan', {
    started_at: '2024-01-31T10:00:00Z',
    duration: 1,
    duration_unit: 'month',
  });
  assert.equal(
    [month.started_at, month.ends_at, month.ended],
    ['2024-01-31T10:00:00.000Z', '2024-02-29T10:00:00.000Z', true],
  );
  const days = await ends('Days', { duration: 10, duration_unit: 'day' });
  assert.is(Date.parse(days.ends_at) - Date.parse(days.started_at), 10 * DAY);
  const year = await ends('Year', {
    started_at: '2024-02-29T00:00:00Z',
    duration: 1,
    duration_unit: 'year',
  });
  assert.is(year.ends_at, '2025-02-28T00:00:00.000Z');
  const lifetime = await ends('Life', { duration_unit: 'lifetime' });
  assert.is(lifetime.ends_at, null);
});

t('POST rejections name the field', async ({ b }) => {
  const u = await student(b, 'e3@example.com');
  const p = await product(b, { name: 'Go' });
  const other = await product(b, { name: 'Rust' });
  const [otherSchedule] = (await b.api('GET', `${P}/${other.id}/access-schedules`)).body.data;
  const check = async (body: Record<string, unknown>, status: number, field: string) => {
    const res = await enroll(b, { user_id: u.id, product_id: p.id, ...body });
    assert.equal([res.status, fields(res)], [status, [field]], JSON.stringify(res.body));
  };
  await check({ user_id: '999999' }, 422, 'user_id');
  await check({ product_id: '999999' }, 422, 'product_id');
  await check({ access_schedule_id: otherSchedule.id }, 422, 'access_schedule_id');
  await check({ duration: 2 }, 422, 'duration');
  await check({ duration_unit: 'year' }, 422, 'duration');
  await check({ duration: 0, duration_unit: 'day' }, 422, 'duration');
  await check({ ends_at: '2030-01-01T00:00:00Z' }, 422, 'ends_at');
  const trashed = (
    await b.api('POST', `${P}/${p.id}/access-schedules`, {
      body: { name: 'Go trash' },
      key: newKey(),
    })
  ).body.data;
  await b.api('DELETE', `${P}/${p.id}/access-schedules/${trashed.id}`);
  const res = await enroll(b, { user_id: u.id, product_id: p.id, access_schedule_id: trashed.id });
  assert.equal([res.status, res.body.error.details[0].reason], [422, 'schedule_in_trash']);
  const reader = await credentialWith(b, ['enrollments.read']);
  const denied = await enroll(b, { user_id: u.id, product_id: p.id }, reader.secret);
  assert.equal([denied.status, denied.body.error.code], [403, 'permission_denied']);
});

t("a student's list: newest first, filters, 404 for a stranger", async ({ b }) => {
  const u = await student(b, 'e4@example.com');
  const made: any[] = [];
  for (const name of ['L1', 'L2', 'L3']) {
    const p = await product(b, { name });
    made.push((await enroll(b, { user_id: u.id, product_id: p.id })).body.data);
    b.clock.advance(1000);
  }
  await b.api('PATCH', `${E}/${made[1].id}`, { body: { ended: true } });
  const L = `/api/v3/users/${u.id}/enrollments`;
  const ids = async (q: string) => (await all(b, `${L}?limit=1${q}`)).map((e: any) => e.id);
  assert.equal(await ids(''), [made[2].id, made[1].id, made[0].id]);
  assert.equal(await ids('&sort=created_at'), [made[0].id, made[1].id, made[2].id]);
  assert.equal(await ids('&ended=true'), [made[1].id]);
  assert.equal(await ids('&ended=false'), [made[2].id, made[0].id]);
  assert.equal(await ids(`&product_id=${made[0].product_id}`), [made[0].id]);
  assert.equal(await ids('&product_id=999999'), []);
  assert.is((await b.api('GET', '/api/v3/users/999999/enrollments')).status, 404);
});

t('PATCH: end, extend, move; If-Match; never reopened', async ({ b }) => {
  const u = await student(b, 'e5@example.com');
  const p = await product(b, { name: 'Yoga' });
  const s2 = (
    await b.api('POST', `${P}/${p.id}/access-schedules`, {
      body: { name: 'Yoga weekends' },
      key: newKey(),
    })
  ).body.data;
  const e = (
    await enroll(b, {
      user_id: u.id,
      product_id: p.id,
      started_at: '2030-01-01T00:00:00Z',
      duration: 1,
      duration_unit: 'month',
    })
  ).body.data;
  const stale = await b.api('PATCH', `${E}/${e.id}`, {
    body: { duration: 2 },
    headers: { 'if-match': '"stale"' },
  });
  assert.equal([stale.status, stale.body.error.code], [412, 'revision_mismatch']);
  const extended = await b.api('PATCH', `${E}/${e.id}`, {
    body: { duration: 1, duration_unit: 'year', access_schedule_id: s2.id },
    headers: { 'if-match': `"${e.revision}"` },
  });
  assert.is(extended.status, 200);
  assert.equal(
    [
      extended.body.data.ends_at,
      extended.body.data.duration_unit,
      extended.body.data.access_schedule_id,
    ],
    ['2031-01-01T00:00:00.000Z', 'year', s2.id],
  );
  const reopen = await b.api('PATCH', `${E}/${e.id}`, { body: { ended: false } });
  assert.equal([reopen.status, reopen.body.error.code], [422, 'invalid_transition']);
  const both = await b.api('PATCH', `${E}/${e.id}`, {
    body: { ended: true, duration: 3, duration_unit: 'day' },
  });
  assert.is(both.status, 422);
  const now = b.clock.now().toISOString();
  const ended = await b.api('PATCH', `${E}/${e.id}`, { body: { ended: true } });
  assert.equal([ended.status, ended.body.data.ended], [200, true]);
  assert.ok(ended.body.data.ends_at >= now && ended.body.data.ends_at < '2031-01-01');
  const twice = await b.api('PATCH', `${E}/${e.id}`, { body: { ended: true } });
  assert.equal([twice.status, twice.body.data.revision], [200, ended.body.data.revision]);
  const later = await b.api('PATCH', `${E}/${e.id}`, {
    body: { duration: 5, duration_unit: 'year' },
  });
  assert.equal([later.status, later.body.error.details[0].reason], [422, 'enrollment_ended']);
  const [endedEvent] = (await b.api('GET', '/api/v3/events?type=enrollment.ended')).body.data;
  assert.is(endedEvent.data.enrollment.id, e.id);
  // Ended: a new enrollment in the product is allowed again.
  assert.is((await enroll(b, { user_id: u.id, product_id: p.id })).status, 201);
  assert.is((await b.api('PATCH', `${E}/999999`, { body: { ended: true } })).status, 404);
});

t('an enrollment past its end is ended, and can be extended', async ({ b }) => {
  const u = await student(b, 'e6@example.com');
  const p = await product(b, { name: 'Short' });
  const e = (
    await enroll(b, { user_id: u.id, product_id: p.id, duration: 2, duration_unit: 'day' })
  ).body.data;
  assert.is(e.ended, false);
  b.clock.advance(3 * DAY);
  assert.is((await b.api('GET', `${E}/${e.id}`)).body.data.ended, true);
  const extended = await b.api('PATCH', `${E}/${e.id}`, {
    body: { duration: 30, duration_unit: 'day' },
  });
  assert.equal([extended.status, extended.body.data.ended], [200, false]);
});

t('batch enrollments.grant: creates, then renews; payload checked', async ({ b }) => {
  const u = await student(b, 'e7@example.com');
  const p = await product(b, { name: 'Batch course' });
  const payload = { user_id: u.id, product_id: p.id, duration: 1, duration_unit: 'month' };
  const first = await submit(b, 'enrollments.grant', [{ key: 'a', payload }]);
  assert.is(first.status, 202);
  assert.is((await waitFor(b, first.body.data.id)).status, 'succeeded');
  const [item] = await allItems(b, first.body.data.id);
  assert.equal(item.result.created, true);
  const e = (await b.api('GET', `${E}/${item.result.enrollment_id}`)).body.data;
  const second = await submit(b, 'enrollments.grant', [{ key: 'a', payload }]);
  await waitFor(b, second.body.data.id);
  const [again] = await allItems(b, second.body.data.id);
  assert.equal([again.result.created, again.result.enrollment_id], [false, e.id]);
  const renewed = (await b.api('GET', `${E}/${e.id}`)).body.data;
  assert.equal([renewed.duration, renewed.duration_unit], [2, 'month']);
  const bad = await submit(b, 'enrollments.grant', [
    { key: 'x', payload: { user_id: u.id } },
    { key: 'y', payload: { ...payload, colour: 'red' } },
  ]);
  assert.equal([bad.status, bad.body.error.code], [422, 'item_invalid']);
  assert.equal(fields(bad), ['items.0.payload.product_id', 'items.1.payload.colour']);
  const missing = await submit(b, 'enrollments.grant', [
    { key: 'z', payload: { ...payload, user_id: '999999' } },
  ]);
  const done = await waitFor(b, missing.body.data.id);
  assert.is(done.status, 'failed');
  const ops = await credentialWith(b, ['operations.manage']);
  const denied = await submit(b, 'enrollments.grant', [{ key: 'a', payload }], {
    secret: ops.secret,
  });
  assert.equal([denied.status, denied.body.error.details[0].reason], [403, 'enrollments.write']);
});

t.run();
