// Plans of access schedules, deliveries and Diamond automations: references in a delivery's
// grants and tags, the default schedule a created product gets, gateway ids one delivery each,
// Diamonds that cannot change, pruning (deliveries archived, schedules trashed, Diamonds kept),
// stale applications when something appeared since planning, the 30-day retention sweep, and a
// module whose group is in the trash.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DAY } from '../../src/clock.ts';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { waitFor } from '../helpers/operations.ts';

const t = suite<{ b: Booted }>('v3 plans: schedules, deliveries, Diamonds');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

const plan = (b: Booted, manifest: object, secret?: string) =>
  b.api('POST', '/api/v3/plans', { body: manifest, key: newKey(), secret });

async function planned(b: Booted, manifest: object) {
  const res = await plan(b, manifest);
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

async function applied(b: Booted, id: string) {
  const res = await b.api('POST', `/api/v3/plans/${id}/applications`, { key: newKey() });
  assert.is(res.status, 202, JSON.stringify(res.body));
  return waitFor(b, res.body.data.id);
}

async function invalid(b: Booted, manifest: object) {
  const res = await plan(b, manifest);
  assert.is(res.status, 422, JSON.stringify(res.body));
  assert.is(res.body.error.code, 'plan_invalid');
  return res.body.error.details.map((d: any) => `${d.field} ${d.code}`);
}

async function school(b: Booted) {
  const { id } = await b.app.services.accounts.createAccount({ name: 'Sales plans school' });
  const root = await b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
    name: 'Root',
  });
  const api: Booted['api'] = (m, p, o = {}) =>
    b.api(m, p, { ...o, secret: o.secret ?? root.secret });
  return { ...b, accountId: id, secret: root.secret, api } as Booted;
}

const STAGES = [
  { key: 'welcome', name: 'Welcome', communication: { subject: 'Hi', body: 'Lesson one.' } },
  { key: 'offer', name: 'Offer', communication: { subject: 'Gift', body: '20% off.' } },
];

/** A product with two modules, its yearly schedule, a tag, a delivery granting both, a Diamond. */
const SHOP = () => ({
  version: 1,
  prune: false,
  resources: [
    {
      type: 'delivery',
      key: 'checkout',
      properties: {
        gateway: 'generic',
        name: 'Python checkout',
        external_ids: ['py-1', ' py-2 '],
        products: [
          {
            product_id: { ref: 'product.python' },
            access_schedule_id: { ref: 'access_schedule.yearly' },
          },
        ],
        tag_ids: [{ ref: 'tag.buyer' }],
        duration: 12,
        duration_unit: 'month',
      },
    },
    {
      type: 'access_schedule',
      key: 'yearly',
      properties: { product_id: { ref: 'product.python' }, name: 'Python yearly' },
    },
    { type: 'diamond', key: 'onboarding', properties: { name: 'Onboarding', stages: STAGES } },
    {
      type: 'module',
      key: 'intro',
      properties: { product_id: { ref: 'product.python' }, name: 'Intro', kind: 'module' },
    },
    {
      type: 'module',
      key: 'loops',
      properties: { product_id: { ref: 'product.python' }, name: 'Loops', kind: 'module' },
    },
    { type: 'product', key: 'python', properties: { name: 'Python' } },
    { type: 'tag', key: 'buyer', properties: { name: 'buyer' } },
  ],
});

t(
  'a delivery, its schedule, tag and product planned and applied in dependency order',
  async (ctx) => {
    const b = await school(ctx.b);
    const p = await planned(b, SHOP());
    assert.equal(
      p.changes.map((c: any) => `${c.action} ${c.type}.${c.key}`),
      [
        'create tag.buyer',
        'create product.python',
        'create module.intro',
        'create module.loops',
        'create access_schedule.yearly',
        'create delivery.checkout',
        'create diamond.onboarding',
      ],
    );
    assert.equal(p.changes[5].fields.external_ids, { from: null, to: ['py-1', 'py-2'] });
    assert.equal(p.changes[5].fields.products.to, [
      {
        product_id: { ref: 'product.python' },
        access_schedule_id: { ref: 'access_schedule.yearly' },
      },
    ]);
    const op = await applied(b, p.id);
    assert.is(op.status, 'succeeded', JSON.stringify(op));

    const [product] = (await b.api('GET', '/api/v3/products')).body.data;
    const schedules = (await b.api('GET', `/api/v3/products/${product.id}/access-schedules`)).body
      .data;
    // The default schedule is named after the product; the planned one after its entry.
    assert.equal(
      schedules.map((s: any) => [s.name, s.default]),
      [
        ['Python', true],
        ['Python yearly', false],
      ],
    );
    const [delivery] = (await b.api('GET', '/api/v3/sales/deliveries')).body.data;
    const buyer = (await b.api('GET', '/api/v3/tags')).body.data.find(
      (x: any) => x.name === 'buyer',
    );
    assert.equal(delivery.external_ids, ['py-1', 'py-2']);
    assert.equal(delivery.products, [
      { product_id: product.id, access_schedule_id: schedules[1].id },
    ]);
    assert.equal(delivery.tag_ids, [buyer.id]);
    assert.equal([delivery.duration, delivery.duration_unit], [12, 'month']);
    // A secret nobody was shown: postbacks need the one the operator sets with PATCH.
    assert.equal(delivery.secret, { configured: true });
    const items = (await b.api('GET', `/api/v3/operations/${op.id}/items`)).body.data;
    const diamond = (await b.api('GET', `/api/v3/automations/diamond/${items.at(-1).result.id}`))
      .body.data;
    assert.equal(
      diamond.stages.map((s: any) => s.key),
      ['welcome', 'offer'],
    );

    const again = await planned(b, SHOP());
    assert.equal(again.summary, { create: 0, update: 0, delete: 0, unchanged: 7 });

    // GET /manifest names them by reference and plans back, pruned, to nothing but unchanged.
    const m = (await b.api('GET', '/api/v3/manifest')).body.data;
    const d = m.resources.find((r: any) => r.type === 'delivery');
    assert.equal(d.properties.products, [
      {
        product_id: { ref: 'product.python' },
        access_schedule_id: { ref: 'access_schedule.yearly' },
      },
    ]);
    assert.equal(d.properties.tag_ids, [{ ref: 'tag.buyer' }]);
    const s = m.resources.find((r: any) => r.type === 'access_schedule');
    assert.equal(s.properties, { product_id: { ref: 'product.python' }, name: 'Python yearly' });
    // The default schedule and its tag belong to the product: not entries of their own.
    assert.equal(
      m.resources.filter((r: any) => r.type === 'tag').map((r: any) => r.properties.name),
      ['buyer'],
    );
    const back = await planned(b, { ...m, prune: true });
    assert.equal(back.summary, { create: 0, update: 0, delete: 0, unchanged: 7 });
  },
);

t('an update of a delivery: only what differs, lists compared as sets', async (ctx) => {
  const b = await school(ctx.b);
  await applied(b, (await planned(b, SHOP())).id);
  const m = SHOP();
  const d = m.resources[0]!.properties as any;
  d.external_ids = ['py-2', 'py-1', 'py-3'];
  d.duration_unit = 'lifetime';
  delete d.duration;
  const p = await planned(b, m);
  const change = p.changes.find((c: any) => c.type === 'delivery');
  assert.is(change.action, 'update');
  assert.equal(Object.keys(change.fields).sort(), ['duration', 'duration_unit', 'external_ids']);
  assert.equal(change.fields.duration, { from: 12, to: null });
  const op = await applied(b, p.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  const [delivery] = (await b.api('GET', '/api/v3/sales/deliveries')).body.data;
  assert.equal(delivery.external_ids.sort(), ['py-1', 'py-2', 'py-3']);
  assert.equal([delivery.duration, delivery.duration_unit], [null, 'lifetime']);
  assert.equal((await planned(b, m)).summary.unchanged, 7);
});

t(
  'the default schedule of a created product takes its name before planned schedules',
  async (ctx) => {
    const b = await school(ctx.b);
    const m = SHOP();
    (m.resources[1]!.properties as any).name = 'python';
    assert.equal(await invalid(b, m), ['resources.1.properties.name already_exists']);
    const res = await plan(b, m);
    assert.match(res.body.error.details[0].message, 'default access schedule of resources.5');

    // A tag of the product's name is created first: the default schedule then gets a suffix.
    const m2 = SHOP();
    (m2.resources[6]!.properties as any).name = 'Python';
    const op = await applied(b, (await planned(b, m2)).id);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    const [product] = (await b.api('GET', '/api/v3/products')).body.data;
    const [def] = (await b.api('GET', `/api/v3/products/${product.id}/access-schedules`)).body.data;
    assert.is(def.name, `Python #${product.id}`);
  },
);

t(
  'plan_invalid: the rules the delivery and schedule services enforce, at their paths',
  async (ctx) => {
    const b = await school(ctx.b);
    await applied(b, (await planned(b, SHOP())).id);
    const [product] = (await b.api('GET', '/api/v3/products')).body.data;
    const other = (
      await b.api('POST', '/api/v3/products', { body: { name: 'Other' }, key: newKey() })
    ).body.data;
    const [otherDefault] = (await b.api('GET', `/api/v3/products/${other.id}/access-schedules`))
      .body.data;
    const outside = await b.api('POST', '/api/v3/sales/deliveries', {
      body: { gateway: 'generic', name: 'By hand', external_ids: ['hand-1'] },
      key: newKey(),
    });
    assert.is(outside.status, 201);
    const m = SHOP();
    (m.resources as any[]).push(
      {
        type: 'delivery',
        key: 'second',
        properties: {
          gateway: 'generic',
          name: 'Second',
          // py-1 is the first delivery's, hand-1 one outside the manifest.
          external_ids: ['hand-1', 'py-1'],
          products: [{ product_id: product.id, access_schedule_id: otherDefault.id }],
        },
      },
      {
        type: 'access_schedule',
        key: 'clash',
        properties: { product_id: { ref: 'product.python' }, name: 'BUYER' },
      },
    );
    assert.equal((await invalid(b, m)).sort(), [
      'resources.0.properties.external_ids.0 already_exists',
      // The tag and the schedule both want the name (case-insensitive): both are named.
      'resources.6.properties.name already_exists',
      'resources.7.properties.external_ids.0 already_exists',
      'resources.7.properties.external_ids.1 already_exists',
      'resources.7.properties.products.0.access_schedule_id not_found',
      'resources.8.properties.name already_exists',
    ]);
    // What the delivery service refuses in one entry, checked before the rules across entries.
    const one = SHOP();
    Object.assign(one.resources[0]!.properties, { gateway: 'nowhere', secret: 'a-secret-value' });
    delete (one.resources[0]!.properties as any).duration_unit;
    assert.equal((await invalid(b, one)).sort(), [
      'resources.0.properties.duration invalid',
      'resources.0.properties.gateway invalid_value',
      'resources.0.properties.secret write_only',
    ]);
    // A delivery's gateway cannot change (no route changes it).
    const m2 = SHOP();
    (m2.resources[0]!.properties as any).gateway = 'marketplace';
    assert.equal(await invalid(b, m2), ['resources.0.properties.gateway immutable']);
    // An unknown reference in a grant, at its path.
    const m3 = SHOP();
    (m3.resources[0]!.properties as any).tag_ids = [{ ref: 'tag.nobody' }];
    assert.equal(await invalid(b, m3), ['resources.0.properties.tag_ids.0 unknown_reference']);
  },
);

t(
  'a Diamond automation cannot change: the plan says so at the field; prune keeps it',
  async (ctx) => {
    const b = await school(ctx.b);
    await applied(b, (await planned(b, SHOP())).id);
    const m = SHOP();
    (m.resources[2]!.properties as any).stages = [STAGES[0]];
    const res = await plan(b, m);
    assert.is(res.status, 422);
    assert.equal(res.body.error.details, [
      {
        field: 'resources.2.properties.stages',
        code: 'immutable',
        message:
          'A Diamond automation cannot change (no route changes one): give the entry a new key to create another.',
      },
    ]);
    // Stage keys are unique, as the service would refuse them.
    const dup = SHOP();
    (dup.resources[2]!.properties as any).stages = [STAGES[0], STAGES[0]];
    dup.resources[2]!.key = 'other';
    assert.equal(await invalid(b, dup), ['resources.2.properties.stages.1.key already_exists']);
    // A new key creates another one; a prune plan without either deletes neither.
    const renamed = SHOP();
    renamed.resources[2]!.key = 'onboarding-2';
    (renamed.resources[2]!.properties as any).stages = [STAGES[0]];
    const p = await planned(b, { ...renamed, prune: true });
    assert.equal(p.summary, { create: 1, update: 0, delete: 0, unchanged: 6 });
  },
);

t('prune archives deliveries and trashes schedules; deliveries.archive is needed', async (ctx) => {
  const b = await school(ctx.b);
  await applied(b, (await planned(b, SHOP())).id);
  // A delivery kept by the manifest cannot grant or give what the prune plan removes.
  const pulled = (await b.api('GET', '/api/v3/manifest')).body.data;
  const id = (type: string) => pulled.resources.find((r: any) => r.type === type).id;
  const kept = pulled.resources.filter((r: any) => !['access_schedule', 'tag'].includes(r.type));
  const d = kept.find((r: any) => r.type === 'delivery');
  d.properties.products[0].access_schedule_id = id('access_schedule');
  d.properties.tag_ids = [id('tag')];
  const at = `resources.${kept.indexOf(d)}.properties`;
  assert.equal(await invalid(b, { ...pulled, prune: true, resources: kept }), [
    `${at}.products.0.access_schedule_id pruned`,
    `${at}.tag_ids.0 pruned`,
  ]);

  const m = SHOP();
  m.prune = true;
  m.resources = m.resources.filter((r) => r.type !== 'delivery' && r.type !== 'access_schedule');
  const p = await planned(b, m);
  assert.equal(
    p.changes.filter((c: any) => c.action === 'delete').map((c: any) => `${c.type}.${c.key}`),
    ['delivery.checkout', 'access_schedule.yearly'],
  );
  const writer = await credentialWith(b, [
    'plans.write',
    'plans.read',
    'tags.update',
    'products.write',
    'access_schedules.write',
    'deliveries.create',
    'deliveries.update',
    'automations.write',
  ]);
  const denied = await b.api('POST', `/api/v3/plans/${p.id}/applications`, {
    key: newKey(),
    secret: writer.secret,
  });
  assert.is(denied.status, 403);
  assert.equal(
    denied.body.error.details.map((d: any) => d.reason),
    ['deliveries.archive'],
  );
  const op = await applied(b, p.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  const [delivery] = (await b.api('GET', '/api/v3/sales/deliveries')).body.data;
  assert.is(delivery.status, 'archived');
  const [product] = (await b.api('GET', '/api/v3/products')).body.data;
  const trash = (await b.api('GET', `/api/v3/products/${product.id}/access-schedules?deleted=true`))
    .body.data;
  assert.equal(
    trash.map((s: any) => s.name),
    ['Python yearly'],
  );
  assert.equal((await planned(b, m)).summary, { create: 0, update: 0, delete: 0, unchanged: 5 });
});

t(
  'plan_stale: a resource a prune plan would delete, or a name or gateway id taken, since planning',
  async (ctx) => {
    const b = await school(ctx.b);
    await applied(b, (await planned(b, SHOP())).id);
    const pruning = await planned(b, { ...SHOP(), prune: true });
    const m = SHOP();
    (m.resources as any[]).push(
      { type: 'tag', key: 'gold', properties: { name: 'gold' } },
      {
        type: 'delivery',
        key: 'more',
        properties: { gateway: 'generic', name: 'More', external_ids: ['more-1'] },
      },
    );
    const creating = await planned(b, m);
    // Another client creates what the plans did not know about.
    assert.is(
      (await b.api('POST', '/api/v3/tags', { body: { name: 'GOLD' }, key: newKey() })).status,
      201,
    );
    const hand = await b.api('POST', '/api/v3/sales/deliveries', {
      body: { gateway: 'generic', name: 'By hand', external_ids: ['more-1'] },
      key: newKey(),
    });
    assert.is(hand.status, 201);

    const stale = await b.api('POST', `/api/v3/plans/${pruning.id}/applications`, {
      key: newKey(),
    });
    assert.is(stale.status, 409);
    assert.is(stale.body.error.code, 'plan_stale');
    assert.equal(
      stale.body.error.details.map((d: any) => d.message).sort(),
      [
        `delivery ${hand.body.data.id} exists since planning: this prune plan would have deleted it.`,
        expect(stale.body.error.details, 'tag'),
      ].sort(),
    );
    const collides = await b.api('POST', `/api/v3/plans/${creating.id}/applications`, {
      key: newKey(),
    });
    assert.is(collides.status, 409);
    const at = (key: string) => `changes.${creating.changes.findIndex((c: any) => c.key === key)}`;
    assert.equal(
      collides.body.error.details.map((d: any) => `${d.field} ${d.code}`),
      [`${at('gold')} name_taken`, `${at('more')} external_id_taken`],
    );
    // Nothing applied: both plans are still ready.
    assert.is((await b.api('GET', `/api/v3/plans/${creating.id}`)).body.data.status, 'ready');
    const tags = (await b.api('GET', '/api/v3/tags')).body.data.map((x: any) => x.name).sort();
    assert.equal(tags, ['GOLD', 'Python', 'Python yearly', 'buyer']);
  },
);

/** The prune-stale message for the tag created by hand (its id is the newest tag's). */
function expect(details: any[], type: string): string {
  const d = details.find((x: any) => x.message.startsWith(`${type} `));
  assert.ok(d, JSON.stringify(details));
  assert.match(d.message, / exists since planning: this prune plan would have deleted it\.$/);
  return d.message;
}

t('retention: the sweep deletes plans once 30 days old, not younger ones', async (ctx) => {
  const b = await school(ctx.b);
  const old = await planned(b, SHOP());
  b.clock.advance(20 * DAY);
  try {
    const young = await planned(b, SHOP());
    b.clock.advance(10 * DAY);
    assert.ok((await b.app.services.plans.purgeExpired()) >= 1);
    assert.is((await b.api('GET', `/api/v3/plans/${old.id}`)).status, 404);
    assert.is((await b.api('GET', `/api/v3/plans/${young.id}`)).status, 200);
    b.clock.advance(20 * DAY);
    assert.ok((await b.app.services.plans.purgeExpired()) >= 1);
    assert.is((await b.api('GET', `/api/v3/plans/${young.id}`)).status, 404);
  } finally {
    b.clock.advance(-50 * DAY);
  }
});

t(
  'a module whose group is in the trash shows at the top level: no dangling reference',
  async (ctx) => {
    const b = await school(ctx.b);
    await applied(b, (await planned(b, SHOP())).id);
    const [product] = (await b.api('GET', '/api/v3/products')).body.data;
    const base = `/api/v3/products/${product.id}/modules`;
    const group = (
      await b.api('POST', base, { body: { name: 'Part 1', kind: 'group' }, key: newKey() })
    ).body.data;
    const inner = (
      await b.api('POST', base, {
        body: { name: 'Inside', kind: 'module', parent_id: group.id },
        key: newKey(),
      })
    ).body.data;
    // The group went to the trash without taking the module (a race the routes cannot order).
    await b.app.services.db('modules').where('id', Number(group.id)).update({ deleted: true });
    const m = (await b.api('GET', '/api/v3/manifest')).body.data;
    const entry = m.resources.find((r: any) => r.id === inner.id);
    assert.is(entry.properties.parent_id, null);
    const keys = new Set(m.resources.map((r: any) => `${r.type}.${r.key}`));
    const refs = JSON.stringify(m)
      .match(/"ref":"[^"]+"/g)!
      .map((r) => r.slice(7, -1));
    assert.ok(refs.length > 0);
    for (const r of refs) assert.ok(keys.has(r), `${r} dangles`);
    const p = await planned(b, { ...m, prune: true });
    assert.equal(p.summary, { create: 0, update: 0, delete: 0, unchanged: m.resources.length });
  },
);

t(
  'unique values moved between resources: the one giving it up applies first; a swap is refused',
  async (ctx) => {
    const b = await school(ctx.b);
    const m = SHOP();
    (m.resources as any[]).push(
      { type: 'tag', key: 'other', properties: { name: 'other' } },
      {
        type: 'delivery',
        key: 'second',
        properties: { gateway: 'generic', name: 'Second', external_ids: ['x-1'] },
      },
    );
    assert.is((await applied(b, (await planned(b, m)).id)).status, 'succeeded');

    // The tag takes the schedule's name, the second delivery (first in the file) takes py-1 from
    // the checkout: each only once the other resource has let go of it.
    const moved = structuredClone(m) as any;
    moved.resources[1].properties.name = 'Yearly';
    moved.resources[6].properties.name = 'Python yearly';
    moved.resources[0].properties.external_ids = ['py-2'];
    moved.resources[8].properties.external_ids = ['x-1', 'py-1'];
    moved.resources.unshift(moved.resources.pop());
    const p = await planned(b, moved);
    assert.equal(
      p.changes.filter((c: any) => c.action === 'update').map((c: any) => `${c.type}.${c.key}`),
      ['access_schedule.yearly', 'tag.buyer', 'delivery.checkout', 'delivery.second'],
    );
    const op = await applied(b, p.id);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    const tags = (await b.api('GET', '/api/v3/tags?limit=100')).body.data;
    assert.ok(tags.some((t: any) => t.name === 'Python yearly' && t.id !== undefined));
    const deliveries = (await b.api('GET', '/api/v3/sales/deliveries')).body.data;
    assert.equal(
      deliveries.map((d: any) => `${d.name}: ${d.external_ids.sort().join(',')}`).sort(),
      ['Python checkout: py-2', 'Second: py-1,x-1'],
    );

    // Two tags exchanging names, two deliveries exchanging a gateway id: no order applies them
    // one change at a time, so the plan says so at each field instead of failing half-applied.
    const swap = structuredClone(moved) as any;
    swap.resources[7].properties.name = 'other';
    swap.resources[8].properties.name = 'Python yearly';
    swap.resources[0].properties.external_ids = ['x-1', 'py-2'];
    swap.resources[1].properties.external_ids = ['py-1'];
    assert.equal((await invalid(b, swap)).sort(), [
      'resources.0.properties.external_ids already_exists',
      'resources.1.properties.external_ids already_exists',
      'resources.7.properties.name already_exists',
      'resources.8.properties.name already_exists',
    ]);
  },
);

t.run();
