// Legacy bodies as the documents state them: an operation whose document requires a body refuses
// none, or `null`, like `[]` (it was read as `{}`: a 200 that changed nothing); a body is read as
// JSON whatever its Content-Type (the documents list `text/plain` too); v2's `provider` is a key of
// the gateway catalog, and the document says which.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Api, Booted } from '../helpers/app.ts';
import { bootLegacy, legacyDoc } from '../helpers/legacy-contract.ts';
import { GATEWAYS } from '../../src/domain/sales/gateways.ts';

const t = suite<{ b: Booted; legacy: Api; userId: number }>('legacy bodies');
t.before(async (ctx) => {
  const { b, legacy } = await bootLegacy();
  ctx.b = b;
  ctx.legacy = legacy;
  const u = await b.app.services.users.create(b.accountId, {
    name: 'Aluno',
    email: 'bodies@example.com',
  } as any);
  ctx.userId = u.id;
});
t.after(async (ctx) => ctx.b.close());

/** Every legacy operation whose document requires a body, with a path that reaches it. */
const REQUIRED = [
  ['v1', 'v1UpdateUsuario', '/api/v1/usuario/update/bodies@example.com'],
  ['v1', 'v1AtualizarTagLote', '/api/v1/usuario/atualizar_tag_lote'],
  ['v1', 'v1AdicionarTag', '/api/v1/usuario/adicionar_tag'],
  ['v1', 'v1RemoverTag', '/api/v1/usuario/remover_tag'],
  ['v1', 'v1Bounce', '/api/v1/usuario/bounce/bodies@example.com'],
  ['v2', 'v2EnsureDelivery', '/api/v2/third/delivery'],
] as const;

t('the list above is every legacy operation with a required body', () => {
  const listed: string[] = [];
  for (const generation of ['v1', 'v2'] as const) {
    for (const item of Object.values<any>(legacyDoc(generation).paths))
      for (const op of Object.values<any>(item))
        if (op?.requestBody?.required) listed.push(op.operationId);
  }
  assert.equal(listed.sort(), REQUIRED.map(([, id]) => id).sort());
});

t('12: no body, null and [] where an object belongs are 422; nothing changes', async (ctx) => {
  const { b, legacy } = ctx;
  const before = await b.app.services.users.get(b.accountId, ctx.userId);
  for (const [, id, path] of REQUIRED) {
    for (const raw of ['', 'null']) {
      const res = await legacy('POST', path, {
        raw,
        headers: { 'content-type': 'application/json' },
      });
      assert.is(res.status, 422, `${id} with ${raw || 'no body'}`);
      assert.is(res.body.success, false);
    }
  }
  const array = await legacy('POST', REQUIRED[0][2], { body: [] });
  assert.is(array.status, 422);
  const after = await b.app.services.users.get(b.accountId, ctx.userId);
  assert.is(after.revision, before.revision, 'the student was not written');
});

t('13: a text/plain body is read as JSON, and the documents say so', async (ctx) => {
  const res = await ctx.legacy('POST', REQUIRED[0][2], {
    raw: JSON.stringify({ nome: 'Aluna Texto' }),
    headers: { 'content-type': 'text/plain' },
  });
  assert.is(res.status, 200);
  assert.is(res.body.data.usuario.nome, 'Aluna Texto');
  for (const generation of ['v1', 'v2'] as const) {
    for (const item of Object.values<any>(legacyDoc(generation).paths))
      for (const op of Object.values<any>(item)) {
        const content = op?.requestBody?.content;
        if (!content) continue;
        assert.equal(content['text/plain'], content['application/json'], op.operationId);
      }
  }
});

t('13: v2 provider is a gateway key, as v2.yaml states; another is 422', async (ctx) => {
  const provider =
    legacyDoc('v2').paths['/third/delivery'].post.requestBody.content['application/json'].schema
      .properties.provider;
  assert.equal(
    provider.enum,
    GATEWAYS.map((g) => g.key),
  );
  const res = await ctx.legacy('POST', '/api/v2/third/delivery', {
    body: { external_id: 'p-1', name: 'Curso', provider: 'paypal' },
  });
  assert.is(res.status, 422);
  assert.match(res.body.message, /provider/);
  const ok = await ctx.legacy('POST', '/api/v2/third/delivery', {
    body: { external_id: 'p-1', name: 'Curso', provider: 'generic' },
  });
  assert.is(ok.status, 200);
});

t.run();
