// v3 exports: create (202 with the export and its operation's Location) and retrieve.
import type { components } from '../../../../generated/types.ts';
import type { ExportsService } from '../../../domain/exports/service.ts';
import type { Export } from '../../../domain/exports/repo.ts';
import { fromId, toId } from '../../../domain/shared/ids.ts';
import { operationPath } from './operations.ts';
import type { Handlers } from './types.ts';

export function presentExport(e: Export): components['schemas']['Export'] {
  return {
    object: 'export',
    id: String(e.id),
    operation_id: toId(e.operationId),
    file_id: toId(e.fileId),
    failure_reason: e.failureReason,
    resource: e.resource as 'users',
    status: e.status,
    total: e.total,
    columns: e.columns as components['schemas']['ExportColumn'][],
    consistency: { snapshot_at: e.snapshotAt },
    filters: e.filters,
    created_at: e.createdAt,
    expires_at: e.expiresAt,
  };
}

export function exportHandlers(
  exports: ExportsService,
): Pick<Handlers, 'createExport' | 'getExport'> {
  return {
    async createExport({ auth, body, tx }) {
      const e = await exports.create(auth, body, { tx });
      return {
        status: 202,
        body: { data: presentExport(e) },
        headers: { Location: operationPath(e.operationId!) },
      };
    },
    async getExport({ auth, params }) {
      const e = await exports.get(auth.account.id, fromId(params.export_id));
      return { status: 200, body: { data: presentExport(e) } };
    },
  };
}
