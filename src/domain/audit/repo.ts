import type { Db, Tx } from '../../db/knex.ts';
import { purgeInIdOrder } from '../../db/purge.ts';
import { isPostgres } from '../../db/knex.ts';
import { onSqliteSettled } from '../../db/tx.ts';
import { insertJson, insertMany } from '../../db/statements.ts';
import { withCommit } from '../../db/pg-pipeline.ts';
import { keyset, pages, type PageParams, type PageResult } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';

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

/** Longest path kept: enough for every route with its ids; the rest of a long probe is noise. */
export const MAX_AUDIT_PATH = 512;

/**
 * The table's columns for an entry. Client-chosen text is cut to its column: an 11-letter method
 * (UNSUBSCRIBE) overflowed `method varchar(10)` on PostgreSQL and failed the whole batch.
 */
export const auditRow = (e: AuditEntry) => ({
  request_id: e.requestId,
  account_id: e.accountId,
  credential_id: e.credentialId,
  admin_id: e.adminId,
  method: e.method.slice(0, 10),
  route: e.route,
  operation_id: e.operationId,
  path: e.path.slice(0, MAX_AUDIT_PATH),
  status: e.status,
  duration_ms: e.durationMs,
  ip: e.ip === null ? null : e.ip.slice(0, 64),
  created_at: e.createdAt,
});

/** PostgreSQL types of auditRow's columns, in its order (insertJson). */
const AUDIT_TYPES = {
  request_id: 'text',
  account_id: 'integer',
  credential_id: 'integer',
  admin_id: 'integer',
  method: 'text',
  route: 'text',
  operation_id: 'text',
  path: 'text',
  status: 'integer',
  duration_ms: 'integer',
  ip: 'text',
  created_at: 'text',
};

/** PostgreSQL: one entry, with its request's COMMIT (AuditService.withCommit). */
const COLUMNS = Object.keys(AUDIT_TYPES) as (keyof typeof AUDIT_TYPES)[];
const PLACES = COLUMNS.map((_, i) => `$${i + 1}`);
const INSERT_ONE = `INSERT INTO audit_entries (${COLUMNS.join(', ')}) VALUES (${PLACES.join(', ')})`;

const map = (r: any): AuditEntry => ({
  requestId: r.request_id,
  accountId: r.account_id === null ? null : Number(r.account_id),
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
});

export interface AuditFilters {
  /** At or after this instant. */
  since?: string;
  /** One status (`404`) or a class (`4xx`). */
  status?: string;
  operationId?: string;
}

// Ids follow recording order (entries are inserted as requests finish): newest first is id desc.
const auditPages = pages({ list: 'requests', sorts: { '-created_at': keyset('id').desc }, map });

export const auditRepo = {
  /** A whole batch lands or none of it: every request of the batch gets the same answer. */
  async insertMany({ tx }: { tx: Tx }, entries: AuditEntry[]): Promise<void> {
    if (!isPostgres(tx)) return insertMany({ tx }, 'audit_entries', entries.map(auditRow));
    // One statement text whatever the batch's size (the rows as one JSON parameter), named:
    // PostgreSQL plans it once per connection, where knex's multi-row VALUES was a new text,
    // parsed and planned, for every size.
    await insertJson({ tx }, 'audit_entries', AUDIT_TYPES, entries.map(auditRow), '', {
      named: true,
    });
  },

  async get({ tx }: { tx: Tx }, accountId: number, requestId: string): Promise<AuditEntry | null> {
    const r = await tx('audit_entries')
      .where({ request_id: requestId, account_id: accountId })
      .first();
    return r ? map(r) : null;
  },

  /** One page of the account's entries, newest first (index audit_entries (account_id, id)). */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    f: AuditFilters,
    p: PageParams,
  ): Promise<PageResult<AuditEntry>> {
    const q = tx('audit_entries').where('account_id', accountId);
    if (f.since !== undefined) q.where('created_at', '>=', f.since);
    if (f.operationId !== undefined) q.where('operation_id', f.operationId);
    if (f.status !== undefined) {
      const low = Number(f.status.replace(/x/g, '0'));
      const high = Number(f.status.replace(/x/g, '9'));
      q.whereBetween('status', [low, high]);
    }
    return auditPages(q.select('*'), cursors, { ...p, of: [accountId], filters: { ...f } });
  },
};

interface Pending {
  entry: AuditEntry;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * The audit trail, group-written on both engines: entries recorded while a write is under way
 * (or in the same event-loop turn) share the next INSERT and its commit; one write at a time. On
 * PostgreSQL, where a write is a round trip, that turns a commit per request into one per round
 * trip under load (a turn alone gathered one or two). Each request still waits for its own entry
 * to be durable before it answers, and every request of a failed batch gets audit_unavailable.
 */
export class AuditService {
  private pending: Pending[] = [];
  private scheduled = false;
  private writing = false;
  private readonly db: Tx;
  readonly retentionDays: number;
  private readonly cursors: CursorCodec | undefined;

  constructor(
    db: Tx,
    /** Entries are kept this long (AUDIT_RETENTION_DAYS), then swept (sweep.audit). */
    retentionDays = 90,
    /** For `list` (GET /requests). */
    cursors?: CursorCodec,
  ) {
    this.db = db;
    this.retentionDays = retentionDays;
    this.cursors = cursors;
    // On SQLite the requests of a group commit record their entries as it settles: written there
    // and then, they answer in that turn (a turn later, they waited behind every request read in
    // between: the POST tail, docs/speed.md). One service per database for its lifetime, so the
    // listener is never removed.
    if (!isPostgres(db as Db))
      onSqliteSettled(db as Db, () => {
        if (!this.writing && this.pending.length > 0) void this.flush();
      });
  }

  /** Deletes the entries created before `cutoff` (see purgeInIdOrder); returns how many. */
  purgeBefore(cutoff: string, chunk = 1000): Promise<number> {
    return purgeInIdOrder(this.db as Db, 'audit_entries', cutoff, chunk);
  }

  /**
   * PostgreSQL: sends the entry with the COMMIT of the request's own transaction, so it commits
   * with the change it records, in the same round trip (no write or commit of its own). False
   * where that cannot be (SQLite, a connection that does not fold): record() it after the commit.
   * If its insert fails, nothing of the transaction commits and the transaction rejects with
   * `failure(err)`.
   */
  async withCommit(
    { tx }: { tx: Tx },
    entry: AuditEntry,
    failure: (err: Error) => Error,
  ): Promise<boolean> {
    if (!isPostgres(this.db as Db)) return false;
    const row = auditRow(entry);
    const values = COLUMNS.map((c) => row[c]);
    return withCommit({ tx }, { text: INSERT_ONE, values, name: 'audit_entry_commit', failure });
  }

  record(entry: AuditEntry): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ entry, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.writing || !this.pending.length) return;
    this.scheduled = true;
    // Not if a group's settling wrote them in the meantime (flush clears `scheduled`).
    setImmediate(() => {
      if (this.scheduled) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    this.writing = true;
    const batch = this.pending;
    this.pending = [];
    try {
      await this.write(batch);
    } finally {
      this.writing = false;
      this.schedule();
    }
  }

  private async write(batch: Pending[]): Promise<void> {
    try {
      await auditRepo.insertMany(
        { tx: this.db },
        batch.map((p) => p.entry),
      );
      for (const p of batch) p.resolve();
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      // One bad entry must not fail the other requests of its batch: each goes again on its own.
      await Promise.all(
        batch.map((p) =>
          auditRepo.insertMany({ tx: this.db }, [p.entry]).then(p.resolve, p.reject),
        ),
      );
    }
  }

  get(accountId: number, requestId: string): Promise<AuditEntry | null> {
    return auditRepo.get({ tx: this.db }, accountId, requestId);
  }

  list(accountId: number, f: AuditFilters, p: PageParams): Promise<PageResult<AuditEntry>> {
    if (!this.cursors) throw new Error('AuditService: no cursor codec to list with');
    return auditRepo.page({ tx: this.db }, this.cursors, accountId, f, p);
  }
}
