import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, type Booted } from '../helpers/app.ts';
import fs from 'node:fs';
import { parse } from 'yaml';
import { release } from '../../generated/operations.ts';

// The release the contract names (spec/openapi.yaml info.version, set by `npm run release`): read,
// not pinned, so cutting a release does not break the suite.
const RELEASE: string = parse(
  fs.readFileSync(new URL('../../spec/openapi.yaml', import.meta.url), 'utf8'),
).info.version;

const t = suite<{ b: Booted }>('meta');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

t('every response carries X-Request-Id and X-Service-Release', async ({ b }) => {
  const res = await b.api('GET', '/api/v3/capabilities');
  assert.is(res.status, 200);
  assert.match(res.headers.get('x-request-id')!, /^req_[0-9a-f]{24}$/);
  assert.is(release, RELEASE);
  assert.is(res.headers.get('x-service-release'), RELEASE);
  assert.equal(res.body, { data: { object: 'capabilities', release: RELEASE, deprecations: [] } });
});

t('error request_id equals X-Request-Id', async ({ b }) => {
  const res = await b.api('GET', '/api/v3/capabilities', { secret: null });
  assert.is(res.status, 401);
  assert.is(res.body.error.code, 'unauthenticated');
  assert.is(res.body.error.request_id, res.headers.get('x-request-id'));
  assert.equal(res.body.error.details, []);
});

t('GET /openapi.json serves the contract as served', async ({ b }) => {
  const res = await b.api('GET', '/api/v3/openapi.json');
  assert.is(res.status, 200);
  assert.is(res.body.openapi, '3.1.0');
  assert.is(res.body.info.version, RELEASE);
  assert.ok(res.body.paths['/users']);
  assert.ok(Array.isArray(res.body['x-tagGroups']));
});

t.run();
