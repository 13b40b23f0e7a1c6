// Legacy calls share the per-minute windows: the specification limits all calls.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted; key: string }>('legacy rate limits');
t.before(async (ctx) => {
  ctx.b = await boot({ env: { RATE_LIMIT_ACCOUNT: '2' } });
  ctx.key = (await ctx.b.app.services.accounts.createLegacyKey(ctx.b.accountId)).key;
});
t.after(async (ctx) => ctx.b.close());

t('past the account window: 429 in the v1 envelope with Retry-After', async ({ b, key }) => {
  for (let i = 0; i < 2; i++) {
    const ok = await b.api('GET', '/api/v1/no-such-route', {
      secret: null,
      headers: { authorization: key },
    });
    assert.is(ok.status, 404);
  }
  const limited = await b.api('GET', '/api/v1/no-such-route', {
    secret: null,
    headers: { authorization: key },
  });
  assert.is(limited.status, 429);
  assert.equal([limited.body.success, limited.body.code], [false, 429]);
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  // v2 shares the account's window.
  const v2 = await b.api('GET', '/api/v2/no-such-route', {
    secret: null,
    headers: { authorization: key },
  });
  assert.is(v2.status, 429);
  assert.is(v2.body.version, 2);
});

t.run();
