// Per-minute rate limits per source, account and credential; a 429 does not count; fail closed.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('rate limits');
t.before(async (ctx) => {
  ctx.b = await boot({
    env: { RATE_LIMIT_CREDENTIAL: '3', RATE_LIMIT_ACCOUNT: '5', RATE_LIMIT_SOURCE: '1000' },
  });
});
t.after(async (ctx) => ctx.b.close());

t('credential limit: headers count down, then 429 with Retry-After', async ({ b }) => {
  const c = await credentialWith(b, ['*']);
  const remaining: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await b.api('GET', '/api/v3/capabilities', { secret: c.secret });
    assert.is(res.status, 200);
    assert.is(res.headers.get('ratelimit-limit'), '3');
    remaining.push(res.headers.get('ratelimit-remaining')!);
  }
  assert.equal(remaining, ['2', '1', '0']);
  const limited = await b.api('GET', '/api/v3/capabilities', { secret: c.secret });
  assert.is(limited.status, 429);
  assert.is(limited.body.error.code, 'rate_limit_exceeded');
  const retry = Number(limited.headers.get('retry-after'));
  assert.ok(retry >= 1 && retry <= 60, String(retry));
  assert.is(limited.body.error.retry_after_seconds, retry);
});

t('rejected requests do not count against the account window', async ({ b }) => {
  // Account limit 5 is shared; credential A spends 3 and is then rejected 4 times. If rejections
  // counted, the account would be over 5 and credential B would be refused.
  const { id } = await b.app.services.accounts.createAccount({ name: 'Limits school' });
  const ca = await b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
  });
  const cb = await b.app.services.accounts.createRootCredential({
    accountId: id,
    permissions: ['*'],
  });
  for (let i = 0; i < 3; i++)
    assert.is((await b.api('GET', '/api/v3/capabilities', { secret: ca.secret })).status, 200);
  for (let i = 0; i < 4; i++)
    assert.is((await b.api('GET', '/api/v3/capabilities', { secret: ca.secret })).status, 429);
  assert.is((await b.api('GET', '/api/v3/capabilities', { secret: cb.secret })).status, 200);
  assert.is((await b.api('GET', '/api/v3/capabilities', { secret: cb.secret })).status, 200);
  const over = await b.api('GET', '/api/v3/capabilities', { secret: cb.secret });
  assert.is(over.status, 429);
  assert.is(over.headers.get('ratelimit-limit'), '5');
});

t('the limiter fails closed', async ({ b }) => {
  const limiters = (b.app.services.rateLimits as any).limiters;
  const original = limiters.credential.consume;
  limiters.credential.consume = async () => {
    throw new Error('store unreachable');
  };
  try {
    const c = await credentialWith(b, ['*']);
    const res = await b.api('GET', '/api/v3/capabilities', { secret: c.secret });
    assert.is(res.status, 503);
    assert.is(res.body.error.code, 'rate_limiter_unavailable');
  } finally {
    limiters.credential.consume = original;
  }
});

t.run();
