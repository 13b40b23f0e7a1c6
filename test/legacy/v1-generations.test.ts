// One student across generations: created in v3, read and updated in v1, the change seen in v3
// (same record, same integer id); and each legacy generation's document served without a key.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Api, Booted } from '../helpers/app.ts';
import { newKey } from '../helpers/app.ts';
import { bootLegacy, legacyDoc, NULL_UTM } from '../helpers/legacy-contract.ts';

const t = suite<{ b: Booted; v1: Api }>('v1 across generations');
t.before(async (ctx) => {
  const { b, legacy } = await bootLegacy();
  ctx.b = b;
  ctx.v1 = legacy;
});
t.after(async (ctx) => ctx.b.close());

t('created in v3, read and updated in v1, the change seen in v3', async ({ b, v1 }) => {
  const created = await b.api('POST', '/api/v3/users', {
    key: newKey(),
    body: {
      name: 'Helena Prado',
      email: 'helena@example.com',
      phone: '+5511977776666',
      job_title: 'Coordenadora',
      utm: { utm_source: 'newsletter' },
    },
  });
  assert.is(created.status, 201);
  const u = created.body.data;

  const read = await v1('GET', `/api/v1/usuario/${u.id}`);
  assert.equal(read.body, {
    code: 200,
    success: true,
    data: {
      usuario: {
        id: Number(u.id),
        nome: 'Helena Prado',
        email: 'helena@example.com',
        celular: '+5511977776666',
        doc: null,
        cargo: 'Coordenadora',
        nome_empresa: null,
        tamanho_empresa: null,
        gratis: false,
        pontos: 0,
        criado_em: u.created_at,
        comecou_em: null,
        ultimo_acesso_em: null,
        login_auto: u.auto_login_url,
        login_crstk: u.auto_login_token,
        utm: { ...NULL_UTM, utm_source: 'newsletter' },
      },
    },
  });

  const updated = await v1('POST', `/api/v1/usuario/update/helena@example.com`, {
    body: { nome: 'Helena P. Lima', celular: '+5511900000000', doc: '11144477735' },
  });
  assert.is(updated.status, 200);

  const after = await b.api('GET', `/api/v3/users/${u.id}`);
  assert.is(after.status, 200);
  assert.equal(after.body.data, {
    ...u,
    name: 'Helena P. Lima',
    phone: '+5511900000000',
    document: '11144477735',
    revision: after.body.data.revision,
    updated_at: after.body.data.updated_at,
  });
  assert.is.not(after.body.data.revision, u.revision);
  assert.is(after.headers.get('etag'), `"${after.body.data.revision}"`);
  // The v3 ETag read before the v1 write is stale now.
  const stale = await b.api('PATCH', `/api/v3/users/${u.id}`, {
    body: { name: 'Lost update' },
    headers: { 'if-match': `"${u.revision}"` },
  });
  assert.is(stale.status, 412);
});

t('the v1 and v2 documents are served without a key', async ({ b }) => {
  for (const generation of ['v1', 'v2'] as const) {
    const res = await b.api('GET', `/api/${generation}/openapi.json`, { secret: null });
    assert.is(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^application\/json/);
    assert.equal(res.body, legacyDoc(generation));
    assert.is(res.body.openapi, '3.1.0');
  }
  // /api/third serves the v2 routes under /third only.
  const third = await b.api('GET', '/api/third/openapi.json', { secret: null });
  assert.is(third.status, 401);
});

t.run();
