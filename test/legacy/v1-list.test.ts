// GET /api/v1/usuario: every student by id, 150 per page, an opaque cursor followed through
// paginator.next_page_url / prev_page_url; keyset pages (never OFFSET).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Api, Booted } from '../helpers/app.ts';
import { bootLegacy, legacyClient } from '../helpers/legacy-contract.ts';
import { transaction } from '../../src/db/tx.ts';

interface Ctx {
  b: Booted;
  v1: Api;
  ids: number[];
}

const t = suite<Ctx>('v1 usuario list');
t.before(async (ctx) => {
  const { b, legacy } = await bootLegacy();
  ctx.b = b;
  ctx.v1 = legacy;
  const { users } = b.app.services;
  // 310 students: pages of 150, 150 and 10.
  ctx.ids = await transaction(b.app.db, async (tx) => {
    const ids: number[] = [];
    for (let i = 0; i < 310; i++) {
      const u = await users.create(
        b.accountId,
        { name: `Aluno ${i}`, email: `aluno${i}@example.com` },
        { tx },
      );
      ids.push(u.id);
    }
    return ids;
  });
  // Another school's students never show.
  const other = await b.app.services.accounts.createAccount({ name: 'Other' });
  await users.create(other.id, { name: 'Outro', email: 'outro@example.com' });
});
t.after(async (ctx) => ctx.b.close());

/** The path and query of a paginator URL, checked to be on this server's public base. */
function pathOf(b: Booted, url: string): string {
  assert.ok(url.startsWith(`${b.url}/api/v1/usuario?cursor=`), url);
  return url.slice(b.url.length);
}

t('pages of 150 by id, next and prev URLs, null at both ends', async ({ b, v1, ids }) => {
  const first = await v1('GET', '/api/v1/usuario');
  assert.is(first.status, 200);
  assert.equal(Object.keys(first.body), ['code', 'success', 'data']);
  assert.equal([first.body.code, first.body.success], [200, true]);
  assert.equal(Object.keys(first.body.data), ['paginator', 'usuario']);
  const p1 = first.body.data.paginator;
  assert.equal(Object.keys(p1), ['next_page_url', 'prev_page_url', 'perPage']);
  assert.is(p1.perPage, 150);
  assert.is(p1.prev_page_url, null);
  assert.equal(
    first.body.data.usuario.map((u: any) => u.id),
    ids.slice(0, 150),
  );
  assert.equal(first.body.data.usuario[0].email, 'aluno0@example.com');

  const second = await v1('GET', pathOf(b, p1.next_page_url));
  assert.equal(
    second.body.data.usuario.map((u: any) => u.id),
    ids.slice(150, 300),
  );
  const third = await v1('GET', pathOf(b, second.body.data.paginator.next_page_url));
  assert.equal(
    third.body.data.usuario.map((u: any) => u.id),
    ids.slice(300),
  );
  assert.is(third.body.data.paginator.next_page_url, null);

  // Back from the last page: the same second page, and its prev leads to the first.
  const back = await v1('GET', pathOf(b, third.body.data.paginator.prev_page_url));
  assert.equal(back.body.data.usuario, second.body.data.usuario);
  const start = await v1('GET', pathOf(b, back.body.data.paginator.prev_page_url));
  assert.equal(start.body.data.usuario, first.body.data.usuario);
  assert.is(start.body.data.paginator.prev_page_url, null);
});

t('a page is a keyset read: no OFFSET, the boundary id in the query', async ({ b, v1 }) => {
  const first = await v1('GET', '/api/v1/usuario');
  const seen: string[] = [];
  const listen = (q: { sql: string }) => seen.push(q.sql.toLowerCase().replace(/`/g, '"'));
  b.app.db.on('query', listen);
  try {
    await v1('GET', pathOf(b, first.body.data.paginator.next_page_url));
  } finally {
    b.app.db.off('query', listen);
  }
  const page = seen.filter((s) => s.includes('from "users"'));
  assert.is(page.length, 1, seen.join('\n'));
  assert.not.match(page[0]!, /offset/);
  assert.match(page[0]!, /"users"\."id" > \?|"users"\."id" > \$\d/);
  assert.match(page[0]!, /limit/);
});

t('an altered cursor, or one of another school, is 400 invalid_cursor', async ({ b, v1 }) => {
  const first = await v1('GET', '/api/v1/usuario');
  const url = new URL(first.body.data.paginator.next_page_url);
  const cursor = url.searchParams.get('cursor')!;
  const altered = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'BB' : 'AA');
  const bad = await v1('GET', `/api/v1/usuario?cursor=${encodeURIComponent(altered)}`);
  assert.equal(bad.body, {
    success: false,
    code: 400,
    msg: 'The pagination cursor is invalid: it was altered, belongs to another sort order or other filters, or has expired (24 h).',
  });
  const { key } = await b.app.services.accounts.createLegacyKey(
    (await b.app.services.accounts.createAccount({ name: 'Third' })).id,
  );
  const theirs = await legacyClient(b, key)(
    'GET',
    `/api/v1/usuario?cursor=${encodeURIComponent(cursor)}`,
  );
  assert.is(theirs.status, 400);
  assert.is(theirs.body.code, 400);
});

t('a cursor lives 24 hours', async ({ b, v1 }) => {
  const first = await v1('GET', '/api/v1/usuario');
  const next = pathOf(b, first.body.data.paginator.next_page_url);
  b.clock.advance(24 * 3600_000 + 1000);
  const res = await v1('GET', next);
  assert.is(res.status, 400);
});

t.run();
