// Exports (table of migration 017): every function takes the caller's `tx` and returns camelCase
// domain shapes.
import type { Tx } from '../../db/engine.ts';
import { insertId, json } from '../../db/dialect.ts';

export type ExportStatus = 'queued' | 'completed' | 'failed' | 'expired';

export interface ExportFilters {
  access: string | null;
  delivery_id: string | null;
  showcase_id: string | null;
  status: string | null;
  type: string | null;
  product_id: string[];
  tag_id: string[];
}

export interface Export {
  id: number;
  accountId: number;
  operationId: number | null;
  resource: string;
  status: ExportStatus;
  columns: string[];
  filters: ExportFilters;
  fileId: number | null;
  total: number | null;
  failureReason: string | null;
  snapshotAt: string | null;
  createdAt: string;
  expiresAt: string | null;
}

const mapExport = (r: any): Export => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  operationId: r.operation_id === null ? null : Number(r.operation_id),
  resource: r.resource,
  status: r.status,
  columns: json(r.columns, [] as string[]),
  filters: json(r.filters, {} as ExportFilters),
  fileId: r.file_id === null ? null : Number(r.file_id),
  total: r.total === null ? null : Number(r.total),
  failureReason: r.failure_reason,
  snapshotAt: r.snapshot_at,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

export const exportsRepo = {
  insert(
    { tx }: { tx: Tx },
    e: Pick<Export, 'accountId' | 'resource' | 'columns' | 'filters' | 'createdAt'>,
  ): Promise<number> {
    return insertId({ tx }, 'exports', {
      account_id: e.accountId,
      resource: e.resource,
      status: 'queued',
      columns: JSON.stringify(e.columns),
      filters: JSON.stringify(e.filters),
      created_at: e.createdAt,
    });
  },

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Export | null> {
    const r = await tx('exports').where({ id, account_id: accountId }).first();
    return r ? mapExport(r) : null;
  },

  setOperation({ tx }: { tx: Tx }, id: number, operationId: number) {
    return tx('exports').where('id', id).update({ operation_id: operationId });
  },

  complete(
    { tx }: { tx: Tx },
    id: number,
    done: { fileId: number; total: number; snapshotAt: string; expiresAt: string },
  ) {
    return tx('exports').where('id', id).whereIn('status', ['queued', 'failed']).update({
      status: 'completed',
      file_id: done.fileId,
      total: done.total,
      snapshot_at: done.snapshotAt,
      expires_at: done.expiresAt,
      failure_reason: null,
    });
  },

  fail({ tx }: { tx: Tx }, id: number, reason: string) {
    return tx('exports')
      .where({ id, status: 'queued' })
      .update({ status: 'failed', failure_reason: reason });
  },

  /** Completed exports whose retention has passed (a page of them). */
  async due({ tx }: { tx: Tx }, now: string, limit: number): Promise<Export[]> {
    const rows = await tx('exports')
      .where('status', 'completed')
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit);
    return rows.map(mapExport);
  },

  expire({ tx }: { tx: Tx }, id: number) {
    return tx('exports')
      .where({ id, status: 'completed' })
      .update({ status: 'expired', file_id: null });
  },
};
