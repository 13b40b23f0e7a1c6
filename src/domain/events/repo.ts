// Events (table `events`). `data` is the payload as recorded, JSON text on both engines.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { isPostgres, type Tx } from '../../db/engine.ts';
import { insertId } from '../../db/dialect.ts';
import { firstRow, insertJson, textOnce } from '../../db/statements.ts';
import type { Event, RecordStep } from './types.ts';

/** An event as recorded, before it has an id. */
export type NewEventRow = Omit<Event, 'id'>;

/** data is JSON text on both engines. */
const row = (e: NewEventRow) => ({
  account_id: e.accountId,
  type: e.type,
  version: e.version,
  data: JSON.stringify(e.data),
  created_at: e.createdAt,
});

const map = (r: any): Event => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  type: r.type,
  version: r.version,
  data: JSON.parse(r.data),
  createdAt: r.created_at,
});

/** What the inserted events return to the hooks' steps, as the CTE `e`. */
const RETURNED = 'id, account_id, type, version, created_at';
/** Each step a CTE after `e`: `s0 AS (...), s1 AS (...)`. */
const withSteps = (steps: RecordStep[]) => steps.map((s, i) => `, s${i} AS (${s.sql})`).join('');
/** Each step's rows as one JSON array column (`step_<i>`). */
const stepColumns = (steps: RecordStep[], prefix = 'step_') =>
  steps
    .map((_, i) => `, (SELECT coalesce(json_agg(s${i}), '[]'::json) FROM s${i}) AS ${prefix}${i}`)
    .join('');
// insertWithEvent's own columns beside the inserted row's (names no table of ours has).
const EVENT_ID = 'event__id';
const NOTIFIED = 'event__notified';
const STEP = 'event__step_';
/** insertWithEvent's statements by their insert's and steps' texts. */
const withEventTexts = new Map<string, string>();
const stepParams = (steps: RecordStep[]) => steps.flatMap((s) => s.params);

/** insertNotifying's statement by its steps' texts (a few: with and without the fan-out). */
const notifyingTexts = new Map<string, string>();

export interface EventFilters {
  type?: string;
  createdAfter?: string;
  createdBefore?: string;
}

// Ids follow recording order; created_at is the clock's reading at that moment.
const byRecording = keyset('id');
const eventPages = pages({
  list: 'events',
  sorts: { '-created_at': byRecording.desc, created_at: byRecording.asc },
  map,
});

export const eventsRepo = {
  map,

  insert({ tx }: { tx: Tx }, e: NewEventRow): Promise<number> {
    return insertId({ tx }, 'events', row(e));
  },

  /**
   * PostgreSQL: the insert and its NOTIFY (`<account>:<event id>` on `channel`, delivered if the
   * transaction commits) in one statement, one round trip instead of two, with the hooks' `steps`
   * (see EventsService.onRecord) as CTEs of the same statement; `rows`: each step's rows.
   */
  async insertNotifying(
    { tx }: { tx: Tx },
    e: NewEventRow,
    channel: string,
    steps: RecordStep[] = [],
  ): Promise<{ id: number; rows: unknown[][] }> {
    const r = row(e);
    // A named statement (planned once per connection): the text varies only with the steps, so
    // it is written once per steps' texts rather than on every event.
    const key = steps.length === 0 ? '' : steps.map((s) => s.sql).join('\0');
    const sql = textOnce(
      notifyingTexts,
      key,
      () =>
        'WITH e AS (INSERT INTO events (account_id, type, version, data, created_at) ' +
        `VALUES (?, ?, ?, ?, ?) RETURNING ${RETURNED})${withSteps(steps)} ` +
        `SELECT id, pg_notify(?, account_id || ':' || id)${stepColumns(steps)} FROM e`,
    );
    const found = await firstRow<Record<string, unknown>>({ tx }, sql, [
      r.account_id,
      r.type,
      r.version,
      r.data,
      r.created_at,
      ...stepParams(steps),
      channel,
    ]);
    return { id: Number(found!.id), rows: steps.map((_, i) => found![`step_${i}`] as unknown[]) };
  },

  /**
   * PostgreSQL: `insert` (an INSERT ... RETURNING * of at most one row) and, when it wrote its
   * row, the event about it with its NOTIFY and the hooks' `steps`, in one statement: one round
   * trip fewer than the insert, then insertNotifying. The event's data is `dataAround` with the
   * new row's id between its two parts. Null when the insert wrote no row (no event then).
   */
  async insertWithEvent(
    { tx }: { tx: Tx },
    insert: { sql: string; params: readonly unknown[] },
    e: Omit<NewEventRow, 'data'> & { dataAround: [string, string] },
    channel: string,
    steps: RecordStep[] = [],
  ): Promise<{ row: Record<string, unknown>; id: number; rows: unknown[][] } | null> {
    // Named (planned once per connection): the text varies only with the insert and the steps.
    const key = insert.sql + '\0' + steps.map((s) => s.sql).join('\0');
    const sql = textOnce(
      withEventTexts,
      key,
      () =>
        `WITH u AS (${insert.sql}), e AS (INSERT INTO events (account_id, type, version, data, created_at) ` +
        `SELECT ?::int, ?::text, ?::text, ?::text || u.id || ?::text, ?::text FROM u RETURNING ${RETURNED})` +
        `${withSteps(steps)} SELECT u.*, e.id AS ${EVENT_ID}, pg_notify(?, e.account_id || ':' || e.id) AS ${NOTIFIED}` +
        `${stepColumns(steps, STEP)} FROM u CROSS JOIN e`,
    );
    const [before, after] = e.dataAround;
    const found = await firstRow<Record<string, unknown>>({ tx }, sql, [
      ...insert.params,
      e.accountId,
      e.type,
      e.version,
      before,
      after,
      e.createdAt,
      ...stepParams(steps),
      channel,
    ]);
    if (!found) return null;
    const rows = steps.map((_, i) => found[`${STEP}${i}`] as unknown[]);
    const id = Number(found[EVENT_ID]);
    const row = { ...found };
    delete row[EVENT_ID];
    delete row[NOTIFIED];
    for (let i = 0; i < steps.length; i++) delete row[`${STEP}${i}`];
    return { row, id, rows };
  },

  /**
   * PostgreSQL: insertMany, their NOTIFYs (in id order) and the hooks' `steps` in one statement.
   * Returns the ids, ascending, in the rows' order (as insertMany), and each step's rows.
   */
  async insertManyNotifying(
    { tx }: { tx: Tx },
    events: NewEventRow[],
    channel: string,
    steps: RecordStep[] = [],
  ): Promise<{ ids: number[]; rows: unknown[][] }> {
    const found = await firstRow<Record<string, unknown>>(
      { tx },
      'WITH e AS (INSERT INTO events (account_id, type, version, data, created_at) ' +
        'SELECT * FROM json_to_recordset(?::json) AS v(account_id int, type text, version text, ' +
        `data text, created_at text) RETURNING ${RETURNED})${withSteps(steps)} ` +
        // The sequence numbers the rows in the order they are listed.
        "SELECT (SELECT json_agg(id ORDER BY id) FROM e) AS ids, (SELECT count(pg_notify(?, n.account_id || ':' || n.id)) " +
        `FROM (SELECT account_id, id FROM e ORDER BY id) n) AS notified${stepColumns(steps)}`,
      // Well-formed as it is (insertJson's replacer not needed): `data` is JSON text, in which
      // JSON.stringify escapes a lone surrogate; type and version come from the catalog.
      [JSON.stringify(events.map(row)), ...stepParams(steps), channel],
    );
    return {
      ids: (found!.ids as unknown[]).map(Number),
      rows: steps.map((_, i) => found![`step_${i}`] as unknown[]),
    };
  },

  /**
   * Inserts the rows in this order; their ids, ascending, in the same order (one statement on
   * PostgreSQL, whose sequence numbers the rows of one INSERT in the order they are listed).
   */
  async insertMany({ tx }: { tx: Tx }, events: NewEventRow[]): Promise<number[]> {
    const rows = events.map(row);
    if (!isPostgres(tx)) {
      const ids: number[] = [];
      for (const r of rows) ids.push(await insertId({ tx }, 'events', r));
      return ids;
    }
    const types = {
      account_id: 'int',
      type: 'text',
      version: 'text',
      data: 'text',
      created_at: 'text',
    };
    const returned = await insertJson({ tx }, 'events', types, rows, 'RETURNING id');
    return returned.map((r) => Number(r.id)).sort((a: number, b: number) => a - b);
  },

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Event | null> {
    const r = await firstRow({ tx }, 'SELECT * FROM events WHERE account_id = ? AND id = ?', [
      accountId,
      id,
    ]);
    return r ? map(r) : null;
  },

  /** The account's events with these ids (any order; those gone are missing). */
  async getMany({ tx }: { tx: Tx }, accountId: number, ids: number[]): Promise<Event[]> {
    // SQLite: cached prepared statements, one a row, cost less than one statement knex builds.
    if (ids.length === 1 || !isPostgres(tx)) {
      const out: Event[] = [];
      for (const id of ids) {
        const e = await eventsRepo.get({ tx }, accountId, id);
        if (e) out.push(e);
      }
      return out;
    }
    const rows = await tx('events').where('account_id', accountId).whereIn('id', ids);
    return rows.map(map);
  },

  /** One page of the account's events recorded since `retainedSince`, newest first by default. */
  page(
    { tx }: { tx: Tx },
    cursors: CursorCodec,
    accountId: number,
    retainedSince: string,
    f: EventFilters,
    p: PageParams,
  ) {
    const query = eventsRepo
      .listQuery({ tx }, accountId, f)
      .where('created_at', '>=', retainedSince);
    return eventPages(query, cursors, { ...p, of: [accountId], filters: { ...f } });
  },

  /** Unordered: paginate adds the keyset condition and ORDER BY. */
  listQuery({ tx }: { tx: Tx }, accountId: number, f: EventFilters) {
    const q = tx('events').where('account_id', accountId);
    if (f.type !== undefined) q.where('type', f.type);
    if (f.createdAfter !== undefined) q.where('created_at', '>=', f.createdAfter);
    if (f.createdBefore !== undefined) q.where('created_at', '<', f.createdBefore);
    return q.select('*');
  },

  /** Events recorded after `afterId`, in id order (the SQLite commit notifier). */
  after(
    { tx }: { tx: Tx },
    afterId: number,
    limit: number,
  ): Promise<{ id: number; account_id: number }[]> {
    return tx('events')
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .select('id', 'account_id');
  },

  async maxId({ tx }: { tx: Tx }): Promise<number> {
    const r = await tx('events').max({ id: 'id' }).first();
    return Number(r?.id ?? 0);
  },
};
