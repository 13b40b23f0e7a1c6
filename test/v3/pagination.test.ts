// Cursor pagination, exercised on GET /users: walk forward and back with exact ids, and every way a
// cursor can be refused (altered, other sort, other filters, older than 24 h), plus limit bounds.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted; ids: string[] }>('v3 pagination');
t.before(async (ctx) => {
  ctx.b = await boot();
  ctx.ids = [];
  for (let i = 1; i <= 5; i++) {
    const res = await ctx.b.api('POST', '/api/v3/users', {
      body: { name: `User ${i}`, email: `user${i}@example.com` },
      key: newKey(),
    });
    assert.is(res.status, 201);
    ctx.ids.push(res.body.data.id);
    ctx.b.clock.advance(1000);
  }
});
t.after(async (ctx) => ctx.b.close());

const ids = (res: { body: any }) => res.body.data.map((u: any) => u.id);
const q = (c: string) => encodeURIComponent(c);

t('walks 5 users with limit 2 forward, then back, newest first', async ({ b, ids: all }) => {
  const [u1, u2, u3, u4, u5] = all;
  const p1 = await b.api('GET', '/api/v3/users?limit=2');
  assert.is(p1.status, 200);
  assert.equal(ids(p1), [u5, u4]);
  assert.is(p1.body.page.limit, 2);
  assert.is(p1.body.page.prev_cursor, null);
  assert.type(p1.body.page.next_cursor, 'string');

  const p2 = await b.api('GET', `/api/v3/users?limit=2&cursor=${q(p1.body.page.next_cursor)}`);
  assert.equal(ids(p2), [u3, u2]);
  assert.type(p2.body.page.prev_cursor, 'string');

  const p3 = await b.api('GET', `/api/v3/users?limit=2&cursor=${q(p2.body.page.next_cursor)}`);
  assert.equal(ids(p3), [u1]);
  assert.is(p3.body.page.next_cursor, null);

  const back2 = await b.api('GET', `/api/v3/users?limit=2&cursor=${q(p3.body.page.prev_cursor)}`);
  assert.equal(ids(back2), [u3, u2]);
  const back1 = await b.api(
    'GET',
    `/api/v3/users?limit=2&cursor=${q(back2.body.page.prev_cursor)}`,
  );
  assert.equal(ids(back1), [u5, u4]);
  assert.is(back1.body.page.prev_cursor, null);
  assert.type(back1.body.page.next_cursor, 'string');
});

t('sort=created_at walks oldest first', async ({ b, ids: all }) => {
  const [u1, u2, u3, u4, u5] = all;
  const p1 = await b.api('GET', '/api/v3/users?limit=3&sort=created_at');
  assert.equal(ids(p1), [u1, u2, u3]);
  const p2 = await b.api(
    'GET',
    `/api/v3/users?limit=3&sort=created_at&cursor=${q(p1.body.page.next_cursor)}`,
  );
  assert.equal(ids(p2), [u4, u5]);
  assert.is(p2.body.page.next_cursor, null);
  const all5 = await b.api('GET', '/api/v3/users');
  assert.equal(ids(all5), [u5, u4, u3, u2, u1]);
  assert.equal(all5.body.page, { limit: 50, next_cursor: null, prev_cursor: null });
});

t('an altered cursor is invalid_cursor', async ({ b }) => {
  const cursor: string = (await b.api('GET', '/api/v3/users?limit=2')).body.page.next_cursor;
  const [body, sig] = cursor.split('.') as [string, string];
  const flipped = (body[0] === 'A' ? 'B' : 'A') + body.slice(1);
  for (const bad of [
    `${flipped}.${sig}`,
    `${body}.${sig.slice(0, -2)}xx`,
    `${cursor}.extra`,
    'garbage',
  ]) {
    const res = await b.api('GET', `/api/v3/users?limit=2&cursor=${q(bad)}`);
    assert.is(res.status, 400, bad);
    assert.is(res.body.error.code, 'invalid_cursor');
  }
});

t('a cursor reused with another sort or other filters is invalid_cursor', async ({ b }) => {
  const cursor: string = (await b.api('GET', '/api/v3/users?limit=2')).body.page.next_cursor;
  const sorted = await b.api('GET', `/api/v3/users?limit=2&sort=created_at&cursor=${q(cursor)}`);
  assert.is(sorted.status, 400);
  assert.is(sorted.body.error.code, 'invalid_cursor');
  const filtered = await b.api(
    'GET',
    `/api/v3/users?limit=2&email=user1%40example.com&cursor=${q(cursor)}`,
  );
  assert.is(filtered.status, 400);
  assert.is(filtered.body.error.code, 'invalid_cursor');
  // The limit is not part of the cursor: another page size is fine.
  assert.is((await b.api('GET', `/api/v3/users?limit=3&cursor=${q(cursor)}`)).status, 200);
});

t('limit must be 1..200 (422 validation_failed on parameter limit)', async ({ b }) => {
  for (const limit of ['0', '201', 'abc']) {
    const res = await b.api('GET', `/api/v3/users?limit=${limit}`);
    assert.is(res.status, 422, limit);
    assert.is(res.body.error.code, 'validation_failed');
    assert.is(res.body.error.details[0].parameter, 'limit');
  }
  assert.is((await b.api('GET', '/api/v3/users?limit=200')).status, 200);
  assert.is((await b.api('GET', '/api/v3/users?limit=1')).body.data.length, 1);
});

t('an unknown query parameter is 400 unknown_parameter', async ({ b }) => {
  const res = await b.api('GET', '/api/v3/users?page=2');
  assert.is(res.status, 400);
  assert.is(res.body.error.code, 'unknown_parameter');
  assert.is(res.body.error.details[0].parameter, 'page');
  const bad = await b.api('GET', '/api/v3/users?sort=name');
  assert.is(bad.status, 422);
  assert.is(bad.body.error.details[0].parameter, 'sort');
});

// Last: it moves the shared clock a day forward.
t('a cursor older than 24 hours is invalid_cursor', async ({ b }) => {
  const cursor: string = (await b.api('GET', '/api/v3/users?limit=2')).body.page.next_cursor;
  b.clock.advance(23 * 3600 * 1000);
  assert.is((await b.api('GET', `/api/v3/users?limit=2&cursor=${q(cursor)}`)).status, 200);
  b.clock.advance(1 * 3600 * 1000 + 1000);
  const res = await b.api('GET', `/api/v3/users?limit=2&cursor=${q(cursor)}`);
  assert.is(res.status, 400);
  assert.is(res.body.error.code, 'invalid_cursor');
  assert.equal(res.body.error.details, []);
});

t.run();
