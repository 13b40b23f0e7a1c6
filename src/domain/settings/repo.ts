// User-profile settings rows: one per account that has written them (the overrides document and
// its revision). Accounts without a row read the defaults at revision INITIAL_REVISION.
import { isPostgres, type Tx } from '../../db/knex.ts';
import { json } from '../../db/dialect.ts';
import { newRevision } from '../shared/ids.ts';
import type { Overrides } from './values.ts';

/** The revision of settings never written: stable, so If-Match works from the first GET. */
export const INITIAL_REVISION = '0';

export interface SettingsRow {
  accountId: number;
  overrides: Overrides;
  revision: string;
  updatedAt: string;
}

const map = (r: any): SettingsRow => ({
  accountId: Number(r.account_id),
  overrides: json<Overrides>(r.values, {}),
  revision: r.revision,
  updatedAt: r.updated_at,
});

export const settingsRepo = {
  async get({ tx }: { tx: Tx }, accountId: number): Promise<SettingsRow | null> {
    const r = await tx('user_profile_settings').where('account_id', accountId).first();
    return r ? map(r) : null;
  },

  /**
   * The account's row, created at the initial revision if missing, and held until the transaction
   * ends (PostgreSQL: FOR NO KEY UPDATE; SQLite transactions are serial already), so a PATCH
   * without If-Match merges into the current document rather than losing a concurrent one.
   */
  async lock({ tx }: { tx: Tx }, accountId: number, now: string): Promise<SettingsRow> {
    await tx('user_profile_settings')
      .insert({ account_id: accountId, values: '{}', revision: INITIAL_REVISION, updated_at: now })
      .onConflict('account_id')
      .ignore();
    const q = tx('user_profile_settings').where('account_id', accountId);
    if (isPostgres(tx)) q.forNoKeyUpdate();
    return map(await q.first());
  },

  /**
   * Writes the overrides under a new revision (guarded by `guard` when given: the revision the
   * caller read); returns the new revision, or null when the guard hit no row.
   */
  async update(
    { tx }: { tx: Tx },
    accountId: number,
    next: { overrides: Overrides; now: string },
    guard: string | undefined,
  ): Promise<string | null> {
    const revision = newRevision();
    const q = tx('user_profile_settings').where('account_id', accountId);
    if (guard !== undefined) q.where('revision', guard);
    const hit = await q.update({
      values: JSON.stringify(next.overrides),
      revision,
      updated_at: next.now,
    });
    return hit > 0 ? revision : null;
  },

  /** The account a replica copies, or null (also for an unknown account). */
  async replicaOf({ tx }: { tx: Tx }, accountId: number): Promise<number | null> {
    const r = await tx('accounts').where('id', accountId).first('replica_of');
    return r?.replica_of == null ? null : Number(r.replica_of);
  },
};
