// Deprecation and sunset, proven with a test-only fixture of the contract (no real operation is
// deprecated): headers until the sunset, then 410 operation_sunset without executing.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, newKey, type Booted } from '../helpers/app.ts';
import { loadSpec } from '../../src/app.ts';
import { DAY } from '../../src/clock.ts';

const t = suite<{ b: Booted; sunset: Date }>('deprecation');
t.before(async (ctx) => {
  const spec = loadSpec();
  const sunset = new Date(Date.now() + 30 * DAY);
  const op = spec.paths['/credentials/{credential_id}/revocations'].post;
  op.deprecated = true;
  op['x-service-deprecated-at'] = '2026-06-01';
  op['x-sunset'] = sunset.toISOString().slice(0, 10);
  // What the status rule (npm run statuses) asks of an operation with a sunset date.
  op.responses['410'] = { $ref: '#/components/responses/Gone' };
  ctx.sunset = new Date(op['x-sunset']);
  ctx.b = await boot({ spec });
});
t.after(async (ctx) => ctx.b.close());

t('the real contract deprecates nothing', async () => {
  const spec = loadSpec();
  for (const item of Object.values<any>(spec.paths)) {
    for (const op of Object.values<any>(item))
      if (op && typeof op === 'object') assert.not.ok(op.deprecated);
  }
});

t('capabilities lists the deprecation', async ({ b, sunset }) => {
  const res = await b.api('GET', '/api/v3/capabilities');
  assert.equal(res.body.data.deprecations, [
    {
      operation_id: 'revokeCredential',
      deprecated_at: '2026-06-01',
      sunset_at: sunset.toISOString().slice(0, 10),
    },
  ]);
});

t('until the sunset it answers normally, with the headers', async ({ b, sunset }) => {
  const c = await credentialWith(b, ['users.read']);
  const res = await b.api('POST', `/api/v3/credentials/${c.id}/revocations`, { key: newKey() });
  assert.is(res.status, 200);
  assert.is(res.headers.get('deprecation'), `@${Date.parse('2026-06-01') / 1000}`);
  assert.is(res.headers.get('sunset'), sunset.toUTCString());
  assert.match(
    res.headers.get('link')!,
    /^<http:\/\/.+\/api\/v3\/capabilities>; rel="deprecation"$/,
  );
  const other = await b.api('GET', '/api/v3/capabilities');
  assert.is(other.headers.get('deprecation'), null);
});

t('after the sunset: 410 operation_sunset, nothing executed', async ({ b }) => {
  const c = await credentialWith(b, ['users.read']);
  b.clock.advance(31 * DAY);
  const res = await b.api('POST', `/api/v3/credentials/${c.id}/revocations`, { key: newKey() });
  assert.is(res.status, 410);
  assert.is(res.body.error.code, 'operation_sunset');
  const still = await b.api('GET', `/api/v3/credentials/${c.id}`);
  assert.is(still.body.data.status, 'active');
});

t.run();
