// Every process that opens the database checks that its SECRETS_KEY is the one the database's
// secrets were sealed with, before it seals anything new. Without this, a CLI run that forgot
// SECRETS_KEY (so used a locally generated key file) reported success while sealing a new OAuth
// signing key with the wrong key, and every correctly configured instance then failed to start.
// The database keeps a fingerprint of the key (an HMAC of a fixed label: it reveals nothing about
// the key); a process whose key does not match stops with a message naming the variable.
import crypto from 'node:crypto';
import type { Db } from './db/knex.ts';
import { unseal } from './secrets-key.ts';
import { StartupError } from './startup.ts';

const NAME = 'secrets_key_fingerprint';

export const fingerprint = (key: Buffer): string =>
  crypto.createHmac('sha256', key).update('school-platform/secrets-key-fingerprint').digest('hex');

export class SecretsKeyMismatch extends StartupError {
  readonly code = 'secrets_key_mismatch';
  constructor(expected: string | undefined, actual: string) {
    const seen = expected
      ? `(fingerprint ${expected.slice(0, 12)}, this process has ${actual.slice(0, 12)})`
      : '(it does not open the secrets already sealed there)';
    super(
      `SECRETS_KEY does not match the key this database's secrets are sealed with ${seen}. Set ` +
        'SECRETS_KEY to the value the other instances use (without it, a process uses the data ' +
        "folder's secrets.key file).",
      2,
    );
  }
}

/**
 * Stores the key's fingerprint on first use, or checks it. A database from before fingerprints is
 * checked against a secret already sealed in it (the newest OAuth signing key) before the
 * fingerprint is recorded, so a wrong key can never be the one that gets recorded.
 */
export async function verifySecretsKey(db: Db, key: Buffer, now: string): Promise<void> {
  const mine = fingerprint(key);
  let stored = await storedFingerprint(db);
  if (stored === undefined) {
    const sealed = await db('oauth_signing_keys')
      .orderBy('created_at', 'desc')
      .first('kid', 'private_jwk_sealed');
    if (sealed) {
      try {
        unseal(key, sealed.private_jwk_sealed, sealed.kid);
      } catch {
        throw new SecretsKeyMismatch(undefined, mine);
      }
    }
    await db('server_keys')
      .insert({ name: NAME, value: mine, created_at: now })
      .onConflict('name')
      .ignore();
    stored = await storedFingerprint(db);
  }
  if (stored !== mine) throw new SecretsKeyMismatch(stored, mine);
}

async function storedFingerprint(db: Db): Promise<string | undefined> {
  const row = await db('server_keys').where('name', NAME).first('value');
  return row?.value;
}
