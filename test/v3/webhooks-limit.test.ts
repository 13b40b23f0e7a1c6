// An account has at most 20 webhooks (every event fans out to each): the 21st is 409
// plan_limit_reached, even when 25 creations race (serialized per account on PostgreSQL), and a
// deleted one frees its place.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';

const W = '/api/v3/webhooks';
const t = suite<{ b: Booted }>('v3 webhooks: at most 20 per account');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
});
t.after(async (ctx) => ctx.b.close());

const create = (b: Booted, n: number, secret?: string) =>
  b.api('POST', W, {
    body: { url: `http://127.0.0.1:9/hook-${n}`, event_types: ['*'] },
    key: newKey(),
    secret,
  });

t('25 creations at once: 20 created, 5 refused; a deletion frees a place', async ({ b }) => {
  const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => create(b, i)));
  const statuses = answers.map((r) => r.status).sort();
  assert.equal(statuses, [...Array(20).fill(201), ...Array(5).fill(409)]);
  const refused = answers.find((r) => r.status === 409)!;
  assert.equal(
    [refused.body.error.code, refused.body.error.details[0].reason],
    ['plan_limit_reached', 'webhook_endpoints'],
  );
  const list = await b.api('GET', `${W}?limit=200`);
  assert.is(list.body.data.length, 20);

  const first = answers.find((r) => r.status === 201)!.body.data;
  const del = await b.api('DELETE', `${W}/${first.id}`, {
    headers: { 'if-match': `"${first.revision}"` },
  });
  assert.is(del.status, 204, JSON.stringify(del.body));
  assert.is((await create(b, 100)).status, 201);
  assert.is((await create(b, 101)).status, 409);

  // The limit is per account: another account still creates its first.
  const accounts = b.app.services.accounts;
  const { id } = await accounts.createAccount({ name: 'Other school' });
  const c = await accounts.createRootCredential({ accountId: id, permissions: ['*'] });
  assert.is((await create(b, 102, c.secret)).status, 201);
});

t.run();
