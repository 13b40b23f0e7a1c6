// v1 routes over the sales domain: a student's access (acesso), progress in a product, exam
// results and the bounce list. The records are made through the same services v3 uses.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Api, Booted } from '../helpers/app.ts';
import { bootLegacy } from '../helpers/legacy-contract.ts';
import type { User } from '../../src/domain/users/repo.ts';

const t = suite<{ b: Booted; v1: Api }>('v1 access, progress, results, bounce');
t.before(async (ctx) => {
  const { b, legacy } = await bootLegacy();
  ctx.b = b;
  ctx.v1 = legacy;
});
t.after(async (ctx) => ctx.b.close());

const NOT_FOUND = { success: false, code: 404, msg: 'The requested resource was not found.' };

const student = (b: Booted, name: string, email: string): Promise<User> =>
  b.app.services.users.create(b.accountId, { name, email });

const product = (b: Booted, name: string, accountId = b.accountId) =>
  b.app.services.catalog.create(accountId, { name });

function enroll(b: Booted, u: User, productId: number, extra: Record<string, unknown> = {}) {
  return b.app.services.enrollments.create(b.accountId, {
    user_id: String(u.id),
    product_id: String(productId),
    ...extra,
  });
}

/** Sends every queued email to the address (log mailer), as the email.send job would. */
async function deliverEmails(b: Booted, email: string): Promise<number> {
  const { outbox } = b.app.services;
  const list = await outbox.history(b.accountId, email);
  for (const e of list) await outbox.send(e.id);
  return list.length;
}

t('acesso: the student and every enrollment, by product name, Portuguese fields', async (ctx) => {
  const { b, v1 } = ctx;
  const ana = await student(b, 'Ana', 'ana@example.com');
  const zoo = await product(b, 'Zoologia');
  const alg = await product(b, 'álgebra');
  const bio = await product(b, 'Biologia');
  const eZoo = await enroll(b, ana, zoo.id);
  const eAlg = await enroll(b, ana, alg.id, { duration: 3, duration_unit: 'month' });
  const eBio = await enroll(b, ana, bio.id, { duration: 10, duration_unit: 'day' });
  const ended = await b.app.services.enrollments.update(
    b.accountId,
    eBio.id,
    { ended: true },
    undefined,
  );

  const res = await v1('GET', '/api/v1/usuario/acesso/ana@example.com');
  assert.is(res.status, 200);
  const u = (await v1('GET', `/api/v1/usuario/${ana.id}`)).body.data.usuario;
  assert.equal(res.body, {
    code: 200,
    success: true,
    data: {
      usuario: u,
      acesso: [
        {
          comecou_em: eAlg.startedAt,
          duracao: 3,
          duracao_tipo: 'meses',
          encerra_em: eAlg.endsAt,
          encerrado: false,
          produto: { id: alg.id, nome: 'álgebra', oferta_url: null, ordem: 1 },
        },
        {
          comecou_em: eBio.startedAt,
          duracao: 10,
          duracao_tipo: 'dias',
          encerra_em: ended.endsAt,
          encerrado: true,
          produto: { id: bio.id, nome: 'Biologia', oferta_url: null, ordem: 2 },
        },
        {
          comecou_em: eZoo.startedAt,
          duracao: null,
          duracao_tipo: 'vitalicio',
          encerra_em: null,
          encerrado: false,
          produto: { id: zoo.id, nome: 'Zoologia', oferta_url: null, ordem: 3 },
        },
      ],
    },
  });
  // Three months after the start, counted in calendar months.
  const start = new Date(eAlg.startedAt);
  start.setUTCMonth(start.getUTCMonth() + 3);
  assert.is(eAlg.endsAt, start.toISOString());
  assert.ok(ended.endsAt! <= b.clock.now().toISOString());

  // Past its end an enrollment shows as ended, without any write.
  b.clock.advance(100 * 86_400_000);
  const later = await v1('GET', `/api/v1/usuario/acesso/${ana.id}`);
  assert.equal(
    later.body.data.acesso.map((a: any) => [a.produto.nome, a.encerrado]),
    [
      ['álgebra', true],
      ['Biologia', true],
      ['Zoologia', false],
    ],
  );
});

t('acesso: no enrollment is an empty list; unknown student 404', async ({ b, v1 }) => {
  const bia = await student(b, 'Bia', 'bia@example.com');
  const res = await v1('GET', `/api/v1/usuario/acesso/${bia.id}`);
  assert.equal(res.body.data.acesso, []);
  assert.is(res.body.data.usuario.id, bia.id);
  assert.equal((await v1('GET', '/api/v1/usuario/acesso/nobody@example.com')).body, NOT_FOUND);
});

t('progresso_por_produto: totals and every lesson of the product', async ({ b, v1 }) => {
  const { progress } = b.app.services;
  const caio = await student(b, 'Caio', 'caio@example.com');
  const p = await product(b, 'Curso de Física');
  const l1 = await progress.createLesson(b.accountId, p.id, { name: 'Aula 1' });
  const l2 = await progress.createLesson(b.accountId, p.id, { name: 'Aula 2' });
  const l3 = await progress.createLesson(b.accountId, p.id, { name: 'Aula 3' });
  await progress.createLesson(b.accountId, p.id, { name: 'Prova final', kind: 'exam' });
  const ids = { userId: caio.id, productId: p.id };
  const done = await progress.recordLesson(
    b.accountId,
    { ...ids, lessonId: l1.id },
    { percent: 100 },
  );
  await progress.recordLesson(b.accountId, { ...ids, lessonId: l2.id }, { percent: 40 });

  const res = await v1('GET', `/api/v1/usuario/progresso_por_produto/caio@example.com/${p.id}`);
  assert.equal(res.body, {
    code: 200,
    success: true,
    data: {
      progresso: {
        total: 3,
        assistidas: 2,
        completas: 1,
        aulas: [
          {
            id: l1.id,
            nome: 'Aula 1',
            percentual: 100,
            completa: true,
            completada_em: done.completedAt,
          },
          { id: l2.id, nome: 'Aula 2', percentual: 40, completa: false, completada_em: null },
          { id: l3.id, nome: 'Aula 3', percentual: 0, completa: false, completada_em: null },
        ],
      },
    },
  });
  assert.type(done.completedAt, 'string');

  const other = await b.app.services.accounts.createAccount({ name: 'Other' });
  const theirs = await product(b, 'Deles', other.id);
  for (const path of [
    `/api/v1/usuario/progresso_por_produto/${caio.id}/${theirs.id}`,
    `/api/v1/usuario/progresso_por_produto/${caio.id}/999999`,
    `/api/v1/usuario/progresso_por_produto/nobody@example.com/${p.id}`,
  ])
    assert.equal((await v1('GET', path)).body, NOT_FOUND, path);
});

t('resultado_prova: the student’s result; 404 until taken', async ({ b, v1 }) => {
  const { progress } = b.app.services;
  const duda = await student(b, 'Duda', 'duda@example.com');
  const p = await product(b, 'Química');
  const exam = await progress.createLesson(b.accountId, p.id, { name: 'Prova', kind: 'exam' });
  const lesson = await progress.createLesson(b.accountId, p.id, { name: 'Aula' });
  const path = `/api/v1/usuario/resultado_prova/${duda.id}/${exam.id}`;
  assert.equal((await v1('GET', path)).body, NOT_FOUND);

  const { result } = await progress.putExamResult(
    b.accountId,
    { userId: duda.id, itemId: exam.id },
    { score: 7.5, max_score: 10, passed: true, attempts: 2 },
    undefined,
  );
  const res = await v1('GET', path);
  assert.equal(res.body, {
    code: 200,
    success: true,
    data: {
      resultado: {
        item_id: exam.id,
        produto_id: p.id,
        nota: 7.5,
        nota_maxima: 10,
        aprovado: true,
        tentativas: 2,
        enviado_em: result.submittedAt,
      },
    },
  });
  // A lesson is not an exam item.
  assert.equal(
    (await v1('GET', `/api/v1/usuario/resultado_prova/${duda.id}/${lesson.id}`)).body,
    NOT_FOUND,
  );
});

t('bounce: false takes an emailed address off the list; true puts it on', async (ctx) => {
  const { b, v1 } = ctx;
  const { outbox } = b.app.services;
  const eva = await student(b, 'Eva', 'eva@example.com');
  await enroll(b, eva, (await product(b, 'Boas-vindas')).id);
  assert.is(await deliverEmails(b, 'eva@example.com'), 1);

  const on = await v1('POST', '/api/v1/usuario/bounce/EVA@example.com', { body: { bounce: true } });
  assert.equal(on.body, { code: 200, success: true });
  assert.is(await outbox.isBounced(b.accountId, 'eva@example.com'), true);

  // While bounced, a new email to the address is suppressed, not sent.
  await enroll(b, eva, (await product(b, 'Outro curso')).id);
  const [latest] = await outbox.history(b.accountId, 'eva@example.com', 1);
  assert.is(await outbox.send(latest!.id), 'suppressed');

  const off = await v1('POST', '/api/v1/usuario/bounce/eva@example.com', {
    body: { bounce: false },
  });
  assert.equal(off.body, { code: 200, success: true });
  assert.is(await outbox.isBounced(b.accountId, 'eva@example.com'), false);
  // Off again: nothing to change, still a success.
  const again = await v1('POST', '/api/v1/usuario/bounce/eva@example.com', {
    body: { bounce: false },
  });
  assert.equal(again.body, { code: 200, success: true });
});

t('bounce: an address never emailed is refused (409); bad bodies 422', async ({ b, v1 }) => {
  for (const bounce of [false, true]) {
    const res = await v1('POST', '/api/v1/usuario/bounce/never@example.com', { body: { bounce } });
    assert.equal(res.body, {
      success: false,
      code: 409,
      msg: 'The request violates a business rule. email: This address never received an email.',
    });
  }
  assert.is(await b.app.services.outbox.isBounced(b.accountId, 'never@example.com'), false);
  for (const body of [{}, { bounce: 'false' }, { bounce: null }]) {
    const res = await v1('POST', '/api/v1/usuario/bounce/never@example.com', { body });
    assert.is(res.status, 422, JSON.stringify(body));
    assert.equal([res.body.success, res.body.code], [false, 422]);
  }
  const badAddress = await v1('POST', '/api/v1/usuario/bounce/not-an-email', {
    body: { bounce: false },
  });
  assert.is(badAddress.status, 422);
});

t('DELETE a student with enrollments, progress, results and emails', async ({ b, v1 }) => {
  const { progress, outbox } = b.app.services;
  const gabi = await student(b, 'Gabi', 'gabi@example.com');
  const p = await product(b, 'Tudo');
  await enroll(b, gabi, p.id);
  const lesson = await progress.createLesson(b.accountId, p.id, { name: 'L' });
  const exam = await progress.createLesson(b.accountId, p.id, { name: 'E', kind: 'exam' });
  const ids = { userId: gabi.id, productId: p.id, lessonId: lesson.id };
  await progress.recordLesson(b.accountId, ids, { percent: 50 });
  await progress.putExamResult(
    b.accountId,
    { userId: gabi.id, itemId: exam.id },
    { score: 1, passed: false },
    undefined,
  );
  await deliverEmails(b, 'gabi@example.com');
  const res = await v1('DELETE', `/api/v1/usuario/${gabi.id}`);
  assert.is(res.status, 200);
  assert.is(res.body.data.usuario.id, gabi.id);
  assert.equal((await v1('GET', `/api/v1/usuario/acesso/${gabi.id}`)).body, NOT_FOUND);
  // The school's email history to the address stays (it is the bounce list's evidence).
  assert.is(await outbox.hasReceived(b.accountId, 'gabi@example.com'), true);
});

t.run();
