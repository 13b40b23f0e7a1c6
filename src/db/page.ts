// A repository's list pages: a small sort table (the sort names a list accepts and the keyset
// columns of each) over the cursor codec and keyset walk of paginate.ts. A repository declares
// `pages({ list, sorts, map })` once; each list endpoint is then one `page(query, cursors, …)`
// call instead of a scope, a sort array, a filters hash and a row mapping at every call site.
import type { Knex } from 'knex';
import { filtersHash, type CursorCodec } from './cursor.ts';
import { paginate, type PageResult, type SortColumn } from './paginate.ts';

export type { PageResult } from './paginate.ts';

/** A sort name (as the API spells it, e.g. `-created_at`) to its keyset columns, last unique. */
export type SortTable = Record<string, SortColumn[]>;

/** The same keyset ascending and descending: `{ name: k.asc, '-name': k.desc }`. */
export function keyset(...columns: string[]): { asc: SortColumn[]; desc: SortColumn[] } {
  return {
    asc: columns.map((column) => ({ column, desc: false })),
    desc: columns.map((column) => ({ column, desc: true })),
  };
}

export interface PageQuery {
  /** Whose list it is, e.g. `[accountId]` or `[accountId, productId]`: part of the cursor scope. */
  of: (string | number)[];
  /** A key of the sort table; the table's first key when absent. */
  sort?: string;
  /** Everything that narrows the list: a cursor is valid only with the same filters. */
  filters: Record<string, unknown>;
  limit?: number;
  cursor?: string;
}

export type Pager<T> = (
  query: Knex.QueryBuilder,
  cursors: CursorCodec,
  q: PageQuery,
) => Promise<PageResult<T>>;

/**
 * `list` names the list in its cursors (a cursor of `tags:42` is refused by `users:42`); the first
 * entry of `sorts` is the default sort; `map` turns a row into the domain shape.
 */
export function pages<T>(def: { list: string; sorts: SortTable; map: (row: any) => T }): Pager<T> {
  const fallback = Object.keys(def.sorts)[0]!;
  return async (query, cursors, q) => {
    const sortName = q.sort ?? fallback;
    const sort = def.sorts[sortName];
    // The request schema admits only the table's names; another is a programming error.
    if (!sort) throw new Error(`${def.list}: no sort ${sortName}`);
    const page = await paginate<Record<string, unknown>>(query, cursors, {
      scope: [def.list, ...q.of].join(':'),
      sortName,
      sort,
      filters: filtersHash(q.filters),
      limit: q.limit ?? 50,
      cursor: q.cursor,
    });
    return { rows: page.rows.map(def.map), page: page.page };
  };
}
