// Products (table `products`) and the accounts that replicate an account. Every function takes the
// caller's `tx`: inside an idempotent write that is the request's transaction.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/knex.ts';
import { insertId } from '../../db/dialect.ts';
import { firstRow } from '../../db/statements.ts';
import { changedRow, newRow } from '../shared/row.ts';
import type { Product, PublicationStatus } from './types.ts';

/** A product's written fields; the repository sets its revision and timestamps. */
export type ProductFields = Pick<Product, 'name' | 'description' | 'status'>;
export type NewProduct = ProductFields & Pick<Product, 'accountId' | 'sourceId'>;

const map = (r: any): Product => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  sourceId: r.source_id === null || r.source_id === undefined ? null : Number(r.source_id),
  name: r.name,
  description: r.description ?? null,
  status: r.status,
  // PostgreSQL returns count(*) as a bigint string.
  modulesCount: Number(r.modules_count ?? 0),
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** modules_count is derived, never stored, so it cannot drift from the modules table. */
const withCount = ({ tx }: { tx: Tx }) =>
  tx.raw(
    '(select count(*) from modules where modules.product_id = products.id and modules.deleted = ?) as modules_count',
    [false],
  );

const byCreation = keyset('products.created_at', 'products.id');
const productPages = pages({
  list: 'products',
  sorts: { '-created_at': byCreation.desc, created_at: byCreation.asc },
  map,
});

export const productsRepo = {
  map,

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Product | null> {
    // Fixed SQL prepared once (knex compiles and SQLite prepares anew on every call): every
    // grant's welcome email reads its product.
    const r = await firstRow(
      { tx },
      'SELECT products.*, (select count(*) from modules where modules.product_id = products.id ' +
        'and modules.deleted = ?) as modules_count FROM products WHERE account_id = ? AND id = ?',
      [false, accountId, id],
    );
    return r ? map(r) : null;
  },

  /** get() for several products at once (any order; those the account lacks are missing). */
  async getMany({ tx }: { tx: Tx }, accountId: number, ids: number[]): Promise<Product[]> {
    if (ids.length === 0) return [];
    const rows = await tx('products')
      .where('account_id', accountId)
      .whereIn('id', [...new Set(ids)])
      .select(
        'products.*',
        tx.raw(
          '(select count(*) from modules where modules.product_id = products.id ' +
            'and modules.deleted = ?) as modules_count',
          [false],
        ),
      );
    return rows.map(map);
  },

  /** The copy of `sourceId` in a replica account, if it exists yet. */
  async findCopy({ tx }: { tx: Tx }, accountId: number, sourceId: number): Promise<Product | null> {
    const r = await tx('products')
      .where({ account_id: accountId, source_id: sourceId })
      .first('products.*', withCount({ tx }));
    return r ? map(r) : null;
  },

  /** One page of the account's products, newest first by default. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    f: { status?: PublicationStatus },
    p: PageParams,
  ) {
    const query = productsRepo.listQuery({ tx }, accountId, f.status);
    return productPages(query, cursors, { ...p, of: [accountId], filters: f });
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY (created_at, id). */
  listQuery({ tx }: { tx: Tx }, accountId: number, status: PublicationStatus | undefined) {
    const q = tx('products').where('products.account_id', accountId);
    if (status !== undefined) q.where('products.status', status);
    return q.select('products.*', withCount({ tx }));
  },

  async insert({ tx }: { tx: Tx }, p: NewProduct, now: string): Promise<number> {
    return insertId({ tx }, 'products', newRow(p, now));
  },

  /**
   * Writes the fields given (a new revision); with `revision`, only that revision is overwritten
   * (If-Match made atomic). Returns the rows hit.
   */
  async update(
    { tx }: { tx: Tx },
    id: number,
    changes: Partial<ProductFields>,
    now: string,
    revision?: string,
  ): Promise<number> {
    const q = tx('products').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changedRow(changes, now));
  },

  /** Modules, schedules and copies in replica accounts go with it (ON DELETE CASCADE). */
  async remove({ tx }: { tx: Tx }, id: number, revision?: string): Promise<number> {
    const q = tx('products').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.delete();
  },

  async removeAccount({ tx }: { tx: Tx }, accountId: number): Promise<number> {
    return tx('products').where('account_id', accountId).delete();
  },

  /**
   * Holds the product's row until the transaction ends, so writes that number positions run one
   * at a time. PostgreSQL: FOR NO KEY UPDATE (new modules' foreign-key checks do not wait);
   * SQLite drops the clause and needs none.
   */
  async lock({ tx }: { tx: Tx }, id: number): Promise<void> {
    await tx('products').where('id', id).forNoKeyUpdate().first('id');
  },
};

export const replicaAccountsRepo = {
  /** Accounts that replicate this one (`accounts.replica_of`). */
  async replicasOf({ tx }: { tx: Tx }, accountId: number): Promise<number[]> {
    const rows = await tx('accounts').where('replica_of', accountId).orderBy('id').select('id');
    return rows.map((r: any) => Number(r.id));
  },
};
