// v1 tags of students: add, remove, set in bulk (by email) and list a tag's students. The same
// TagsService as v3's PUT/DELETE /users/{id}/tags/{tag_id}; v1 may also name a tag by its name.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError, isAppError } from '../../../errors.ts';
import { fromId } from '../../../domain/shared/ids.ts';
import type { LegacyRouteDeps } from '../deps.ts';
import { legacyContract } from '../contract.ts';
import { legacyBody } from '../input.ts';
import { v1Ok } from '../render.ts';
import { paginator, tag, usuario } from './present.ts';
import { V1_PAGE } from './usuarios.ts';

interface TagBody {
  usuario_id?: number | string;
  email?: string;
  tag_id?: number | string;
  tag?: string;
}

interface LoteItem {
  email: string;
  tags?: string | null;
}

/** `"vip, alunos 2026"` -> the names, trimmed; none (blank or absent) means "leave as is". */
function tagNames(tags: string | null | undefined): string[] | null {
  const names = (tags ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return names.length ? names : null;
}

/** A tag name is at most 100 characters, as on v3 (checked before anything is written). */
function checkNames(names: string[], field: string): void {
  const long = names.find((n) => n.length > 100);
  if (long === undefined) return;
  throw new AppError('validation_failed', {
    details: [{ field, code: 'too_long', message: `${field}: at most 100 characters per tag.` }],
  });
}

export function tagRoutes(router: Router, { services, publicBaseUrl }: LegacyRouteDeps): void {
  const { users, tags } = services;
  const contract = legacyContract('v1');

  /** The student and the tag a body names: `usuario_id` before `email`, `tag_id` before `tag`. */
  async function target(ctx: Context, operationId: string) {
    const body = await legacyBody<TagBody>(ctx, contract, operationId);
    const accountId: number = ctx.state.legacy.accountId;
    const u = await users.find(
      accountId,
      body.usuario_id !== undefined
        ? { id: fromId(String(body.usuario_id)) }
        : { email: body.email! },
    );
    if (body.tag_id === undefined) checkNames([body.tag!.trim()], 'tag');
    return { accountId, u, body };
  }

  const answer = async (ctx: Context, accountId: number, userId: number) => {
    const u = await users.get(accountId, userId);
    const list = await tags.listForUser(accountId, userId);
    v1Ok(ctx, { usuario: usuario(u, publicBaseUrl), tags: list.map(tag) });
  };

  // addUserTag; a tag named by a name the account lacks is created.
  router.post('/usuario/adicionar_tag', async (ctx) => {
    const { accountId, u, body } = await target(ctx, 'v1AdicionarTag');
    // add answers not_found for a tag id the account lacks, as the read before it did.
    const tagId =
      body.tag_id !== undefined
        ? fromId(String(body.tag_id))
        : (await tags.ensure(accountId, body.tag!)).id;
    await tags.add(accountId, u.id, tagId);
    await answer(ctx, accountId, u.id);
  });

  // removeUserTag; removing a tag the student does not have changes nothing and succeeds.
  router.post('/usuario/remover_tag', async (ctx) => {
    const { accountId, u, body } = await target(ctx, 'v1RemoverTag');
    const t =
      body.tag_id !== undefined
        ? await tags.get(accountId, fromId(String(body.tag_id)))
        : await tags.findByName(accountId, body.tag!);
    try {
      await tags.unassign(accountId, u.id, t.id);
    } catch (err) {
      // Student and tag exist (found above): not_found here means "did not have it".
      if (!isAppError(err) || err.code !== 'not_found') throw err;
    }
    await answer(ctx, accountId, u.id);
  });

  router.post('/usuario/atualizar_tag_lote', async (ctx) => {
    const items = await legacyBody<LoteItem[]>(ctx, contract, 'v1AtualizarTagLote');
    const wanted = items.map((item, i) => {
      const names = tagNames(item.tags);
      if (names) checkNames(names, `${i}.tags`);
      return { email: item.email, names };
    });
    const results = await tags.setForUsersByEmail(ctx.state.legacy.accountId, wanted);
    // One entry per email, in request order; a repeated email reports its last item.
    const data: Record<string, { msg: string; uid: number | null }> = {};
    for (const r of results) data[r.email] = { msg: r.outcome, uid: r.userId };
    v1Ok(ctx, data);
  });

  // listUsers?tag_id=, ordered by id like GET /usuario.
  router.get('/usuario/lista_por_tag/:tag_id', async (ctx) => {
    const accountId: number = ctx.state.legacy.accountId;
    const t = await tags.get(accountId, fromId(ctx.params.tag_id));
    const cursor = typeof ctx.query.cursor === 'string' ? ctx.query.cursor : undefined;
    const { rows, page } = await users.listById(accountId, { tagId: t.id, limit: V1_PAGE, cursor });
    v1Ok(ctx, {
      paginator: paginator(`${publicBaseUrl}/api/v1/usuario/lista_por_tag/${t.id}`, page),
      usuario: rows.map((u) => usuario(u, publicBaseUrl)),
    });
  });
}
