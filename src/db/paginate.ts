// Keyset pagination over a compound sort key (the last column must be unique, e.g. id).
import type { Knex } from 'knex';
import type { CursorCodec, CursorPayload } from './cursor.ts';

export interface SortColumn {
  column: string;
  desc: boolean;
}

export interface PageRequest {
  /** The list and account, e.g. `users:42`: a cursor works on no other. */
  scope: string;
  sortName: string;
  sort: SortColumn[];
  filters: string;
  limit: number;
  cursor: string | undefined;
}

export interface PageResult<T> {
  rows: T[];
  page: { limit: number; next_cursor: string | null; prev_cursor: string | null };
}

function after(qb: Knex.QueryBuilder, sort: SortColumn[], key: unknown[], forward: boolean) {
  qb.where((outer) => {
    sort.forEach((col, i) => {
      outer.orWhere((inner) => {
        for (let j = 0; j < i; j++) inner.where(sort[j]!.column, key[j] as any);
        const greater = col.desc !== !forward ? '<' : '>';
        inner.where(col.column, greater, key[i] as any);
      });
    });
  });
}

export async function paginate<T extends Record<string, unknown>>(
  qb: Knex.QueryBuilder,
  codec: CursorCodec,
  req: PageRequest,
): Promise<PageResult<T>> {
  const cursor: CursorPayload | null = req.cursor
    ? codec.decode(req.cursor, req.scope, req.sortName, req.filters)
    : null;
  const forward = !cursor || cursor.dir === 'next';
  if (cursor) after(qb, req.sort, cursor.key, forward);
  for (const col of req.sort) {
    const desc = forward ? col.desc : !col.desc;
    qb.orderBy(col.column, desc ? 'desc' : 'asc');
  }
  const fetched = (await qb.limit(req.limit + 1)) as T[];
  const more = fetched.length > req.limit;
  const rows = fetched.slice(0, req.limit);
  if (!forward) rows.reverse();
  const keyOf = (row: T) => req.sort.map((c) => row[c.column.split('.').pop()!]);
  const make = (row: T | undefined, dir: 'next' | 'prev') =>
    row
      ? codec.encode({
          scope: req.scope,
          sort: req.sortName,
          filters: req.filters,
          key: keyOf(row),
          dir,
        })
      : null;
  const hasNext = forward ? more : true;
  const hasPrev = forward ? cursor !== null : more;
  return {
    rows,
    page: {
      limit: req.limit,
      next_cursor: hasNext ? make(rows[rows.length - 1], 'next') : null,
      prev_cursor: hasPrev ? make(rows[0], 'prev') : null,
    },
  };
}
