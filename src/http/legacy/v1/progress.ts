// v1 progress and exam results of a student: the same ProgressService as v3.
import type Router from '@koa/router';
import { fromId } from '../../../domain/shared/ids.ts';
import type { LegacyRouteDeps } from '../deps.ts';
import { plainRef } from '../input.ts';
import { v1Ok } from '../render.ts';
import { progresso, resultado } from './present.ts';

export function progressRoutes(router: Router, { services }: LegacyRouteDeps): void {
  const { users, progress } = services;

  // The student's progress in every lesson of a product (a product of another school is 404).
  router.get('/usuario/progresso_por_produto/:ref/:produto_id', async (ctx) => {
    const accountId: number = ctx.state.legacy.accountId;
    const u = await users.find(accountId, plainRef(ctx.params.ref!));
    const p = await progress.productProgress(accountId, u.id, fromId(ctx.params.produto_id));
    v1Ok(ctx, { progresso: progresso(p) });
  });

  // The student's result in an exam item; 404 until they took it.
  router.get('/usuario/resultado_prova/:ref/:item_id', async (ctx) => {
    const accountId: number = ctx.state.legacy.accountId;
    const u = await users.find(accountId, plainRef(ctx.params.ref!));
    const r = await progress.getExamResult(accountId, u.id, fromId(ctx.params.item_id));
    v1Ok(ctx, { resultado: resultado(r) });
  });
}
