// Webhook endpoints (table `webhook_endpoints`) and their signing secrets (`webhook_secrets`,
// sealed with SECRETS_KEY). Every function takes the caller's `tx`.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Tx } from '../../db/engine.ts';
import { isPostgres } from '../../db/engine.ts';
import { insertId } from '../../db/dialect.ts';
import { allRows, firstRow } from '../../db/statements.ts';

export type EndpointStatus = 'enabled' | 'disabled';

export interface Endpoint {
  id: number;
  accountId: number;
  url: string;
  description: string | null;
  /** Event types it receives; `*` means every public type. */
  eventTypes: string[];
  payloadVersion: string;
  status: EndpointStatus;
  disabledReason: string | null;
  revision: string;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
  /** The secrets that sign its deliveries now, newest first (filled by the service for reads). */
  signingSecrets?: SigningSecret[];
}

/** What GET shows of a signing secret: its start, never the secret. */
export interface SigningSecret {
  hint: string;
  createdAt: string;
  expiresAt: string | null;
}

const map = (r: any): Endpoint => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  url: r.url,
  description: r.description,
  eventTypes: JSON.parse(r.event_types),
  payloadVersion: r.payload_version,
  status: r.status,
  disabledReason: r.disabled_reason,
  revision: r.revision,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deletedAt: r.deleted_at,
});

// Ids follow creation order.
const endpointPages = pages({
  list: 'webhooks',
  sorts: { '-created_at': keyset('id').desc },
  map,
});

export const endpointsRepo = {
  map,

  insert({ tx }: { tx: Tx }, row: Record<string, unknown>): Promise<number> {
    return insertId({ tx }, 'webhook_endpoints', row);
  },

  /** How many endpoints the account has (deleted ones do not count). */
  async count({ tx }: { tx: Tx }, accountId: number): Promise<number> {
    const r = await tx('webhook_endpoints')
      .where('account_id', accountId)
      .whereNull('deleted_at')
      .count({ n: '*' })
      .first();
    return Number(r?.n ?? 0);
  },

  /** An endpoint of the account, not deleted. */
  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Endpoint | null> {
    const r = await firstRow(
      { tx },
      'SELECT * FROM webhook_endpoints WHERE account_id = ? AND id = ? AND deleted_at IS NULL',
      [accountId, id],
    );
    return r ? map(r) : null;
  },

  /** Any endpoint, deleted or not (deliveries in flight). */
  async byId({ tx }: { tx: Tx }, id: number): Promise<Endpoint | null> {
    const r = await firstRow({ tx }, 'SELECT * FROM webhook_endpoints WHERE id = ?', [id]);
    return r ? map(r) : null;
  },

  /** Any endpoint, deleted or not, and whether its account is active (a claim's read). */
  async withAccount(
    { tx }: { tx: Tx },
    id: number,
  ): Promise<{ endpoint: Endpoint; accountActive: boolean } | null> {
    const r = await firstRow<any>(
      { tx },
      'SELECT e.*, a.status AS account_status FROM webhook_endpoints e ' +
        'JOIN accounts a ON a.id = e.account_id WHERE e.id = ?',
      [id],
    );
    return r ? { endpoint: map(r), accountActive: r.account_status === 'active' } : null;
  },

  /**
   * A claim's read, one statement: the endpoint (deleted or not), whether its account is active,
   * and the sealed secrets signing at `now` (at most two, newest first: as activeSecrets), with
   * `lock` selected too (the lease primitive's group lock, taken by this statement).
   */
  async forClaim(
    { tx }: { tx: Tx },
    id: number,
    now: string,
    lock: { sql: string; params: unknown[] } | null,
  ): Promise<{ endpoint: Endpoint; accountActive: boolean; sealed: string[] } | null> {
    const secret = (offset: number) =>
      '(SELECT s.sealed FROM webhook_secrets s WHERE s.endpoint_id = e.id AND ' +
      `(s.expires_at IS NULL OR s.expires_at > ?) ORDER BY s.id DESC LIMIT 1 OFFSET ${offset})`;
    const r = await firstRow<any>(
      { tx },
      `SELECT e.*, a.status AS account_status, ${secret(0)} AS sealed_1, ${secret(1)} AS sealed_2` +
        (lock ? `, ${lock.sql} AS locked` : '') +
        ' FROM webhook_endpoints e JOIN accounts a ON a.id = e.account_id WHERE e.id = ?',
      [now, now, ...(lock?.params ?? []), id],
    );
    if (!r) return null;
    return {
      endpoint: map(r),
      accountActive: r.account_status === 'active',
      sealed: [r.sealed_1, r.sealed_2].filter((v): v is string => typeof v === 'string'),
    };
  },

  /**
   * The endpoint's row, deleted or not. PostgreSQL: locked until the transaction ends, so claims
   * and finishes of its deliveries take turns (its concurrency limit holds across instances).
   * SQLite runs transactions one at a time anyway.
   */
  async lockRow({ tx }: { tx: Tx }, id: number): Promise<Endpoint | null> {
    const r = isPostgres(tx)
      ? await firstRow({ tx }, 'SELECT * FROM webhook_endpoints WHERE id = ? FOR NO KEY UPDATE', [
          id,
        ])
      : await firstRow({ tx }, 'SELECT * FROM webhook_endpoints WHERE id = ?', [id]);
    return r ? map(r) : null;
  },

  /** One page of the account's endpoints (not deleted), newest first. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    f: { status?: string },
    p: PageParams,
  ) {
    const query = endpointsRepo.listQuery({ tx }, accountId, f.status);
    return endpointPages(query, cursors, { ...p, of: [accountId], filters: f });
  },

  listQuery({ tx }: { tx: Tx }, accountId: number, status: string | undefined) {
    const q = tx('webhook_endpoints').where('account_id', accountId).whereNull('deleted_at');
    if (status !== undefined) q.where('status', status);
    return q.select('*');
  },

  /** Cheap test on every recorded event: most accounts have no endpoint. */
  async anyEnabled({ tx }: { tx: Tx }, accountId: number): Promise<boolean> {
    const r = await firstRow(
      { tx },
      "SELECT 1 AS x FROM webhook_endpoints WHERE account_id = ? AND status = 'enabled' AND deleted_at IS NULL LIMIT 1",
      [accountId],
    );
    return r !== undefined;
  },

  async enabled({ tx }: { tx: Tx }, accountId: number): Promise<Endpoint[]> {
    const rows = await allRows(
      { tx },
      "SELECT * FROM webhook_endpoints WHERE account_id = ? AND status = 'enabled' AND deleted_at IS NULL ORDER BY id",
      [accountId],
    );
    return rows.map(map);
  },

  /** With `revision`, only that revision is overwritten (If-Match made atomic). */
  update({ tx }: { tx: Tx }, id: number, changes: Record<string, unknown>, revision?: string) {
    const q = tx('webhook_endpoints').where('id', id).whereNull('deleted_at');
    if (revision !== undefined) q.where('revision', revision);
    return q.update(changes);
  },

  // ---- secrets ----

  insertSecret(
    { tx }: { tx: Tx },
    endpointId: number,
    sealed: string,
    now: string,
  ): Promise<number> {
    return insertId({ tx }, 'webhook_secrets', {
      endpoint_id: endpointId,
      sealed,
      created_at: now,
      expires_at: null,
    });
  },

  /**
   * Secrets that still sign at `now`: the current one and the one in a rotation overlap. At most
   * two, newest first: rows left by rotations that raced before they were serialized (more than
   * two active) sign no more than that.
   */
  activeSecrets(
    { tx }: { tx: Tx },
    endpointIds: number | number[],
    now: string,
  ): Promise<
    { id: number; endpoint_id: number; sealed: string; created_at: string; expires_at: string }[]
  > {
    const ids = Array.isArray(endpointIds) ? endpointIds : [endpointIds];
    if (!ids.length) return Promise.resolve([]);
    return allRows(
      { tx },
      `SELECT id, endpoint_id, sealed, created_at, expires_at FROM (
         SELECT s.*, ROW_NUMBER() OVER (PARTITION BY endpoint_id ORDER BY id DESC) AS n
         FROM webhook_secrets s
         WHERE endpoint_id IN (${ids.map(() => '?').join(', ')})
           AND (expires_at IS NULL OR expires_at > ?)
       ) active WHERE n <= 2 ORDER BY endpoint_id, id DESC`,
      [...ids, now],
    );
  },

  /**
   * A rotation's cut: the current secret (and anything else signing past `until`) stops at
   * `until`; a secret still in an earlier rotation's overlap stops `now`, so at most the new
   * secret and the one it replaces sign.
   */
  async expireSecrets(
    { tx }: { tx: Tx },
    endpointId: number,
    now: string,
    until: string,
  ): Promise<void> {
    const current = await firstRow(
      { tx },
      'SELECT id FROM webhook_secrets WHERE endpoint_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY id DESC LIMIT 1',
      [endpointId, now],
    );
    await tx('webhook_secrets')
      .where('endpoint_id', endpointId)
      .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now))
      .whereNot('id', Number(current?.id ?? 0))
      .update({ expires_at: now });
    if (current)
      await tx('webhook_secrets')
        .where('id', Number(current.id))
        .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', until))
        .update({ expires_at: until });
  },
};
