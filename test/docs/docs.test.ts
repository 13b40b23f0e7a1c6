// GET /docs: the API reference pages and everything they load, served by the app itself.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { stringify } from 'yaml';
import { boot, type Booted } from '../helpers/app.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCALAR = path.join(ROOT, 'vendor/scalar/standalone.js');
const LEGACY_V1 = {
  openapi: '3.1.0',
  info: { title: 'Legacy v1 fixture', version: '1.0.0' },
  paths: {
    '/usuario': {
      get: { summary: 'List every student', responses: { '200': { description: 'ok' } } },
    },
  },
};

const t = suite<{ b: Booted; legacy: string }>('reference pages (/docs)');
t.before(async (ctx) => {
  ctx.legacy = fs.mkdtempSync(path.join(os.tmpdir(), 'school-docs-'));
  fs.writeFileSync(path.join(ctx.legacy, 'v1.yaml'), stringify(LEGACY_V1));
  ctx.b = await boot({ legacySpecDir: ctx.legacy });
});
t.after(async ({ b, legacy }) => {
  await b.close();
  fs.rmSync(legacy, { recursive: true, force: true });
});

const get = (b: Booted, p: string, init?: RequestInit) => fetch(b.url + p, init);

t('GET /docs: the v3 page, local assets only, held to this origin', async ({ b }) => {
  const res = await get(b, '/docs');
  assert.is(res.status, 200);
  assert.is(res.headers.get('content-type'), 'text/html; charset=utf-8');
  const csp = res.headers.get('content-security-policy')!;
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /script-src 'self';/);
  assert.match(csp, /connect-src 'self'/);
  const html = await res.text();
  assert.match(html, /<title>School Platform API v3 reference<\/title>/);
  assert.match(html, /<div id="reference" data-url="\/docs\/v3\/openapi\.json"><\/div>/);
  const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]);
  // The vendored version busts caches when `npm run vendor` brings a new bundle.
  const version = fs.readFileSync(path.join(ROOT, 'vendor/scalar/VERSION'), 'utf8').trim();
  assert.match(version, /^\d+\.\d+\.\d+$/);
  assert.ok(scripts.includes(`/docs/assets/scalar.js?v=${version}`), scripts.join(' '));
  assert.equal(
    scripts.map((s) => s!.split('?')[0]),
    ['/docs/assets/scalar.js', '/docs/assets/init.js'],
  );
  assert.not.match(html, /https?:\/\//); // no CDN, no other host
  assert.not.match(html, /<script>/); // nothing inline: the CSP allows none
  assert.is((await get(b, '/docs/v3')).status, 200);
});

t('the assets: Scalar standalone from vendor/scalar/, and the starter script', async ({ b }) => {
  const res = await get(b, '/docs/assets/scalar.js');
  assert.is(res.status, 200);
  assert.is(res.headers.get('content-type'), 'text/javascript; charset=utf-8');
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.ok(bytes.equals(fs.readFileSync(SCALAR)), 'the committed file');
  const init = await (await get(b, '/docs/assets/init.js')).text();
  assert.match(init, /Scalar\.createApiReference\(mount, \{/);
  assert.match(init, /withDefaultFonts: false/); // fonts would come from fonts.scalar.com
  assert.is((await get(b, '/docs/assets/other.js')).status, 404);
});

t('the v3 document the page reads is the one /api/v3/openapi.json serves', async ({ b }) => {
  const page = await get(b, '/docs/v3/openapi.json');
  assert.is(page.status, 200);
  assert.is(page.headers.get('content-type'), 'application/json; charset=utf-8');
  const served = await b.api('GET', '/api/v3/openapi.json');
  assert.is(served.status, 200);
  assert.equal(await page.json(), served.body);
  // Why the page does not read /api/v3/openapi.json itself: a browser has no credential.
  const anonymous = await b.api('GET', '/api/v3/openapi.json', { secret: null });
  assert.is(anonymous.status, 401);
});

t('legacy pages exist while their contract file does', async ({ b, legacy }) => {
  const v1 = await get(b, '/docs/v1');
  assert.is(v1.status, 200);
  assert.match(await v1.text(), /data-url="\/docs\/v1\/openapi\.json"/);
  assert.equal(await (await get(b, '/docs/v1/openapi.json')).json(), LEGACY_V1);
  assert.is((await get(b, '/docs/v2')).status, 404);
  assert.is((await get(b, '/docs/v2/openapi.json')).status, 404);
  const v2 = { ...LEGACY_V1, info: { title: 'Legacy v2 fixture', version: '2.0.0' } };
  fs.writeFileSync(path.join(legacy, 'v2.yaml'), stringify(v2));
  assert.is((await get(b, '/docs/v2')).status, 200);
  assert.equal(await (await get(b, '/docs/v2/openapi.json')).json(), v2);
});

t(
  'outside /api/v3: other methods 405, unknown pages 404, not in the audit trail',
  async ({ b }) => {
    const post = await get(b, '/docs', { method: 'POST' });
    assert.is(post.status, 405);
    assert.is(post.headers.get('allow'), 'GET, HEAD');
    assert.is((await get(b, '/docs/v4')).status, 404);
    const slash = await get(b, '/docs/', { redirect: 'manual' });
    assert.equal([slash.status, slash.headers.get('location')], [302, '/docs']);
    assert.is((await get(b, '/docs/openapi.json')).status, 404);
    const page = await get(b, '/docs');
    const id = page.headers.get('x-request-id')!;
    assert.match(id, /^req_/);
    const audit = await b.api('GET', `/api/v3/requests/${id}`);
    assert.is(audit.status, 404);
    const v3 = await b.api('GET', '/api/v3/capabilities');
    const audited = await b.api('GET', `/api/v3/requests/${v3.headers.get('x-request-id')}`);
    assert.is(audited.status, 200); // where a v3 call is found
  },
);

t.run();
