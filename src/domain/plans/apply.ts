// One item of a plan's application (operation type `plan.apply`): one change, applied through the
// same services as the v3 routes, in the transaction that records the item (so exactly once).
// Updates and deletions carry the revision planned against: a change made by someone else in the
// meantime fails the item with revision_mismatch (not retryable).
import type { Tx } from '../../db/knex.ts';
import { AppError } from '../../errors.ts';
import type { TagsService } from '../tags/service.ts';
import type { CatalogService } from '../catalog/service.ts';
import type { WebhooksService } from '../webhooks/service.ts';
import type { DeliveriesService } from '../sales/deliveries.ts';
import { newPostbackSecret } from '../sales/secrets.ts';
import type { AutomationsService } from '../automations/service.ts';
import { etag } from '../shared/revision.ts';
import { plansRepo } from './repo.ts';
import { mapRefsAsync } from './refs.ts';
import { isRef, type Change, type PlanType } from './types.ts';

export const PLAN_APPLY = 'plan.apply';

export interface ApplyDeps {
  tags: TagsService;
  catalog: CatalogService;
  webhooks: WebhooksService;
  deliveries: DeliveriesService;
  automations: AutomationsService;
}

/** The id a reference names: the resource an earlier item of the application created. */
async function idOf({ tx }: { tx: Tx }, accountId: number, v: unknown): Promise<number> {
  if (!isRef(v)) return Number(v);
  const dot = v.ref.indexOf('.');
  const id = await plansRepo.key(
    { tx },
    accountId,
    v.ref.slice(0, dot) as PlanType,
    v.ref.slice(dot + 1),
  );
  if (id === null)
    throw new AppError('not_found', {
      details: [{ code: 'unresolved_reference', message: `${v.ref} was not created.` }],
    });
  return id;
}

async function write(
  { tx }: { tx: Tx },
  accountId: number,
  c: Change,
  deps: ApplyDeps,
): Promise<number> {
  const ifMatch = c.revision === null ? undefined : etag(c.revision);
  const input: any = { ...c.input };
  const id = c.id;
  if (c.type === 'tag') {
    if (c.action === 'create') return (await deps.tags.create(accountId, input, { tx })).id;
    if (c.action === 'update') await deps.tags.rename(accountId, id, input, ifMatch, { tx });
    else await deps.tags.remove(accountId, id, ifMatch, { tx });
    return id!;
  }
  if (c.type === 'product') {
    if (c.action === 'create') return (await deps.catalog.create(accountId, input, { tx })).id;
    if (c.action === 'update') await deps.catalog.update(accountId, id, input, ifMatch, { tx });
    else await deps.catalog.remove(accountId, id, ifMatch, { tx });
    return id!;
  }
  if (c.type === 'webhook') {
    // Its signing secret is shown once, by the route that creates it; an item's result is kept
    // with the operation, so a webhook created by a plan gets a secret by rotation instead.
    if (c.action === 'create')
      return (await deps.webhooks.create(accountId, input, { tx })).endpoint.id;
    if (c.action === 'update') await deps.webhooks.update(accountId, id, input, ifMatch, { tx });
    else await deps.webhooks.remove(accountId, id, ifMatch, { tx });
    return id!;
  }
  if (c.type === 'delivery') {
    const resolved: any = await mapRefsAsync('delivery', input, (v) => idOf({ tx }, accountId, v));
    const deliveries = deps.deliveries;
    // Its postback secret, like a webhook's, is shown by no plan: one nobody knows until the
    // operator sets one (PATCH secret), so no postback is taken on the token alone.
    if (c.action === 'create')
      return (
        await deliveries.create(accountId, { ...resolved, secret: newPostbackSecret() }, { tx })
      ).id;
    const update = c.action === 'update' ? resolved : { status: 'archived' };
    await deliveries.update(accountId, id, update, ifMatch, { tx, mayArchive: true });
    return id!;
  }
  if (c.type === 'diamond') {
    // No route changes or deletes one: the planner refuses both.
    if (c.action !== 'create') throw new AppError('state_conflict');
    return (await deps.automations.createDiamond(accountId, input, { tx })).id;
  }
  const productId = await idOf({ tx }, accountId, c.product);
  if (c.type === 'access_schedule') {
    const schedules = deps.catalog.schedules;
    if (c.action === 'create')
      return (await schedules.create(accountId, productId, input, { tx })).id;
    if (c.action === 'update')
      await schedules.update(accountId, productId, id, input, ifMatch, { tx });
    else await schedules.remove(accountId, productId, id, ifMatch, { tx });
    return id!;
  }
  const modules = deps.catalog.modules;
  if (input.parent_id !== undefined && input.parent_id !== null)
    input.parent_id = String(await idOf({ tx }, accountId, input.parent_id));
  if (c.action === 'create') return (await modules.create(accountId, productId, input, { tx })).id;
  if (c.action === 'update') await modules.update(accountId, productId, id, input, ifMatch, { tx });
  else await modules.remove(accountId, productId, id, ifMatch, { tx });
  return id!;
}

/**
 * One item of `plan.apply` (src/batches/plan-apply.ts): applies change N of the plan and keeps
 * the operator's key bound to the resource (or unbound, for a deletion).
 */
export async function applyChange(
  { tx }: { tx: Tx },
  accountId: number,
  payload: { plan_id: number; change: number },
  deps: ApplyDeps,
) {
  const plan = await plansRepo.get({ tx }, accountId, payload.plan_id);
  const c = plan?.changes[payload.change];
  if (!c) throw new AppError('not_found');
  const id = await write({ tx }, accountId, c, deps);
  if (c.action === 'delete') await plansRepo.unbind({ tx }, accountId, c.type, id);
  else await plansRepo.bind({ tx }, accountId, c.type, c.key, id);
  return { action: c.action, type: c.type, key: c.key, id: String(id) };
}
