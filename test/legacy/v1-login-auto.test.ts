// GET /login/auto?token=...: the v1 `login_auto` link (v3 `auto_login_url`). It signs the
// student in (started_at once, last_access_at every time) and shows their products and progress.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Api, Booted } from '../helpers/app.ts';
import { bootLegacy } from '../helpers/legacy-contract.ts';

const t = suite<{ b: Booted; v1: Api }>('login auto');
t.before(async (ctx) => {
  const { b, legacy } = await bootLegacy();
  ctx.b = b;
  ctx.v1 = legacy;
});
t.after(async (ctx) => ctx.b.close());

async function open(url: string, init: RequestInit = {}) {
  const res = await fetch(url, { redirect: 'manual', ...init });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

t(
  'the link signs in: started_at once, last_access_at each time; v1 and v3 show it',
  async (ctx) => {
    const { b, v1 } = ctx;
    const { users, catalog, enrollments, progress } = b.app.services;
    const ana = await users.create(b.accountId, { name: 'Ana <Souza>', email: 'ana@example.com' });
    const course = await catalog.create(b.accountId, { name: 'Física & Química' });
    const ended = await catalog.create(b.accountId, { name: 'Curso encerrado' });
    await enrollments.create(b.accountId, {
      user_id: String(ana.id),
      product_id: String(course.id),
      duration: 30,
      duration_unit: 'day',
    });
    const gone = await enrollments.create(b.accountId, {
      user_id: String(ana.id),
      product_id: String(ended.id),
    });
    await enrollments.update(b.accountId, gone.id, { ended: true }, undefined);
    const lessons = [];
    for (const name of ['A1', 'A2', 'A3', 'A4'])
      lessons.push(await progress.createLesson(b.accountId, course.id, { name }));
    await progress.recordLesson(
      b.accountId,
      { userId: ana.id, productId: course.id, lessonId: lessons[0]!.id },
      { percent: 100 },
    );

    const before = (await v1('GET', `/api/v1/usuario/${ana.id}`)).body.data.usuario;
    assert.equal([before.comecou_em, before.ultimo_acesso_em], [null, null]);

    const first = await open(before.login_auto);
    assert.is(first.status, 200);
    assert.match(first.headers.get('content-type')!, /^text\/html; charset=utf-8/);
    assert.is(first.headers.get('cache-control'), 'no-store');
    assert.is(first.headers.get('referrer-policy'), 'no-referrer');
    assert.match(first.text, /<h1>Olá, Ana &lt;Souza&gt;<\/h1>/);
    assert.match(
      first.text,
      new RegExp(
        `<li data-product-id="${course.id}"><strong>Física &amp; Química</strong><br>` +
          '<progress max="100" value="25">25%</progress> 25% \\(1 de 4 aulas\\) · até \\d{4}-\\d\\d-\\d\\d</li>',
      ),
    );
    assert.not.match(first.text, /Curso encerrado/);

    const signedIn = (await v1('GET', `/api/v1/usuario/${ana.id}`)).body.data.usuario;
    const at = signedIn.comecou_em;
    assert.type(at, 'string');
    assert.is(signedIn.ultimo_acesso_em, at);

    b.clock.advance(3600_000);
    await open(before.login_auto);
    const again = (await b.api('GET', `/api/v3/users/${ana.id}`)).body.data;
    assert.is(again.started_at, at);
    assert.is(Date.parse(again.last_access_at) - Date.parse(at) >= 3600_000, true);
    // The profile's edits are dated by updated_at; access is not one.
    assert.is(again.updated_at, ana.updatedAt);
  },
);

t('a student without products sees an empty page; unknown tokens are 404', async ({ b }) => {
  const bia = await b.app.services.users.create(b.accountId, {
    name: 'Bia',
    email: 'bia@example.com',
  });
  const page = await open(`${b.url}/login/auto?token=${bia.autoLoginToken}`);
  assert.is(page.status, 200);
  assert.match(page.text, /Você ainda não tem acesso a nenhum produto\./);

  for (const query of ['?token=nope', '', '?token=', '?token=a%00b', `?token=${'x'.repeat(65)}`]) {
    const res = await open(`${b.url}/login/auto${query}`);
    assert.is(res.status, 404, query);
    assert.match(res.text, /<h1>Link inválido<\/h1>/);
    assert.is(res.headers.get('cache-control'), 'no-store');
  }
  // A refused method signs nobody in.
  const caio = await b.app.services.users.create(b.accountId, {
    name: 'Caio',
    email: 'caio@example.com',
  });
  const post = await open(`${b.url}/login/auto?token=${caio.autoLoginToken}`, { method: 'POST' });
  assert.is(post.status, 405);
  assert.is(post.headers.get('allow'), 'GET, HEAD');
  assert.is((await b.app.services.users.get(b.accountId, caio.id)).startedAt, null);
});

t.run();
