// Events (table `events`). `data` is the payload as recorded, JSON text on both engines.
import { keyset, pages, type PageParams } from '../../db/page.ts';
import type { CursorCodec } from '../../db/cursor.ts';
import { isPostgres, type Tx } from '../../db/engine.ts';
import { insertId } from '../../db/dialect.ts';
import { firstRow, insertJson } from '../../db/statements.ts';
import type { Event } from './types.ts';

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
   * transaction commits) in one statement, one round trip instead of two; with the values of
   * `reads` (the hooks' reads, see EventsService.onRecord) in the same round trip.
   */
  async insertNotifying(
    { tx }: { tx: Tx },
    e: NewEventRow,
    channel: string,
    reads: string[] = [],
  ): Promise<{ id: number; reads: unknown[] }> {
    const r = row(e);
    // Each read is a scalar subquery of the account id, run with the insert's snapshot.
    const columns = reads.map((sql, i) => `, ${sql} AS read_${i}`).join('');
    // A named statement (planned once per connection): the text varies only with the reads.
    const found = await firstRow<Record<string, unknown>>(
      { tx },
      'WITH e AS (INSERT INTO events (account_id, type, version, data, created_at) ' +
        'VALUES (?, ?, ?, ?, ?) RETURNING id, account_id) ' +
        `SELECT id, pg_notify(?, account_id || ':' || id)${columns} FROM e`,
      [
        r.account_id,
        r.type,
        r.version,
        r.data,
        r.created_at,
        channel,
        ...reads.map(() => r.account_id),
      ],
    );
    return { id: Number(found!.id), reads: reads.map((_, i) => found![`read_${i}`]) };
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
