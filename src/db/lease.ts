// One lease primitive for both engines (issue #20): a row held by an owner until an instant, the
// way operations, webhook deliveries and event-stream connections hold theirs (each table keeps
// its own column names). Every write is a conditional UPDATE: a claim succeeds only on a row that
// is free, expired, already the owner's or held by an owner known to be dead; renew and release
// only on the owner's row (anyone else's is refused: 0 rows). A claim that takes over someone
// else's lease says whose, so the caller records it. A batch claim takes several rows in one
// statement, at most `perGroup` held per group (an endpoint's attempts under way): on PostgreSQL
// the candidates are locked with FOR UPDATE SKIP LOCKED and each group's count is taken under a
// transaction-level advisory lock of that group, so two instances never both see a free slot
// (a caller that must not skip a group waits for that lock first: lockGroup; one that holds it
// claims its group in a single statement: `lockedGroup`; one that hands over slots it releases
// in the same transaction needs no lock: `handOver`); SQLite runs write transactions one at a
// time. Times are ISO strings from the injectable clock.
import type { Knex } from 'knex';
import { isPostgres, type Db, type Tx } from './engine.ts';
import { whileAway } from './pg-errors.ts';
import { allRows, execute } from './statements.ts';
import { transaction } from './tx.ts';

export interface LeaseColumns {
  table: string;
  /** The holder's id column. */
  owner: string;
  /** Until when the holder has it (ISO); expired when it is before `now`. */
  until: string;
  /** The key column (default `id`). */
  id?: string;
  /** A counter of takeovers, moved by the claim that takes one (migration 025). */
  takeovers?: string;
}

export interface Holder {
  owner: string;
  now: string;
  until: string;
}

type Where = (q: Knex.QueryBuilder) => void;

export interface Claimed {
  claimed: boolean;
  /** The owner whose lease was taken over (expired, or known dead); null when it was free. */
  tookOver: string | null;
}

export class Lease {
  readonly c: Required<Omit<LeaseColumns, 'takeovers'>> & { takeovers?: string };

  constructor(columns: LeaseColumns) {
    this.c = { id: 'id', ...columns };
  }

  /** Free, expired at `now`, the owner's own, or held by `dead` (a worker known to be gone). */
  private claimable(q: Knex.QueryBuilder, owner: string, now: string, dead?: string | null) {
    const { owner: o, until } = this.c;
    q.where((w) => {
      w.whereNull(o).orWhere(until, '<', now).orWhere(o, owner);
      if (dead) w.orWhere(o, dead);
    });
  }

  /**
   * Claims one row for `h.owner` until `h.until`, with `set` written beside, if it is claimable
   * and passes `where`. Reads the holder first (locked on PostgreSQL) to say whose lease it took.
   */
  async claim(
    { tx }: { tx: Tx },
    id: number,
    h: Holder,
    opts: { where?: Where; set?: Record<string, unknown>; dead?: string | null } = {},
  ): Promise<Claimed> {
    const { table, id: key, owner: o, until } = this.c;
    const read = tx(table).where(key, id).first(o, until);
    const before = await (isPostgres(tx) ? read.forUpdate() : read);
    if (!before) return { claimed: false, tookOver: null };
    const q = tx(table).where(key, id);
    this.claimable(q, h.owner, h.now, opts.dead);
    opts.where?.(q);
    const prior = before[o] as string | null;
    const taking = prior !== null && prior !== h.owner;
    // The holder read above is the one replaced: PostgreSQL locked the row, SQLite writes alone.
    const counted =
      taking && this.c.takeovers
        ? { [this.c.takeovers]: tx.raw('?? + 1', [this.c.takeovers]) }
        : {};
    const n = await q.update({ ...opts.set, ...counted, [o]: h.owner, [until]: h.until });
    return { claimed: n > 0, tookOver: n > 0 && taking ? prior : null };
  }

  /** Extends the owner's lease (and writes `set`); false when the row is not the owner's. */
  async renew(
    { tx }: { tx: Tx },
    id: number,
    owner: string,
    until: string,
    set: Record<string, unknown> = {},
  ): Promise<boolean> {
    return (await this.guarded({ tx }, id, owner).update({ ...set, [this.c.until]: until })) > 0;
  }

  /** Frees the owner's lease (and writes `set`); false when the row is not the owner's. */
  async release(
    { tx }: { tx: Tx },
    id: number,
    owner: string,
    set: Record<string, unknown> = {},
  ): Promise<boolean> {
    const { owner: o, until } = this.c;
    return (await this.guarded({ tx }, id, owner).update({ ...set, [o]: null, [until]: null })) > 0;
  }

  /** The row, only while `owner` holds it: a write through it is guarded by the lease. */
  guarded({ tx }: { tx: Tx }, id: number, owner: string): Knex.QueryBuilder {
    return tx(this.c.table).where(this.c.id, id).where(this.c.owner, owner);
  }

  /** Rows held at `now` (not expired), per group, among `groups`. */
  async heldPerGroup({ tx }: { tx: Tx }, group: string, groups: unknown[], now: string) {
    if (groups.length === 0) return new Map<string, number>();
    const { table, owner: o, until } = this.c;
    const rows = await allRows<Record<string, unknown>>(
      { tx },
      `SELECT ${group}, COUNT(*) AS n FROM ${table} WHERE ${group} IN (${marks(groups.length)}) ` +
        `AND ${o} IS NOT NULL AND ${until} >= ? GROUP BY ${group}`,
      [...groups, now],
    );
    return new Map(rows.map((r) => [String(r[group]), Number(r.n)]));
  }

  /**
   * Waits for the group's lock (PostgreSQL; the one claimBatch tries) until the transaction ends:
   * a caller that must not miss a group's free slot (a finished attempt handing its slot on) waits
   * for another claimer of the group instead of skipping it, then sees what that one committed.
   */
  async lockGroup({ tx }: { tx: Tx }, value: number): Promise<void> {
    if (isPostgres(tx))
      await tx.raw('SELECT pg_advisory_xact_lock(hashtext(?), ?::int)', [
        `lease:${this.c.table}`,
        value,
      ]);
  }

  /**
   * lockGroup as an expression to select in the caller's first statement of the transaction (one
   * round trip less); null on SQLite. The lock is held from that statement on: a later statement
   * sees what the previous holder committed.
   */
  groupLock({ tx }: { tx: Tx }, value: number): { sql: string; params: unknown[] } | null {
    if (!isPostgres(tx)) return null;
    return {
      sql: 'pg_advisory_xact_lock(hashtext(?), ?::int)',
      params: [`lease:${this.c.table}`, value],
    };
  }

  /**
   * Claims up to `limit` claimable rows that pass `where`, in `orderBy` order, at most `perGroup`
   * held at once in each `group` (counting those already held); returns the ids claimed. One
   * statement writes them all. Call it inside a transaction: the locks last until its end.
   */
  async claimBatch({ tx }: { tx: Tx }, h: Holder, opts: BatchOptions): Promise<number[]> {
    const rows = await this.claimBatchRows({ tx }, h, opts);
    return rows.map((r) => Number(r[this.c.id]));
  }

  /**
   * claimBatch, returning the claimed rows as they were before the claim (the `columns` asked
   * for). Portable `?` SQL through src/db/statements.ts: prepared once (SQLite) or named
   * (PostgreSQL), not compiled by knex at every claim.
   */
  async claimBatchRows(
    { tx }: { tx: Tx },
    h: Holder,
    opts: BatchOptions,
  ): Promise<Record<string, any>[]> {
    const { table, id: key, owner: o, until } = this.c;
    const pg = isPostgres(tx);
    const one = opts.lockedGroup ?? opts.handOver;
    if (pg && one !== undefined) return this.claimGroupPg({ tx }, h, opts, one);
    let columns = (opts.columns ?? [key, opts.group]).join(', ');
    const order = [opts.orderBy].flat().join(', ');
    // The caller holds the group's lock since an earlier statement, so this statement's snapshot
    // already has what the previous holder committed: the held count is read here, not after.
    const locked = opts.locked === true || one !== undefined;
    if (locked)
      columns +=
        `, (SELECT COUNT(*) FROM ${table} h WHERE h.${opts.group} = ${table}.${opts.group} ` +
        `AND h.${o} IS NOT NULL AND h.${until} >= ?) AS ${HELD}`;
    // Claimable (free or expired; the owner's own rows count as held, not as candidates).
    let sql =
      `SELECT ${columns} FROM ${table} WHERE (${o} IS NULL OR (${until} < ? AND ${o} <> ?)) ` +
      (opts.where ? `AND (${opts.where.sql}) ` : '');
    const params: unknown[] = [
      ...(locked ? [h.now] : []),
      h.now,
      h.owner,
      ...(opts.where?.params ?? []),
    ];
    if (pg && !locked) {
      sql += `AND pg_try_advisory_xact_lock(hashtext(?), ${opts.group}::int) `;
      params.push(`lease:${table}`);
    }
    // On SQLite the trailing LIMIT goes as a literal (allRows, literalLimit): a bound one would
    // have the statement planned again at every run.
    sql += `ORDER BY ${order} LIMIT ?` + (pg ? ' FOR UPDATE SKIP LOCKED' : '');
    params.push(opts.candidates ?? opts.limit * 4);
    const rows = await allRows<Record<string, any>>({ tx }, sql, params);
    const groups = [...new Set(rows.map((r) => String(r[opts.group])))];
    const held = locked
      ? new Map(rows.map((r) => [String(r[opts.group]), Number(r[HELD])]))
      : await this.heldPerGroup({ tx }, opts.group, groups, h.now);
    if (locked) for (const r of rows) delete r[HELD];
    const picked: Record<string, any>[] = [];
    for (const r of rows) {
      if (picked.length >= opts.limit) break;
      const g = String(r[opts.group]);
      const n = held.get(g) ?? 0;
      if (n >= opts.perGroup) continue;
      held.set(g, n + 1);
      picked.push(r);
    }
    if (picked.length === 0) return [];
    const { sql: sets, values } = this.claimSets(h, opts);
    await execute({ tx }, `UPDATE ${table} SET ${sets} WHERE ${key} IN (${marks(picked.length)})`, [
      ...values,
      ...picked.map((r) => r[key]),
    ]);
    return picked;
  }

  /**
   * A claim's SET list: `set`, the takeover count, the holder. Every SET expression sees the row
   * as it was: the takeover is counted against the holder being replaced.
   */
  private claimSets(h: Holder, opts: BatchOptions): { sql: string; values: unknown[] } {
    const { owner: o, until } = this.c;
    const sets: string[] = [];
    const values: unknown[] = [];
    for (const [column, value] of Object.entries(opts.set ?? {})) {
      if (value instanceof Expression) sets.push(`${column} = ${value.sql}`);
      else {
        sets.push(`${column} = ?`);
        values.push(value);
      }
    }
    const t = this.c.takeovers;
    if (t) {
      sets.push(`${t} = ${t} + CASE WHEN ${o} IS NULL OR ${o} = ? THEN 0 ELSE 1 END`);
      values.push(h.owner);
    }
    sets.push(`${o} = ?`, `${until} = ?`);
    values.push(h.owner, h.until);
    return { sql: sets.join(', '), values };
  }

  /**
   * claimBatchRows of one group, PostgreSQL, one statement: whose lock the caller holds
   * (`lockedGroup`), or whose slots it hands over (`handOver`). The candidates are limited to the
   * group's free slots, counted in the same statement (under the lock, its snapshot is younger
   * than the lock, taken by an earlier statement: it has what the previous holder committed),
   * locked (SKIP LOCKED), claimed, and returned as they were, in order.
   */
  private async claimGroupPg(
    { tx }: { tx: Tx },
    h: Holder,
    opts: BatchOptions,
    group: unknown,
  ): Promise<Record<string, any>[]> {
    const { table, id: key, owner: o, until } = this.c;
    const order = [opts.orderBy].flat();
    const columns = [...(opts.columns ?? [key, opts.group])];
    // The outer SELECT orders by them and matches the claimed keys.
    if (!columns.includes('*'))
      for (const c of [key, ...order]) if (!columns.includes(c)) columns.push(c);
    const sets = this.claimSets(h, opts);
    const sql =
      `WITH c AS (SELECT ${columns.join(', ')} FROM ${table} ` +
      `WHERE (${o} IS NULL OR (${until} < ? AND ${o} <> ?)) ` +
      (opts.where ? `AND (${opts.where.sql}) ` : '') +
      `ORDER BY ${order.join(', ')} LIMIT GREATEST(0, LEAST(?::int, ?::int - ` +
      `(SELECT COUNT(*) FROM ${table} h WHERE h.${opts.group} = ? ` +
      `AND h.${o} IS NOT NULL AND h.${until} >= ?))) FOR UPDATE SKIP LOCKED), ` +
      `u AS (UPDATE ${table} SET ${sets.sql} WHERE ${key} IN (SELECT ${key} FROM c) ` +
      `RETURNING ${key}) ` +
      `SELECT c.* FROM c WHERE c.${key} IN (SELECT ${key} FROM u) ORDER BY ${order.join(', ')}`;
    return allRows<Record<string, any>>({ tx }, sql, [
      h.now,
      h.owner,
      ...(opts.where?.params ?? []),
      opts.limit,
      opts.perGroup,
      group,
      h.now,
      ...sets.values,
    ]);
  }
}

/** An SQL expression to write in a claim's `set` (it sees the row as it was before the claim). */
export class Expression {
  readonly sql: string;
  constructor(sql: string) {
    this.sql = sql;
  }
}

/** The column of a `locked` claim's candidates that carries their group's held count. */
const HELD = 'lease_held_in_group';

const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

export interface BatchOptions {
  group: string;
  perGroup: number;
  limit: number;
  /** A column, or several (ties broken by the next). */
  orderBy: string | string[];
  /** Portable `?` SQL narrowing the candidates (the table's own column names). */
  where?: { sql: string; params: unknown[] };
  /** Written beside the lease: values, or an Expression (which sees the row before the claim). */
  set?: Record<string, unknown>;
  /** The columns claimBatchRows returns (default: the key and the group). */
  columns?: string[];
  /**
   * Rows read (and locked) to choose from (default 4 x `limit`, for groups that are full); a
   * claim narrowed to one group by `where` needs no more than `limit`.
   */
  candidates?: number;
  /**
   * The caller took the group's lock in an earlier statement of this transaction (lockGroup,
   * groupLock): the held count is read with the candidates, in one statement. Without it
   * (PostgreSQL), the candidates' statement tries the lock and the count is a statement of its
   * own, read after it: a count in the same statement as the try could miss the claims that the
   * previous holder committed between the statement's snapshot and the lock.
   */
  locked?: boolean;
  /**
   * `locked`, for one group: `where` narrows the claim to this group, whose lock the caller
   * holds. PostgreSQL counts, chooses and claims in one statement (claimGroupPg); SQLite as
   * `locked`.
   */
  lockedGroup?: unknown;
  /**
   * `lockedGroup` without the group's lock, for a caller that released `limit` or more of this
   * group's held rows earlier in its transaction (finished attempts handing their slots on):
   * claiming no more than it released, in the transaction that releases them, leaves the group's
   * held count where it was whatever others commit meanwhile (a claimer under the lock counts
   * either both sides of it or neither; two hand-overs lock different rows: SKIP LOCKED), so
   * hand-overs at one group do not queue behind each other's commits. A row another transaction
   * has locked is skipped: the caller finds fewer than it asked for and claims again under the
   * lock after its commit.
   */
  handOver?: unknown;
}

/**
 * A lease write that must land once the database is back (an outcome already acted on, a release
 * the next holder waits for) rather than be redone later: retried while the database is away, for
 * at most `maxMs` (the lease's own length: past it, the lease is someone else's to take).
 */
export function leaseWrite<T>(
  db: Db,
  fn: (tx: Tx) => Promise<T>,
  options: { maxMs: number; stop?: () => boolean },
): Promise<T> {
  return whileAway(() => transaction(db, fn), options);
}
