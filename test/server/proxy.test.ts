// Behind a load balancer every connection comes from the balancer. With TRUST_PROXY=<hops> the
// client's address is the one the balancer appended to X-Forwarded-For: the per-source limit and
// the audit trail see clients, not the balancer. Without it the header is ignored (clients can
// send anything there).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, type Booted } from '../helpers/app.ts';

const t = suite('behind a load balancer');

const call = (b: Booted, forwardedFor: string) =>
  b.api('GET', '/api/v3/capabilities', { headers: { 'x-forwarded-for': forwardedFor } });

t('TRUST_PROXY=1: each client has its own source limit; the audit has its address', async () => {
  const b = await boot({ env: { TRUST_PROXY: '1', RATE_LIMIT_SOURCE: '2' } });
  try {
    assert.is((await call(b, '203.0.113.7')).status, 200);
    // A client may put anything first; the balancer appends the address it saw, and that counts.
    const spoofed = await call(b, '198.51.100.1, 203.0.113.7');
    assert.is(spoofed.status, 200);
    assert.is((await call(b, '203.0.113.7')).status, 429);
    const other = await call(b, '203.0.113.8');
    assert.is(other.status, 200, 'another client behind the same balancer');
    const row = await b.app
      .db('audit_entries')
      .where({ request_id: other.headers.get('x-request-id') })
      .first('ip');
    assert.is(row.ip, '203.0.113.8');
  } finally {
    await b.close();
  }
});

t('by default X-Forwarded-For is ignored: the connection is the source', async () => {
  const b = await boot({ env: { RATE_LIMIT_SOURCE: '2' } });
  try {
    assert.is((await call(b, '203.0.113.7')).status, 200);
    assert.is((await call(b, '203.0.113.8')).status, 200);
    assert.is((await call(b, '203.0.113.9')).status, 429);
  } finally {
    await b.close();
  }
});

t.run();
