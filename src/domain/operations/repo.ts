// Operations, their items and attempts (tables of migration 007). Every function takes the
// caller's `tx`. JSON columns (payload, error, result) are text on both engines.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import type { Knex } from 'knex';
import type { Tx } from '../../db/engine.ts';
import { bool, insertId } from '../../db/dialect.ts';
import { isPostgres } from '../../db/engine.ts';
import { execute, insertJson } from '../../db/statements.ts';
import { Lease, type Claimed } from '../../db/lease.ts';

/** The attempt running the operation holds it (src/db/lease.ts). */
const lease = new Lease({
  table: 'operations',
  owner: 'lease_owner',
  until: 'lease_expires_at',
  takeovers: 'lease_takeovers',
});

export const TERMINAL = ['succeeded', 'partially_succeeded', 'failed', 'canceled'] as const;
export type OperationStatus = 'queued' | 'running' | (typeof TERMINAL)[number];
export type ItemStatus = 'pending' | 'succeeded' | 'failed' | 'canceled';
export type Origin = 'automatic' | 'manual' | 'replay';

export interface ErrorBody {
  code: string;
  message: string;
}

export interface Operation {
  id: number;
  accountId: number;
  environment: string;
  type: string;
  status: OperationStatus;
  total: number;
  done: number;
  failed: number;
  attemptNumber: number;
  attemptStatus: string;
  cancellationRequested: boolean;
  error: ErrorBody | null;
  result: unknown;
  leaseOwner: string | null;
  leaseExpiresAt: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  expiresAt: string;
}

export interface Item {
  id: number;
  position: number;
  key: string;
  payload: any;
  status: ItemStatus;
  error: ErrorBody | null;
  retryable: boolean;
  result: unknown;
  attemptNumber: number | null;
  updatedAt: string;
}

export interface Attempt {
  number: number;
  origin: Origin;
  status: string;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** PostgreSQL types of a new item's columns (insertItems). */
const ITEM_TYPES = {
  operation_id: 'int',
  position: 'int',
  key: 'text',
  payload: 'text',
  status: 'text',
  updated_at: 'text',
};

const parse = (v: unknown) => (v === null || v === undefined ? null : JSON.parse(String(v)));

const mapOperation = (r: any): Operation => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  environment: r.environment,
  type: r.type,
  status: r.status,
  total: Number(r.total),
  done: Number(r.done),
  failed: Number(r.failed),
  attemptNumber: Number(r.attempt_number),
  attemptStatus: r.attempt_status,
  cancellationRequested: bool(r.cancellation_requested),
  error: parse(r.error),
  result: parse(r.result),
  leaseOwner: r.lease_owner,
  leaseExpiresAt: r.lease_expires_at,
  createdAt: r.created_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  expiresAt: r.expires_at,
});

export const mapItem = (r: any): Item => ({
  id: Number(r.id),
  position: Number(r.position),
  key: r.key,
  payload: parse(r.payload),
  status: r.status,
  error: parse(r.error),
  retryable: bool(r.retryable),
  result: parse(r.result),
  attemptNumber: r.attempt_number === null ? null : Number(r.attempt_number),
  updatedAt: r.updated_at,
});

const mapAttempt = (r: any): Attempt => ({
  number: Number(r.number),
  origin: r.origin,
  status: r.status,
  createdAt: r.created_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
});

/** The operation with its current attempt's status. */
const withAttempt = ({ tx }: { tx: Tx }) =>
  tx('operations')
    .select('operations.*', 'operation_attempts.status as attempt_status')
    .leftJoin('operation_attempts', function () {
      this.on('operation_attempts.operation_id', 'operations.id').andOn(
        'operation_attempts.number',
        'operations.attempt_number',
      );
    });

const itemPages = pages({
  list: 'operation-items',
  sorts: { index: keyset('position').asc },
  map: mapItem,
});

export const operationsRepo = {
  async insert(
    { tx }: { tx: Tx },
    row: {
      accountId: number;
      environment: string;
      credentialId: number;
      type: string;
      total: number;
      now: string;
      expiresAt: string;
    },
  ): Promise<number> {
    return insertId({ tx }, 'operations', {
      account_id: row.accountId,
      environment: row.environment,
      credential_id: row.credentialId,
      type: row.type,
      status: 'queued',
      total: row.total,
      created_at: row.now,
      expires_at: row.expiresAt,
    });
  },

  async insertItems(
    { tx }: { tx: Tx },
    operationId: number,
    items: { key: string; payload: unknown }[],
    now: string,
  ) {
    const rows = items.map((item, position) => ({
      operation_id: operationId,
      position,
      key: item.key,
      payload: JSON.stringify(item.payload),
      status: 'pending',
      updated_at: now,
    }));
    // PostgreSQL: one statement, the rows as one JSON parameter (a batch's POST waits for it).
    if (isPostgres(tx)) {
      await insertJson({ tx }, 'operation_items', ITEM_TYPES, rows);
      return;
    }
    // Chunks keep each statement under SQLite's bound-parameter limit.
    for (let i = 0; i < rows.length; i += 100)
      await tx('operation_items').insert(rows.slice(i, i + 100));
  },

  insertAttempt(
    { tx }: { tx: Tx },
    operationId: number,
    number: number,
    origin: Origin,
    now: string,
  ) {
    return tx('operation_attempts').insert({
      operation_id: operationId,
      number,
      origin,
      status: 'queued',
      created_at: now,
    });
  },

  async get({ tx }: { tx: Tx }, id: number, accountId?: number): Promise<Operation | null> {
    const q = withAttempt({ tx }).where('operations.id', id);
    if (accountId !== undefined) q.where('operations.account_id', accountId);
    const r = await q.first();
    return r ? mapOperation(r) : null;
  },

  async countOpen({ tx }: { tx: Tx }, accountId: number, environment: string): Promise<number> {
    const r = await tx('operations')
      .where({ account_id: accountId, environment })
      .whereIn('status', ['queued', 'running'])
      .count({ n: '*' })
      .first();
    return Number(r?.n ?? 0);
  },

  /** One page of the operation's items, in the order they were submitted. */
  itemsPage(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    operationId: number,
    f: { status?: string },
    p: PageParams,
  ) {
    const query = operationsRepo.itemsQuery({ tx }, operationId, f.status);
    return itemPages(query, cursors, { ...p, of: [operationId], filters: f });
  },

  itemsQuery({ tx }: { tx: Tx }, operationId: number, status?: string): Knex.QueryBuilder {
    const q = tx('operation_items').where('operation_id', operationId);
    if (status) q.where('status', status);
    return q;
  },

  async pendingItems({ tx }: { tx: Tx }, operationId: number, limit: number): Promise<Item[]> {
    const rows = await tx('operation_items')
      .where({ operation_id: operationId, status: 'pending' })
      .orderBy('position')
      .limit(limit);
    return rows.map(mapItem);
  },

  async attempts({ tx }: { tx: Tx }, operationId: number): Promise<Attempt[]> {
    const rows = await tx('operation_attempts')
      .where('operation_id', operationId)
      .orderBy('number');
    return rows.map(mapAttempt);
  },

  /**
   * Takes the lease if it is free, expired, already ours, or held by a worker known to be dead;
   * moves a queued operation to running. Not claimed when someone else holds it or it is not
   * runnable; `tookOver` names the holder it replaced (counted in `lease_takeovers`).
   */
  claim(
    { tx }: { tx: Tx },
    id: number,
    owner: string,
    now: string,
    leaseUntil: string,
    deadOwner: string | null,
  ): Promise<Claimed> {
    return lease.claim(
      { tx },
      id,
      { owner, now, until: leaseUntil },
      {
        dead: deadOwner,
        where: (q) => q.whereIn('status', ['queued', 'running']),
        set: { status: 'running', started_at: tx.raw('COALESCE(started_at, ?)', [now]) },
      },
    );
  },

  /** Renews the lease and moves the counters; false means the lease is no longer ours. */
  renew(
    { tx }: { tx: Tx },
    id: number,
    owner: string,
    leaseUntil: string,
    done: number,
    failed: number,
  ) {
    return lease.renew({ tx }, id, owner, leaseUntil, {
      done: tx.raw('done + ?', [done]),
      failed: tx.raw('failed + ?', [failed]),
    });
  },

  /**
   * PostgreSQL, set-based chunks: settles the chunk's items as succeeded with their results (those
   * still pending, as updateItem does), renews the lease and moves the counters, in one statement.
   * 0 means the lease is no longer ours (the caller rolls the chunk back).
   */
  async settleChunk(
    { tx }: { tx: Tx },
    id: number,
    owner: string,
    leaseUntil: string,
    chunk: { attempt: number; at: string; items: { id: number; result: string }[] },
  ): Promise<number> {
    if (!isPostgres(tx)) {
      // SQLite: cached prepared statements, one per item (no round trips to save here).
      for (const item of chunk.items)
        await execute(
          { tx },
          `UPDATE operation_items SET status = 'succeeded', result = ?, attempt_number = ?,
             updated_at = ? WHERE id = ? AND status = 'pending'`,
          [item.result, chunk.attempt, chunk.at, item.id],
        );
      return execute(
        { tx },
        'UPDATE operations SET lease_expires_at = ?, done = done + ? WHERE id = ? AND lease_owner = ?',
        [leaseUntil, chunk.items.length, id, owner],
      );
    }
    const r = await tx.raw(
      `WITH settled AS (
         UPDATE operation_items AS i
            SET status = 'succeeded', result = v.result, attempt_number = ?, updated_at = ?
           FROM unnest(?::int[], ?::text[]) AS v(id, result)
          WHERE i.id = v.id AND i.status = 'pending'
         RETURNING 1)
       UPDATE operations SET lease_expires_at = ?, done = done + ?
        WHERE id = ? AND lease_owner = ?`,
      [
        chunk.attempt,
        chunk.at,
        chunk.items.map((i) => i.id),
        chunk.items.map((i) => i.result),
        leaseUntil,
        chunk.items.length,
        id,
        owner,
      ],
    );
    return Number(r.rowCount ?? 0);
  },

  releaseLease({ tx }: { tx: Tx }, id: number, owner: string) {
    return lease.release({ tx }, id, owner);
  },

  setAttemptStatus(
    { tx }: { tx: Tx },
    id: number,
    number: number,
    status: string,
    at: { started?: string; finished?: string },
  ) {
    const changes: Record<string, unknown> = { status };
    if (at.started) changes.started_at = tx.raw('COALESCE(started_at, ?)', [at.started]);
    if (at.finished) changes.finished_at = at.finished;
    return tx('operation_attempts').where({ operation_id: id, number }).update(changes);
  },

  update(
    { tx }: { tx: Tx },
    id: number,
    changes: Record<string, unknown>,
    guard: { owner?: string; status?: string[] } = {},
  ) {
    const q = guard.owner
      ? lease.guarded({ tx }, id, guard.owner)
      : tx('operations').where('id', id);
    if (guard.status) q.whereIn('status', guard.status);
    return q.update(changes);
  },

  /** Settles a pending item; 0 when it was no longer pending (another run got there first). */
  updateItem({ tx }: { tx: Tx }, id: number, changes: Record<string, unknown>): Promise<number> {
    return tx('operation_items').where({ id, status: 'pending' }).update(changes);
  },

  /** Items a resume runs again: failed ones that may succeed on another try. */
  requeueRetryable({ tx }: { tx: Tx }, operationId: number, now: string) {
    return tx('operation_items')
      .where({ operation_id: operationId, status: 'failed', retryable: true })
      .update({ status: 'pending', error: null, retryable: false, updated_at: now });
  },

  async countRecoverable({ tx }: { tx: Tx }, operationId: number): Promise<number> {
    const r = await tx('operation_items')
      .where('operation_id', operationId)
      .where((q) => q.where('status', 'pending').orWhere({ status: 'failed', retryable: true }))
      .count({ n: '*' })
      .first();
    return Number(r?.n ?? 0);
  },

  cancelPending({ tx }: { tx: Tx }, operationId: number, now: string) {
    return tx('operation_items')
      .where({ operation_id: operationId, status: 'pending' })
      .update({ status: 'canceled', updated_at: now });
  },

  /** Running operations whose lease ran out (their worker died): to be picked up again. */
  async orphaned({ tx }: { tx: Tx }, now: string): Promise<{ id: number; owner: string | null }[]> {
    const rows = await tx('operations')
      .where('status', 'running')
      .where((q) => q.whereNull('lease_owner').orWhere('lease_expires_at', '<', now))
      .select('id', 'lease_owner');
    return rows.map((r: any) => ({ id: Number(r.id), owner: r.lease_owner }));
  },

  async leaseOwners({ tx }: { tx: Tx }): Promise<{ id: number; owner: string }[]> {
    const rows = await tx('operations')
      .where('status', 'running')
      .whereNotNull('lease_owner')
      .select('id', 'lease_owner');
    return rows.map((r: any) => ({ id: Number(r.id), owner: r.lease_owner }));
  },

  purgeExpired({ tx }: { tx: Tx }, now: string): Promise<number> {
    return tx('operations').where('expires_at', '<', now).delete();
  },
};
