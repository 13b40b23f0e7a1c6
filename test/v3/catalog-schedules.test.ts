import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { P, account, all, names, product } from '../helpers/catalog.ts';
import { schedulesRepo } from '../../src/domain/catalog/schedules-repo.ts';

const t = suite<{ b: Booted }>('v3 catalog: access schedules');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const S = (productId: string) => `${P}/${productId}/access-schedules`;
const create = (b: Booted, productId: string, name: string, secret?: string) =>
  b.api('POST', S(productId), { body: { name }, key: newKey(), secret });

t('a product is born with its default schedule, which owns a tag', async ({ b }) => {
  const p = await product(b, { name: 'Guitar for adults' });
  const list = await b.api('GET', S(p.id));
  assert.is(list.status, 200);
  const [s] = list.body.data;
  assert.equal(list.body.data.length, 1);
  assert.equal(s, {
    object: 'access_schedule',
    id: s.id,
    product_id: p.id,
    tag_id: s.tag_id,
    revision: s.revision,
    name: 'Guitar for adults',
    default: true,
    deleted: false,
    deliveries: [],
    deliveries_count: 0,
    rules_count: 0,
    created_at: p.created_at,
    updated_at: p.created_at,
  });
  const tag = await b.api('GET', `/api/v3/tags/${s.tag_id}`);
  assert.is(tag.body.data.name, 'Guitar for adults');
  const got = await b.api('GET', `${S(p.id)}/${s.id}`);
  assert.equal(got.body.data, s);
  assert.is(got.headers.get('etag'), `"${s.revision}"`);
  // The tag name is taken now: the next product of that name gets " #<id>".
  const twin = await product(b, { name: 'guitar FOR adults' });
  const [t2] = (await b.api('GET', S(twin.id))).body.data;
  assert.is(t2.name, `guitar FOR adults #${twin.id}`);
  // A name longer than a tag holds is cut so that the suffix fits.
  const long = await product(b, { name: 'L'.repeat(200) });
  const [t3] = (await b.api('GET', S(long.id))).body.data;
  assert.is(t3.name, 'L'.repeat(100));
  const longer = await product(b, { name: 'L'.repeat(150) });
  const [t4] = (await b.api('GET', S(longer.id))).body.data;
  assert.is(t4.name, 'L'.repeat(100 - ` #${longer.id}`.length) + ` #${longer.id}`);
});

t('POST creates a schedule and its tag; tag names stay unique', async ({ b }) => {
  const p = await product(b, { name: 'Drums' });
  const res = await create(b, p.id, '  Drums - yearly ');
  assert.is(res.status, 201);
  const s = res.body.data;
  assert.equal(
    [s.name, s.default, s.deleted, s.product_id, s.deliveries, s.rules_count],
    ['Drums - yearly', false, false, p.id, [], 0],
  );
  assert.is(res.headers.get('etag'), `"${s.revision}"`);
  assert.is((await b.api('GET', `/api/v3/tags/${s.tag_id}`)).body.data.name, 'Drums - yearly');
  await b.api('POST', '/api/v3/tags', { body: { name: 'VIP' }, key: newKey() });
  const dup = await create(b, p.id, 'vip');
  assert.is(dup.status, 409);
  assert.is(dup.body.error.code, 'already_exists');
  assert.is(dup.body.error.details[0].field, 'name');
  const blank = await create(b, p.id, '   ');
  assert.is(blank.status, 422);
  assert.is((await create(b, '999999', 'x')).status, 404);
  const noKey = await b.api('POST', S(p.id), { body: { name: 'k' } });
  assert.is(noKey.body.error.code, 'idempotency_key_required');
  // Oldest first, the default first; cursor pages.
  await create(b, p.id, 'Drums - monthly');
  assert.equal(names(await all(b, `${S(p.id)}?limit=1`)), [
    'Drums',
    'Drums - yearly',
    'Drums - monthly',
  ]);
  assert.equal(names((await b.api('GET', `${S(p.id)}?sort=-created_at`)).body.data), [
    'Drums - monthly',
    'Drums - yearly',
    'Drums',
  ]);
});

t('PATCH name renames the tag; If-Match; 409 on a taken name', async ({ b }) => {
  const p = await product(b, { name: 'Piano' });
  const s = (await create(b, p.id, 'Piano - 6 months')).body.data;
  const stale = await b.api('PATCH', `${S(p.id)}/${s.id}`, {
    body: { name: 'Piano - semester' },
    headers: { 'if-match': '"old"' },
  });
  assert.is(stale.status, 412);
  assert.is(stale.body.error.code, 'revision_mismatch');
  const ok = await b.api('PATCH', `${S(p.id)}/${s.id}`, {
    body: { name: 'Piano - semester' },
    headers: { 'if-match': `"${s.revision}"` },
  });
  assert.is(ok.status, 200);
  assert.is(ok.body.data.name, 'Piano - semester');
  assert.is.not(ok.body.data.revision, s.revision);
  assert.is(ok.headers.get('etag'), `"${ok.body.data.revision}"`);
  assert.is((await b.api('GET', `/api/v3/tags/${s.tag_id}`)).body.data.name, 'Piano - semester');
  const taken = await b.api('PATCH', `${S(p.id)}/${s.id}`, { body: { name: 'PIANO' } });
  assert.is(taken.status, 409);
  assert.is(taken.body.error.code, 'already_exists');
  // Renaming the tag through /tags renames the schedule and changes its ETag.
  const before = (await b.api('GET', `${S(p.id)}/${s.id}`)).body.data;
  await b.api('PATCH', `/api/v3/tags/${s.tag_id}`, { body: { name: 'Piano - term' } });
  const after = await b.api('GET', `${S(p.id)}/${s.id}`);
  assert.is(after.body.data.name, 'Piano - term');
  assert.is.not(after.body.data.revision, before.revision);
  const lost = await b.api('PATCH', `${S(p.id)}/${s.id}`, {
    body: { name: 'Piano - x' },
    headers: { 'if-match': `"${before.revision}"` },
  });
  assert.is(lost.status, 412);
  // A schedule's tag cannot be deleted through /tags.
  const del = await b.api('DELETE', `/api/v3/tags/${s.tag_id}`);
  assert.is(del.status, 409);
  assert.is(del.body.error.code, 'tag_in_use');
});

t('trash: the default refuses, others go and come back', async ({ b }) => {
  const p = await product(b, { name: 'Violin' });
  const [def] = (await b.api('GET', S(p.id))).body.data;
  const refused = await b.api('DELETE', `${S(p.id)}/${def.id}`);
  assert.is(refused.status, 409);
  assert.is(refused.body.error.code, 'state_conflict');
  assert.is(refused.body.error.details[0].reason, 'default_schedule');
  const viaPatch = await b.api('PATCH', `${S(p.id)}/${def.id}`, { body: { deleted: true } });
  assert.is(viaPatch.status, 409);
  assert.is(viaPatch.body.error.code, 'state_conflict');
  const s = (await create(b, p.id, 'Violin - promo')).body.data;
  const stale = await b.api('DELETE', `${S(p.id)}/${s.id}`, { headers: { 'if-match': '"x"' } });
  assert.is(stale.status, 412);
  const del = await b.api('DELETE', `${S(p.id)}/${s.id}`, {
    headers: { 'if-match': `"${s.revision}"` },
  });
  assert.is(del.status, 204);
  const trashed = await b.api('GET', `${S(p.id)}/${s.id}`);
  assert.is(trashed.body.data.deleted, true);
  assert.equal(names((await b.api('GET', S(p.id))).body.data), ['Violin']);
  assert.equal(names((await b.api('GET', `${S(p.id)}?deleted=true`)).body.data), [
    'Violin - promo',
  ]);
  assert.is((await b.api('DELETE', `${S(p.id)}/${s.id}`)).status, 204);
  const rename = await b.api('PATCH', `${S(p.id)}/${s.id}`, { body: { name: 'Violin - y' } });
  assert.is(rename.status, 409);
  assert.is(rename.body.error.details[0].reason, 'in_trash');
  const restored = await b.api('PATCH', `${S(p.id)}/${s.id}`, {
    body: { deleted: false },
    headers: { 'if-match': `"${trashed.body.data.revision}"` },
  });
  assert.is(restored.status, 200);
  assert.is(restored.body.data.deleted, false);
  assert.equal(names((await b.api('GET', S(p.id))).body.data), ['Violin', 'Violin - promo']);
  // The tag stayed the schedule's while it was in the trash.
  assert.is((await b.api('DELETE', `/api/v3/tags/${s.tag_id}`)).status, 409);
});

t('the deliveries seam: listed in deliveries[]; an active one blocks the trash', async ({ b }) => {
  const p = await product(b, { name: 'Cello' });
  const s = (await create(b, p.id, 'Cello - sold')).body.data;
  const { deliveries, activeDeliveries } = schedulesRepo;
  schedulesRepo.deliveries = async ({ tx: _tx }, id) => (id === Number(s.id) ? [{ id: 77 }] : []);
  schedulesRepo.activeDeliveries = async ({ tx: _tx }, id) => (id === Number(s.id) ? 1 : 0);
  try {
    const got = await b.api('GET', `${S(p.id)}/${s.id}`);
    assert.equal(got.body.data.deliveries, [{ id: '77' }]);
    assert.is(got.body.data.deliveries_count, 1);
    const del = await b.api('DELETE', `${S(p.id)}/${s.id}`);
    assert.is(del.status, 409);
    assert.is(del.body.error.code, 'state_conflict');
    assert.is(del.body.error.details[0].reason, 'schedule_in_use');
  } finally {
    Object.assign(schedulesRepo, { deliveries, activeDeliveries });
  }
  assert.is((await b.api('DELETE', `${S(p.id)}/${s.id}`)).status, 204);
});

t('permissions: access_schedules.*, and tags.update to PATCH', async ({ b }) => {
  const p = await product(b, { name: 'Flute' });
  const [def] = (await b.api('GET', S(p.id))).body.data;
  const reader = await credentialWith(b, ['access_schedules.read']);
  assert.is((await b.api('GET', S(p.id), { secret: reader.secret })).status, 200);
  assert.is((await b.api('GET', `${S(p.id)}/${def.id}`, { secret: reader.secret })).status, 200);
  const noWrite = await create(b, p.id, 'Flute - x', reader.secret);
  assert.is(noWrite.status, 403);
  assert.equal(
    noWrite.body.error.details.map((d: any) => d.reason),
    ['access_schedules.write'],
  );
  const products = await credentialWith(b, ['products.read', 'products.write']);
  assert.is((await b.api('GET', S(p.id), { secret: products.secret })).status, 403);
  const writer = await credentialWith(b, ['access_schedules.write']);
  assert.is((await create(b, p.id, 'Flute - monthly', writer.secret)).status, 201);
  const rename = await b.api('PATCH', `${S(p.id)}/${def.id}`, {
    body: { name: 'Flute!' },
    secret: writer.secret,
  });
  assert.is(rename.status, 403);
  assert.equal(
    rename.body.error.details.map((d: any) => d.reason),
    ['tags.update'],
  );
  const both = await credentialWith(b, ['access_schedules.write', 'tags.update']);
  const ok = await b.api('PATCH', `${S(p.id)}/${def.id}`, {
    body: { name: 'Flute!' },
    secret: both.secret,
  });
  assert.is(ok.status, 200);
  assert.is(ok.body.data.name, 'Flute!');
});

t("another account's product or schedule is 404; ids are per product", async ({ b }) => {
  const p = await product(b, { name: 'Oboe' });
  const q = await product(b, { name: 'Harp' });
  const [def] = (await b.api('GET', S(p.id))).body.data;
  const other = await account(b, 'Schedule school');
  assert.is((await b.api('GET', S(p.id), { secret: other.secret })).status, 404);
  assert.is((await b.api('GET', `${S(p.id)}/${def.id}`, { secret: other.secret })).status, 404);
  assert.is((await create(b, p.id, 'Oboe - x', other.secret)).status, 404);
  assert.is((await b.api('GET', `${S(q.id)}/${def.id}`)).status, 404);
  assert.is((await b.api('DELETE', `${S(q.id)}/${def.id}`)).status, 404);
  assert.is((await b.api('GET', `${S(p.id)}/2147483648`)).status, 404);
});

t.run();
