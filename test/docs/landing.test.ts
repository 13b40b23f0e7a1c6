// GET / on the root host: a newcomer who opens the server's address is pointed to the reference,
// the contracts and the health checks (a browser gets a page, a client JSON), never a bare 404.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, type Booted } from '../helpers/app.ts';

const t = suite<{ b: Booted }>('landing (/)');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

t('a client gets JSON naming the release and the links, each of which answers', async ({ b }) => {
  const res = await fetch(b.url + '/', { headers: { accept: 'application/json' } });
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^application\/json/);
  const body = await res.json();
  assert.is(body.name, 'School Platform API');
  assert.is(body.release, b.app.release);
  for (const href of [body.links.docs, body.links.openapi, body.links.health]) {
    assert.is((await fetch(b.url + href)).status, 200, href);
  }
  // Readiness answers 503 here: this test app runs no workers (the job engine is part of it).
  assert.ok([200, 503].includes((await fetch(b.url + body.links.ready)).status));
});

t('a browser gets a page that links the reference', async ({ b }) => {
  const res = await fetch(b.url + '/', { headers: { accept: 'text/html,*/*;q=0.8' } });
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/html/);
  const page = await res.text();
  assert.match(page, /<a href="\/docs">API reference \(v3\)<\/a>/);
  assert.match(page, /<a href="\/docs\/v3\/openapi.json">/);
});

t('other methods: 405 with Allow', async ({ b }) => {
  const res = await fetch(b.url + '/', { method: 'POST' });
  assert.is(res.status, 405);
  assert.is(res.headers.get('allow'), 'GET, HEAD');
});

t.run();
