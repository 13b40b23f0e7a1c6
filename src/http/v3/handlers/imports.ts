// v3 imports: the import, its analysis and row report, its processing attempts.
import type { components } from '../../../../generated/types.ts';
import type { AttemptView, ImportsService, ImportView } from '../../../domain/imports/service.ts';
import type { ImportRow } from '../../../domain/imports/repo.ts';
import { fromId, toId } from '../../../domain/shared/ids.ts';
import { etag } from '../../../domain/shared/revision.ts';
import { accepted, operationPath } from './operations.ts';
import type { Handlers } from './types.ts';

type S = components['schemas'];
type ImportOps =
  | 'createImport'
  | 'getImport'
  | 'updateImport'
  | 'deleteImport'
  | 'createImportAnalysis'
  | 'listImportRows'
  | 'listImportProcessingAttempts'
  | 'createImportProcessingAttempt';

export function presentImport(i: ImportView): S['Import'] {
  return {
    object: 'import',
    id: String(i.id),
    file_id: String(i.fileId),
    current_operation_id: toId(i.currentOperationId),
    failure_reason: i.failureReason,
    revision: i.revision,
    type: i.type as 'students_access',
    status: i.shownStatus,
    duplicate_policy: i.duplicatePolicy,
    mapping: i.mapping,
    rows: {
      total: i.rows.total,
      ready: i.rows.ready,
      not_ready: i.rows.notReady,
      ignored: i.rows.ignored,
    },
    deleted: i.deleted,
    created_at: i.createdAt,
    updated_at: i.updatedAt,
  };
}

const presentRow = (r: ImportRow): S['ImportRow'] => ({
  object: 'import_row',
  row: r.row,
  status: r.status,
  reason: r.reason,
  email: r.email,
  product_external_id: r.productExternalId,
  applied: r.appliedAttemptId !== null,
});

export function presentAttempt(a: AttemptView): S['ImportProcessingAttempt'] {
  const op = a.operation;
  return {
    object: 'processing_attempt',
    id: String(a.id),
    event_id: null,
    import_id: String(a.importId),
    membership_id: null,
    operation_id: String(a.operationId),
    status: op?.status ?? 'queued',
    effects: { rows_applied: op?.done ?? 0, rows_failed: op?.failed ?? 0 },
    error: op?.error ?? null,
    requested_by: { id: toId(a.credentialId), kind: 'credential' },
    selection: { mode: a.mode as 'initial' | 'remaining', rows: a.rows },
    created_at: a.createdAt,
  };
}

export function importHandlers(imports: ImportsService): Pick<Handlers, ImportOps> {
  const one = (i: ImportView) => ({
    body: { data: presentImport(i) },
    headers: { ETag: etag(i.revision) },
  });
  return {
    async createImport({ auth, body, tx }) {
      return { status: 201, ...one(await imports.create(auth, body, { tx })) };
    },
    async getImport({ auth, params }) {
      return { status: 200, ...one(await imports.get(auth.account.id, fromId(params.import_id))) };
    },
    async updateImport({ auth, params, body, ifMatch, tx }) {
      const id = fromId(params.import_id);
      return {
        status: 200,
        ...one(await imports.update(auth.account.id, id, body, ifMatch, { tx })),
      };
    },
    async deleteImport({ auth, params, ifMatch, tx }) {
      await imports.remove(auth.account.id, fromId(params.import_id), ifMatch, { tx });
      return { status: 204 };
    },
    async createImportAnalysis({ auth, params, tx }) {
      return accepted(await imports.requestAnalysis(auth, fromId(params.import_id), { tx }));
    },
    async listImportRows({ auth, params, query }) {
      const { rows, page } = await imports.rows(auth.account.id, fromId(params.import_id), query);
      return { status: 200, body: { data: rows.map(presentRow), page } };
    },
    async listImportProcessingAttempts({ auth, params }) {
      const data = await imports.attempts(auth.account.id, fromId(params.import_id));
      return { status: 200, body: { data: data.map(presentAttempt) } };
    },
    async createImportProcessingAttempt({ auth, params, tx }) {
      const a = await imports.createAttempt(auth, fromId(params.import_id), { tx });
      return {
        status: 202,
        body: { data: presentAttempt(a) },
        headers: { Location: operationPath(a.operationId!) },
      };
    },
  };
}
