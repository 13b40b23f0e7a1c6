// The account's configuration as plans see it: each resource's revision and the values of the
// properties a manifest can set, in the shape the v3 API shows them (ids as strings).
import type { Tx } from '../../db/knex.ts';
import { tagsRepo } from '../tags/repo.ts';
import { productsRepo } from '../catalog/repo.ts';
import { modulesRepo } from '../catalog/modules-repo.ts';
import { toId } from '../shared/ids.ts';
import { endpointsRepo } from '../webhooks/repo.ts';
import { plansRepo } from './repo.ts';
import type { PlanType } from './types.ts';

export interface Current {
  id: number;
  revision: string;
  values: Record<string, unknown>;
}

export interface State {
  resources: Record<PlanType, Map<number, Current>>;
  /** `type.key` -> id, for the keys plans remembered. */
  keys: Map<string, number>;
  /** Every tag of the account by lower-case name, those of access schedules included. */
  tagNames: Map<string, number>;
}

/**
 * Loads the planned types. Left out, because nobody configures them by hand: copies in replica
 * accounts (read-only), modules in the trash, and the tags of access schedules (each belongs to
 * its schedule, which names it).
 */
export async function loadState(tx: Tx, accountId: number): Promise<State> {
  const tagRows = await tx('tags')
    .where('account_id', accountId)
    .select(
      'tags.*',
      tx.raw(
        'exists (select 1 from access_schedules s where s.tag_id = tags.id) as owned_by_schedule',
      ),
    )
    .orderBy('id');
  const tags = new Map<number, Current>();
  const tagNames = new Map<string, number>();
  for (const r of tagRows) {
    const t = tagsRepo.map(r);
    tagNames.set(t.name.toLowerCase(), t.id);
    if (r.owned_by_schedule === true || Number(r.owned_by_schedule) === 1) continue;
    tags.set(t.id, { id: t.id, revision: t.revision, values: { name: t.name } });
  }
  const products = new Map<number, Current>();
  const productRows = await tx('products')
    .where({ account_id: accountId })
    .whereNull('source_id')
    .select()
    .orderBy('id');
  for (const r of productRows) {
    const p = productsRepo.map(r);
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
        parent_id: toId(m.parentId),
        status: m.status,
        settings: m.settings,
        image: m.image,
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
  return {
    resources: { tag: tags, product: products, module: modules, webhook: webhooks },
    keys: await plansRepo.keys(tx, accountId),
    tagNames,
  };
}

const TABLES: Record<PlanType, string> = {
  tag: 'tags',
  product: 'products',
  module: 'modules',
  webhook: 'webhook_endpoints',
};

/** The current revision of one resource, or null when it no longer exists (or is in the trash). */
export async function currentRevision(
  tx: Tx,
  accountId: number,
  type: PlanType,
  id: number,
): Promise<string | null> {
  const table = TABLES[type];
  const q = tx(table).where({ account_id: accountId, id });
  if (type === 'module') q.where('deleted', false);
  if (type === 'webhook') q.whereNull('deleted_at');
  const r = await q.first('revision');
  return r ? r.revision : null;
}
