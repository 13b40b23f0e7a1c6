// Legacy (v1/v2) API keys: one per-account secret, stored only as a SHA-256 hash. They share
// nothing with v3 credentials, so a v3 secret is never looked up here (and back).
import type { Db } from '../../db/knex.ts';
import { SECRET_PATTERN } from '../credentials/secrets.ts';
import { sha256 } from '../shared/ids.ts';

export interface LegacyKeyOwner {
  keyId: number;
  accountId: number;
  accountStatus: string;
}

/** The account behind a presented key, or null when the key is unknown or is a v3 secret. */
export async function findLegacyKey(db: Db, key: string): Promise<LegacyKeyOwner | null> {
  if (!key || key.startsWith('sch_') || SECRET_PATTERN.test(key)) return null;
  const row = await db('legacy_keys as k')
    .join('accounts as a', 'a.id', 'k.account_id')
    .where('k.key_hash', sha256(key))
    .first('k.id as key_id', 'a.id as account_id', 'a.status as account_status');
  if (!row) return null;
  return {
    keyId: Number(row.key_id),
    accountId: Number(row.account_id),
    accountStatus: String(row.account_status),
  };
}
