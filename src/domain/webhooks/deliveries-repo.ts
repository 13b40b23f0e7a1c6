// Webhook deliveries (one per event and endpoint) and their attempts (tables of migration 009).
// Every function takes the caller's `tx`.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { isPostgres, type Tx } from '../../db/engine.ts';
import { Expression } from '../../db/lease.ts';
import { bool, insertId } from '../../db/dialect.ts';
import { eventsRepo } from '../events/repo.ts';
import type { Event } from '../events/types.ts';
import { allRows, execute, firstRow, updateSql } from '../../db/statements.ts';

export const DELIVERY_STATUSES = [
  'pending',
  'in_progress',
  'delivered',
  'failed',
  'dead',
  'canceled',
] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export type AttemptOrigin = 'automatic' | 'replay';

export interface Delivery {
  id: number;
  accountId: number;
  endpointId: number;
  eventId: number;
  eventType: string;
  status: DeliveryStatus;
  attemptsCount: number;
  automaticAttempts: number;
  replaysPending: number;
  waiting: boolean;
  priorStatus: DeliveryStatus | null;
  leaseOwner: string | null;
  leaseUntil: string | null;
  /** Claims that took the delivery over from an attempt whose lease ran out (migration 025). */
  leaseTakeovers: number;
  nextAttemptAt: string | null;
  deadlineAt: string;
  deliveredAt: string | null;
  createdAt: string;
}

export interface Attempt {
  deliveryId: number;
  number: number;
  origin: AttemptOrigin;
  httpStatus: number | null;
  durationMs: number;
  startedAt: string;
  finishedAt: string;
  nextAttemptAt: string | null;
  responseExcerpt: string | null;
  transportError: string | null;
}

/**
 * A delivery (not held, its `due_at` passed) with an attempt due at `?` (now): a replay asked
 * for, or an automatic attempt of an open one (pending, failed; for a lease taken over, the
 * status it had before).
 */
const DUE_SQL =
  "(replays_pending > 0 OR ((CASE WHEN status = 'in_progress' THEN " +
  "COALESCE(prior_status, 'failed') ELSE status END) IN ('pending', 'failed') " +
  'AND next_attempt_at <= ?))';

/** An attempt's outcome as recordOutcomes writes it (the attempt row's fields, and the delivery's). */
export interface OutcomeRow {
  id: number;
  /** The attempt's lease owner: nothing is written unless it still holds the delivery. */
  owner: string;
  /** The endpoint still sends: replays left pending stay (due now); otherwise they are dropped. */
  live: boolean;
  /** 1 for a replay attempt (one pending replay done), else 0. */
  replay: number;
  /** 1 for an automatic attempt (counted in `automatic_attempts`), else 0. */
  automatic: number;
  status: DeliveryStatus;
  next_attempt_at: string | null;
  /** The attempt's end when it delivered (kept only if the delivery had none), else null. */
  delivered_at: string | null;
  origin: AttemptOrigin;
  http_status: number | null;
  duration_ms: number;
  started_at: string;
  finished_at: string;
  response_excerpt: string | null;
  transport_error: string | null;
}

/** Replays left (of `pending`, the row's) once an attempt is recorded: `live`, `replay` the outcome's. */
const LEFT = (pending: string, live: string, replay: string) =>
  `CASE WHEN ${live} AND ${pending} > ${replay} THEN ${pending} - ${replay} ELSE 0 END`;

/**
 * One outcome, SQLite: `?` in order status, automatic, (live, replay, replay) twice around
 * next_attempt_at, now, next_attempt_at, delivered_at, now, id, owner. No RETURNING: SQLite
 * codes it as a trigger on the statement, which made the update cost ~35 us instead of ~10; the
 * row is read after it instead, in the same transaction (OUTCOME_READ_SQLITE).
 */
const OUTCOME_SQLITE =
  'UPDATE webhook_deliveries SET status = ?, attempts_count = attempts_count + 1, ' +
  'automatic_attempts = automatic_attempts + ?, ' +
  `replays_pending = ${LEFT('replays_pending', '?', '?')}, next_attempt_at = ?, ` +
  `due_at = CASE WHEN ${LEFT('replays_pending', '?', '?')} > 0 THEN ? ELSE ? END, ` +
  'delivered_at = COALESCE(delivered_at, ?), lease_owner = NULL, lease_until = NULL, ' +
  'prior_status = NULL, updated_at = ? WHERE id = ? AND lease_owner = ?';
const OUTCOME_READ_SQLITE =
  'SELECT id, attempts_count, replays_pending FROM webhook_deliveries WHERE id = ?';

/**
 * Every outcome, PostgreSQL, one statement: the deliveries updated where the lease is still the
 * attempt's, and an attempt row for each delivery updated (numbered by its new count). `?`: the
 * rows as JSON, now, now. The SET expressions see the row as it was.
 */
const OUTCOMES_PG =
  'WITH v AS (SELECT * FROM json_to_recordset(?::json) AS v(id int, owner text, live boolean, ' +
  'replay int, automatic int, status text, next_attempt_at text, delivered_at text, origin text, ' +
  'http_status int, duration_ms int, started_at text, finished_at text, response_excerpt text, ' +
  'transport_error text)), ' +
  'u AS (UPDATE webhook_deliveries t SET status = v.status, ' +
  'attempts_count = t.attempts_count + 1, ' +
  'automatic_attempts = t.automatic_attempts + v.automatic, ' +
  `replays_pending = ${LEFT('t.replays_pending', 'v.live', 'v.replay')}, ` +
  'next_attempt_at = v.next_attempt_at, ' +
  `due_at = CASE WHEN ${LEFT('t.replays_pending', 'v.live', 'v.replay')} > 0 ` +
  'THEN ? ELSE v.next_attempt_at END, ' +
  'delivered_at = COALESCE(t.delivered_at, v.delivered_at), lease_owner = NULL, ' +
  'lease_until = NULL, prior_status = NULL, updated_at = ? ' +
  'FROM v WHERE t.id = v.id AND t.lease_owner = v.owner ' +
  'RETURNING t.id, t.attempts_count, t.replays_pending), ' +
  'a AS (INSERT INTO webhook_attempts (delivery_id, number, origin, http_status, duration_ms, ' +
  'started_at, finished_at, next_attempt_at, response_excerpt, transport_error) ' +
  'SELECT u.id, u.attempts_count, v.origin, v.http_status, v.duration_ms, v.started_at, ' +
  'v.finished_at, v.next_attempt_at, v.response_excerpt, v.transport_error ' +
  'FROM u JOIN v ON v.id = u.id) ' +
  'SELECT id, replays_pending FROM u';

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

const map = (r: any): Delivery => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  endpointId: Number(r.endpoint_id),
  eventId: Number(r.event_id),
  eventType: r.event_type,
  status: r.status,
  attemptsCount: Number(r.attempts_count),
  automaticAttempts: Number(r.automatic_attempts),
  replaysPending: Number(r.replays_pending),
  waiting: bool(r.waiting),
  priorStatus: r.prior_status,
  leaseOwner: r.lease_owner,
  leaseUntil: r.lease_until,
  leaseTakeovers: Number(r.lease_takeovers ?? 0),
  nextAttemptAt: r.next_attempt_at,
  deadlineAt: r.deadline_at,
  deliveredAt: r.delivered_at,
  createdAt: r.created_at,
});

const mapAttempt = (r: any): Attempt => ({
  deliveryId: Number(r.delivery_id),
  number: Number(r.number),
  origin: r.origin,
  httpStatus: num(r.http_status),
  durationMs: Number(r.duration_ms),
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  nextAttemptAt: r.next_attempt_at,
  responseExcerpt: r.response_excerpt,
  transportError: r.transport_error,
});

export interface DeliveryFilters {
  status?: string;
  eventId?: number | null;
  eventType?: string;
  createdAfter?: string;
  createdBefore?: string;
}

export interface ReplayFilters {
  eventIds?: number[];
  eventTypes?: string[];
  occurredAfter?: string;
  occurredBefore?: string;
  /** Events recorded at or after this instant (the retention) and before `until`. */
  since: string;
  until: string;
}

const byCreation = keyset('created_at', 'id');
const deliveryPages = pages({
  list: 'webhook-deliveries',
  sorts: { '-created_at': byCreation.desc, created_at: byCreation.asc },
  map,
});

export const deliveriesRepo = {
  map,
  mapAttempt,

  insert({ tx }: { tx: Tx }, row: Record<string, unknown>): Promise<number> {
    return insertId({ tx }, 'webhook_deliveries', row);
  },

  /**
   * PostgreSQL, a CTE of the statement that inserts events (`e`; fanout.ts deliveriesStep): for
   * each event whose type is one of `?` (the public ones), a delivery to each enabled endpoint of
   * its account whose `payload_version` is the event's and whose `event_types` (JSON text) holds
   * `*` or the type; in event then endpoint order, the rows insertMany is given, due at `?` (now),
   * `deadline_at` `?`. Returns each delivery's id and endpoint.
   */
  INSERT_FOR_EVENTS:
    'INSERT INTO webhook_deliveries (account_id, endpoint_id, event_id, event_type, status, ' +
    'next_attempt_at, due_at, deadline_at, created_at, updated_at) ' +
    "SELECT e.account_id, w.id, e.id, e.type, 'pending', c.now, c.now, c.deadline, c.now, c.now " +
    'FROM (SELECT ?::text[] AS types, ?::text AS now, ?::text AS deadline) c ' +
    'JOIN e ON e.type = ANY(c.types) ' +
    'JOIN webhook_endpoints w ON w.account_id = e.account_id ' +
    "WHERE w.status = 'enabled' AND w.deleted_at IS NULL AND w.payload_version = e.version " +
    'AND (w.event_types::jsonb @> \'["*"]\' OR w.event_types::jsonb @> jsonb_build_array(e.type)) ' +
    'ORDER BY e.id, w.id RETURNING id, endpoint_id',

  /** INSERT_FOR_EVENTS's rows (as JSON objects), in id order. */
  fromStep(rows: unknown[]): { id: number; endpointId: number }[] {
    return (rows as { id: unknown; endpoint_id: unknown }[])
      .map((r) => ({ id: Number(r.id), endpointId: Number(r.endpoint_id) }))
      .sort((a, b) => a.id - b.id);
  },

  /** Inserts the rows; their ids in the same order (one statement on PostgreSQL). */
  async insertMany({ tx }: { tx: Tx }, rows: Record<string, unknown>[]): Promise<number[]> {
    if (rows.length <= 1 || !isPostgres(tx)) {
      const ids: number[] = [];
      for (const row of rows) ids.push(await insertId({ tx }, 'webhook_deliveries', row));
      return ids;
    }
    // The sequence numbers the rows in the order they are listed.
    const returned = await tx('webhook_deliveries').insert(rows).returning('id');
    return returned.map((r: { id: unknown }) => Number(r.id)).sort((a: number, b: number) => a - b);
  },

  async get({ tx }: { tx: Tx }, id: number): Promise<Delivery | null> {
    const r = await firstRow({ tx }, 'SELECT * FROM webhook_deliveries WHERE id = ?', [id]);
    return r ? map(r) : null;
  },

  /**
   * Records attempts' outcomes, each only while its attempt still holds the delivery's lease (a
   * lease taken over meanwhile: nothing written, neither the delivery nor the attempt). Written
   * relative to the row, so what others change during an attempt is kept: `replays_pending` (a
   * replay asked meanwhile) loses only the replay this attempt made, and `due_at` is now when one
   * is left. Returns the deliveries written, with their replays still pending. PostgreSQL: one
   * statement for them all (a data-modifying CTE); SQLite: an UPDATE, a read of the row and an
   * INSERT per outcome (prepared statements, one writer at a time).
   */
  async recordOutcomes(
    { tx }: { tx: Tx },
    rows: OutcomeRow[],
    now: string,
  ): Promise<{ id: number; replaysPending: number }[]> {
    if (rows.length === 0) return [];
    const out = (r: { id: unknown; replays_pending: unknown }) => ({
      id: Number(r.id),
      replaysPending: Number(r.replays_pending),
    });
    if (isPostgres(tx)) {
      const written = await allRows<any>({ tx }, OUTCOMES_PG, [JSON.stringify(rows), now, now]);
      return written.map(out);
    }
    const written: { id: number; replaysPending: number }[] = [];
    for (const r of rows) {
      const changed = await execute({ tx }, OUTCOME_SQLITE, [
        r.status,
        r.automatic,
        r.live,
        r.replay,
        r.replay,
        r.next_attempt_at,
        r.live,
        r.replay,
        r.replay,
        now,
        r.next_attempt_at,
        r.delivered_at,
        now,
        r.id,
        r.owner,
      ]);
      if (changed === 0) continue;
      const w = (await firstRow<any>({ tx }, OUTCOME_READ_SQLITE, [r.id]))!;
      await insertId({ tx }, 'webhook_attempts', {
        delivery_id: r.id,
        number: Number(w.attempts_count),
        origin: r.origin,
        http_status: r.http_status,
        duration_ms: r.duration_ms,
        started_at: r.started_at,
        finished_at: r.finished_at,
        next_attempt_at: r.next_attempt_at,
        response_excerpt: r.response_excerpt,
        transport_error: r.transport_error,
      });
      written.push(out(w));
    }
    return written;
  },

  async getOf({ tx }: { tx: Tx }, endpointId: number, id: number): Promise<Delivery | null> {
    const r = await firstRow(
      { tx },
      'SELECT * FROM webhook_deliveries WHERE endpoint_id = ? AND id = ?',
      [endpointId, id],
    );
    return r ? map(r) : null;
  },

  /** One page of the endpoint's deliveries, newest first by default. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    endpointId: number,
    f: DeliveryFilters,
    p: PageParams,
  ) {
    const query = deliveriesRepo.listQuery({ tx }, endpointId, f);
    return deliveryPages(query, cursors, { ...p, of: [endpointId], filters: { ...f } });
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY. */
  listQuery({ tx }: { tx: Tx }, endpointId: number, f: DeliveryFilters) {
    const q = tx('webhook_deliveries').where('endpoint_id', endpointId);
    if (f.status !== undefined) q.where('status', f.status);
    if (f.eventId !== undefined) q.where('event_id', f.eventId ?? 0);
    if (f.eventType !== undefined) q.where('event_type', f.eventType);
    if (f.createdAfter !== undefined) q.where('created_at', '>=', f.createdAfter);
    if (f.createdBefore !== undefined) q.where('created_at', '<', f.createdBefore);
    return q.select('*');
  },

  /**
   * One more replay asked, relative to the row as it is when written (not as it was read): an
   * attempt's outcome may commit in between and take the delivery out of `in_progress`. Due now
   * unless an attempt is under way (it keeps its lease as due_at, and its outcome makes the
   * delivery due again for the replay). The status the row had when written; null when it is
   * gone.
   */
  async addReplay({ tx }: { tx: Tx }, id: number, now: string): Promise<string | null> {
    const [r] = await allRows<{ status: string }>(
      { tx },
      'UPDATE webhook_deliveries SET replays_pending = replays_pending + 1, updated_at = ?, ' +
        "due_at = CASE WHEN status = 'in_progress' THEN due_at ELSE ? END " +
        'WHERE id = ? RETURNING status',
      [now, now, id],
    );
    return r?.status ?? null;
  },

  /** A prepared statement per set of columns (a handful of call sites). */
  update(
    { tx }: { tx: Tx },
    id: number,
    changes: Record<string, unknown>,
    owner?: string,
  ): Promise<number> {
    const columns = Object.keys(changes).filter((c) => changes[c] !== undefined);
    const values = columns.map((c) => changes[c]);
    if (owner === undefined)
      return execute({ tx }, updateSql('webhook_deliveries', columns), [...values, id]);
    return execute({ tx }, updateSql('webhook_deliveries', columns, 'id = ? AND lease_owner = ?'), [
      ...values,
      id,
      owner,
    ]);
  },

  /**
   * The endpoint's state for a claim, read without any lock: whether it still sends (and its
   * account is active), how many of
   * its deliveries are held (attempts under way; an expired lease is a worker that died) and
   * whether any is due and free. One statement.
   */
  async pressure(
    { tx }: { tx: Tx },
    endpointId: number,
    now: string,
  ): Promise<{ live: boolean; active: boolean; held: number; due: boolean } | null> {
    const r = await firstRow<{
      status: string;
      deleted_at: unknown;
      account_status: string;
      held: unknown;
      due: unknown;
    }>(
      { tx },
      'SELECT e.status, e.deleted_at, a.status AS account_status, ' +
        '(SELECT COUNT(*) FROM webhook_deliveries h WHERE h.endpoint_id = e.id ' +
        'AND h.lease_owner IS NOT NULL AND h.lease_until >= ?) AS held, ' +
        '(SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = e.id ' +
        'AND d.waiting = ? AND d.due_at <= ? AND (d.lease_owner IS NULL OR d.lease_until < ?) AND ' +
        DUE_SQL +
        ' LIMIT 1) x) AS due FROM webhook_endpoints e JOIN accounts a ON a.id = e.account_id ' +
        'WHERE e.id = ?',
      [now, false, now, now, now, endpointId],
    );
    if (!r) return null;
    return {
      live: r.status === 'enabled' && !r.deleted_at,
      active: r.account_status === 'active',
      held: Number(r.held),
      due: Number(r.due) > 0,
    };
  },

  /** Narrows a claim to the endpoint's deliveries with an attempt due (see DUE_SQL). */
  dueAt(endpointId: number, now: string): { sql: string; params: unknown[] } {
    return {
      sql: `endpoint_id = ? AND waiting = ? AND due_at <= ? AND ${DUE_SQL}`,
      params: [endpointId, false, now, now],
    };
  },

  /**
   * What a claim reads of each delivery's event beside the delivery (scalar subqueries: the
   * claim's statement stays on the deliveries table, which PostgreSQL locks FOR UPDATE); null
   * when the event is gone (swept with its deliveries). `event(row)` maps them.
   */
  eventColumns: ['type', 'version', 'data', 'created_at'].map(
    (c) =>
      `(SELECT ev.${c} FROM events ev WHERE ev.id = webhook_deliveries.event_id ` +
      `AND ev.account_id = webhook_deliveries.account_id) AS claimed_event_${c}`,
  ),

  /** The event read by a claim through eventColumns, or null when it is gone. */
  event(r: Record<string, unknown>): Event | null {
    if (r.claimed_event_type === null || r.claimed_event_type === undefined) return null;
    return eventsRepo.map({
      id: r.event_id,
      account_id: r.account_id,
      type: r.claimed_event_type,
      version: r.claimed_event_version,
      data: r.claimed_event_data,
      created_at: r.claimed_event_created_at,
    });
  },

  /**
   * A claim writes these beside the lease: in progress, the status to return to (a lease taken
   * over keeps the one it had), and `due_at` at the lease's end, where the sweep finds it should
   * the worker die.
   */
  claimed(until: string, now: string): Record<string, unknown> {
    return {
      status: 'in_progress',
      prior_status: new Expression(
        "CASE WHEN status = 'in_progress' THEN COALESCE(prior_status, 'failed') ELSE status END",
      ),
      due_at: until,
      updated_at: now,
    };
  },

  /**
   * Leases that ran out (a worker that died, or lost the database past the lease) go back to the
   * status before the claim, the attempt's outcome unknown and not recorded: due again at once
   * when it still had an attempt due (a replay pending, an open delivery: sent again, at least
   * once), otherwise not due. Counted as a takeover. The minute sweep runs it first, so nothing
   * shows `in_progress` more than a minute past its lease, and its claims find them due, even
   * where no claim may run (an account that is not active). One statement, by the index of held
   * rows (migration 028).
   */
  releaseExpired({ tx }: { tx: Tx }, now: string): Promise<number> {
    const prior = "COALESCE(prior_status, 'failed')";
    return execute(
      { tx },
      `UPDATE webhook_deliveries SET status = ${prior}, ` +
        `due_at = CASE WHEN replays_pending > 0 THEN lease_until WHEN ${prior} IN ` +
        "('pending', 'failed') THEN next_attempt_at ELSE NULL END, " +
        'lease_takeovers = lease_takeovers + 1, lease_owner = NULL, lease_until = NULL, ' +
        'prior_status = NULL, updated_at = ? ' +
        "WHERE lease_owner IS NOT NULL AND lease_until < ? AND status = 'in_progress'",
      [now, now],
    );
  },

  /**
   * The endpoint no longer sends (disabled, deleted): what is due there is closed; open
   * deliveries are canceled, others (a replay asked of a delivered one) keep their status.
   */
  closeDue({ tx }: { tx: Tx }, endpointId: number, now: string): Promise<number> {
    const due = deliveriesRepo.dueAt(endpointId, now);
    return tx('webhook_deliveries')
      .whereRaw(due.sql, due.params as any[])
      .where((w) => w.whereNull('lease_owner').orWhere('lease_until', '<', now))
      .update({
        status: tx.raw(
          "CASE WHEN (CASE WHEN status = 'in_progress' THEN COALESCE(prior_status, 'failed') " +
            "ELSE status END) IN ('pending', 'failed') THEN 'canceled' " +
            "WHEN status = 'in_progress' THEN COALESCE(prior_status, 'failed') ELSE status END",
        ),
        next_attempt_at: null,
        due_at: null,
        replays_pending: 0,
        lease_owner: null,
        lease_until: null,
        prior_status: null,
        updated_at: now,
      });
  },

  /** For each endpoint of the account with a delivery due: one of them (the lowest id). */
  async firstDueOfAccount(
    { tx }: { tx: Tx },
    accountId: number,
    now: string,
  ): Promise<{ id: number; endpointId: number }[]> {
    // Through the account's endpoints (at most 20), each by its due index: not the whole table.
    const rows = await allRows<{ id: unknown; endpoint_id: unknown }>(
      { tx },
      'SELECT e.id AS endpoint_id, (SELECT MIN(d.id) FROM webhook_deliveries d ' +
        'WHERE d.endpoint_id = e.id AND d.waiting = ? AND d.due_at <= ?) AS id ' +
        'FROM webhook_endpoints e WHERE e.account_id = ?',
      [false, now, accountId],
    );
    return rows
      .filter((r) => r.id !== null)
      .map((r) => ({ id: Number(r.id), endpointId: Number(r.endpoint_id) }));
  },

  /** Endpoints with a delivery due (oldest first): the recovery sweep claims at each. */
  async dueEndpoints({ tx }: { tx: Tx }, now: string, limit: number): Promise<number[]> {
    const rows = await allRows<{ endpoint_id: unknown }>(
      { tx },
      'SELECT endpoint_id FROM webhook_deliveries WHERE waiting = ? AND due_at <= ? ' +
        'GROUP BY endpoint_id ORDER BY MIN(due_at) LIMIT ?',
      [false, now, limit],
    );
    return rows.map((r) => Number(r.endpoint_id));
  },

  /** The endpoint was disabled or deleted: nothing more is sent (attempts under way finish). */
  cancelOpen({ tx }: { tx: Tx }, endpointId: number, now: string): Promise<number> {
    return tx('webhook_deliveries')
      .where('endpoint_id', endpointId)
      .whereIn('status', ['pending', 'failed'])
      .update({
        status: 'canceled',
        next_attempt_at: null,
        due_at: null,
        waiting: false,
        replays_pending: 0,
        updated_at: now,
      });
  },

  /** Deliveries of the endpoint whose event matches a replay request, oldest event first. */
  async replayable(
    { tx }: { tx: Tx },
    endpointId: number,
    f: ReplayFilters,
    limit: number,
  ): Promise<{ id: number; event_id: number }[]> {
    const q = tx('webhook_deliveries as d')
      .join('events as e', 'e.id', 'd.event_id')
      .where('d.endpoint_id', endpointId)
      .where('e.created_at', '>=', f.since)
      .where('e.created_at', '<', f.until);
    if (f.eventIds) q.whereIn('d.event_id', f.eventIds);
    if (f.eventTypes) q.whereIn('d.event_type', f.eventTypes);
    if (f.occurredAfter !== undefined) q.where('e.created_at', '>=', f.occurredAfter);
    if (f.occurredBefore !== undefined) q.where('e.created_at', '<', f.occurredBefore);
    const rows = await q.orderBy('d.event_id').limit(limit).select('d.id', 'd.event_id');
    return rows.map((r: any) => ({ id: Number(r.id), event_id: Number(r.event_id) }));
  },

  // ---- attempts ----

  insertAttempt({ tx }: { tx: Tx }, row: Record<string, unknown>): Promise<number> {
    return insertId({ tx }, 'webhook_attempts', row);
  },

  async attempt({ tx }: { tx: Tx }, deliveryId: number, number: number): Promise<Attempt | null> {
    const r = await firstRow(
      { tx },
      'SELECT * FROM webhook_attempts WHERE delivery_id = ? AND number = ?',
      [deliveryId, number],
    );
    return r ? mapAttempt(r) : null;
  },

  /** The last attempt of each delivery given (a page of the list). */
  async lastAttempts({ tx }: { tx: Tx }, deliveries: Delivery[]): Promise<Map<number, Attempt>> {
    const tried = deliveries.filter((d) => d.attemptsCount > 0);
    const out = new Map<number, Attempt>();
    if (tried.length === 0) return out;
    const last = new Map(tried.map((d) => [d.id, d.attemptsCount]));
    const rows = await tx('webhook_attempts')
      .whereIn(
        'delivery_id',
        tried.map((d) => d.id),
      )
      .select('*');
    for (const r of rows) {
      const a = mapAttempt(r);
      if (last.get(a.deliveryId) === a.number) out.set(a.deliveryId, a);
    }
    return out;
  },
};
