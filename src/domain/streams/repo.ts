// Event streams (table `event_streams`) and the reads a stream makes of `events`. Every function
// takes the caller's `tx`.
import { lockAccountScope } from '../../db/account-lock.ts';
import type { Tx } from '../../db/knex.ts';
import { insertId, json } from '../../db/dialect.ts';
import { Lease } from '../../db/lease.ts';
import { eventsRepo } from '../events/repo.ts';
import type { Event } from '../events/types.ts';

export interface EventStream {
  id: number;
  accountId: number;
  credentialId: number;
  types: string[] | null;
  position: number;
  connectionId: string | null;
  connectionExpiresAt: string | null;
  lastConnectedAt: string | null;
  createdAt: string;
}

const map = (r: any): EventStream => ({
  id: Number(r.id),
  accountId: Number(r.account_id),
  credentialId: Number(r.credential_id),
  types: json<string[] | null>(r.types, null),
  position: Number(r.position),
  connectionId: r.connection_id ?? null,
  connectionExpiresAt: r.connection_expires_at ?? null,
  lastConnectedAt: r.last_connected_at ?? null,
  createdAt: r.created_at,
});

/**
 * One connection at a time holds a stream (src/db/lease.ts); a dead instance's lease runs out and
 * the next connection takes it over (counted in `lease_takeovers`).
 */
const lease = new Lease({
  table: 'event_streams',
  owner: 'connection_id',
  until: 'connection_expires_at',
  takeovers: 'lease_takeovers',
});

export const streamsRepo = {
  /**
   * PostgreSQL: serializes stream creation per account until the transaction ends, so two
   * concurrent creations cannot both pass the limits (SQLite runs writes one at a time).
   */
  lockAccount({ tx }: { tx: Tx }, accountId: number): Promise<void> {
    return lockAccountScope({ tx }, 'event_streams', accountId);
  },

  async counts({ tx }: { tx: Tx }, accountId: number, credentialId: number) {
    const r = await tx('event_streams')
      .where('account_id', accountId)
      .select(
        tx.raw('COUNT(*) AS account'),
        tx.raw('SUM(CASE WHEN credential_id = ? THEN 1 ELSE 0 END) AS credential', [credentialId]),
      )
      .first();
    return { account: Number(r?.account ?? 0), credential: Number(r?.credential ?? 0) };
  },

  insert({ tx }: { tx: Tx }, row: Record<string, unknown>): Promise<number> {
    return insertId({ tx }, 'event_streams', row);
  },

  async get({ tx }: { tx: Tx }, accountId: number, id: number): Promise<EventStream | null> {
    const r = await tx('event_streams').where({ account_id: accountId, id }).first();
    return r ? map(r) : null;
  },

  async list({ tx }: { tx: Tx }, accountId: number): Promise<EventStream[]> {
    const rows = await tx('event_streams').where('account_id', accountId).orderBy('id');
    return rows.map(map);
  },

  remove({ tx }: { tx: Tx }, accountId: number, id: number): Promise<number> {
    return tx('event_streams').where({ account_id: accountId, id }).delete();
  },

  /** Takes the stream's connection lease; false when another connection holds it. */
  async acquire({ tx }: { tx: Tx }, id: number, connectionId: string, now: string, until: string) {
    const { claimed } = await lease.claim(
      { tx },
      id,
      { owner: connectionId, now, until },
      { set: { last_connected_at: now } },
    );
    return claimed;
  },

  /** Renews the lease and saves the position; false when the stream is gone or was taken over. */
  renew({ tx }: { tx: Tx }, id: number, connectionId: string, until: string, position: number) {
    return lease.renew({ tx }, id, connectionId, until, { position });
  },

  release({ tx }: { tx: Tx }, id: number, connectionId: string, position: number) {
    return lease.release({ tx }, id, connectionId, { position });
  },

  async exists({ tx }: { tx: Tx }, id: number): Promise<boolean> {
    return (await tx('event_streams').where('id', id).first('id')) !== undefined;
  },

  // --- events, as a stream reads them ---

  /** The account's newest event id (0 when none): where a new stream starts. */
  async newestEventId({ tx }: { tx: Tx }, accountId: number): Promise<number> {
    const r = await tx('events').where('account_id', accountId).max({ id: 'id' }).first();
    return Number(r?.id ?? 0);
  },

  /** The oldest event still stored, of any account (0 when none). */
  async oldestEventId({ tx }: { tx: Tx }): Promise<number> {
    const r = await tx('events').min({ id: 'id' }).first();
    return Number(r?.id ?? 0);
  },

  event({ tx }: { tx: Tx }, accountId: number, id: number): Promise<Event | null> {
    return eventsRepo.get({ tx }, accountId, id);
  },

  /**
   * The account's events with after < id <= upTo, of these types (null: all), created since
   * `since`, in id order.
   */
  async eventsAfter(
    { tx }: { tx: Tx },
    accountId: number,
    after: number,
    upTo: number,
    types: string[] | null,
    since: string,
    limit: number,
  ): Promise<Event[]> {
    const q = tx('events')
      .where('account_id', accountId)
      .where('id', '>', after)
      .where('id', '<=', upTo)
      .where('created_at', '>=', since);
    if (types) q.whereIn('type', types);
    const rows = await q.orderBy('id').limit(limit).select('*');
    return rows.map(eventsRepo.map);
  },

  /** Ids of every account's events after `after`, with their time: gaps are checked on these. */
  async idsAfter({ tx }: { tx: Tx }, after: number, limit: number) {
    const rows = await tx('events')
      .where('id', '>', after)
      .orderBy('id')
      .limit(limit)
      .select('id', 'created_at');
    return rows.map((r: any) => ({ id: Number(r.id), createdAt: r.created_at as string }));
  },
};
