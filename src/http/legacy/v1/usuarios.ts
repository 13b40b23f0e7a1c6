// v1 students: list (keyset pages of 150 by id), read, update, delete and access. Each route maps
// Portuguese fields onto the same UsersService as v3 (the v3 operation it mirrors is named).
import type Router from '@koa/router';
import { isAppError } from '../../../errors.ts';
import type { LegacyRouteDeps } from '../deps.ts';
import { legacyContract } from '../contract.ts';
import { legacyBody, plainRef } from '../input.ts';
import { v1Ok } from '../render.ts';
import { studentAccess } from '../../student-access.ts';
import { acesso, paginator, usuario } from './present.ts';

/** The page size of v1 lists (specification: Limits). */
export const V1_PAGE = 150;

interface UpdateBody {
  nome?: string | null;
  email?: string | null;
  celular?: string | null;
  doc?: string | null;
}

/** A missing, null or blank field keeps its value: only filled fields reach the service. */
const filled = (v: string | null | undefined): string | undefined => (v?.trim() ? v : undefined);

const V1_FIELD: Record<string, string> = {
  name: 'nome',
  email: 'email',
  phone: 'celular',
  document: 'doc',
};

/** The service names v3 fields in its details; a v1 client sent the Portuguese ones. */
function inV1Fields(err: unknown): never {
  if (isAppError(err))
    for (const d of err.details)
      if (d.field && Object.hasOwn(V1_FIELD, d.field)) d.field = V1_FIELD[d.field]!;
  throw err;
}

export function usuarioRoutes(router: Router, { services, publicBaseUrl }: LegacyRouteDeps): void {
  const { users } = services;
  const contract = legacyContract('v1');
  const show = (u: Parameters<typeof usuario>[0]) => usuario(u, publicBaseUrl);

  // listUsers, ordered by id.
  router.get('/usuario', async (ctx) => {
    const cursor = typeof ctx.query.cursor === 'string' ? ctx.query.cursor : undefined;
    const { rows, page } = await users.listById(ctx.state.legacy.accountId, {
      limit: V1_PAGE,
      cursor,
    });
    v1Ok(ctx, {
      paginator: paginator(`${publicBaseUrl}/api/v1/usuario`, page),
      usuario: rows.map(show),
    });
  });

  // getUser.
  router.get('/usuario/:ref', async (ctx) => {
    const u = await users.find(ctx.state.legacy.accountId, plainRef(ctx.params.ref!));
    v1Ok(ctx, { usuario: show(u) });
  });

  // updateUser: name, email, mobile phone and document only.
  router.post('/usuario/update/:ref', async (ctx) => {
    const body = await legacyBody<UpdateBody>(ctx, contract, 'v1UpdateUsuario');
    const accountId = ctx.state.legacy.accountId;
    const u = await users.find(accountId, plainRef(ctx.params.ref!));
    const changes = {
      name: filled(body.nome),
      email: filled(body.email),
      phone: filled(body.celular),
      document: filled(body.doc),
    };
    // Nothing filled: nothing to write, and the revision stays.
    const unchanged = Object.values(changes).every((v) => v === undefined);
    const updated = unchanged
      ? u
      : await users.update(accountId, u.id, changes, undefined).catch(inV1Fields);
    v1Ok(ctx, { usuario: show(updated) });
  });

  // getUser + listUserEnrollments (with each product), by product name.
  router.get('/usuario/acesso/:ref', async (ctx) => {
    const accountId = ctx.state.legacy.accountId;
    const u = await users.find(accountId, plainRef(ctx.params.ref!));
    const entries = await studentAccess(services, accountId, u.id);
    v1Ok(ctx, { usuario: show(u), acesso: acesso(entries) });
  });

  // deleteUser; answers the student as they were.
  router.delete('/usuario/:ref', async (ctx) => {
    const accountId = ctx.state.legacy.accountId;
    const u = await users.find(accountId, plainRef(ctx.params.ref!));
    await users.remove(accountId, u.id, undefined);
    v1Ok(ctx, { usuario: show(u) });
  });
}
