// v2 routes: deliveries of a gateway (/third/delivery), a student's access by a sale's id at the
// gateway, and a sale's transactions. Thin mappers over the same services as v3's
// /sales/deliveries, /users/{id}/enrollments and /sales/transactions.
import type Router from '@koa/router';
import { AppError } from '../../../errors.ts';
import type { Delivery } from '../../../domain/sales/deliveries-repo.ts';
import type { LegacyRouteDeps } from '../deps.ts';
import { legacyContract } from '../contract.ts';
import { legacyBody, v2Ref } from '../input.ts';
import { v2Ok } from '../render.ts';
import { accessEntry, delivery, kindOf, transaction } from './present.ts';

interface DeliveryBody {
  /** One gateway product id, or several separated by commas. */
  external_id: string;
  name: string;
  provider: string;
  type?: string;
}

export function v2Routes(router: Router, { services, publicBaseUrl }: LegacyRouteDeps): void {
  const { users, deliveries, enrollments, transactions } = services;
  const contract = legacyContract('v2');
  const show = (d: Delivery) => delivery(d, publicBaseUrl);

  // listDeliveries?gateway=, oldest first, all of them (a school has few).
  router.get('/third/delivery', async (ctx) => {
    const provider = typeof ctx.query.provider === 'string' ? ctx.query.provider : undefined;
    const all: Delivery[] = [];
    let cursor: string | undefined;
    do {
      const page = await deliveries.list(ctx.state.legacy.accountId, {
        sort: 'created_at',
        gateway: provider,
        limit: 200,
        cursor,
      });
      all.push(...page.rows);
      cursor = page.page.next_cursor ?? undefined;
    } while (cursor);
    v2Ok(ctx, { data: all.map(show) });
  });

  // The delivery of the gateway that listens to these product ids, extended or created.
  router.post('/third/delivery', async (ctx) => {
    const body = await legacyBody<DeliveryBody>(ctx, contract, 'v2EnsureDelivery');
    const ids = body.external_id
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (!ids.length)
      throw new AppError('validation_failed', {
        details: [{ field: 'external_id', code: 'required', message: 'At least one product id.' }],
      });
    const { delivery: d } = await deliveries.ensureListening(ctx.state.legacy.accountId, {
      gateway: body.provider,
      external_ids: ids,
      name: body.name,
      kind: kindOf(body.type ?? 'single'),
    });
    v2Ok(ctx, { data: show(d) });
  });

  router.get('/user/:identifier/access/by_external_id/:external_id', async (ctx) => {
    const accountId: number = ctx.state.legacy.accountId;
    const u = await users.find(accountId, v2Ref(ctx.params.identifier!));
    const rows = await enrollments.listByExternalId(accountId, u.id, ctx.params.external_id!);
    v2Ok(ctx, { entries: rows.map((r) => accessEntry(r.enrollment, r.transaction)) });
  });

  // Oldest first; an unknown sale is an empty list, not a 404.
  router.get('/transaction/external/:engine/:engine_id', async (ctx) => {
    const list = await transactions.listByExternal(
      ctx.state.legacy.accountId,
      ctx.params.engine!,
      ctx.params.engine_id!,
    );
    v2Ok(ctx, { transactions: list.map(transaction) });
  });
}
