// v1 tags of students: adicionar_tag, remover_tag, atualizar_tag_lote and lista_por_tag, over the
// same tags v3 shows.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Api, Booted } from '../helpers/app.ts';
import { bootLegacy } from '../helpers/legacy-contract.ts';
import type { User } from '../../src/domain/users/repo.ts';

const t = suite<{ b: Booted; v1: Api }>('v1 tags');
t.before(async (ctx) => {
  const { b, legacy } = await bootLegacy();
  ctx.b = b;
  ctx.v1 = legacy;
});
t.after(async (ctx) => ctx.b.close());

const NOT_FOUND = { success: false, code: 404, msg: 'The requested resource was not found.' };

const student = (b: Booted, name: string, email: string): Promise<User> =>
  b.app.services.users.create(b.accountId, { name, email });

/** The student's tag names as v3 lists them. */
async function v3Tags(b: Booted, id: number): Promise<string[]> {
  const res = await b.api('GET', `/api/v3/users/${id}/tags`);
  return res.body.data.map((x: any) => x.name);
}

const tagId = async (b: Booted, name: string) =>
  (await b.app.services.tags.findByName(b.accountId, name)).id;

t('adicionar_tag: by usuario_id and a new tag name; by email and tag_id', async ({ b, v1 }) => {
  const ana = await student(b, 'Ana', 'ana@example.com');
  const res = await v1('POST', '/api/v1/usuario/adicionar_tag', {
    body: { usuario_id: ana.id, tag: ' vip ' },
  });
  assert.is(res.status, 200);
  const vip = await tagId(b, 'vip');
  const usuario = (await v1('GET', `/api/v1/usuario/${ana.id}`)).body.data.usuario;
  assert.equal(res.body, {
    code: 200,
    success: true,
    data: { usuario, tags: [{ id: vip, nome: 'vip' }] },
  });

  const alunos = await b.app.services.tags.create(b.accountId, { name: 'Alunos' });
  const byEmail = await v1('POST', '/api/v1/usuario/adicionar_tag', {
    body: { email: 'ANA@example.com', tag_id: String(alunos.id) },
  });
  assert.equal(byEmail.body.data.tags, [
    { id: alunos.id, nome: 'Alunos' },
    { id: vip, nome: 'vip' },
  ]);
  // Again, and by another case of the name: nothing changes, no second tag.
  const again = await v1('POST', '/api/v1/usuario/adicionar_tag', {
    body: { usuario_id: String(ana.id), tag: 'VIP' },
  });
  assert.equal(again.body, byEmail.body);
  assert.equal(await v3Tags(b, ana.id), ['Alunos', 'vip']);
  // A tag id the account lacks (here none has it) is not found, and nothing is added.
  const missing = await v1('POST', '/api/v1/usuario/adicionar_tag', {
    body: { usuario_id: ana.id, tag_id: '999999' },
  });
  assert.equal(missing.body, NOT_FOUND);
  assert.equal(await v3Tags(b, ana.id), ['Alunos', 'vip']);
});

t('remover_tag: removes; a tag the student lacks succeeds; unknown names 404', async (ctx) => {
  const { b, v1 } = ctx;
  const bia = await student(b, 'Bia', 'bia@example.com');
  await v1('POST', '/api/v1/usuario/adicionar_tag', { body: { usuario_id: bia.id, tag: 'vip' } });
  await v1('POST', '/api/v1/usuario/adicionar_tag', { body: { usuario_id: bia.id, tag: 'b' } });
  const res = await v1('POST', '/api/v1/usuario/remover_tag', {
    body: { email: 'bia@example.com', tag: 'VIP' },
  });
  assert.is(res.status, 200);
  assert.equal(res.body.data.tags, [{ id: await tagId(b, 'b'), nome: 'b' }]);
  const again = await v1('POST', '/api/v1/usuario/remover_tag', {
    body: { usuario_id: bia.id, tag_id: await tagId(b, 'vip') },
  });
  assert.equal(again.body, res.body);
  assert.equal(await v3Tags(b, bia.id), ['b']);
  // The tag itself stays (only the student lost it).
  assert.is((await b.app.services.tags.findByName(b.accountId, 'vip')).name, 'vip');

  const unknown = await v1('POST', '/api/v1/usuario/remover_tag', {
    body: { usuario_id: bia.id, tag: 'never-created' },
  });
  assert.equal(unknown.body, NOT_FOUND);
  assert.equal(
    (
      await v1('POST', '/api/v1/usuario/remover_tag', {
        body: { usuario_id: bia.id, tag_id: 999999 },
      })
    ).body,
    NOT_FOUND,
  );
});

t('tag changes: missing refs 422, unknown student 404, another school 404', async (ctx) => {
  const { b, v1 } = ctx;
  const caio = await student(b, 'Caio', 'caio@example.com');
  for (const body of [{ tag: 'x' }, { usuario_id: caio.id }, {}, { usuario_id: 0, tag: 'x' }]) {
    const res = await v1('POST', '/api/v1/usuario/adicionar_tag', { body });
    assert.is(res.status, 422, JSON.stringify(body));
    assert.is(res.body.code, 422);
    assert.is(res.body.success, false);
  }
  const long = await v1('POST', '/api/v1/usuario/adicionar_tag', {
    body: { usuario_id: caio.id, tag: 'x'.repeat(101) },
  });
  assert.is(long.status, 422);

  const other = await b.app.services.accounts.createAccount({ name: 'Other' });
  const theirs = await b.app.services.users.create(other.id, {
    name: 'Outra',
    email: 'outra@example.com',
  });
  const theirTag = await b.app.services.tags.create(other.id, { name: 'deles' });
  const cases = [
    { usuario_id: 999999, tag: 'x' },
    { email: 'nobody@example.com', tag: 'x' },
    { usuario_id: theirs.id, tag: 'x' },
    { usuario_id: caio.id, tag_id: theirTag.id },
  ];
  for (const body of cases) {
    const res = await v1('POST', '/api/v1/usuario/adicionar_tag', { body });
    assert.equal(res.body, NOT_FOUND, JSON.stringify(body));
  }
  // An unknown student does not leave a new tag behind.
  const tags = await b.api('GET', '/api/v3/tags?name=x');
  assert.equal(tags.body.data, []);
  assert.equal(await v3Tags(b, caio.id), []);
});

t('atualizar_tag_lote: sets each student’s tags; creates names; results by email', async (ctx) => {
  const { b, v1 } = ctx;
  const d = await student(b, 'Duda', 'duda@example.com');
  const e = await student(b, 'Eva', 'eva@example.com');
  const f = await student(b, 'Fabi', 'fabi@example.com');
  await b.app.services.tags.assign(
    b.accountId,
    d.id,
    (await b.app.services.tags.create(b.accountId, { name: 'antiga' })).id,
  );
  await b.app.services.tags.assign(b.accountId, f.id, await tagId(b, 'antiga'));
  const res = await v1('POST', '/api/v1/usuario/atualizar_tag_lote', {
    body: [
      { email: 'duda@example.com', tags: 'turma-2026, Premium ,premium' },
      { email: 'EVA@example.com', tags: 'turma-2026' },
      { email: 'fabi@example.com' },
      { email: 'ghost@example.com', tags: 'x' },
      { email: 'fabi@example.com', tags: ' , ' },
    ],
  });
  assert.is(res.status, 200);
  assert.equal(res.body, {
    code: 200,
    success: true,
    data: {
      'duda@example.com': { msg: 'updated', uid: d.id },
      'EVA@example.com': { msg: 'updated', uid: e.id },
      'fabi@example.com': { msg: 'unchanged', uid: f.id },
      'ghost@example.com': { msg: 'not_found', uid: null },
    },
  });
  assert.equal(await v3Tags(b, d.id), ['Premium', 'turma-2026']);
  assert.equal(await v3Tags(b, e.id), ['turma-2026']);
  assert.equal(await v3Tags(b, f.id), ['antiga']);
  // The missing student's item created nothing.
  assert.equal((await b.api('GET', '/api/v3/tags?name=x')).body.data, []);
  const second = await v1('POST', '/api/v1/usuario/atualizar_tag_lote', {
    body: [{ email: 'duda@example.com', tags: 'antiga' }],
  });
  assert.equal(second.body.data, { 'duda@example.com': { msg: 'updated', uid: d.id } });
  assert.equal(await v3Tags(b, d.id), ['antiga']);
});

t('atualizar_tag_lote: a bad item refuses the whole body (422), nothing applied', async (ctx) => {
  const { b, v1 } = ctx;
  const g = await student(b, 'Gabi', 'gabi@example.com');
  for (const body of [
    [
      { email: 'gabi@example.com', tags: 'a' },
      { email: 'not-an-email', tags: 'b' },
    ],
    [
      { email: 'gabi@example.com', tags: 'a' },
      { email: 'gabi@example.com', tags: 'y'.repeat(101) },
    ],
    [],
    { email: 'gabi@example.com', tags: 'a' },
    [{ tags: 'a' }],
    Array.from({ length: 1001 }, (_, i) => ({ email: `x${i}@example.com`, tags: 'a' })),
  ]) {
    const res = await v1('POST', '/api/v1/usuario/atualizar_tag_lote', { body });
    assert.is(res.status, 422);
    assert.equal([res.body.success, res.body.code], [false, 422]);
  }
  assert.equal(await v3Tags(b, g.id), []);
});

t('lista_por_tag: the tag’s students by id, paged like /usuario', async ({ b, v1 }) => {
  const tag = await b.app.services.tags.create(b.accountId, { name: 'lista' });
  const members: User[] = [];
  for (let i = 0; i < 3; i++) {
    const u = await student(b, `Lista ${i}`, `lista${i}@example.com`);
    if (i !== 1) {
      await b.app.services.tags.assign(b.accountId, u.id, tag.id);
      members.push(u);
    }
  }
  const res = await v1('GET', `/api/v1/usuario/lista_por_tag/${tag.id}`);
  assert.is(res.status, 200);
  assert.equal(res.body.data.paginator, {
    next_page_url: null,
    prev_page_url: null,
    perPage: 150,
  });
  assert.equal(
    res.body.data.usuario.map((u: any) => [u.id, u.email]),
    members.map((u) => [u.id, u.email]),
  );
  for (const id of ['999999', 'abc']) {
    assert.equal((await v1('GET', `/api/v1/usuario/lista_por_tag/${id}`)).body, NOT_FOUND);
  }
  const other = await b.app.services.accounts.createAccount({ name: 'Other 2' });
  const theirs = await b.app.services.tags.create(other.id, { name: 'lista' });
  assert.equal((await v1('GET', `/api/v1/usuario/lista_por_tag/${theirs.id}`)).body, NOT_FOUND);
});

t('lista_por_tag pages: 150 per page, cursors bound to the tag', async ({ b, v1 }) => {
  const { users, tags } = b.app.services;
  const tag = await tags.create(b.accountId, { name: 'muitos' });
  const ids: number[] = [];
  for (let i = 0; i < 152; i++) {
    const u = await users.create(b.accountId, { name: `M ${i}`, email: `m${i}@example.com` });
    await tags.assign(b.accountId, u.id, tag.id);
    ids.push(u.id);
  }
  const first = await v1('GET', `/api/v1/usuario/lista_por_tag/${tag.id}`);
  assert.equal(
    first.body.data.usuario.map((u: any) => u.id),
    ids.slice(0, 150),
  );
  const next: string = first.body.data.paginator.next_page_url;
  assert.ok(next.startsWith(`${b.url}/api/v1/usuario/lista_por_tag/${tag.id}?cursor=`), next);
  const second = await v1('GET', next.slice(b.url.length));
  assert.equal(
    second.body.data.usuario.map((u: any) => u.id),
    ids.slice(150),
  );
  assert.is(second.body.data.paginator.next_page_url, null);
  // The cursor names its list: on GET /usuario it is refused.
  const cursor = new URL(next).searchParams.get('cursor')!;
  const wrong = await v1('GET', `/api/v1/usuario?cursor=${encodeURIComponent(cursor)}`);
  assert.is(wrong.status, 400);
});

t.run();
