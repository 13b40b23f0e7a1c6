// Check-then-write steps on one administrator's sign-ins and tokens (TOTP step use, token issue
// and revocation) run one at a time, so parallel requests cannot all pass the check first.
import type { Tx } from '../db/knex.ts';

/**
 * Holds the administrator's row until the transaction ends. PostgreSQL: FOR NO KEY UPDATE, which
 * waits for another holder but not for foreign-key checks (a new session row). SQLite drops the
 * clause and needs none: its transactions run one after another.
 */
export async function lockAdministrator({ tx }: { tx: Tx }, adminId: number): Promise<void> {
  await tx('administrators').where('id', adminId).forNoKeyUpdate().first('id');
}
