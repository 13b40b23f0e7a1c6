// Modules and groups (table `modules`). Positions count within one parent (product + parent_id).
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/knex.ts';
import { bool, insertId, json } from '../../db/dialect.ts';
import { changedRow, newRow } from '../shared/row.ts';
import type { Module, ModuleKind, PublicationStatus } from './types.ts';

/** A module's written fields; the repository sets its revision and timestamps. */
export type ModuleFields = Pick<
  Module,
  | 'parentId'
  | 'kind'
  | 'status'
  | 'name'
  | 'position'
  | 'deleted'
  | 'trashedWith'
  | 'settings'
  | 'image'
>;
export type NewModule = ModuleFields &
  Pick<Module, 'accountId' | 'productId'> & { sourceId?: number };

/** settings is a JSON text column. */
const fields = <T extends Partial<ModuleFields>>(m: T) =>
  m.settings === undefined
    ? m
    : { ...m, settings: m.settings === null ? null : JSON.stringify(m.settings) };

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

const map = (r: any): Module => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  productId: Number(r.product_id),
  parentId: num(r.parent_id),
  sourceId: num(r.source_id),
  kind: r.kind,
  status: r.status,
  name: r.name,
  position: Number(r.position),
  deleted: bool(r.deleted),
  trashedWith: num(r.trashed_with),
  settings: json<Record<string, unknown> | null>(r.settings, null),
  image: r.image ?? null,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface ModuleFilters {
  /** null: the top level. */
  parentId?: number | null;
  status?: PublicationStatus;
  kind?: ModuleKind;
  deleted: boolean;
}

/** One parent's modules: `parent_id = ?`, or `IS NULL` for the top level. */
const inParent = (q: any, parentId: number | null) =>
  parentId === null ? q.whereNull('modules.parent_id') : q.where('modules.parent_id', parentId);

const byPosition = keyset('modules.position', 'modules.id');
const modulePages = pages({
  list: 'modules',
  sorts: { position: byPosition.asc, '-position': byPosition.desc },
  map,
});

export const modulesRepo = {
  map,

  async get(
    { tx }: { tx: Tx },
    accountId: number,
    productId: number,
    id: number,
  ): Promise<Module | null> {
    const r = await tx('modules')
      .where({ account_id: accountId, product_id: productId, id })
      .first();
    return r ? map(r) : null;
  },

  async findCopy({ tx }: { tx: Tx }, accountId: number, sourceId: number): Promise<Module | null> {
    const r = await tx('modules').where({ account_id: accountId, source_id: sourceId }).first();
    return r ? map(r) : null;
  },

  /** One page of the product's modules, in position order by default. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    productId: number,
    f: ModuleFilters,
    p: PageParams,
  ) {
    const query = modulesRepo.listQuery({ tx }, productId, f);
    return modulePages(query, cursors, { ...p, of: [accountId, productId], filters: { ...f } });
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY (position, id). */
  listQuery({ tx }: { tx: Tx }, productId: number, f: ModuleFilters) {
    const q = tx('modules')
      .where('modules.product_id', productId)
      .where('modules.deleted', f.deleted);
    if (f.parentId !== undefined) inParent(q, f.parentId);
    if (f.status !== undefined) q.where('modules.status', f.status);
    if (f.kind !== undefined) q.where('modules.kind', f.kind);
    return q.select('modules.*');
  },

  /** The modules of one parent outside the trash, in order. */
  async siblings(
    { tx }: { tx: Tx },
    productId: number,
    parentId: number | null,
  ): Promise<Module[]> {
    const q = tx('modules').where({ product_id: productId, deleted: false });
    inParent(q, parentId);
    const rows = await q.orderBy([
      { column: 'position', order: 'asc' },
      { column: 'id', order: 'asc' },
    ]);
    return rows.map(map);
  },

  /** The next free position at the end of one parent (trashed modules keep theirs). */
  async nextPosition(
    { tx }: { tx: Tx },
    productId: number,
    parentId: number | null,
  ): Promise<number> {
    const q = tx('modules').where({ product_id: productId, deleted: false });
    inParent(q, parentId);
    const r: any = await q.max({ max: 'position' }).first();
    return Number(r?.max ?? 0) + 1;
  },

  /** A group's modules outside the trash, or those its own deletion took with it. */
  async children(
    { tx }: { tx: Tx },
    groupId: number,
    which: 'active' | 'trashed_with_it',
  ): Promise<Module[]> {
    const q = tx('modules').where('parent_id', groupId);
    if (which === 'active') q.where('deleted', false);
    else q.where({ deleted: true, trashed_with: groupId });
    const rows = await q.orderBy([
      { column: 'position', order: 'asc' },
      { column: 'id', order: 'asc' },
    ]);
    return rows.map(map);
  },

  /** Every module of the product outside the trash, parents before their children. */
  async activeOfProduct({ tx }: { tx: Tx }, productId: number): Promise<Module[]> {
    const rows = await tx('modules')
      .where({ product_id: productId, deleted: false })
      .orderByRaw('case when parent_id is null then 0 else 1 end, position, id');
    return rows.map(map);
  },

  async insert({ tx }: { tx: Tx }, m: NewModule, now: string): Promise<number> {
    return insertId({ tx }, 'modules', newRow(fields(m), now));
  },

  /**
   * Writes the fields given (a new revision); with `revision`, only that revision is overwritten
   * (If-Match made atomic). Returns the rows hit.
   */
  async update(
    { tx }: { tx: Tx },
    id: number,
    changes: Partial<ModuleFields>,
    now: string,
    revision?: string,
  ): Promise<number> {
    const q = tx('modules').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changedRow(fields(changes), now));
  },
};
