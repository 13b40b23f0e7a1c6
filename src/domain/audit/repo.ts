import type { Tx } from '../../db/knex.ts';

export interface AuditEntry {
  requestId: string;
  accountId: number | null;
  credentialId: number | null;
  adminId: number | null;
  method: string;
  route: string | null;
  operationId: string | null;
  path: string;
  status: number;
  durationMs: number;
  ip: string | null;
  createdAt: string;
}

export const auditRepo = {
  async insert(tx: Tx, e: AuditEntry): Promise<void> {
    await tx('audit_entries').insert({
      request_id: e.requestId,
      account_id: e.accountId,
      credential_id: e.credentialId,
      admin_id: e.adminId,
      method: e.method,
      route: e.route,
      operation_id: e.operationId,
      path: e.path,
      status: e.status,
      duration_ms: e.durationMs,
      ip: e.ip,
      created_at: e.createdAt,
    });
  },

  async get(tx: Tx, accountId: number, requestId: string): Promise<AuditEntry | null> {
    const r = await tx('audit_entries')
      .where({ request_id: requestId, account_id: accountId })
      .first();
    if (!r) return null;
    return {
      requestId: r.request_id,
      accountId: r.account_id,
      credentialId: r.credential_id === null ? null : Number(r.credential_id),
      adminId: r.admin_id === null ? null : Number(r.admin_id),
      method: r.method,
      route: r.route,
      operationId: r.operation_id,
      path: r.path,
      status: Number(r.status),
      durationMs: Number(r.duration_ms),
      ip: r.ip,
      createdAt: r.created_at,
    };
  },
};

/** The audit trail. Replaceable in tests to prove the pipeline fails closed. */
export class AuditService {
  constructor(private readonly db: Tx) {}
  record(entry: AuditEntry): Promise<void> {
    return auditRepo.insert(this.db, entry);
  }
  get(accountId: number, requestId: string): Promise<AuditEntry | null> {
    return auditRepo.get(this.db, accountId, requestId);
  }
}
