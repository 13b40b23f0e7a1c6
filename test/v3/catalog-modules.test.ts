import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { P, account, all, mod, names, product } from '../helpers/catalog.ts';

const t = suite<{ b: Booted }>('v3 catalog: modules');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const M = (productId: string) => `${P}/${productId}/modules`;
const positions = (rows: any[]) => rows.map((r) => [r.name, r.position]);

t('POST: every field of the spec; appended at the end of its parent', async ({ b }) => {
  const p = await product(b);
  const res = await b.api('POST', M(p.id), {
    body: {
      name: ' Basics ',
      kind: 'group',
      status: 'published',
      settings: { drip_days: 7, nested: { a: [1, 2] } },
      image: 'https://cdn.example.com/g.png',
    },
    key: newKey(),
  });
  assert.is(res.status, 201);
  const g = res.body.data;
  assert.equal(g, {
    object: 'module',
    id: g.id,
    product_id: p.id,
    parent_id: null,
    image: 'https://cdn.example.com/g.png',
    revision: g.revision,
    kind: 'group',
    status: 'published',
    name: 'Basics',
    position: 1,
    lessons_count: 0,
    deleted: false,
    settings: { drip_days: 7, nested: { a: [1, 2] } },
    created_at: g.created_at,
    updated_at: g.created_at,
  });
  assert.is(res.headers.get('etag'), `"${g.revision}"`);
  const m1 = await mod(b, p.id, { name: 'Variables', kind: 'module', parent_id: g.id });
  const m2 = await mod(b, p.id, { name: 'Loops', kind: 'module', parent_id: g.id });
  const top = await mod(b, p.id, { name: 'Project', kind: 'module' });
  assert.equal(
    [m1, m2, top].map((m) => [m.parent_id, m.position, m.status, m.settings, m.image]),
    [
      [g.id, 1, 'draft', null, null],
      [g.id, 2, 'draft', null, null],
      [null, 2, 'draft', null, null],
    ],
  );
  const got = await b.api('GET', `${M(p.id)}/${m1.id}`);
  assert.equal(got.body.data, m1);
  assert.is(got.headers.get('etag'), `"${m1.revision}"`);
  const noKey = await b.api('POST', M(p.id), { body: { name: 'x', kind: 'module' } });
  assert.is(noKey.body.error.code, 'idempotency_key_required');
  for (const body of [
    { name: 'x' },
    { name: 'x', kind: 'lesson' },
    { name: 'x', kind: 'module', settings: [1] },
    { name: 'x', kind: 'module', image: 'ftp://example.com/a.png' },
    { name: 'x', kind: 'module', parent_id: 'abc' },
  ]) {
    const res = await b.api('POST', M(p.id), { body, key: newKey() });
    assert.is(res.status, 422, JSON.stringify(body));
    assert.is(res.body.error.code, 'validation_failed');
  }
});

t('hierarchy: groups at the top only, modules inside active groups only', async ({ b }) => {
  const p = await product(b);
  const other = await product(b, { name: 'Other' });
  const g = await mod(b, p.id, { name: 'G', kind: 'group' });
  const m = await mod(b, p.id, { name: 'M', kind: 'module' });
  const foreignGroup = await mod(b, other.id, { name: 'OG', kind: 'group' });
  const trashed = await mod(b, p.id, { name: 'T', kind: 'group' });
  await b.api('DELETE', `${M(p.id)}/${trashed.id}`);
  const cases: [Record<string, unknown>, string][] = [
    [{ name: 'x', kind: 'group', parent_id: g.id }, 'group_not_top_level'],
    [{ name: 'x', kind: 'module', parent_id: m.id }, 'parent_not_group'],
    [{ name: 'x', kind: 'module', parent_id: foreignGroup.id }, 'parent_not_found'],
    [{ name: 'x', kind: 'module', parent_id: '2147483648' }, 'parent_not_found'],
    [{ name: 'x', kind: 'module', parent_id: trashed.id }, 'parent_in_trash'],
  ];
  for (const [body, reason] of cases) {
    const res = await b.api('POST', M(p.id), { body, key: newKey() });
    assert.is(res.status, 422, reason);
    assert.is(res.body.error.code, 'hierarchy_violation');
    assert.equal(res.body.error.details[0].field, 'parent_id');
    assert.is(res.body.error.details[0].reason, reason);
  }
  // Moving: a module into a group goes to its end; a group never moves under anything.
  const inside = await mod(b, p.id, { name: 'In', kind: 'module', parent_id: g.id });
  const moved = await b.api('PATCH', `${M(p.id)}/${m.id}`, { body: { parent_id: g.id } });
  assert.is(moved.status, 200);
  assert.equal([moved.body.data.parent_id, moved.body.data.position], [g.id, 2]);
  assert.is.not(moved.body.data.revision, m.revision);
  const back = await b.api('PATCH', `${M(p.id)}/${inside.id}`, { body: { parent_id: null } });
  // M left the top level and T is in the trash: G (1) is the last active one there.
  assert.equal([back.body.data.parent_id, back.body.data.position], [null, 2]);
  const groupMove = await b.api('PATCH', `${M(p.id)}/${g.id}`, { body: { parent_id: g.id } });
  assert.is(groupMove.status, 422);
  assert.is(groupMove.body.error.details[0].reason, 'group_not_top_level');
  const intoModule = await b.api('PATCH', `${M(p.id)}/${m.id}`, { body: { parent_id: inside.id } });
  assert.is(intoModule.body.error.details[0].reason, 'parent_not_group');
  const kind = await b.api('PATCH', `${M(p.id)}/${m.id}`, { body: { kind: 'group' } });
  assert.is(kind.status, 422);
  assert.is(kind.body.error.code, 'unknown_field');
});

t('list: by position, filters, cursor pages, 404 for a product out of reach', async ({ b }) => {
  const p = await product(b);
  const g1 = await mod(b, p.id, { name: 'G1', kind: 'group', status: 'published' });
  const a = await mod(b, p.id, { name: 'A', kind: 'module', parent_id: g1.id });
  await mod(b, p.id, { name: 'B', kind: 'module', parent_id: g1.id, status: 'published' });
  await mod(b, p.id, { name: 'C', kind: 'module' });
  const g2 = await mod(b, p.id, { name: 'G2', kind: 'group' });
  await b.api('DELETE', `${M(p.id)}/${a.id}`);
  const list = await b.api('GET', M(p.id));
  assert.is(list.status, 200);
  assert.equal(positions(list.body.data), [
    ['G1', 1],
    ['B', 2],
    ['C', 2],
    ['G2', 3],
  ]);
  assert.equal(list.body.page, { limit: 50, next_cursor: null, prev_cursor: null });
  const top = await b.api('GET', `${M(p.id)}?parent_id=null`);
  assert.equal(names(top.body.data), ['G1', 'C', 'G2']);
  const desc = await b.api('GET', `${M(p.id)}?parent_id=null&sort=-position`);
  assert.equal(names(desc.body.data), ['G2', 'C', 'G1']);
  assert.equal(names((await b.api('GET', `${M(p.id)}?parent_id=${g1.id}`)).body.data), ['B']);
  assert.equal(names((await b.api('GET', `${M(p.id)}?parent_id=${g2.id}`)).body.data), []);
  assert.equal(names((await b.api('GET', `${M(p.id)}?parent_id=2147483648`)).body.data), []);
  assert.equal(names((await b.api('GET', `${M(p.id)}?kind=group`)).body.data), ['G1', 'G2']);
  assert.equal(names((await b.api('GET', `${M(p.id)}?status=published`)).body.data), ['G1', 'B']);
  const trash = await b.api('GET', `${M(p.id)}?deleted=true`);
  assert.equal(names(trash.body.data), ['A']);
  assert.is(trash.body.data[0].deleted, true);
  assert.equal(names(await all(b, `${M(p.id)}?limit=1`)), ['G1', 'B', 'C', 'G2']);
  const page = await b.api('GET', `${M(p.id)}?limit=3`);
  const cursor = encodeURIComponent(page.body.page.next_cursor);
  // A cursor is bound to its product and filters.
  const p2 = await product(b);
  assert.is((await b.api('GET', `${M(p2.id)}?limit=3&cursor=${cursor}`)).status, 400);
  assert.is((await b.api('GET', `${M(p.id)}?limit=3&kind=group&cursor=${cursor}`)).status, 400);
  const bad = await b.api('GET', `${M(p.id)}?kind=lesson`);
  assert.is(bad.status, 422);
  assert.is((await b.api('GET', `${M(p.id)}?parent_id=x`)).status, 422);
  assert.is((await b.api('GET', `${M(p.id)}?limit=201`)).status, 422);
  // Missing or another account's product: 404, never an empty list.
  const foreign = await account(b, 'Module school');
  assert.is((await b.api('GET', M(p.id), { secret: foreign.secret })).status, 404);
  assert.is((await b.api('GET', M('999999'))).status, 404);
  assert.is((await b.api('GET', M('999999'))).body.error.code, 'not_found');
  const inOther = await b.api('GET', `${M(p2.id)}/${g1.id}`);
  assert.is(inOther.status, 404);
});

t('trash: DELETE, GET still works, restore at the end, edits wait for restore', async ({ b }) => {
  const p = await product(b);
  const a = await mod(b, p.id, { name: 'A', kind: 'module' });
  const c = await mod(b, p.id, { name: 'B', kind: 'module' });
  const stale = await b.api('DELETE', `${M(p.id)}/${a.id}`, { headers: { 'if-match': '"x"' } });
  assert.is(stale.status, 412);
  const del = await b.api('DELETE', `${M(p.id)}/${a.id}`, {
    headers: { 'if-match': `"${a.revision}"` },
  });
  assert.is(del.status, 204);
  const gone = await b.api('GET', `${M(p.id)}/${a.id}`);
  assert.is(gone.status, 200);
  assert.is(gone.body.data.deleted, true);
  assert.is((await b.api('DELETE', `${M(p.id)}/${a.id}`)).status, 204);
  const edit = await b.api('PATCH', `${M(p.id)}/${a.id}`, { body: { name: 'Z' } });
  assert.is(edit.status, 409);
  assert.is(edit.body.error.code, 'state_conflict');
  assert.is(edit.body.error.details[0].reason, 'in_trash');
  const restored = await b.api('PATCH', `${M(p.id)}/${a.id}`, {
    body: { deleted: false, name: 'A2' },
    headers: { 'if-match': `"${gone.body.data.revision}"` },
  });
  assert.is(restored.status, 200);
  assert.equal(
    [restored.body.data.deleted, restored.body.data.position, restored.body.data.name],
    [false, 3, 'A2'],
  );
  assert.equal(positions((await b.api('GET', M(p.id))).body.data), [
    ['B', 2],
    ['A2', 3],
  ]);
  // PATCH deleted: true trashes like DELETE.
  const viaPatch = await b.api('PATCH', `${M(p.id)}/${c.id}`, { body: { deleted: true } });
  assert.is(viaPatch.status, 200);
  assert.is(viaPatch.body.data.deleted, true);
});

t('a group takes its modules to the trash and brings them back', async ({ b }) => {
  const p = await product(b);
  const g = await mod(b, p.id, { name: 'G', kind: 'group' });
  const a = await mod(b, p.id, { name: 'A', kind: 'module', parent_id: g.id });
  const c = await mod(b, p.id, { name: 'C', kind: 'module', parent_id: g.id });
  const d = await mod(b, p.id, { name: 'D', kind: 'module', parent_id: g.id });
  await b.api('DELETE', `${M(p.id)}/${a.id}`);
  await b.api('DELETE', `${M(p.id)}/${g.id}`);
  assert.equal(names((await b.api('GET', M(p.id))).body.data), []);
  assert.equal(names((await b.api('GET', `${M(p.id)}?deleted=true`)).body.data).sort(), [
    'A',
    'C',
    'D',
    'G',
  ]);
  const orphan = await b.api('PATCH', `${M(p.id)}/${c.id}`, { body: { deleted: false } });
  assert.is(orphan.status, 422);
  assert.is(orphan.body.error.code, 'hierarchy_violation');
  assert.is(orphan.body.error.details[0].reason, 'parent_in_trash');
  const back = await b.api('PATCH', `${M(p.id)}/${g.id}`, { body: { deleted: false } });
  assert.is(back.status, 200);
  // C and D come back in their places; A was trashed on its own and stays in the trash.
  assert.equal(positions((await b.api('GET', `${M(p.id)}?parent_id=${g.id}`)).body.data), [
    ['C', 2],
    ['D', 3],
  ]);
  assert.equal(names((await b.api('GET', `${M(p.id)}?deleted=true`)).body.data), ['A']);
  assert.is((await b.api('GET', `${M(p.id)}/${d.id}`)).body.data.deleted, false);
});

t('PUT module-order: exactly the active modules of one parent', async ({ b }) => {
  const p = await product(b);
  const g = await mod(b, p.id, { name: 'G', kind: 'group' });
  const x = await mod(b, p.id, { name: 'X', kind: 'module' });
  const y = await mod(b, p.id, { name: 'Y', kind: 'module' });
  const z = await mod(b, p.id, { name: 'Z', kind: 'module' });
  const c1 = await mod(b, p.id, { name: 'C1', kind: 'module', parent_id: g.id });
  const c2 = await mod(b, p.id, { name: 'C2', kind: 'module', parent_id: g.id });
  await b.api('DELETE', `${M(p.id)}/${z.id}`);
  const order = `${P}/${p.id}/module-order`;
  const res = await b.api('PUT', order, {
    body: { parent_id: null, module_ids: [y.id, g.id, x.id] },
  });
  assert.is(res.status, 200);
  assert.equal(positions(res.body.data), [
    ['Y', 1],
    ['G', 2],
    ['X', 3],
  ]);
  assert.is.not(res.body.data[0].revision, y.revision);
  assert.equal(names((await b.api('GET', `${M(p.id)}?parent_id=null`)).body.data), ['Y', 'G', 'X']);
  const inGroup = await b.api('PUT', order, {
    body: { parent_id: g.id, module_ids: [c2.id, c1.id] },
  });
  assert.equal(positions(inGroup.body.data), [
    ['C2', 1],
    ['C1', 2],
  ]);
  const reasons = async (body: unknown) => {
    const r = await b.api('PUT', order, { body });
    assert.is(r.status, 422);
    assert.is(r.body.error.code, 'order_set_mismatch');
    return r.body.error.details.map((d: any) => [d.field, d.reason]);
  };
  assert.equal(await reasons({ module_ids: [y.id, g.id] }), [['module_ids', 'missing']]);
  assert.equal(await reasons({ module_ids: [y.id, g.id, x.id, z.id] }), [
    ['module_ids', 'unexpected'],
  ]);
  assert.equal(await reasons({ module_ids: [y.id, g.id, x.id, c1.id] }), [
    ['module_ids', 'unexpected'],
  ]);
  assert.equal(await reasons({ module_ids: [y.id, y.id, x.id] }), [
    ['module_ids', 'duplicate'],
    ['module_ids', 'missing'],
  ]);
  const notGroup = await b.api('PUT', order, { body: { parent_id: x.id, module_ids: [] } });
  assert.is(notGroup.status, 422);
  assert.is(notGroup.body.error.code, 'hierarchy_violation');
  assert.is(notGroup.body.error.details[0].reason, 'parent_not_group');
  assert.is(
    (await b.api('PUT', `${P}/999999/module-order`, { body: { module_ids: [] } })).status,
    404,
  );
  // Nothing changed by the rejected calls.
  assert.equal(names((await b.api('GET', `${M(p.id)}?parent_id=null`)).body.data), ['Y', 'G', 'X']);
});

t('PATCH guards with If-Match; products.write is needed to change modules', async ({ b }) => {
  const p = await product(b);
  const m = await mod(b, p.id, { name: 'M', kind: 'module' });
  const stale = await b.api('PATCH', `${M(p.id)}/${m.id}`, {
    body: { status: 'published' },
    headers: { 'if-match': '"nope"' },
  });
  assert.is(stale.status, 412);
  const ok = await b.api('PATCH', `${M(p.id)}/${m.id}`, {
    body: { status: 'published', settings: null, image: 'http://img.example.com/m.png' },
    headers: { 'if-match': `"${m.revision}"` },
  });
  assert.is(ok.status, 200);
  assert.equal(
    [ok.body.data.status, ok.body.data.settings, ok.body.data.image],
    ['published', null, 'http://img.example.com/m.png'],
  );
  assert.is(ok.headers.get('etag'), `"${ok.body.data.revision}"`);
  const reader = await credentialWith(b, ['products.read']);
  assert.is((await b.api('GET', M(p.id), { secret: reader.secret })).status, 200);
  for (const [method, path, body] of [
    ['POST', M(p.id), { name: 'x', kind: 'module' }],
    ['PATCH', `${M(p.id)}/${m.id}`, { name: 'x' }],
    ['DELETE', `${M(p.id)}/${m.id}`, undefined],
    ['PUT', `${P}/${p.id}/module-order`, { module_ids: [m.id] }],
  ] as const) {
    const res = await b.api(method, path, { body, key: newKey(), secret: reader.secret });
    assert.is(res.status, 403, `${method} ${path}`);
    assert.is(res.body.error.details[0].reason, 'products.write');
  }
});

t('parallel creates in one parent get distinct positions 1..n', async ({ b }) => {
  const p = await product(b);
  const made = await Promise.all(
    Array.from({ length: 12 }, (_, i) => mod(b, p.id, { name: `P${i}`, kind: 'module' })),
  );
  assert.equal(
    made.map((m) => m.position).sort((x, y) => x - y),
    Array.from({ length: 12 }, (_, i) => i + 1),
  );
  const listed = await b.api('GET', `${M(p.id)}?limit=200`);
  assert.equal(
    listed.body.data.map((m: any) => m.position),
    Array.from({ length: 12 }, (_, i) => i + 1),
  );
});

t.run();
