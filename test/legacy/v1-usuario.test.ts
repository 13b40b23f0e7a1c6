// v1 students (specification: v1 (students)): read by id, email or document, update, delete.
// Every response is checked against spec/legacy/v1.yaml; bodies are compared whole.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Booted } from '../helpers/app.ts';
import { bootLegacy, NULL_UTM, legacyClient, legacyDoc } from '../helpers/legacy-contract.ts';
import type { Api } from '../helpers/app.ts';
import type { User } from '../../src/domain/users/repo.ts';
import { loadSpec } from '../../src/app.ts';

const t = suite<{ b: Booted; v1: Api }>('v1 usuario');
t.before(async (ctx) => {
  const { b, legacy } = await bootLegacy();
  ctx.b = b;
  ctx.v1 = legacy;
});
t.after(async (ctx) => ctx.b.close());

const NOT_FOUND = { success: false, code: 404, msg: 'The requested resource was not found.' };

async function student(b: Booted, fields: Record<string, unknown>): Promise<User> {
  return b.app.services.users.create(b.accountId, { name: 'Aluno', ...fields } as any);
}

/** The whole v1 usuario of a student; `over` replaces fields (the expected values). */
function usuario(b: Booted, u: User, over: Record<string, unknown> = {}) {
  return {
    id: u.id,
    nome: u.name,
    email: u.email,
    celular: u.phone,
    doc: u.document,
    cargo: u.jobTitle,
    nome_empresa: u.companyName,
    tamanho_empresa: u.companySize,
    gratis: u.free,
    pontos: u.points,
    criado_em: u.createdAt,
    comecou_em: u.startedAt,
    ultimo_acesso_em: u.lastAccessAt,
    login_auto: `${b.url}/login/auto?token=${u.autoLoginToken}`,
    login_crstk: u.autoLoginToken,
    utm: u.utm,
    ...over,
  };
}

t('GET /usuario/{id|email|document}: the whole student, every v1 field', async ({ b, v1 }) => {
  const ana = await student(b, {
    name: 'Ana Souza',
    email: 'Ana@Example.com',
    phone: '+5511988887777',
    document: '529.982.247-25',
    job_title: 'Professora',
    company_name: 'Escola X',
    company_size: '10-50',
    free: true,
    utm: { utm_source: 'google', gclid: 'g-1' },
  });
  const golden = {
    code: 200,
    success: true,
    data: {
      usuario: {
        id: ana.id,
        nome: 'Ana Souza',
        email: 'Ana@Example.com',
        celular: '+5511988887777',
        doc: '52998224725',
        cargo: 'Professora',
        nome_empresa: 'Escola X',
        tamanho_empresa: '10-50',
        gratis: true,
        pontos: 0,
        criado_em: ana.createdAt,
        comecou_em: null,
        ultimo_acesso_em: null,
        login_auto: `${b.url}/login/auto?token=${ana.autoLoginToken}`,
        login_crstk: ana.autoLoginToken,
        utm: { ...NULL_UTM, utm_source: 'google', gclid: 'g-1' },
      },
    },
  };
  for (const ref of [
    String(ana.id),
    'ana@example.com',
    'ANA%40EXAMPLE.COM',
    '52998224725',
    '529.982.247-25',
  ]) {
    const res = await v1('GET', `/api/v1/usuario/${ref}`);
    assert.is(res.status, 200, ref);
    assert.equal(res.body, golden, ref);
  }
  assert.match(ana.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

t('an unknown student, a malformed value and a student of another school are 404', async (ctx) => {
  const { b, v1 } = ctx;
  const other = await b.app.services.accounts.createAccount({ name: 'Other school' });
  const theirs = await b.app.services.users.create(other.id, {
    name: 'Outra',
    email: 'outra@example.com',
    document: '111.444.777-35',
  });
  for (const ref of [
    '999999',
    'nobody@example.com',
    String(theirs.id + 1000),
    'outra@example.com',
    '11144477735',
    'abc',
    'ana@localhost',
    '99999999999999999999',
    '%00',
  ]) {
    const res = await v1('GET', `/api/v1/usuario/${ref}`);
    assert.is(res.status, 404, ref);
    assert.equal(res.body, NOT_FOUND, ref);
  }
  for (const [method, path] of [
    ['POST', `/api/v1/usuario/update/${theirs.id}`],
    ['DELETE', `/api/v1/usuario/${theirs.id}`],
    ['DELETE', '/api/v1/usuario/outra@example.com'],
    ['GET', `/api/v1/usuario/acesso/${theirs.id}`],
  ] as const) {
    const res = await v1(method, path, { body: method === 'POST' ? { nome: 'X' } : undefined });
    assert.equal(res.body, NOT_FOUND, `${method} ${path}`);
  }
  assert.is((await b.app.services.users.get(other.id, theirs.id)).name, 'Outra');
  // The other school sees its own student, with the same id v3 gives it.
  const { key } = await b.app.services.accounts.createLegacyKey(other.id);
  const res = await legacyClient(b, key)('GET', `/api/v1/usuario/${theirs.id}`);
  assert.equal(res.body.data.usuario.email, 'outra@example.com');
  assert.equal(res.body.data.usuario.id, theirs.id);
});

t('POST /usuario/update: nome, email, celular, doc; empty keeps; others ignored', async (ctx) => {
  const { b, v1 } = ctx;
  const bia = await student(b, {
    name: 'Bia',
    email: 'bia@example.com',
    phone: '+551100000001',
    job_title: 'Aluna',
  });
  const res = await v1('POST', `/api/v1/usuario/update/bia@example.com`, {
    body: {
      nome: 'Beatriz Lima',
      email: 'beatriz@example.com',
      celular: '',
      doc: '111.444.777-35',
      cargo: 'ignored',
      gratis: true,
    },
  });
  assert.is(res.status, 200);
  assert.equal(res.body, {
    code: 200,
    success: true,
    data: {
      usuario: usuario(b, bia, {
        nome: 'Beatriz Lima',
        email: 'beatriz@example.com',
        celular: '+551100000001',
        doc: '11144477735',
        cargo: 'Aluna',
        gratis: false,
      }),
    },
  });
  const after = await b.app.services.users.get(b.accountId, bia.id);
  assert.is.not(after.revision, bia.revision);

  // Nothing filled (missing, null, blank): nothing written, the revision stays.
  const same = await v1('POST', `/api/v1/usuario/update/${bia.id}`, {
    body: { nome: '  ', email: null, doc: '' },
  });
  assert.is(same.status, 200);
  assert.equal(same.body.data.usuario, res.body.data.usuario);
  const again = await b.app.services.users.get(b.accountId, bia.id);
  assert.is(again.revision, after.revision);
  // `{}` is an empty update; no body at all is not (v1.yaml requires one: 422, test/legacy/bodies).
  const empty = await v1('POST', `/api/v1/usuario/update/${bia.id}`, { body: {} });
  assert.equal(empty.body, same.body);
});

t('update: bad email, bad CPF, wrong types, bad JSON 422; a taken email 409', async (ctx) => {
  const { b, v1 } = ctx;
  const caio = await student(b, { name: 'Caio', email: 'caio@example.com' });
  await student(b, { name: 'Duda', email: 'duda@example.com' });
  const path = `/api/v1/usuario/update/${caio.id}`;

  const email = await v1('POST', path, { body: { email: 'caio@@example.com' } });
  assert.equal(email.body, {
    success: false,
    code: 422,
    msg: 'The request contains invalid values. See the details. email: Must be a valid email address.',
  });
  const cpf = await v1('POST', path, { body: { doc: '529.982.247-26' } });
  assert.equal(cpf.body, {
    success: false,
    code: 422,
    msg: 'The request contains invalid values. See the details. doc: Invalid CPF: the check digits do not match.',
  });
  const type = await v1('POST', path, { body: { nome: 42 } });
  assert.is(type.status, 422);
  assert.is(type.body.code, 422);
  const long = await v1('POST', path, { body: { nome: 'x'.repeat(201) } });
  assert.is(long.status, 422);
  const nul = await v1('POST', path, { body: { nome: 'a\u0000b' } });
  assert.is(nul.status, 422);
  const json = await v1('POST', path, { raw: '{"nome": ' });
  assert.equal(json.body, {
    success: false,
    code: 422,
    msg: 'The request body is not valid JSON.',
  });
  const array = await v1('POST', path, { body: [] });
  assert.is(array.status, 422);
  const huge = await v1('POST', path, { body: { nome: 'x'.repeat(1024 * 1024) } });
  assert.equal(huge.body, {
    success: false,
    code: 413,
    msg: 'The request body exceeds the 1 MiB limit.',
  });
  assert.is(huge.status, 413);

  const taken = await v1('POST', path, { body: { email: 'DUDA@example.com' } });
  assert.equal(taken.body, {
    success: false,
    code: 409,
    msg: 'The resource already exists. email: This value is already in use.',
  });
  // Nothing of the refused requests was written.
  const now = await b.app.services.users.get(b.accountId, caio.id);
  assert.equal([now.name, now.email, now.document], ['Caio', 'caio@example.com', null]);

  const missing = await v1('POST', '/api/v1/usuario/update/nobody@example.com', {
    body: { nome: 'X' },
  });
  assert.equal(missing.body, NOT_FOUND);
});

t('error messages follow Accept-Language', async ({ v1 }) => {
  const res = await v1('GET', '/api/v1/usuario/nobody@example.com', {
    headers: { 'accept-language': 'pt-BR' },
  });
  assert.equal(res.body, {
    success: false,
    code: 404,
    msg: 'O recurso solicitado não foi encontrado.',
  });
});

t('DELETE /usuario/{ref}: answers the student as they were; gone everywhere', async (ctx) => {
  const { b, v1 } = ctx;
  const eva = await student(b, { name: 'Eva', email: 'eva@example.com' });
  await b.app.services.tags.assign(
    b.accountId,
    eva.id,
    (await b.app.services.tags.create(b.accountId, { name: 'del-tag' })).id,
  );
  const res = await v1('DELETE', '/api/v1/usuario/eva@example.com');
  assert.is(res.status, 200);
  assert.equal(res.body, { code: 200, success: true, data: { usuario: usuario(b, eva) } });
  assert.equal((await v1('GET', `/api/v1/usuario/${eva.id}`)).body, NOT_FOUND);
  assert.equal((await v1('DELETE', `/api/v1/usuario/${eva.id}`)).body, NOT_FOUND);
  assert.is((await b.api('GET', `/api/v3/users/${eva.id}`)).status, 404);
});

t('unknown v1 paths and methods are 404 in the v1 envelope', async ({ v1 }) => {
  for (const [method, path] of [
    ['GET', '/api/v1/nada'],
    ['PUT', '/api/v1/usuario/1'],
    ['GET', '/api/v1/usuario/update/1'],
  ] as const) {
    const res = await v1(method, path);
    assert.equal(res.body, NOT_FOUND, `${method} ${path}`);
  }
});

t('the v1 document’s Email is the v3 contract’s, word for word', async () => {
  const v3 = loadSpec().components.schemas.Email['x-format-pattern'];
  assert.type(v3, 'string');
  assert.is(legacyDoc('v1').components.schemas.Email['x-format-pattern'], v3);
});

t.run();
