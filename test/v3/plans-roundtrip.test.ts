// The manifest round trip, as a property over randomly generated schools: whatever tags, products
// (with and without descriptions, drafts and published), groups and modules (with settings, images,
// some in the trash), access schedules (some in the trash), deliveries granting them and tags (some
// archived), Diamond automations, webhooks an account has, created by hand through the v3 routes or by an applied plan,
// GET /manifest plans back (with prune too) to nothing but `unchanged`; and the manifest applied to
// an empty account builds the same configuration.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Prng } from '../../src/domain/sandbox/prng.ts';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { waitFor } from '../helpers/operations.ts';

const t = suite<{ b: Booted }>('v3 plans: manifest round trip');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

async function account(b: Booted) {
  const { id } = await b.app.services.accounts.createAccount({ name: 'Random school' });
  const root = await b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
    name: 'Root',
  });
  const call = (m: string, p: string, body?: unknown) =>
    b.api(m, p, { secret: root.secret, body, key: m === 'POST' ? newKey() : undefined });
  return Object.assign(call, { secret: root.secret });
}

type Call = Awaited<ReturnType<typeof account>>;

async function ok(res: Promise<any>, status = [200, 201, 202, 204]) {
  const r = await res;
  assert.ok(status.includes(r.status), JSON.stringify(r.body));
  return r.body?.data;
}

/** A random school, built by hand through the v3 routes. */
async function randomSchool(call: Call, rnd: Prng) {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd.next() * xs.length)]!;
  const tags = Math.floor(rnd.next() * 5);
  for (let i = 0; i < tags; i++)
    await ok(call('POST', '/api/v3/tags', { name: `t${i} ${pick(['a', 'B', ' c'])}` }));
  for (let w = 0; w < Math.floor(rnd.next() * 3); w++)
    await ok(
      call('POST', '/api/v3/webhooks', {
        url: `https://hooks.example.com/${w}`,
        event_types: pick([['*'], ['user.created', 'tag.assigned']]),
        description: pick([undefined, 'CRM']),
      }),
    );
  const grants: { product_id: string; access_schedule_id?: string }[] = [];
  const products = 1 + Math.floor(rnd.next() * 3);
  for (let p = 0; p < products; p++) {
    const product = await ok(
      call('POST', '/api/v3/products', {
        name: `Product ${p}`,
        description: pick([undefined, null, 'Twelve weeks', '  ']),
        status: pick(['draft', 'published']),
      }),
    );
    const base = `/api/v3/products/${product.id}/modules`;
    const groups: string[] = [];
    for (let g = 0; g < Math.floor(rnd.next() * 3); g++)
      groups.push((await ok(call('POST', base, { name: `G${g}`, kind: 'group' }))).id);
    for (let m = 0; m < Math.floor(rnd.next() * 4); m++) {
      const module = await ok(
        call('POST', base, {
          name: `M${m}`,
          kind: 'module',
          parent_id: groups.length && rnd.next() < 0.6 ? pick(groups) : undefined,
          status: pick(['draft', 'published']),
          settings: pick([undefined, null, { drip_days: 7, b: [1, { c: true }] }]),
          image: pick([undefined, 'https://cdn.example.com/m.png']),
        }),
      );
      if (rnd.next() < 0.2) await ok(call('DELETE', `${base}/${module.id}`));
    }
    const schedules = `/api/v3/products/${product.id}/access-schedules`;
    grants.push({ product_id: product.id });
    for (let s = 0; s < Math.floor(rnd.next() * 3); s++) {
      const schedule = await ok(
        call('POST', schedules, { name: `S${p}-${s} ${pick(['x', 'Y'])}` }),
      );
      if (rnd.next() < 0.25) await ok(call('DELETE', `${schedules}/${schedule.id}`));
      else grants.push({ product_id: product.id, access_schedule_id: schedule.id });
    }
  }
  const tagIds = (await ok(call('GET', '/api/v3/tags?limit=100')))
    .filter((x: any) => /^t\d/.test(x.name))
    .map((x: any) => x.id);
  for (let d = 0; d < Math.floor(rnd.next() * 4); d++) {
    const granted = new Map<string, object>();
    for (const g of grants) if (rnd.next() < 0.4) granted.set(g.product_id, g);
    const delivery = await ok(
      call('POST', '/api/v3/sales/deliveries', {
        gateway: 'generic',
        name: `Checkout ${d}`,
        kind: pick(['one_time', 'subscription']),
        hidden: rnd.next() < 0.3,
        external_ids: d % 2 ? [`ext-${d}`, `ext-${d}b`] : [`ext-${d}`],
        products: [...granted.values()],
        tag_ids: tagIds.filter(() => rnd.next() < 0.5),
        ...pick([{}, { duration: 30, duration_unit: 'day' }, { duration_unit: 'lifetime' }]),
      }),
    );
    if (rnd.next() < 0.2)
      await ok(call('PATCH', `/api/v3/sales/deliveries/${delivery.id}`, { status: 'archived' }));
  }
  for (let a = 0; a < Math.floor(rnd.next() * 3); a++)
    await ok(
      call('POST', '/api/v3/automations/diamond', {
        name: ` Flow ${a} `,
        stages: [
          { key: 'one', name: 'One', communication: { subject: 'S', body: 'B' } },
          ...(rnd.next() < 0.5
            ? [{ key: 'two', name: 'Two ', communication: { subject: 'S2', body: 'B2' } }]
            : []),
        ],
      }),
    );
}

async function planOf(call: Call, manifest: object) {
  return ok(call('POST', '/api/v3/plans', manifest));
}

for (const seed of [1, 2, 3, 4, 5, 6]) {
  t(
    `seed ${seed}: GET /manifest plans back to unchanged, and rebuilds the school elsewhere`,
    async ({ b }) => {
      const rnd = new Prng(seed, 'plans-roundtrip');
      const call = await account(b);
      await randomSchool(call, rnd);
      const manifest = await ok(call('GET', '/api/v3/manifest'));
      for (const prune of [false, true]) {
        const p = await planOf(call, { ...manifest, prune });
        assert.equal(
          p.changes.filter((c: any) => c.action !== 'unchanged'),
          [],
          `seed ${seed}, prune ${prune}`,
        );
        assert.is(p.summary.unchanged, manifest.resources.length);
      }

      // Elsewhere: the same manifest without ids creates everything, and pulls back the same.
      const other = await account(b);
      const plain = {
        version: 1,
        resources: manifest.resources.map(({ id: _id, ...r }: any) => r),
      };
      const p = await planOf(other, plain);
      assert.is(p.summary.create, manifest.resources.length);
      const op = await ok(other('POST', `/api/v3/plans/${p.id}/applications`));
      assert.is((await waitFor(b, op.id, undefined, other.secret)).status, 'succeeded');
      const copy = await ok(other('GET', '/api/v3/manifest'));
      const shape = (m: any) =>
        m.resources
          .map(({ id: _id, ...r }: any) => r)
          .sort((x: any, y: any) => (x.type + x.key < y.type + y.key ? -1 : 1));
      // Keys of resources made by hand are `<type>-<id>`: compare everything but the ids.
      const names = (m: any) =>
        shape(m).map((r: any) => ({
          ...r,
          key: undefined,
          properties: {
            ...r.properties,
            product_id: undefined,
            parent_id: r.properties.parent_id === null ? null : 'set',
          },
        }));
      assert.equal(names(copy).length, names(manifest).length);
      assert.equal(
        names(copy)
          .map((r: any) => JSON.stringify(r))
          .sort(),
        names(manifest)
          .map((r: any) => JSON.stringify(r))
          .sort(),
      );
      const again = await planOf(other, { ...plain, prune: true });
      assert.is(again.summary.unchanged, manifest.resources.length, JSON.stringify(again.changes));
    },
  );
}

t.run();
