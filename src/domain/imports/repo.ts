// Imports, their analysed rows and processing attempts (tables of migration 017). Every function
// takes the caller's `tx` and returns camelCase domain shapes.
import type { Tx } from '../../db/engine.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { bool, insertId, json } from '../../db/dialect.ts';
import { keyset, pages } from '../../db/page.ts';

export type StoredStatus = 'pending' | 'analyzed' | 'failed';
export type RowStatus = 'ready' | 'not_ready' | 'ignored';
export type DuplicatePolicy = 'skip' | 'keep_last';

export interface Mapping {
  email: string;
  product_external_id: string;
  status: string;
}

export interface Import {
  id: number;
  accountId: number;
  fileId: number;
  type: string;
  status: StoredStatus;
  duplicatePolicy: DuplicatePolicy;
  mapping: Mapping;
  rows: { total: number; ready: number; notReady: number; ignored: number };
  rowsApplied: number;
  currentOperationId: number | null;
  failureReason: string | null;
  deleted: boolean;
  revision: string;
  createdAt: string;
  updatedAt: string;
}

export interface ImportRow {
  row: number;
  status: RowStatus;
  reason: string | null;
  email: string | null;
  productExternalId: string | null;
  accessStatus: string | null;
  appliedAttemptId: number | null;
}

export interface NewRow extends Omit<ImportRow, 'appliedAttemptId'> {
  dedupeKey: string | null;
}

export interface Attempt {
  id: number;
  importId: number;
  operationId: number | null;
  credentialId: number | null;
  mode: string;
  rows: number;
  createdAt: string;
}

const mapImport = (r: any): Import => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  fileId: Number(r.file_id),
  type: r.type,
  status: r.status,
  duplicatePolicy: r.duplicate_policy,
  mapping: json(r.mapping, {} as Mapping),
  rows: {
    total: Number(r.rows_total),
    ready: Number(r.rows_ready),
    notReady: Number(r.rows_not_ready),
    ignored: Number(r.rows_ignored),
  },
  rowsApplied: Number(r.rows_applied),
  currentOperationId: r.current_operation_id === null ? null : Number(r.current_operation_id),
  failureReason: r.failure_reason,
  deleted: bool(r.deleted),
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const mapRow = (r: any): ImportRow => ({
  row: Number(r.row_number),
  status: r.status,
  reason: r.reason,
  email: r.email,
  productExternalId: r.product_external_id,
  accessStatus: r.access_status,
  appliedAttemptId: r.applied_attempt_id === null ? null : Number(r.applied_attempt_id),
});

const mapAttempt = (r: any): Attempt => ({
  id: Number(r.id),
  importId: Number(r.import_id),
  operationId: r.operation_id === null ? null : Number(r.operation_id),
  credentialId: r.credential_id === null ? null : Number(r.credential_id),
  mode: r.mode,
  rows: Number(r.rows),
  createdAt: r.created_at,
});

const rowPages = pages({
  list: 'import-rows',
  sorts: { row: keyset('row_number').asc },
  map: mapRow,
});

/** Rows per INSERT: 8 parameters each, far below SQLite's bound-parameter limit. */
const INSERT_CHUNK = 500;

export const importsRepo = {
  insert(
    { tx }: { tx: Tx },
    i: Pick<Import, 'accountId' | 'fileId' | 'type' | 'duplicatePolicy' | 'mapping' | 'revision'>,
    now: string,
  ): Promise<number> {
    return insertId({ tx }, 'imports', {
      account_id: i.accountId,
      file_id: i.fileId,
      type: i.type,
      status: 'pending',
      duplicate_policy: i.duplicatePolicy,
      mapping: JSON.stringify(i.mapping),
      revision: i.revision,
      created_at: now,
      updated_at: now,
    });
  },

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Import | null> {
    const r = await tx('imports').where({ id, account_id: accountId }).first();
    return r ? mapImport(r) : null;
  },

  /** Applies changes; with `revision`, only to that revision. Returns the rows changed. */
  update(
    { tx }: { tx: Tx },
    id: number,
    changes: Partial<{
      status: StoredStatus;
      duplicatePolicy: DuplicatePolicy;
      mapping: Mapping;
      rows: Import['rows'];
      currentOperationId: number;
      failureReason: string | null;
      deleted: boolean;
      revision: string;
      updatedAt: string;
    }>,
    revision?: string,
  ): Promise<number> {
    const row: Record<string, unknown> = {};
    if (changes.status !== undefined) row.status = changes.status;
    if (changes.duplicatePolicy !== undefined) row.duplicate_policy = changes.duplicatePolicy;
    if (changes.mapping !== undefined) row.mapping = JSON.stringify(changes.mapping);
    if (changes.rows !== undefined) {
      row.rows_total = changes.rows.total;
      row.rows_ready = changes.rows.ready;
      row.rows_not_ready = changes.rows.notReady;
      row.rows_ignored = changes.rows.ignored;
    }
    if (changes.currentOperationId !== undefined)
      row.current_operation_id = changes.currentOperationId;
    if (changes.failureReason !== undefined) row.failure_reason = changes.failureReason;
    if (changes.deleted !== undefined) row.deleted = changes.deleted;
    if (changes.revision !== undefined) row.revision = changes.revision;
    if (changes.updatedAt !== undefined) row.updated_at = changes.updatedAt;
    const q = tx('imports').where('id', id);
    if (revision !== undefined) q.where('revision', revision);
    return q.update(row);
  },

  deleteRows({ tx }: { tx: Tx }, importId: number) {
    return tx('import_rows').where('import_id', importId).delete();
  },

  async insertRows({ tx }: { tx: Tx }, importId: number, rows: NewRow[]) {
    const values = rows.map((r) => ({
      import_id: importId,
      row_number: r.row,
      status: r.status,
      reason: r.reason,
      email: r.email,
      product_external_id: r.productExternalId,
      access_status: r.accessStatus,
      dedupe_key: r.dedupeKey,
    }));
    for (let i = 0; i < values.length; i += INSERT_CHUNK)
      await tx('import_rows').insert(values.slice(i, i + INSERT_CHUNK));
  },

  /**
   * Marks as ignored every ready row that repeats another ready row's key: the later ones
   * (`skip`) or the earlier ones (`keep_last`). Only ready rows have a key, and the condition
   * does not depend on the statuses being changed, so it holds on either engine.
   */
  markDuplicates({ tx }: { tx: Tx }, importId: number, policy: DuplicatePolicy) {
    const other = policy === 'skip' ? '<' : '>';
    return tx.raw(
      `UPDATE import_rows SET status = 'ignored', reason = 'duplicate'
       WHERE import_id = ? AND dedupe_key IS NOT NULL AND EXISTS (
         SELECT 1 FROM import_rows d WHERE d.import_id = import_rows.import_id
           AND d.dedupe_key = import_rows.dedupe_key AND d.row_number ${other} import_rows.row_number)`,
      [importId],
    );
  },

  async countRows({ tx }: { tx: Tx }, importId: number): Promise<Import['rows']> {
    const rows = await tx('import_rows')
      .where('import_id', importId)
      .groupBy('status')
      .select('status', tx.raw('count(*) as n'));
    const n = (s: string) => Number(rows.find((r: any) => r.status === s)?.n ?? 0);
    const ready = n('ready');
    const notReady = n('not_ready');
    const ignored = n('ignored');
    return { total: ready + notReady + ignored, ready, notReady, ignored };
  },

  /** The analysed rows in file order, a page at a time. */
  rowsPage(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    importId: number,
    q: { status?: RowStatus; limit?: number; cursor?: string },
  ) {
    const query = tx('import_rows').where('import_id', importId);
    if (q.status) query.where('status', q.status);
    return rowPages(query, cursors, {
      of: [importId],
      filters: { status: q.status },
      limit: q.limit,
      cursor: q.cursor,
    });
  },

  async row({ tx }: { tx: Tx }, importId: number, rowNumber: number): Promise<ImportRow | null> {
    const r = await tx('import_rows').where({ import_id: importId, row_number: rowNumber }).first();
    return r ? mapRow(r) : null;
  },

  /** 1 when this call applied the row, 0 when an attempt already had. */
  markApplied(
    { tx }: { tx: Tx },
    importId: number,
    rowNumber: number,
    attemptId: number,
  ): Promise<number> {
    return tx('import_rows')
      .where({ import_id: importId, row_number: rowNumber })
      .whereNull('applied_attempt_id')
      .update({ applied_attempt_id: attemptId });
  },

  countApplied({ tx }: { tx: Tx }, importId: number) {
    return tx('imports').where('id', importId).increment('rows_applied', 1);
  },

  /** The rows of a processing chunk, by number (one statement instead of one per row). */
  async rowsByNumber(
    { tx }: { tx: Tx },
    importId: number,
    rowNumbers: number[],
  ): Promise<ImportRow[]> {
    const rows = await tx('import_rows')
      .where('import_id', importId)
      .whereIn('row_number', rowNumbers);
    return rows.map(mapRow);
  },

  /** Marks a chunk's rows applied, each only if no attempt had; returns how many this did. */
  async markManyApplied(
    { tx }: { tx: Tx },
    importId: number,
    rowNumbers: number[],
    attemptId: number,
  ) {
    const changed = await tx('import_rows')
      .where('import_id', importId)
      .whereIn('row_number', rowNumbers)
      .whereNull('applied_attempt_id')
      .update({ applied_attempt_id: attemptId });
    if (changed > 0) await tx('imports').where('id', importId).increment('rows_applied', changed);
    return changed;
  },

  async remaining({ tx }: { tx: Tx }, importId: number): Promise<number> {
    const r = await tx('import_rows')
      .where({ import_id: importId, status: 'ready' })
      .whereNull('applied_attempt_id')
      .count({ n: '*' })
      .first();
    return Number(r?.n ?? 0);
  },

  /**
   * The processing items of an attempt, straight from the rows (never through memory): one per
   * ready row not applied yet, keyed by its row number. Ids and the timestamp are literals: a
   * bound parameter in a SELECT list has no type on PostgreSQL.
   */
  async fillItems(
    { tx }: { tx: Tx },
    importId: number,
    attemptId: number,
    operationId: number,
    now: string,
  ) {
    if (!/^[0-9T:.Z-]+$/.test(now)) throw new Error(`unexpected timestamp ${now}`);
    const head = `'{"import_id":${Number(importId)},"attempt_id":${Number(attemptId)},"row":'`;
    const res = await tx.raw(
      `INSERT INTO operation_items (operation_id, position, "key", payload, status, updated_at)
       SELECT ${Number(operationId)}, row_number, CAST(row_number AS TEXT),
              ${head} || CAST(row_number AS TEXT) || '}', 'pending', '${now}'
       FROM import_rows WHERE import_id = ? AND status = 'ready' AND applied_attempt_id IS NULL`,
      [importId],
    );
    return Number(res.rowCount ?? res.changes ?? 0);
  },

  insertAttempt({ tx }: { tx: Tx }, a: Omit<Attempt, 'id'>): Promise<number> {
    return insertId({ tx }, 'import_attempts', {
      import_id: a.importId,
      operation_id: a.operationId,
      credential_id: a.credentialId,
      mode: a.mode,
      rows: a.rows,
      created_at: a.createdAt,
    });
  },

  setAttempt({ tx }: { tx: Tx }, id: number, changes: { operationId: number; rows: number }) {
    return tx('import_attempts')
      .where('id', id)
      .update({ operation_id: changes.operationId, rows: changes.rows });
  },

  async attempts({ tx }: { tx: Tx }, importId: number, id?: number): Promise<Attempt[]> {
    const q = tx('import_attempts').where('import_id', importId).orderBy('id');
    if (id !== undefined) q.where('id', id);
    return (await q).map(mapAttempt);
  },
};
