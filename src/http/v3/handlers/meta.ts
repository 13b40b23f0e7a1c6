// Release, capabilities, the contract as served, and the audit trail.
import { AppError } from '../../../errors.ts';
import type { AuditEntry, AuditService } from '../../../domain/audit/repo.ts';
import { instantParam } from '../../../domain/events/service.ts';
import { toId } from '../../../domain/shared/ids.ts';
import type { Operation } from '../catalog.ts';
import type { Handlers } from './types.ts';

export function metaHandlers(deps: {
  spec: object;
  release: string;
  catalog: Operation[];
  audit: AuditService;
}): Pick<Handlers, 'getCapabilities' | 'getOpenApiDocument' | 'getRequest' | 'listRequests'> {
  const deprecations = deps.catalog
    .filter((op) => op.deprecation)
    .map((op) => ({
      operation_id: op.id,
      deprecated_at: op.deprecation!.deprecatedAt.slice(0, 10),
      sunset_at: op.deprecation!.sunsetAt.slice(0, 10),
    }));
  const document = JSON.stringify(deps.spec);
  return {
    async getCapabilities() {
      return {
        status: 200,
        body: { data: { object: 'capabilities', release: deps.release, deprecations } },
      };
    },
    async getOpenApiDocument() {
      return { status: 200, body: JSON.parse(document) as Record<string, never> };
    },
    async getRequest({ params, auth }) {
      const e = await deps.audit.get(auth.account.id, params.request_id);
      if (!e) throw new AppError('not_found');
      return { status: 200, body: { data: presentRequest(e) } };
    },
    async listRequests({ auth, query }) {
      const filters = {
        since: instantParam('since', query.since),
        status: query.status,
        operationId: query.operation_id,
      };
      const { rows, page } = await deps.audit.list(auth.account.id, filters, query);
      return { status: 200, body: { data: rows.map(presentRequest), page } };
    },
  };
}

function presentRequest(e: AuditEntry) {
  return {
    object: 'request' as const,
    id: e.requestId,
    operation_id: e.operationId,
    method: e.method,
    route: e.route,
    path: e.path,
    status: e.status,
    duration_ms: e.durationMs,
    credential_id: toId(e.credentialId),
    admin_id: toId(e.adminId),
    created_at: e.createdAt,
  };
}
