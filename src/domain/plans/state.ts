// The account's configuration as plans see it: each resource's revision and the values of the
// properties a manifest can set, in the shape the v3 API shows them (ids as strings), plus what
// the cross-resource rules need (every tag name, schedule, delivery's gateway ids).
import type { Tx } from '../../db/knex.ts';
import { tagsRepo } from '../tags/repo.ts';
import { productsRepo } from '../catalog/repo.ts';
import { modulesRepo } from '../catalog/modules-repo.ts';
import { schedulesRepo } from '../catalog/schedules-repo.ts';
import { revisionOf } from '../catalog/types.ts';
import { deliveriesRepo } from '../sales/deliveries-repo.ts';
import { automationsRepo } from '../automations/repo.ts';
import { toId } from '../shared/ids.ts';
import { endpointsRepo } from '../webhooks/repo.ts';
import { plansRepo } from './repo.ts';
import { PLAN_TYPES, type PlanType } from './types.ts';

export interface Current {
  id: number;
  revision: string;
  values: Record<string, unknown>;
}

export interface Schedule {
  productId: number;
  tagId: number;
  isDefault: boolean;
}

export interface State {
  resources: Record<PlanType, Map<number, Current>>;
  /** `type.key` -> id, for the keys plans remembered. */
  keys: Map<string, number>;
  /** Every tag of the account by lower-case name, those of access schedules included. */
  tagNames: Map<string, number>;
  /** The ids of those tags: what a delivery may give. */
  tagIds: Set<number>;
  /** Every access schedule outside the trash (defaults and replicas' included), by id. */
  schedules: Map<number, Schedule>;
  /** Each product's default schedule. */
  defaults: Map<number, number>;
  /** Every product id of the account (copies included): what a delivery may grant. */
  productIds: Set<number>;
  /** Who listens to each gateway product id: `gateway\nexternal id` -> delivery id (archived too). */
  externalIds: Map<string, number>;
}

export const externalKey = (gateway: unknown, externalId: string) =>
  `${String(gateway)}\n${externalId}`;

/**
 * Loads the planned types. Left out, because nobody configures them by hand: copies in replica
 * accounts (read-only), modules in the trash, the tags of access schedules (each belongs to its
 * schedule, which names it), default schedules (each belongs to its product), schedules in the
 * trash, archived deliveries. A module whose group is not part of the configuration (in the
 * trash) shows at the top level, so no reference dangles.
 */
export async function loadState({ tx }: { tx: Tx }, accountId: number): Promise<State> {
  const schedules = new Map<number, Schedule>();
  const defaults = new Map<number, number>();
  const scheduleRows = await tx('access_schedules')
    .join('tags', 'tags.id', 'access_schedules.tag_id')
    .join('products', 'products.id', 'access_schedules.product_id')
    .where('access_schedules.account_id', accountId)
    .select(
      'access_schedules.*',
      'tags.name as tag_name',
      'tags.revision as tag_revision',
      'products.source_id as product_source_id',
    )
    .orderBy('access_schedules.id');
  const access = new Map<number, Current>();
  const scheduleTags = new Set<number>();
  for (const r of scheduleRows) {
    const s = schedulesRepo.map(r);
    scheduleTags.add(s.tagId);
    if (s.deleted) continue;
    schedules.set(s.id, { productId: s.productId, tagId: s.tagId, isDefault: s.isDefault });
    if (s.isDefault) defaults.set(s.productId, s.id);
    if (s.isDefault || s.replica) continue;
    access.set(s.id, {
      id: s.id,
      revision: revisionOf(s),
      values: { product_id: String(s.productId), name: s.name },
    });
  }

  const tags = new Map<number, Current>();
  const tagNames = new Map<string, number>();
  for (const r of await tx('tags').where('account_id', accountId).select().orderBy('id')) {
    const t = tagsRepo.map(r);
    tagNames.set(t.name.toLowerCase(), t.id);
    if (!scheduleTags.has(t.id))
      tags.set(t.id, { id: t.id, revision: t.revision, values: { name: t.name } });
  }

  const products = new Map<number, Current>();
  const productIds = new Set<number>();
  for (const r of await tx('products').where({ account_id: accountId }).select().orderBy('id')) {
    const p = productsRepo.map(r);
    productIds.add(p.id);
    if (p.sourceId !== null) continue;
    products.set(p.id, {
      id: p.id,
      revision: p.revision,
      values: { name: p.name, description: p.description, status: p.status },
    });
  }

  const modules = new Map<number, Current>();
  const moduleRows = await tx('modules')
    .where({ account_id: accountId, deleted: false })
    .whereNull('source_id')
    .select()
    .orderBy('id');
  const live = new Set(moduleRows.map((r: any) => Number(r.id)));
  for (const r of moduleRows) {
    const m = modulesRepo.map(r);
    if (!products.has(m.productId)) continue;
    modules.set(m.id, {
      id: m.id,
      revision: m.revision,
      values: {
        product_id: String(m.productId),
        name: m.name,
        kind: m.kind,
        parent_id: m.parentId !== null && live.has(m.parentId) ? toId(m.parentId) : null,
        status: m.status,
        settings: m.settings,
        image: m.image,
      },
    });
  }

  const deliveries = new Map<number, Current>();
  const externalIds = new Map<string, number>();
  const deliveryRows = await deliveriesRepo.withRelations(
    { tx },
    (await tx('deliveries').where({ account_id: accountId }).select().orderBy('id')).map(
      deliveriesRepo.mapRow,
    ),
  );
  for (const d of deliveryRows) {
    for (const e of d.externalIds) externalIds.set(externalKey(d.gateway, e), d.id);
    if (d.sourceId !== null || d.status !== 'active') continue;
    deliveries.set(d.id, {
      id: d.id,
      revision: d.revision,
      values: {
        gateway: d.gateway,
        name: d.name,
        kind: d.kind,
        hidden: d.hidden,
        external_ids: d.externalIds,
        // The product's default schedule is the one a grant without access_schedule_id gets.
        products: d.products.map((p) =>
          defaults.get(p.productId) === p.accessScheduleId
            ? { product_id: String(p.productId) }
            : { product_id: String(p.productId), access_schedule_id: String(p.accessScheduleId) },
        ),
        tag_ids: d.tagIds.map(String),
        duration: d.duration,
        duration_unit: d.durationUnit,
      },
    });
  }

  const webhooks = new Map<number, Current>();
  const webhookRows = await tx('webhook_endpoints')
    .where({ account_id: accountId })
    .whereNull('deleted_at')
    .select()
    .orderBy('id');
  for (const r of webhookRows) {
    const e = endpointsRepo.map(r);
    webhooks.set(e.id, {
      id: e.id,
      revision: e.revision,
      values: {
        url: e.url,
        description: e.description,
        event_types: e.eventTypes,
        payload_version: e.payloadVersion,
      },
    });
  }

  const diamonds = new Map<number, Current>();
  for (const r of await tx('diamonds').where({ account_id: accountId }).select().orderBy('id')) {
    const d = automationsRepo.mapDiamond(r);
    diamonds.set(d.id, {
      id: d.id,
      revision: d.revision,
      values: {
        name: d.name,
        stages: d.stages.map((s) => ({
          key: s.key,
          name: s.name,
          communication: { subject: s.communication.subject, body: s.communication.body },
        })),
      },
    });
  }

  const resources = {
    tag: tags,
    product: products,
    module: modules,
    access_schedule: access,
    delivery: deliveries,
    webhook: webhooks,
    diamond: diamonds,
  } satisfies Record<PlanType, Map<number, Current>>;
  return {
    resources,
    keys: await plansRepo.keys({ tx }, accountId),
    tagNames,
    tagIds: new Set(tagNames.values()),
    schedules,
    defaults,
    productIds,
    externalIds,
  };
}

/** Every resource of the state, as `type#id` -> revision. */
export function revisions(state: State): Map<string, string> {
  const out = new Map<string, string>();
  for (const type of PLAN_TYPES)
    for (const r of state.resources[type].values()) out.set(`${type}#${r.id}`, r.revision);
  return out;
}
