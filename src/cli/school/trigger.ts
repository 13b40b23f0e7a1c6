// `school trigger EVENT_TYPE`: makes the account record one event of that type by calling the v3
// routes that cause it (as `stripe trigger` does), so a webhook receiver or an event stream can
// be tried without hand-made curls. Every call goes through the real pipeline: events, webhooks
// and the audit trail as usual. Test credentials (`sch_test_...`) only: it creates students, tags
// and products.
import crypto from 'node:crypto';
import { idempotencyKey, type V3Client } from '../../client/index.ts';
import { fail } from './files.ts';
import type { Io } from './io.ts';

type Step = (c: V3Client, tag: string) => Promise<void>;

const key = () => ({ 'Idempotency-Key': idempotencyKey() });

async function user(c: V3Client, tag: string) {
  const res = await c.POST('/users', {
    params: { header: key() },
    body: { name: `Trigger ${tag}`, email: `trigger.${tag}@example.com` },
  });
  if (!res.data) fail('create user', res.error, res.response.status);
  return res.data.data.id;
}

async function tagOn(c: V3Client, tag: string, userId: string) {
  const created = await c.POST('/tags', {
    params: { header: key() },
    body: { name: `trigger-${tag}` },
  });
  if (!created.data) fail('create tag', created.error, created.response.status);
  const tagId = created.data.data.id;
  const put = await c.PUT('/users/{user_id}/tags/{tag_id}', {
    params: { path: { user_id: userId, tag_id: tagId } },
  });
  if (put.error) fail('assign tag', put.error, put.response.status);
  return tagId;
}

async function product(c: V3Client, tag: string) {
  const res = await c.POST('/products', {
    params: { header: key() },
    body: { name: `Trigger course ${tag}` },
  });
  if (!res.data) fail('create product', res.error, res.response.status);
  return res.data.data.id;
}

async function grant(c: V3Client, userId: string, productId: string) {
  const res = await c.POST('/enrollments', {
    params: { header: key() },
    body: { user_id: userId, product_id: productId, duration: 1, duration_unit: 'month' },
  });
  if (!res.data) fail('grant enrollment', res.error, res.response.status);
  return res.data.data;
}

/** The calls that record one event of each type (and the events they record on the way). */
export const FIXTURES: Record<string, Step> = {
  'user.created': async (c, tag) => void (await user(c, tag)),
  'user.updated': async (c, tag) => {
    const id = await user(c, tag);
    const res = await c.PATCH('/users/{user_id}', {
      params: { path: { user_id: id } },
      body: { name: `Trigger ${tag} (renamed)` },
    });
    if (res.error) fail('update user', res.error, res.response.status);
  },
  'user.deleted': async (c, tag) => {
    const id = await user(c, tag);
    const res = await c.DELETE('/users/{user_id}', { params: { path: { user_id: id } } });
    if (res.error) fail('delete user', res.error, res.response.status);
  },
  'tag.assigned': async (c, tag) => void (await tagOn(c, tag, await user(c, tag))),
  'tag.removed': async (c, tag) => {
    const id = await user(c, tag);
    const tagId = await tagOn(c, tag, id);
    const res = await c.DELETE('/users/{user_id}/tags/{tag_id}', {
      params: { path: { user_id: id, tag_id: tagId } },
    });
    if (res.error) fail('remove tag', res.error, res.response.status);
  },
  'product.published': async (c, tag) => {
    const id = await product(c, tag);
    const res = await c.POST('/products/{product_id}/publications', {
      params: { path: { product_id: id }, header: key() },
    });
    if (res.error) fail('publish product', res.error, res.response.status);
  },
  'enrollment.created': async (c, tag) => {
    await grant(c, await user(c, tag), await product(c, tag));
  },
  'enrollment.updated': async (c, tag) => {
    const e = await grant(c, await user(c, tag), await product(c, tag));
    const res = await c.PATCH('/enrollments/{enrollment_id}', {
      params: { path: { enrollment_id: e.id } },
      body: { duration: 2, duration_unit: 'month' },
    });
    if (res.error) fail('extend enrollment', res.error, res.response.status);
  },
  'enrollment.ended': async (c, tag) => {
    const e = await grant(c, await user(c, tag), await product(c, tag));
    const res = await c.PATCH('/enrollments/{enrollment_id}', {
      params: { path: { enrollment_id: e.id } },
      body: { ended: true },
    });
    if (res.error) fail('end enrollment', res.error, res.response.status);
  },
  'operation.finished': async (c, tag) => {
    const res = await c.POST('/operations/batches', {
      params: { header: key() },
      body: {
        type: 'users.upsert',
        items: [{ key: tag, payload: { email: `trigger.${tag}@example.com`, name: 'Trigger' } }],
      } as any,
    });
    if (res.error) fail('create batch', res.error, res.response.status);
  },
};

export async function trigger(c: V3Client, type: string, io: Io): Promise<number> {
  const step = Object.hasOwn(FIXTURES, type) ? FIXTURES[type] : undefined;
  if (!step) {
    io.err(
      `error: cannot trigger ${type}; one of: ${Object.keys(FIXTURES).join(', ')}` +
        ` (every type, transactions and Diamond stages included: the every_event sandbox scenario)`,
    );
    return 2;
  }
  const me = await c.GET('/credentials/current');
  if (!me.data) fail('credential', me.error, me.response.status);
  if (me.data.data.environment !== 'test') {
    io.err('error: trigger creates data: it runs only with a test credential (sch_test_...)');
    return 2;
  }
  const tag = `${Date.now().toString(36)}${crypto.randomBytes(3).toString('hex')}`;
  await step(c, tag);
  io.out(`Triggered ${type} (records named trigger*${tag}*).`);
  return 0;
}
