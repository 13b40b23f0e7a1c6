// Writes a users export: the rows are read page by page inside one snapshot (src/db/snapshot.ts),
// so the file holds exactly the users as of `snapshot_at` however long it takes and whatever
// changes meanwhile, and streamed through csv-stringify into the store: neither the rows nor the
// CSV are ever whole in memory.
import { pipeline, Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { Knex } from 'knex';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/engine.ts';
import { bool } from '../../db/dialect.ts';
import { withSnapshot, type Snapshot } from '../../db/snapshot.ts';
import { fromId } from '../shared/ids.ts';
import type { FilesPort } from '../shared/files-port.ts';
import type { Export, ExportFilters } from './repo.ts';

export const COLUMNS = [
  'id',
  'name',
  'email',
  'phone',
  'document',
  'job_title',
  'company_name',
  'company_size',
  'free',
  'points',
  'started_at',
  'last_access_at',
  'created_at',
  'updated_at',
] as const;

export interface GenerateOptions {
  pageSize: number;
  /** Called after each page is read (tests change users here, mid-generation). */
  afterPage: (page: number) => Promise<void>;
}

/** Ids that are not ids match nothing, as a tag of another account does in GET /users. */
const ids = (raw: string[]) => raw.map((s) => fromId(s) ?? 0);

export function usersQuery(k: Knex, accountId: number, f: ExportFilters, at: string) {
  const q = k('users').where('users.account_id', accountId);
  if (f.type) q.where('users.free', f.type === 'free');
  if (f.access === 'accessed') q.whereNotNull('users.last_access_at');
  if (f.access === 'never_accessed') q.whereNull('users.last_access_at');
  if (f.tag_id.length)
    q.whereExists((s) =>
      s
        .select(k.raw('1'))
        .from('user_tags')
        .whereRaw('user_tags.user_id = users.id')
        .whereIn('user_tags.tag_id', ids(f.tag_id)),
    );
  const enrollments = (s: Knex.QueryBuilder) => {
    s.select(k.raw('1')).from('enrollments').whereRaw('enrollments.user_id = users.id');
    if (f.product_id.length) s.whereIn('enrollments.product_id', ids(f.product_id));
    return s;
  };
  if (f.product_id.length) q.whereExists((s) => void enrollments(s));
  if (f.delivery_id !== null)
    q.whereExists(
      (s) => void enrollments(s).where('enrollments.delivery_id', fromId(f.delivery_id!) ?? 0),
    );
  if (f.status) {
    const current = (s: Knex.QueryBuilder) =>
      void enrollments(s)
        .where('enrollments.ended', false)
        .where((w) => w.whereNull('enrollments.ends_at').orWhere('enrollments.ends_at', '>', at));
    if (f.status === 'active') q.whereExists(current);
    else q.whereNotExists(current);
  }
  return q;
}

const cell = (column: string, v: unknown) =>
  column === 'free' ? String(bool(v)) : v === null || v === undefined ? '' : String(v);

async function* records(
  snap: Snapshot,
  exp: Export,
  at: string,
  opts: GenerateOptions,
  counted: { n: number },
) {
  let last = 0;
  for (let page = 1; ; page++) {
    const rows = await snap.all((k) =>
      usersQuery(k, exp.accountId, exp.filters, at)
        .where('users.id', '>', last)
        .orderBy('users.id')
        .limit(opts.pageSize)
        .select([...new Set(['id', ...exp.columns])].map((c) => `users.${c}`)),
    );
    for (const r of rows) yield exp.columns.map((c) => cell(c, r[c]));
    counted.n += rows.length;
    await opts.afterPage(page);
    if (rows.length < opts.pageSize) return;
    last = Number(rows[rows.length - 1].id);
  }
}

export async function generate(
  db: Db,
  clock: Clock,
  files: FilesPort,
  exp: Export,
  opts: GenerateOptions,
): Promise<{ fileId: number; total: number; snapshotAt: string }> {
  return withSnapshot(db, async (snap) => {
    const snapshotAt = clock.now().toISOString();
    const counted = { n: 0 };
    const csv = stringify({ header: true, columns: exp.columns });
    // pipeline (not pipe): a failed read destroys the CSV stream too, so the store sees the error.
    pipeline(Readable.from(records(snap, exp, snapshotAt, opts, counted)), csv, () => undefined);
    const file = await files.createFromStream(
      exp.accountId,
      { purpose: 'export', filename: `users-${exp.id}.csv`, contentType: 'text/csv' },
      csv,
    );
    return { fileId: file.id, total: counted.n, snapshotAt };
  });
}
