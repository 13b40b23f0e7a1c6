// Plans: a manifest validated against the contract's create schemas and planned against the
// account's tags, products and modules; applied as one operation (plan.apply) in dependency
// order; stale, expired and applied-twice plans refused before anything is applied; the manifest
// of the current configuration plans back to nothing but `unchanged`.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HOUR } from '../../src/clock.ts';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { waitFor } from '../helpers/operations.ts';

const t = suite<{ b: Booted }>('v3 plans');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

const plan = (b: Booted, manifest: object, secret?: string) =>
  b.api('POST', '/api/v3/plans', { body: manifest, key: newKey(), secret });

const apply = (b: Booted, id: string, secret?: string) =>
  b.api('POST', `/api/v3/plans/${id}/applications`, { key: newKey(), secret });

async function planned(b: Booted, manifest: object) {
  const res = await plan(b, manifest);
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

async function applied(b: Booted, id: string) {
  const res = await apply(b, id);
  assert.is(res.status, 202, JSON.stringify(res.body));
  assert.is(res.headers.get('location'), `/api/v3/operations/${res.body.data.id}`);
  assert.is(res.body.data.type, 'plan.apply');
  return waitFor(b, res.body.data.id);
}

/** A fresh account (its own root credential) per test: plans see the whole account. */
async function school(b: Booted) {
  const { id } = await b.app.services.accounts.createAccount({ name: 'Plans school' });
  const root = await b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
    name: 'Root',
  });
  const api: Booted['api'] = (m, p, o = {}) =>
    b.api(m, p, { ...o, secret: o.secret ?? root.secret });
  return { ...b, accountId: id, secret: root.secret, api } as Booted;
}

const SCHOOL = (suffix = '') => ({
  version: 1,
  resources: [
    {
      type: 'module',
      key: 'basics',
      properties: {
        product_id: { ref: 'product.python' },
        name: 'Basics',
        kind: 'module',
        parent_id: { ref: 'module.part-1' },
      },
    },
    {
      type: 'module',
      key: 'part-1',
      properties: { product_id: { ref: 'product.python' }, name: 'Part 1', kind: 'group' },
    },
    { type: 'product', key: 'python', properties: { name: `Python${suffix}`, status: 'draft' } },
    { type: 'tag', key: 'vip', properties: { name: 'vip' } },
  ],
});

t(
  'a plan lists every change in dependency order, with fields, a summary and a 1-hour expiry',
  async (ctx) => {
    const b = await school(ctx.b);
    const p = await planned(b, SCHOOL());
    assert.is(p.object, 'plan');
    assert.is(p.status, 'ready');
    assert.is(p.prune, false);
    assert.is(p.operation_id, null);
    assert.equal(p.summary, { create: 4, update: 0, delete: 0, unchanged: 0 });
    assert.equal(
      p.changes.map((c: any) => `${c.action} ${c.type}.${c.key}`),
      ['create tag.vip', 'create product.python', 'create module.part-1', 'create module.basics'],
    );
    assert.equal(p.changes[1], {
      action: 'create',
      type: 'product',
      key: 'python',
      id: null,
      revision: null,
      fields: { name: { from: null, to: 'Python' }, status: { from: null, to: 'draft' } },
    });
    assert.equal(p.changes[3].fields.parent_id, { from: null, to: { ref: 'module.part-1' } });
    assert.is(new Date(p.expires_at).getTime() - new Date(p.created_at).getTime(), HOUR);
    // Planning changes nothing.
    assert.is((await b.api('GET', '/api/v3/products')).body.data.length, 0);
    const got = await b.api('GET', `/api/v3/plans/${p.id}`);
    assert.is(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.data, p);
    const list = await b.api('GET', '/api/v3/plans?limit=1');
    assert.is(list.status, 200);
    assert.equal(list.body.data, [p]);
  },
);

t(
  'applying creates through the services; the same manifest then plans as unchanged',
  async (ctx) => {
    const b = await school(ctx.b);
    const p = await planned(b, SCHOOL());
    const op = await applied(b, p.id);
    assert.is(op.status, 'succeeded');
    assert.equal(op.progress, { total: 4, done: 4, failed: 0 });
    const items = (await b.api('GET', `/api/v3/operations/${op.id}/items`)).body.data;
    assert.equal(
      items.map((i: any) => i.key),
      ['tag.vip', 'product.python', 'module.part-1', 'module.basics'],
    );
    const [product] = (await b.api('GET', '/api/v3/products')).body.data;
    assert.is(product.name, 'Python');
    assert.is(items[1].result.id, product.id);
    const modules = (await b.api('GET', `/api/v3/products/${product.id}/modules`)).body.data;
    const group = modules.find((m: any) => m.kind === 'group');
    assert.is(group.name, 'Part 1');
    const inner = (
      await b.api('GET', `/api/v3/products/${product.id}/modules?parent_id=${group.id}`)
    ).body.data;
    assert.equal(
      inner.map((m: any) => m.name),
      ['Basics'],
    );

    const after = (await b.api('GET', `/api/v3/plans/${p.id}`)).body.data;
    assert.is(after.status, 'applied');
    assert.is(after.operation_id, op.id);

    const again = await planned(b, SCHOOL());
    assert.equal(again.summary, { create: 0, update: 0, delete: 0, unchanged: 4 });
    assert.is(again.changes[1].id, product.id);
    assert.is(again.changes[1].revision, product.revision);

    // A plan applies once.
    const twice = await apply(b, p.id);
    assert.is(twice.status, 409);
    assert.is(twice.body.error.code, 'state_conflict');
  },
);

t(
  'an update shows each field from and to; prune deletes what the manifest no longer names',
  async (ctx) => {
    const b = await school(ctx.b);
    await applied(b, (await planned(b, SCHOOL())).id);
    const m = SCHOOL(' 2');
    const p = await planned(b, m);
    assert.equal(p.summary, { create: 0, update: 1, delete: 0, unchanged: 3 });
    assert.equal(p.changes[1].fields, { name: { from: 'Python', to: 'Python 2' } });
    assert.is((await applied(b, p.id)).status, 'succeeded');
    assert.is((await b.api('GET', '/api/v3/products')).body.data[0].name, 'Python 2');

    const pruned = await planned(b, { ...m, prune: true, resources: m.resources.slice(2) });
    assert.equal(
      pruned.changes.map((c: any) => `${c.action} ${c.type}.${c.key}`),
      [
        'unchanged tag.vip',
        'unchanged product.python',
        'delete module.basics',
        'delete module.part-1',
      ],
    );
    assert.is((await applied(b, pruned.id)).status, 'succeeded');
    const [product] = (await b.api('GET', '/api/v3/products')).body.data;
    assert.is(product.modules_count, 0);
  },
);

t('an existing resource is adopted by id, then found by its key', async (ctx) => {
  const b = await school(ctx.b);
  const created = await b.api('POST', '/api/v3/tags', { body: { name: 'gold' }, key: newKey() });
  const tag = created.body.data;
  const entry = { type: 'tag', key: 'gold', id: tag.id, properties: { name: 'gold' } };
  const p = await planned(b, { version: 1, resources: [entry] });
  assert.equal(p.changes, [
    {
      action: 'unchanged',
      type: 'tag',
      key: 'gold',
      id: tag.id,
      revision: tag.revision,
      fields: {},
    },
  ]);
  const op = await applied(b, p.id);
  assert.equal(op.progress, { total: 0, done: 0, failed: 0 });
  const byKey = await planned(b, {
    version: 1,
    resources: [{ type: 'tag', key: 'gold', properties: { name: 'Gold' } }],
  });
  assert.equal(byKey.changes[0].fields, { name: { from: 'gold', to: 'Gold' } });
  assert.is(byKey.changes[0].id, tag.id);
});

t(
  'webhooks: created without showing a secret, updated, pruned; the service rules checked when planning',
  async (ctx) => {
    const b = await school(ctx.b);
    const hook = {
      type: 'webhook',
      key: 'crm',
      properties: {
        url: 'https://hooks.example.com/crm',
        event_types: ['user.created', 'user.created', 'tag.assigned'],
        description: ' CRM ',
      },
    };
    const p = await planned(b, { version: 1, resources: [hook] });
    assert.equal(p.changes[0].fields, {
      url: { from: null, to: 'https://hooks.example.com/crm' },
      event_types: { from: null, to: ['user.created', 'tag.assigned'] },
      description: { from: null, to: 'CRM' },
    });
    const op = await applied(b, p.id);
    assert.is(op.status, 'succeeded');
    const [item] = (await b.api('GET', `/api/v3/operations/${op.id}/items`)).body.data;
    assert.equal(Object.keys(item.result).sort(), ['action', 'id', 'key', 'type']);
    const [webhook] = (await b.api('GET', '/api/v3/webhooks')).body.data;
    assert.is(webhook.url, 'https://hooks.example.com/crm');
    assert.is(webhook.description, 'CRM');
    assert.is((await planned(b, { version: 1, resources: [hook] })).summary.unchanged, 1);

    const moved = {
      ...hook,
      properties: { ...hook.properties, url: 'https://hooks.example.com/v2' },
    };
    const update = await planned(b, { version: 1, resources: [moved] });
    assert.equal(update.changes[0].fields, {
      url: { from: 'https://hooks.example.com/crm', to: 'https://hooks.example.com/v2' },
    });
    assert.is((await applied(b, update.id)).status, 'succeeded');
    assert.is(
      (await b.api('GET', `/api/v3/webhooks/${webhook.id}`)).body.data.url,
      'https://hooks.example.com/v2',
    );

    const pinned = await plan(b, {
      version: 1,
      resources: [{ ...moved, properties: { ...moved.properties, payload_version: '2' } }],
    });
    assert.is(pinned.status, 422);
    assert.equal(
      pinned.body.error.details.map((d: any) => `${d.field} ${d.code}`),
      // The catalog has one version: another is refused before it could be an immutable change.
      ['resources.0.properties.payload_version invalid_value'],
    );

    // What the webhooks service would refuse is refused when planning.
    const refused = await plan(b, {
      version: 1,
      resources: [
        {
          type: 'webhook',
          key: 'local',
          properties: {
            url: 'http://127.0.0.1:9/x',
            event_types: ['user.created', 'no.such_type'],
          },
        },
      ],
    });
    assert.is(refused.status, 422);
    assert.equal(
      refused.body.error.details.map((d: any) => `${d.field} ${d.code}`),
      [
        'resources.0.properties.url private_target',
        'resources.0.properties.event_types.1 invalid_value',
      ],
    );

    const pruned = await planned(b, { version: 1, prune: true, resources: [] });
    assert.equal(
      pruned.changes.map((c: any) => `${c.action} ${c.type}.${c.key}`),
      ['delete webhook.crm'],
    );
    assert.is((await applied(b, pruned.id)).status, 'succeeded');
    assert.is((await b.api('GET', '/api/v3/webhooks')).body.data.length, 0);
  },
);

t('plan_invalid: every problem at its path in the manifest', async ({ b }) => {
  const res = await plan(b, {
    version: 1,
    resources: [
      { type: 'product', key: 'p', properties: { name: '' } },
      { type: 'product', key: 'p', properties: { name: 'Other', colour: 'red' } },
      {
        type: 'module',
        key: 'm',
        properties: { product_id: { ref: 'product.nope' }, name: 'M', kind: 'module' },
      },
      { type: 'tag', key: 'bad key!', properties: { name: 'x' } },
      { type: 'tag', key: 't', id: '999999', properties: { name: 'y' } },
    ],
  });
  assert.is(res.status, 422);
  assert.is(res.body.error.code, 'plan_invalid');
  const fields = res.body.error.details.map((d: any) => `${d.field} ${d.code}`);
  assert.equal(fields, ['resources.3.key invalid_format']);

  const second = await plan(b, {
    version: 1,
    resources: [
      { type: 'product', key: 'p', properties: { name: '' } },
      { type: 'product', key: 'p', properties: { name: 'Other', colour: 'red' } },
      {
        type: 'module',
        key: 'm',
        properties: { product_id: { ref: 'product.nope' }, name: 'M', kind: 'module' },
      },
      { type: 'tag', key: 't', id: '999999', properties: { name: 'y' } },
      { type: 'module', key: 'n', properties: { name: 'N', kind: 'module' } },
    ],
  });
  assert.is(second.status, 422);
  assert.is(second.body.error.code, 'plan_invalid');
  assert.equal(
    second.body.error.details.map((d: any) => `${d.field} ${d.code}`),
    [
      'resources.1.key duplicate_key',
      'resources.3.id not_found',
      'resources.0.properties.name too_short',
      'resources.0.properties.name invalid_format',
      'resources.1.properties.colour unknown_field',
      'resources.2.properties.product_id unknown_reference',
      'resources.4.properties.product_id required',
    ],
  );
});

t(
  'plan_invalid: hierarchy, circular references, tag names taken, immutable fields',
  async (ctx) => {
    const b = await school(ctx.b);
    await b.api('POST', '/api/v3/tags', { body: { name: 'Taken' }, key: newKey() });
    const res = await plan(b, {
      version: 1,
      resources: [
        { type: 'product', key: 'p', properties: { name: 'P' } },
        {
          type: 'module',
          key: 'g',
          properties: {
            product_id: { ref: 'product.p' },
            name: 'G',
            kind: 'group',
            parent_id: { ref: 'module.g' },
          },
        },
        {
          type: 'module',
          key: 'm',
          properties: {
            product_id: { ref: 'product.p' },
            name: 'M',
            kind: 'module',
            parent_id: { ref: 'module.m2' },
          },
        },
        {
          type: 'module',
          key: 'm2',
          properties: { product_id: { ref: 'product.p' }, name: 'M2', kind: 'module' },
        },
        { type: 'tag', key: 'a', properties: { name: 'taken ' } },
        { type: 'tag', key: 'b', properties: { name: 'Twice' } },
        { type: 'tag', key: 'c', properties: { name: 'twice' } },
      ],
    });
    assert.is(res.status, 422);
    assert.is(res.body.error.code, 'plan_invalid');
    assert.equal(
      res.body.error.details.map((d: any) => `${d.field} ${d.code}`),
      [
        'resources.1.properties circular_reference',
        'resources.2.properties.parent_id hierarchy_violation',
        'resources.4.properties.name already_exists',
        'resources.5.properties.name already_exists',
        'resources.6.properties.name already_exists',
      ],
    );

    await applied(b, (await planned(b, SCHOOL())).id);
    const moved = SCHOOL();
    (moved.resources[1]!.properties as any).kind = 'module';
    const immutable = await plan(b, moved);
    assert.is(immutable.status, 422);
    assert.equal(
      immutable.body.error.details.map((d: any) => `${d.field} ${d.code}`),
      [
        'resources.0.properties.parent_id hierarchy_violation',
        'resources.1.properties.kind immutable',
      ],
    );
  },
);

t('unsupported_resource: data such as users is not configuration', async ({ b }) => {
  const res = await plan(b, {
    version: 1,
    resources: [
      { type: 'tag', key: 'ok', properties: { name: 'ok' } },
      { type: 'user', key: 'ana', properties: { name: 'Ana', email: 'ana@example.com' } },
    ],
  });
  assert.is(res.status, 422);
  assert.is(res.body.error.code, 'unsupported_resource');
  assert.equal(
    res.body.error.details.map((d: any) => d.field),
    ['resources.1.type'],
  );
});

t('plan_expired one hour after planning (the clock), nothing applied', async (ctx) => {
  const b = await school(ctx.b);
  const p = await planned(b, SCHOOL());
  b.clock.advance(HOUR);
  try {
    const res = await apply(b, p.id);
    assert.is(res.status, 409);
    assert.is(res.body.error.code, 'plan_expired');
    assert.is((await b.api('GET', `/api/v3/plans/${p.id}`)).body.data.status, 'expired');
  } finally {
    b.clock.advance(-HOUR);
  }
  assert.is((await b.api('GET', '/api/v3/tags')).body.data.length, 0);
});

t('plan_stale when another client edits a planned resource; nothing is applied', async (ctx) => {
  const b = await school(ctx.b);
  await applied(b, (await planned(b, SCHOOL())).id);
  const m = SCHOOL(' 3');
  m.resources.push({ type: 'tag', key: 'new', properties: { name: 'new' } });
  const p = await planned(b, m);
  const product = p.changes.find((c: any) => c.type === 'product');
  const edit = await b.api('PATCH', `/api/v3/products/${product.id}`, {
    body: { description: 'edited elsewhere' },
  });
  assert.is(edit.status, 200);
  const res = await apply(b, p.id);
  assert.is(res.status, 409);
  assert.is(res.body.error.code, 'plan_stale');
  assert.equal(
    res.body.error.details.map((d: any) => d.field),
    [`changes.${p.changes.indexOf(product) - 0}`],
  );
  const tags = (await b.api('GET', '/api/v3/tags')).body.data.map((x: any) => x.name);
  assert.not.ok(tags.includes('new'));
  assert.is((await b.api('GET', `/api/v3/plans/${p.id}`)).body.data.status, 'ready');
});

t('a change that lands while the application runs fails only its item', async (ctx) => {
  const b = await school(ctx.b);
  await applied(b, (await planned(b, SCHOOL())).id);
  const m = SCHOOL(' 4');
  m.resources.push({ type: 'tag', key: 'later', properties: { name: 'later' } });
  const p = await planned(b, m);
  const product = p.changes.find((c: any) => c.type === 'product');
  // The item checks the revision it was planned against when it runs.
  const runner = b.app.services.operationRunner as any;
  const types = runner.types ?? b.app.services.operations.types;
  const original = types['plan.apply'].apply;
  types['plan.apply'].apply = async (tx: any, accountId: number, payload: any, c: any) => {
    if (payload.change === p.changes.indexOf(product))
      await b.app.services.catalog.update(
        accountId,
        Number(product.id),
        { description: 'x' },
        undefined,
        { tx },
      );
    return original(tx, accountId, payload, c);
  };
  try {
    const op = await applied(b, p.id);
    assert.is(op.status, 'partially_succeeded');
    const items = (await b.api('GET', `/api/v3/operations/${op.id}/items`)).body.data;
    const failed = items.filter((i: any) => i.status === 'failed');
    assert.equal(
      failed.map((i: any) => [i.key, i.error.code, i.retryable]),
      [['product.python', 'revision_mismatch', false]],
    );
    assert.is((await b.api('GET', `/api/v3/plans/${p.id}`)).body.data.status, 'failed');
  } finally {
    types['plan.apply'].apply = original;
  }
});

t('permissions: plans.write and the write permission of each type touched', async (ctx) => {
  const b = await school(ctx.b);
  const only = await credentialWith(b, ['plans.write', 'plans.read']);
  const res = await plan(b, SCHOOL(), only.secret);
  assert.is(res.status, 403);
  assert.is(res.body.error.code, 'permission_denied');
  assert.equal(res.body.error.details.map((d: any) => d.reason).sort(), [
    'products.write',
    'tags.update',
  ]);
  const none = await credentialWith(b, ['tags.update', 'products.write']);
  assert.is((await plan(b, SCHOOL(), none.secret)).status, 403);
});

t('GET /manifest: the configuration, which plans back to nothing but unchanged', async (ctx) => {
  const b = await school(ctx.b);
  await applied(b, (await planned(b, SCHOOL())).id);
  await b.api('POST', '/api/v3/tags', { body: { name: 'by hand' }, key: newKey() });
  const res = await b.api('GET', '/api/v3/manifest');
  assert.is(res.status, 200);
  const m = res.body.data;
  assert.equal(
    m.resources.map((r: any) => `${r.type}.${r.key}`),
    ['tag.vip', `tag.tag-${m.resources[1].id}`, 'product.python', 'module.part-1', 'module.basics'],
  );
  assert.equal(m.resources[4].properties.parent_id, { ref: 'module.part-1' });
  assert.equal(m.resources[4].properties.product_id, { ref: 'product.python' });
  const p = await planned(b, { ...m, prune: true });
  assert.equal(p.summary, { create: 0, update: 0, delete: 0, unchanged: 5 });
});

t.run();
