// Event streams through HTTP: limits (5 per credential, 20 per account), Server-Sent Events with
// the event id as SSE id and the envelope as data, the types filter, one connection per stream
// (409 stream_busy), resume (Last-Event-ID, cursor, the stream's own position) and cursors past
// the retention (410 cursor_expired).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DAY } from '../../src/clock.ts';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { closed, createStream, follow, userCreated } from '../helpers/sse.ts';

const t = suite<{ b: Booted }>('v3 event streams');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

t('limits: 5 streams per credential, 20 per account (429 too_many_streams)', async () => {
  const b2 = await boot();
  try {
    for (let i = 0; i < 5; i++) await createStream(b2);
    const sixth = await b2.api('POST', '/api/v3/event-streams', { body: {}, key: newKey() });
    assert.is(sixth.status, 429);
    assert.is(sixth.body.error.code, 'too_many_streams');
    assert.is(sixth.body.error.details[0].reason, 'credential_limit');
    const others = await Promise.all([0, 1, 2, 3].map(() => credentialWith(b2, ['events.read'])));
    for (const c of others.slice(0, 3))
      for (let i = 0; i < 5; i++) await createStream(b2, {}, c.secret);
    const full = await b2.api('POST', '/api/v3/event-streams', {
      body: {},
      key: newKey(),
      secret: others[3]!.secret,
    });
    assert.is(full.status, 429);
    assert.is(full.body.error.details[0].reason, 'account_limit');
    const list = (await b2.api('GET', '/api/v3/event-streams')).body.data;
    assert.is(list.length, 20);
    // Deleting one (any credential of the account may) makes room.
    assert.is((await b2.api('DELETE', `/api/v3/event-streams/${list[19].id}`)).status, 204);
    assert.is((await b2.api('GET', `/api/v3/event-streams/${list[19].id}`)).status, 404);
    await createStream(b2, {}, others[3]!.secret);
  } finally {
    await b2.close();
  }
});

t('events as SSE: id, type, the envelope; only after the stream was created', async ({ b }) => {
  const before = await userCreated(b);
  const s = await createStream(b);
  assert.equal(
    [s.object, s.types, s.connected, s.last_event_id, s.credential_id],
    ['event_stream', null, false, before, String(b.credentialId)],
  );
  const first = await userCreated(b);
  const c = await follow(b, s.id);
  try {
    assert.is(c.status, 200);
    assert.match(String(c.headers['content-type']), /^text\/event-stream/);
    assert.match(String(c.headers['x-request-id']), /^req_/);
    assert.is(c.headers['cache-control'], 'no-cache, no-transform');
    const second = await userCreated(b);
    await c.until(() => c.events.length >= 2, 'two events');
    assert.equal(c.ids(), [first, second]);
    const got = await b.api('GET', `/api/v3/events/${second}`);
    assert.equal(c.events[1], {
      id: second,
      event: 'user.created',
      data: JSON.stringify(got.body.data),
    });
    assert.is(JSON.parse(c.events[1]!.data).object, 'event');
    const live = (await b.api('GET', `/api/v3/event-streams/${s.id}`)).body.data;
    assert.is(live.connected, true);
  } finally {
    await closed(c);
  }
});

t('types filter, and one connection per stream (409 stream_busy)', async ({ b }) => {
  const s = await createStream(b, { types: ['tag.assigned'] });
  const c = await follow(b, s.id);
  try {
    const busy = await follow(b, s.id);
    assert.is(busy.status, 409);
    assert.is(busy.body.error.code, 'stream_busy');
    await userCreated(b);
    const user = (await b.api('GET', '/api/v3/users?limit=1')).body.data[0];
    const tag = await b.api('POST', '/api/v3/tags', { body: { name: 'Filtered' }, key: newKey() });
    assert.is(
      (await b.api('PUT', `/api/v3/users/${user.id}/tags/${tag.body.data.id}`)).status,
      200,
    );
    await c.until(() => c.events.length >= 1, 'the tag event');
    assert.equal(
      c.events.map((e) => e.event),
      ['tag.assigned'],
    );
  } finally {
    await closed(c, b, s.id);
  }
  // Released when the client went away: the next connection is welcome.
  const again = await follow(b, s.id);
  assert.is(again.status, 200);
  await closed(again);
});

t('resume: Last-Event-ID, then cursor, then where the stream stopped', async ({ b }) => {
  const s = await createStream(b);
  const ids = [await userCreated(b), await userCreated(b), await userCreated(b)];
  const c1 = await follow(b, s.id);
  await c1.until(() => c1.events.length === 3, 'three events');
  await closed(c1, b, s.id);
  const fourth = await userCreated(b);
  // No cursor: after the last event the stream sent.
  const c2 = await follow(b, s.id);
  await c2.until(() => c2.events.length >= 1, 'the fourth');
  assert.equal(c2.ids(), [fourth]);
  await closed(c2, b, s.id);
  // cursor: after that id.
  const c3 = await follow(b, s.id, `?cursor=${ids[0]}`);
  await c3.until(() => c3.events.length >= 3, 'after the first');
  assert.equal(c3.ids(), [ids[1], ids[2], fourth]);
  await closed(c3, b, s.id);
  // Last-Event-ID wins over cursor (an EventSource resends its original URL).
  const c4 = await follow(b, s.id, `?cursor=${ids[0]}`, { headers: { 'last-event-id': ids[2]! } });
  await c4.until(() => c4.events.length >= 1, 'after the third');
  assert.equal(c4.ids(), [fourth]);
  await closed(c4, b, s.id);
  const bad = await follow(b, s.id, '?cursor=abc');
  assert.is(bad.status, 400);
  assert.is(bad.body.error.code, 'invalid_cursor');
  const future = await follow(b, s.id, '?cursor=99999999');
  assert.is(future.status, 400);
  assert.is(future.body.error.code, 'invalid_cursor');
});

t('a cursor past the 30-day retention is 410 cursor_expired', async () => {
  const b2 = await boot();
  try {
    const s = await createStream(b2);
    const old = await userCreated(b2);
    b2.clock.advance(31 * DAY);
    const expired = await follow(b2, s.id, `?cursor=${old}`);
    assert.is(expired.status, 410);
    assert.is(expired.body.error.code, 'cursor_expired');
    // Once swept, the id is older than every stored event: still 410.
    const fresh = await userCreated(b2);
    await b2.app.services.events.purgeExpired();
    const swept = await follow(b2, s.id, '', { headers: { 'last-event-id': old } });
    assert.is(swept.status, 410);
    const ok = await follow(b2, s.id, '?cursor=0');
    await ok.until(() => ok.events.length >= 1, 'the retained event');
    assert.equal(ok.ids(), [fresh]);
    await closed(ok);
  } finally {
    await b2.close();
  }
});

t('Accept must allow text/event-stream', async ({ b }) => {
  const s = await createStream(b);
  const res = await b.api('GET', `/api/v3/event-streams/${s.id}/events`, {
    headers: { accept: 'application/json' },
  });
  assert.is(res.status, 406);
});

t.run();
