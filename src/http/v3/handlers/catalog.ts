// Catalog handlers: products, their modules and module order, their access schedules.
import type { components } from '../../../../generated/types.ts';
import type { CatalogService } from '../../../domain/catalog/service.ts';
import type { ScheduleView } from '../../../domain/catalog/schedules.ts';
import { revisionOf, type Module, type Product } from '../../../domain/catalog/types.ts';
import { fromId, toId } from '../../../domain/shared/ids.ts';
import { etag } from '../../../domain/shared/revision.ts';
import type { Handlers } from './types.ts';

type CatalogOps =
  | 'listProducts'
  | 'createProduct'
  | 'getProduct'
  | 'updateProduct'
  | 'deleteProduct'
  | 'listModules'
  | 'createModule'
  | 'getModule'
  | 'updateModule'
  | 'deleteModule'
  | 'reorderModules'
  | 'listAccessSchedules'
  | 'createAccessSchedule'
  | 'getAccessSchedule'
  | 'updateAccessSchedule'
  | 'deleteAccessSchedule';

export function presentProduct(p: Product): components['schemas']['Product'] {
  return {
    object: 'product',
    id: String(p.id),
    name: p.name,
    description: p.description,
    status: p.status,
    replica: p.sourceId !== null,
    modules_count: p.modulesCount,
    revision: p.revision,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
  };
}

export function presentModule(m: Module): components['schemas']['Module'] {
  return {
    object: 'module',
    id: String(m.id),
    product_id: String(m.productId),
    parent_id: toId(m.parentId),
    image: m.image,
    revision: m.revision,
    kind: m.kind,
    status: m.status,
    name: m.name,
    position: m.position,
    // Lessons arrive with their own issue.
    lessons_count: 0,
    deleted: m.deleted,
    settings: m.settings,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
  };
}

export function presentSchedule(s: ScheduleView): components['schemas']['AccessSchedule'] {
  return {
    object: 'access_schedule',
    id: String(s.id),
    product_id: String(s.productId),
    tag_id: String(s.tagId),
    revision: revisionOf(s),
    name: s.name,
    default: s.isDefault,
    deleted: s.deleted,
    deliveries: s.deliveries.map((d) => ({ id: String(d.id) })),
    deliveries_count: s.deliveries.length,
    // Release rules arrive with their own issue.
    rules_count: 0,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
  };
}

const product = (p: Product) => ({
  body: { data: presentProduct(p) },
  headers: { ETag: etag(p.revision) },
});
const module_ = (m: Module) => ({
  body: { data: presentModule(m) },
  headers: { ETag: etag(m.revision) },
});
const schedule = (s: ScheduleView) => ({
  body: { data: presentSchedule(s) },
  headers: { ETag: etag(revisionOf(s)) },
});

export function catalogHandlers(c: CatalogService): Pick<Handlers, CatalogOps> {
  const { modules, schedules } = c;
  return {
    async listProducts({ auth, query }) {
      const { rows, page } = await c.list(auth.account.id, query);
      return { status: 200, body: { data: rows.map(presentProduct), page } };
    },
    async createProduct({ auth, body, tx }) {
      return { status: 201, ...product(await c.create(auth.account.id, body, { tx })) };
    },
    async getProduct({ auth, params }) {
      return { status: 200, ...product(await c.get(auth.account.id, fromId(params.product_id))) };
    },
    async updateProduct({ auth, params, body, ifMatch, tx }) {
      const p = await c.update(auth.account.id, fromId(params.product_id), body, ifMatch, { tx });
      return { status: 200, ...product(p) };
    },
    async deleteProduct({ auth, params, ifMatch, tx }) {
      await c.remove(auth.account.id, fromId(params.product_id), ifMatch, { tx });
      return { status: 204 };
    },

    async listModules({ auth, params, query }) {
      const { rows, page } = await modules.list(auth.account.id, fromId(params.product_id), query);
      return { status: 200, body: { data: rows.map(presentModule), page } };
    },
    async createModule({ auth, params, body, tx }) {
      const m = await modules.create(auth.account.id, fromId(params.product_id), body, { tx });
      return { status: 201, ...module_(m) };
    },
    async getModule({ auth, params }) {
      const { product_id, module_id } = params;
      const m = await modules.get(auth.account.id, fromId(product_id), fromId(module_id));
      return { status: 200, ...module_(m) };
    },
    async updateModule({ auth, params, body, ifMatch, tx }) {
      const ids = [fromId(params.product_id), fromId(params.module_id)] as const;
      const m = await modules.update(auth.account.id, ...ids, body, ifMatch, { tx });
      return { status: 200, ...module_(m) };
    },
    async deleteModule({ auth, params, ifMatch, tx }) {
      const ids = [fromId(params.product_id), fromId(params.module_id)] as const;
      await modules.remove(auth.account.id, ...ids, ifMatch, { tx });
      return { status: 204 };
    },
    async reorderModules({ auth, params, body, tx }) {
      const list = await modules.reorder(auth.account.id, fromId(params.product_id), body, { tx });
      return { status: 200, body: { data: list.map(presentModule) } };
    },

    async listAccessSchedules({ auth, params, query }) {
      const id = fromId(params.product_id);
      const { rows, page } = await schedules.list(auth.account.id, id, query);
      return { status: 200, body: { data: rows.map(presentSchedule), page } };
    },
    async createAccessSchedule({ auth, params, body, tx }) {
      const s = await schedules.create(auth.account.id, fromId(params.product_id), body, { tx });
      return { status: 201, ...schedule(s) };
    },
    async getAccessSchedule({ auth, params }) {
      const ids = [fromId(params.product_id), fromId(params.access_schedule_id)] as const;
      return { status: 200, ...schedule(await schedules.get(auth.account.id, ...ids)) };
    },
    async updateAccessSchedule({ auth, params, body, ifMatch, tx }) {
      const ids = [fromId(params.product_id), fromId(params.access_schedule_id)] as const;
      const s = await schedules.update(auth.account.id, ...ids, body, ifMatch, { tx });
      return { status: 200, ...schedule(s) };
    },
    async deleteAccessSchedule({ auth, params, ifMatch, tx }) {
      const ids = [fromId(params.product_id), fromId(params.access_schedule_id)] as const;
      await schedules.remove(auth.account.id, ...ids, ifMatch, { tx });
      return { status: 204 };
    },
  };
}
