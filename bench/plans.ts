// A plan of 500 resources (50 products, each with a group, 3 modules, an access schedule, a
// delivery granting it with a tag, another tag and a Diamond automation): the time POST /plans takes to
// compute it on an empty account (500 creates), then again once it is applied (500 unchanged),
// through the real app. Prints one JSON line: {"engine","resources","createMs","unchangedMs"}.
//
//   node bench/plans.ts [sqlite|postgres://...] [rounds=5]
import { boot, newKey } from '../test/helpers/app.ts';
import { waitFor } from '../test/helpers/operations.ts';

const database = process.argv[2] ?? 'sqlite';
const ROUNDS = Number(process.argv[3] ?? 5);
if (database !== 'sqlite') process.env.TEST_DATABASE_URL = database;
else delete process.env.TEST_DATABASE_URL;

const resources: object[] = [];
for (let i = 0; i < 50; i++) {
  const product = { ref: `product.p-${i}` };
  resources.push(
    { type: 'tag', key: `tag-${i}`, properties: { name: `Tag ${i}` } },
    { type: 'tag', key: `buyer-${i}`, properties: { name: `Buyer ${i}` } },
    { type: 'product', key: `p-${i}`, properties: { name: `Product ${i}` } },
    {
      type: 'module',
      key: `g-${i}`,
      properties: { product_id: product, name: 'G', kind: 'group' },
    },
    {
      type: 'access_schedule',
      key: `s-${i}`,
      properties: { product_id: product, name: `Product ${i} yearly` },
    },
    {
      type: 'delivery',
      key: `d-${i}`,
      properties: {
        gateway: 'generic',
        name: `Checkout ${i}`,
        external_ids: [`ext-${i}`],
        products: [{ product_id: product, access_schedule_id: { ref: `access_schedule.s-${i}` } }],
        tag_ids: [{ ref: `tag.buyer-${i}` }],
        duration: 12,
        duration_unit: 'month',
      },
    },
    {
      type: 'diamond',
      key: `a-${i}`,
      properties: {
        name: `Flow ${i}`,
        stages: [{ key: 'one', name: 'One', communication: { subject: 'S', body: 'B' } }],
      },
    },
  );
  for (const m of [1, 2, 3])
    resources.push({
      type: 'module',
      key: `m-${i}-${m}`,
      properties: {
        product_id: product,
        parent_id: { ref: `module.g-${i}` },
        name: `M${m}`,
        kind: 'module',
      },
    });
}
const manifest = { version: 1, resources };

const b = await boot();
try {
  await b.app.startWorkers();
  /** The fastest of ROUNDS plans (a shared machine's noise only adds). */
  const time = async () => {
    let best = Infinity;
    let id = '';
    for (let r = 0; r < ROUNDS; r++) {
      const started = performance.now();
      const res = await b.api('POST', '/api/v3/plans', { body: manifest, key: newKey() });
      best = Math.min(best, performance.now() - started);
      if (res.status !== 201) throw new Error(JSON.stringify(res.body).slice(0, 500));
      id = res.body.data.id;
    }
    return { best, id };
  };
  const create = await time();
  const applied = await b.api('POST', `/api/v3/plans/${create.id}/applications`, { key: newKey() });
  const op = await waitFor(b, applied.body.data.id, undefined, undefined, 120_000);
  if (op.status !== 'succeeded') throw new Error(`application ${op.status}`);
  const unchanged = await time();
  const engine = database === 'sqlite' ? 'sqlite' : 'postgres';
  console.log(
    JSON.stringify({
      engine,
      resources: resources.length,
      createMs: create.best,
      unchangedMs: unchanged.best,
    }),
  );
} finally {
  await b.close();
}
