import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { P, account, all, mod, names, product } from '../helpers/catalog.ts';
import { transaction } from '../../src/db/tx.ts';
import { AppError } from '../../src/errors.ts';

interface Ctx {
  b: Booted;
  /** A replica of the booted account, and a replica of that replica. */
  r: { id: number; secret: string };
  r2: { id: number; secret: string };
}
const t = suite<Ctx>('v3 catalog: replicas and publishing');
t.before(async (ctx) => {
  ctx.b = await boot();
  ctx.r = await account(ctx.b, 'Replica school', ctx.b.accountId);
  ctx.r2 = await account(ctx.b, 'Replica of the replica', ctx.r.id);
});
t.after(async (ctx) => ctx.b.close());

/** The copy of a source product in a replica account (found by name: names are unique here). */
async function copyOf(b: Booted, secret: string, name: string) {
  const found = (await all(b, `${P}?limit=200`, secret)).filter((p) => p.name === name);
  assert.is(found.length, 1, `one copy of ${name}`);
  return found[0];
}

const modulesOf = async (b: Booted, secret: string, productId: string, query = '') =>
  all(b, `${P}/${productId}/modules?limit=200${query}`, secret);

const publish = (b: Booted, accountId: number, productId: string) =>
  transaction(b.app.db, (tx) =>
    b.app.services.catalog.publishProduct({ tx }, accountId, Number(productId)),
  );

t(
  'a product and its modules are copied into each replica, down the chain',
  async ({ b, r, r2 }) => {
    const src = await product(b, { name: 'Replicated course', description: 'd' });
    const g = await mod(b, src.id, { name: 'G', kind: 'group', settings: { x: 1 } });
    await mod(b, src.id, { name: 'M1', kind: 'module', parent_id: g.id });
    await mod(b, src.id, { name: 'Top', kind: 'module', image: 'https://i.example.com/t.png' });
    for (const acc of [r, r2]) {
      const copy = await copyOf(b, acc.secret, 'Replicated course');
      assert.is.not(copy.id, src.id);
      assert.equal(
        [copy.name, copy.description, copy.status, copy.replica, copy.modules_count],
        ['Replicated course', 'd', 'draft', true, 3],
      );
      const mods = await modulesOf(b, acc.secret, copy.id);
      const byName = Object.fromEntries(mods.map((m) => [m.name, m]));
      assert.equal(names(mods), ['G', 'M1', 'Top']);
      assert.is(byName.M1.parent_id, byName.G.id);
      assert.is.not(byName.G.id, g.id);
      assert.equal(byName.G.settings, { x: 1 });
      assert.is(byName.Top.image, 'https://i.example.com/t.png');
      assert.equal(
        mods.map((m) => [m.position, m.product_id]),
        [
          [1, copy.id],
          [1, copy.id],
          [2, copy.id],
        ],
      );
      // The copy has its own default schedule, with a tag of the replica account.
      const [s] = (await b.api('GET', `${P}/${copy.id}/access-schedules`, { secret: acc.secret }))
        .body.data;
      assert.equal([s.name, s.default], ['Replicated course', true]);
      const tag = await b.api('GET', `/api/v3/tags/${s.tag_id}`, { secret: acc.secret });
      assert.is(tag.status, 200);
      assert.is((await b.api('GET', `/api/v3/tags/${s.tag_id}`)).status, 404);
    }
    // The source account sees nothing of its replicas.
    assert.is((await b.api('GET', P)).body.data.filter((p: any) => p.replica).length, 0);
    assert.is((await b.api('GET', `${P}/${src.id}`, { secret: r.secret })).status, 404);
  },
);

t(
  'in a replica, copies accept only status; everything else is replica_readonly',
  async ({ b, r }) => {
    const src = await product(b, { name: 'Read-only course' });
    const g = await mod(b, src.id, { name: 'G', kind: 'group' });
    const copy = await copyOf(b, r.secret, 'Read-only course');
    const [cg] = await modulesOf(b, r.secret, copy.id);
    const [sched] = (await b.api('GET', `${P}/${copy.id}/access-schedules`, { secret: r.secret }))
      .body.data;
    const refused: [string, string, unknown][] = [
      ['PATCH', `${P}/${copy.id}`, { name: 'Mine now' }],
      ['PATCH', `${P}/${copy.id}`, { status: 'published', description: 'x' }],
      ['DELETE', `${P}/${copy.id}`, undefined],
      ['POST', `${P}/${copy.id}/modules`, { name: 'New', kind: 'module' }],
      ['PATCH', `${P}/${copy.id}/modules/${cg.id}`, { name: 'G2' }],
      ['PATCH', `${P}/${copy.id}/modules/${cg.id}`, { deleted: true }],
      ['DELETE', `${P}/${copy.id}/modules/${cg.id}`, undefined],
      ['PUT', `${P}/${copy.id}/module-order`, { module_ids: [cg.id] }],
      ['POST', `${P}/${copy.id}/access-schedules`, { name: 'Local schedule' }],
      ['PATCH', `${P}/${copy.id}/access-schedules/${sched.id}`, { name: 'Local' }],
      ['DELETE', `${P}/${copy.id}/access-schedules/${sched.id}`, undefined],
    ];
    for (const [method, path, body] of refused) {
      const res = await b.api(method, path, { body, key: newKey(), secret: r.secret });
      assert.is(res.status, 403, `${method} ${path}`);
      assert.is(res.body.error.code, 'replica_readonly', `${method} ${path}`);
      assert.is(res.body.error.details[0].reason, 'replica_copy');
    }
    const fields = await b.api('PATCH', `${P}/${copy.id}`, {
      body: { status: 'published', description: 'x' },
      secret: r.secret,
    });
    assert.equal(
      fields.body.error.details.map((d: any) => d.field),
      ['description'],
    );
    // Nothing changed, and status alone is accepted.
    const same = await copyOf(b, r.secret, 'Read-only course');
    assert.equal(same, copy);
    const st = await b.api('PATCH', `${P}/${copy.id}`, {
      body: { status: 'published' },
      headers: { 'if-match': `"${copy.revision}"` },
      secret: r.secret,
    });
    assert.is(st.status, 200);
    assert.is(st.body.data.status, 'published');
    const mst = await b.api('PATCH', `${P}/${copy.id}/modules/${cg.id}`, {
      body: { status: 'published' },
      secret: r.secret,
    });
    assert.is(mst.status, 200);
    assert.is(mst.body.data.status, 'published');
    // The source is untouched by the replica's status.
    assert.is((await b.api('GET', `${P}/${src.id}`)).body.data.status, 'draft');
    assert.is((await b.api('GET', `${P}/${src.id}/modules/${g.id}`)).body.data.status, 'draft');
    // A product the replica account creates itself is its own, fully writable.
    const own = await product(b, { name: 'Local course' }, r.secret);
    assert.is(own.replica, false);
    await mod(b, own.id, { name: 'Local module', kind: 'module' }, r.secret);
    assert.is(
      (await b.api('PATCH', `${P}/${own.id}`, { body: { name: 'Local 2' }, secret: r.secret }))
        .status,
      200,
    );
  },
);

t(
  'changes at the source reach the copies; a replica keeps its own status',
  async ({ b, r, r2 }) => {
    const src = await product(b, { name: 'Evolving course' });
    const a = await mod(b, src.id, { name: 'A', kind: 'module' });
    const c = await mod(b, src.id, { name: 'C', kind: 'module' });
    const g = await mod(b, src.id, { name: 'G', kind: 'group' });
    const copy = await copyOf(b, r.secret, 'Evolving course');
    await b.api('PATCH', `${P}/${copy.id}`, { body: { status: 'published' }, secret: r.secret });

    await b.api('PATCH', `${P}/${src.id}`, { body: { name: 'Evolved course' } });
    const renamed = await copyOf(b, r.secret, 'Evolved course');
    assert.equal([renamed.id, renamed.status], [copy.id, 'published']);
    // R2 copies R: the status R wrote reached R2 as well.
    assert.is((await copyOf(b, r2.secret, 'Evolved course')).status, 'published');

    await b.api('PUT', `${P}/${src.id}/module-order`, { body: { module_ids: [g.id, c.id, a.id] } });
    await b.api('PATCH', `${P}/${src.id}/modules/${a.id}`, { body: { parent_id: g.id } });
    await b.api('DELETE', `${P}/${src.id}/modules/${c.id}`);
    for (const acc of [r, r2]) {
      const cp = await copyOf(b, acc.secret, 'Evolved course');
      const mods = await modulesOf(b, acc.secret, cp.id, '&parent_id=null');
      assert.equal(
        mods.map((m) => [m.name, m.position]),
        [['G', 1]],
      );
      const inside = await modulesOf(b, acc.secret, cp.id, `&parent_id=${mods[0].id}`);
      assert.equal(names(inside), ['A']);
      assert.equal(names(await modulesOf(b, acc.secret, cp.id, '&deleted=true')), ['C']);
    }
    // A status written at the source is pushed, over the replica's choice.
    await b.api('PATCH', `${P}/${src.id}`, { body: { status: 'draft' } });
    assert.is((await copyOf(b, r.secret, 'Evolved course')).status, 'draft');

    // Deleting the source deletes its copies, down the chain.
    assert.is((await b.api('DELETE', `${P}/${src.id}`)).status, 204);
    assert.is((await b.api('GET', `${P}/${copy.id}`, { secret: r.secret })).status, 404);
    for (const acc of [r, r2]) {
      const left = (await all(b, `${P}?limit=200`, acc.secret)).filter((p) =>
        p.name.startsWith('Evolved'),
      );
      assert.equal(left, []);
    }
  },
);

t(
  'publishProduct publishes the product, its active modules and their copies',
  async ({ b, r, r2 }) => {
    const src = await product(b, { name: 'Launch course' });
    const g = await mod(b, src.id, { name: 'G', kind: 'group' });
    const m = await mod(b, src.id, { name: 'M', kind: 'module', parent_id: g.id });
    const trashed = await mod(b, src.id, { name: 'Old', kind: 'module' });
    await b.api('DELETE', `${P}/${src.id}/modules/${trashed.id}`);
    // A copy set back to draft locally is published too.
    const copy = await copyOf(b, r.secret, 'Launch course');
    const [cg] = await modulesOf(b, r.secret, copy.id);
    await b.api('PATCH', `${P}/${copy.id}/modules/${cg.id}`, {
      body: { status: 'draft' },
      secret: r.secret,
    });

    const result = await publish(b, b.accountId, src.id);
    assert.is(result.status, 'published');
    const p = (await b.api('GET', `${P}/${src.id}`)).body.data;
    assert.is(p.status, 'published');
    assert.is.not(p.revision, src.revision);
    assert.equal(
      (await modulesOf(b, b.secret, src.id)).map((x) => [x.name, x.status]),
      [
        ['G', 'published'],
        ['M', 'published'],
      ],
    );
    assert.is(
      (await b.api('GET', `${P}/${src.id}/modules/${trashed.id}`)).body.data.status,
      'draft',
    );
    assert.is((await b.api('GET', `${P}/${src.id}/modules/${m.id}`)).body.data.deleted, false);
    for (const acc of [r, r2]) {
      const cp = await copyOf(b, acc.secret, 'Launch course');
      assert.is(cp.status, 'published');
      assert.equal(
        (await modulesOf(b, acc.secret, cp.id)).map((x) => [x.name, x.status]),
        [
          ['G', 'published'],
          ['M', 'published'],
        ],
      );
      const old = await modulesOf(b, acc.secret, cp.id, '&deleted=true');
      assert.equal(
        old.map((x) => [x.name, x.status]),
        [['Old', 'draft']],
      );
    }
    // In the replica account, publishing its copy is refused; nothing was written.
    try {
      await publish(b, r.id, copy.id);
      assert.unreachable('publishing a copy must fail');
    } catch (err) {
      assert.instance(err, AppError);
      assert.is((err as AppError).code, 'replica_readonly');
    }
    try {
      await publish(b, b.accountId, '999999');
      assert.unreachable('publishing a missing product must fail');
    } catch (err) {
      assert.is((err as AppError).code, 'not_found');
    }
  },
);

t('publishing creates copies that a replica created later did not have yet', async ({ b }) => {
  const src = await product(b, { name: 'Older course' });
  await mod(b, src.id, { name: 'Intro', kind: 'module' });
  const late = await account(b, 'Late replica', b.accountId);
  assert.equal(await all(b, P, late.secret), []);
  await publish(b, b.accountId, src.id);
  const copy = await copyOf(b, late.secret, 'Older course');
  assert.equal([copy.status, copy.modules_count], ['published', 1]);
});

t('resetAccount deletes the catalog of an account and its copies; tags stay', async ({ b }) => {
  const box = await account(b, 'Sandbox');
  const boxReplica = await account(b, 'Sandbox replica', box.id);
  const p = await product(b, { name: 'Sandbox course' }, box.secret);
  await mod(b, p.id, { name: 'M', kind: 'module' }, box.secret);
  const before = (await b.api('GET', '/api/v3/tags', { secret: box.secret })).body.data;
  assert.equal(names(before), ['Sandbox course']);
  const mine = await product(b, { name: 'Untouched' });
  await transaction(b.app.db, (tx) => b.app.services.catalog.resetAccount({ tx }, box.id));
  assert.equal(await all(b, P, box.secret), []);
  assert.equal(await all(b, P, boxReplica.secret), []);
  assert.equal(names((await b.api('GET', '/api/v3/tags', { secret: box.secret })).body.data), [
    'Sandbox course',
  ]);
  assert.is((await b.api('GET', `${P}/${mine.id}`)).status, 200);
  const db = b.app.db;
  for (const table of ['products', 'modules', 'access_schedules']) {
    const [row] = await db(table).where('account_id', box.id).count({ n: '*' });
    assert.is(Number(row!.n), 0, table);
  }
});

t.run();
