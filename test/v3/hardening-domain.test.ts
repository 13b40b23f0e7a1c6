// Issue 21, domain items: request input never finds a member of Object.prototype (batch types);
// an access that would end after year 9999 is a 422 on the field, and a final item failure in a
// batch (not a retryable one that stops the operation).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { product } from '../helpers/catalog.ts';
import { allItems, submit, waitFor } from '../helpers/operations.ts';
import { student } from '../helpers/sales.ts';

const t = suite<{ b: Booted }>('v3 hardening: lookups and far ends');
t.before(async (ctx) => {
  ctx.b = await boot();
  await ctx.b.app.startWorkers();
});
t.after(async (ctx) => ctx.b.close());

const PROTO_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

t(
  'a batch type named like a member of Object.prototype: 422 operation_type_unknown',
  async ({ b }) => {
    const items = Array.from({ length: 1001 }, (_, i) => ({ key: `k${i}`, payload: {} }));
    for (const type of PROTO_NAMES) {
      const res = await submit(b, type, items);
      assert.equal([res.status, res.body.error?.code], [422, 'operation_type_unknown'], type);
      assert.equal(res.body.error.details[0].field, 'type');
    }
    assert.equal(await b.app.db('operations').select('id'), []);
  },
);

t('POST /enrollments ending after 9999: 422 on duration, nothing created', async ({ b }) => {
  const u = await student(b, 'far@example.com');
  const p = await product(b, { name: 'Forever and a day' });
  const body = (over: Record<string, unknown>) => ({
    user_id: u.id,
    product_id: p.id,
    started_at: '9999-12-31T23:59:59Z',
    ...over,
  });
  for (const unit of ['day', 'month', 'year']) {
    const res = await b.api('POST', '/api/v3/enrollments', {
      body: body({ duration: 1, duration_unit: unit }),
      key: newKey(),
    });
    assert.is(res.status, 422, JSON.stringify(res.body));
    assert.equal(
      res.body.error.details.map((d: any) => [d.field, d.reason]),
      [['duration', 'ends_after_9999']],
    );
  }
  const far = await b.api('POST', '/api/v3/enrollments', {
    body: body({ started_at: '2026-01-01T00:00:00Z', duration: 36500, duration_unit: 'year' }),
    key: newKey(),
  });
  assert.equal([far.status, far.body.error?.details[0].reason], [422, 'ends_after_9999']);
  assert.equal((await b.api('GET', `/api/v3/users/${u.id}/enrollments`)).body.data, []);
  // The last representable end is fine, and so is a lifetime access from that instant.
  const last = await b.api('POST', '/api/v3/enrollments', {
    body: body({ started_at: '9999-12-30T23:59:59Z', duration: 1, duration_unit: 'day' }),
    key: newKey(),
  });
  assert.equal([last.status, last.body.data?.ends_at], [201, '9999-12-31T23:59:59.000Z']);
  // PATCH to a length that ends after 9999: 422 too, the enrollment unchanged.
  const patch = await b.api('PATCH', `/api/v3/enrollments/${last.body.data.id}`, {
    body: { duration: 2, duration_unit: 'day' },
  });
  assert.equal([patch.status, patch.body.error?.details[0].reason], [422, 'ends_after_9999']);
  const again = (await b.api('GET', `/api/v3/enrollments/${last.body.data.id}`)).body.data;
  assert.is(again.ends_at, '9999-12-31T23:59:59.000Z');
});

t('enrollments.grant ending after 9999: the item fails for good, the others run', async ({ b }) => {
  const u = await student(b, 'far-batch@example.com');
  const p = await product(b, { name: 'Far batch' });
  const q = await product(b, { name: 'Near batch' });
  const res = await submit(b, 'enrollments.grant', [
    {
      key: 'far',
      payload: {
        user_id: u.id,
        product_id: p.id,
        started_at: '9999-12-31T23:59:59Z',
        duration: 1,
        duration_unit: 'day',
      },
    },
    {
      key: 'near',
      payload: { user_id: u.id, product_id: q.id, duration: 1, duration_unit: 'day' },
    },
  ]);
  assert.is(res.status, 202);
  const op = await waitFor(b, res.body.data.id);
  assert.equal([op.status, op.progress], ['partially_succeeded', { total: 2, done: 1, failed: 1 }]);
  const [far, near] = await allItems(b, op.id);
  assert.equal(
    [far.status, far.retryable, far.error.code],
    ['failed', false, 'validation_failed'],
    JSON.stringify(far),
  );
  assert.is(near.status, 'succeeded');
});

t('renewals past the 36,500-unit maximum stop there, from started_at', async ({ b }) => {
  const u = await student(b, 'renew-max@example.com');
  const p = await product(b, { name: 'A hundred years' });
  const grant = (key: string, duration: number, unit = 'day') =>
    submit(b, 'enrollments.grant', [
      {
        key,
        payload: {
          user_id: u.id,
          product_id: p.id,
          started_at: '2026-01-01T00:00:00Z',
          duration,
          duration_unit: unit,
        },
      },
    ]);
  for (const [key, n] of [
    ['first', 30_000],
    ['second', 30_000],
  ] as const) {
    const res = await grant(key, n);
    const op = await waitFor(b, res.body.data.id);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
  }
  const [e] = (await b.api('GET', `/api/v3/users/${u.id}/enrollments`)).body.data;
  // 30,000 + 30,000 days would be 60,000: the contract's maximum is 36,500 days from the start.
  assert.equal(
    [e.duration, e.duration_unit, e.ends_at],
    [
      36_500,
      'day',
      new Date(Date.parse('2026-01-01T00:00:00Z') + 36_500 * 86_400_000).toISOString(),
    ],
  );
});

t.run();
